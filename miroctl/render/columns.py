"""The column rules of every table miroctl draws (`list`, `check`) and of the detail view of one tool.

What a user types or reads as one token (a tool or server name, a parameter name, a type, a number) is
never broken: its column is as wide as its longest cell. Running text (a description, a reason) takes the
room the other columns leave, at least `share` of it, and wraps between words; it is shortened (… at the
end) only on a terminal, never in a file or a pipe. When the tokens and the least room for the text do not
fit the screen, `widths` says so and the caller lays each row out as lines instead (one tool or server per
line, its facts indented under it).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PROSE_MIN = 16  # running text narrower than this is no longer readable in a column
PARAMETERS = "parameters (* required)"  # the header of a tool's parameters, in every table and the detail view
PARAMETERS_NARROW = "parameters\n(* required)"  # the same in a column narrower than the words together
_WORDS = re.compile(r"\([^)]*\)|\S+")


@dataclass(frozen=True)
class Column:
    """What one column needs: `least`, the narrowest width that breaks none of its tokens; `full`, the width
    with nothing wrapped; `prose`, running text that takes the room the others leave; `header`, the width
    its header needs on one line, given only from room nothing else wants."""

    least: int
    full: int
    prose: bool = False
    header: int = 0

    @classmethod
    def tokens(cls, header: str, cells: Iterable[str]) -> Column:
        """A column of names or numbers, each kept whole."""
        width = max((len(cell) for cell in cells), default=0)
        return cls(max(width, _longest_word(header)), max(width, len(header)))

    @classmethod
    def folding(cls, header: str, least: int, full: int) -> Column:
        """A column whose cells may wrap down to `least` (a parameter's type under its name); its header
        wraps between words too, and is on one line only where the text has all the room it wants."""
        least = max(least, _longest_word(header))
        return cls(least, max(full, least), header=len(header))

    @classmethod
    def text(cls, header: str, cells: Iterable[str], least: int = PROSE_MIN) -> Column:
        """Running text: at least `least` wide, at most as wide as its longest cell."""
        full = max((len(cell) for cell in cells), default=0)
        least = max(least, _longest_word(header))
        return cls(least, max(full, least), prose=True)


def widths(columns: Sequence[Column], room: int, share: float = 0.5) -> list[int] | None:
    """Each column's width when its cells have `room` between them (the screen less the table's frame), or
    None when the columns do not fit even at their least (then the rows are drawn as lines).

    Token columns keep their full width; a folding column gives up width (down to its least) only so that
    the text gets `share` of the room the tokens leave (or all it needs, if less); the text takes the rest,
    up to its own full width; what is left widens a folding column for its header."""
    folding = [i for i, c in enumerate(columns) if not c.prose and (c.least < c.full or c.header > c.full)]
    prose = [i for i, c in enumerate(columns) if c.prose]
    fixed = sum(c.full for i, c in enumerate(columns) if not c.prose and i not in folding)
    left = room - fixed
    sizes = [c.full for c in columns]
    needed = sum(columns[i].least for i in prose)
    wanted = max(needed, min(sum(columns[i].full for i in prose), int(left * share))) if prose else 0
    for i in folding:  # give up width, the first column first, until the text has what it wants
        over = sum(sizes[j] for j in folding) + wanted - left
        if over > 0:
            sizes[i] = max(columns[i].least, sizes[i] - over)
    rest = left - sum(sizes[i] for i in folding)
    if rest < needed:
        return None
    for i in prose:  # the text shares the rest evenly, no wider than its longest cell
        sizes[i] = min(columns[i].full, rest // len(prose))
    spare = room - sum(sizes)
    for i in folding:  # room nothing else wants: a header on one line
        grown = min(spare, max(0, columns[i].header - sizes[i]))
        sizes[i] += grown
        spare -= grown
    return sizes


def frame(columns: int, *, light: bool = False) -> int:
    """The width a table's borders and padding take: box.HEAVY_HEAD with a space each side of a cell has a
    rule at each edge and between columns (3n + 1); the light frame (box.SIMPLE_HEAD, padding collapsed,
    none at the edges) a space at each edge and two between columns (2n)."""
    return 2 * columns if light else 3 * columns + 1


def parameters_header(width: int) -> str:
    """The parameters column's header, on two lines when its column is narrower than the words together."""
    return PARAMETERS if width >= len(PARAMETERS) else PARAMETERS_NARROW


def wrap(text: str, width: int, indent: str = "", later: str | None = None) -> list[str]:
    """Running text in lines of at most `width`, broken only between words (a name, a URL or a
    hyphenated word longer than the line stays whole on its own line)."""
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=indent if later is None else later,
        break_long_words=False,
        break_on_hyphens=False,
    )


def shortened(text: str, width: int, lines: int, terminal: bool) -> str:
    """On a terminal, the text in at most `lines` lines of `width`, ending in … when some is left out;
    anywhere else (a file, a pipe) the whole text."""
    if not terminal:
        return text
    wrapped = wrap(text, width) or [""]
    if len(wrapped) <= lines:
        return text
    kept = wrapped[:lines]
    last = kept[-1]
    kept[-1] = (last if len(last) < width else last[: width - 1].rstrip()) + "…"
    return "\n".join(kept)


def _longest_word(text: str) -> int:
    """The widest piece a header may not be broken into: a word, or a remark in parentheses."""
    return max((len(word) for word in _WORDS.findall(text)), default=0)
