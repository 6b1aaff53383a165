"""The one header line of every view: a server in `list` and `check`, a tool in detail, a daemon, a bench run.

`NAME  fact · fact · fact`: the name in bold, two spaces, then what is known of it, dim, one ` · ` between
facts; a fact left empty is left out. Server-provided text is shown literally (render/output.py's `safe`).
"""

from __future__ import annotations

from rich.text import Text

from miroctl.render.output import Output

SEPARATOR = " · "


def heading(out: Output, name: object, *facts: str | Text | None) -> Text:
    """The header line of `name`; a fact given as Text keeps its own style (a daemon's state in colour)."""
    line = Text(out.safe(name), style="bold")
    shown = [fact for fact in facts if fact]
    for index, fact in enumerate(shown):
        line.append("  " if index == 0 else SEPARATOR, style="dim")
        line.append(fact if isinstance(fact, Text) else Text(out.safe(fact), style="dim"))
    return line
