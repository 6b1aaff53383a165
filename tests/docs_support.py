"""Reading, running and rewriting the examples of README.md and docs/*.md (the docs convention).

- A fenced block whose info string is a language and `file=PATH` writes PATH in the page's scratch directory;
  with `src=FILE` too, it shows docs/FILE, which tests/test_docs_examples.py holds it to.
- A ```console block holds commands (`$ ` lines, run by bash; a command line ending in `\\` goes on on the next
  line) and, after each, its expected stdout+stderr. A line `...` matches any lines (none included);
  `[exit N]` as the last expected line asserts the exit code (0 otherwise).
- `<!-- docs-test: skip REASON -->` as the last non-blank line before a block: that block is not run.

Comparison strips trailing spaces and trailing blank lines and reads durations (`830 ms`, `(4.4 s)`, a JSON
`"duration_ms": 12.5`) as equal whatever their number; the runner shows the scratch directory's path as
`$PWD`. Nothing else is normalised. A port a block shows (`--port 8765`, `127.0.0.1:8765`, `port: 8765`) is
replaced, in its commands and the files written for it, by a free one for the run, and shown back as the page's
in the output, so examples that show the same port never meet on the machine.
"""

from __future__ import annotations

import difflib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
SKIP = re.compile(r"^<!--\s*docs-test:\s*skip\b\s*(?P<reason>.*?)\s*-->$")
EXIT = re.compile(r"^\[exit (?P<code>\d+)\]$")
DOTS = "..."
DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?: ?)(?P<unit>ms|s)\b")
JSON_DURATION = re.compile(r'(?P<key>"\w*_ms"): -?\d+(?:\.\d+)?')
# A TCP port a page shows (`--port 8765`, `127.0.0.1:8765`, `port: 8765`): each run takes a free one in its place.
PORT = re.compile(r"(?:--port[ =]|\bport: |(?:127\.0\.0\.1|localhost|0\.0\.0\.0):)(?P<port>\d{4,5})\b")
NUMBER = re.compile(r"(?<![\w.])\d{4,5}(?![\w.]\w)")


@dataclass
class Command:
    line: int  # 1-based line of the `$ ` line in the page
    source: list[str]  # the command's own lines, as written (with `$ ` and continuations)
    expected: list[str] = field(default_factory=list)  # its expected output, `[exit N]` included

    @property
    def script(self) -> str:
        parts = [self.source[0][2:], *self.source[1:]]
        return "\n".join(parts)

    @property
    def expected_exit(self) -> int:
        body = trim(self.expected)
        found = EXIT.match(body[-1]) if body else None
        return int(found["code"]) if found else 0

    @property
    def expected_output(self) -> list[str]:
        body = trim(self.expected)
        return body[:-1] if body and EXIT.match(body[-1]) else body


@dataclass
class Block:
    index: int  # among all fenced blocks of the page
    line: int  # 1-based line of the opening fence
    info: str
    body: list[str]
    body_start: int  # 0-based index of the first body line in the page's lines
    skip: str | None = None

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def file(self) -> str | None:
        for word in self.info.split()[1:]:
            if word.startswith("file="):
                return word[len("file=") :]
        return None

    @property
    def src(self) -> str | None:
        """`src=PATH`: the block shows a file kept under docs/ (PATH relative to docs/), written once for every
        page that shows it; tests/test_docs_examples.py checks that the block shows that file as it is."""
        for word in self.info.split()[1:]:
            if word.startswith("src="):
                return word[len("src=") :]
        return None

    @property
    def is_console(self) -> bool:
        return self.language == "console" and self.skip is None

    def commands(self) -> list[Command]:
        found: list[Command] = []
        continued = False
        for offset, text in enumerate(self.body):
            number = self.line + 1 + offset
            if continued:
                found[-1].source.append(text)
            elif text.startswith("$ "):
                found.append(Command(number, [text]))
            elif not found:
                raise ValueError(f"line {number}: output before the first `$ ` command of a console block")
            else:
                found[-1].expected.append(text)
            continued = (continued or text.startswith("$ ")) and text.endswith("\\") and not found[-1].expected
        return found


def ports_in(texts: list[str]) -> set[int]:
    """The TCP ports the texts (a block's commands, the files written for it) listen on or connect to."""
    return {int(found["port"]) for text in texts for found in PORT.finditer(text)}


def renumbered(text: str, ports: dict[int, int]) -> str:
    """`text` with each port of `ports` (a whole number, not a part of one) replaced by its value."""
    return NUMBER.sub(lambda found: str(ports.get(int(found[0]), found[0])), text) if ports else text


def parse(text: str) -> list[Block]:
    """Every fenced block of a Markdown page, with its skip marker."""
    lines = text.split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence = opening["fence"]
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        blocks.append(
            Block(
                len(blocks), index + 1, opening["info"].strip(), lines[index + 1 : end], index + 1, _skip(lines, index)
            )
        )
        index = end + 1
    return blocks


def _closes(line: str, fence: str) -> bool:
    text = line.strip()
    return len(text) >= len(fence) and set(text) == {fence[0]}


def _skip(lines: list[str], fence: int) -> str | None:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    marker = SKIP.match(lines[before].strip()) if before >= 0 else None
    return marker["reason"] or "no reason given" if marker else None


def trim(lines: list[str]) -> list[str]:
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def normal(line: str) -> str:
    line = DURATION.sub(lambda m: "N " + m["unit"], line.rstrip())
    return JSON_DURATION.sub(lambda m: m["key"] + ": N", line)


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the actual lines fit the expected ones, where a `...` line stands for any lines."""
    want = [normal(line) for line in trim(expected)]
    got = [normal(line) for line in trim(actual)]
    if DOTS not in want:
        return want == got
    segments = _segments(want)
    head, tail = segments[0], segments[-1]
    if len(head) + len(tail) > len(got) or got[: len(head)] != head:
        return False
    if tail and got[len(got) - len(tail) :] != tail:
        return False
    position, end = len(head), len(got) - len(tail)
    for middle in segments[1:-1]:
        found = _find(got, middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


def _segments(lines: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for line in lines:
        if line == DOTS:
            segments.append([])
        else:
            segments[-1].append(line)
    return segments


def _find(lines: list[str], part: list[str], start: int, end: int) -> int:
    for at in range(start, end - len(part) + 1):
        if lines[at : at + len(part)] == part:
            return at
    return -1


def refreshed(expected: list[str], actual: list[str], exit_code: int) -> list[str]:
    """The expected output to write back for a command: unchanged when it still fits, else the actual output
    with the expected block's `...` kept (its leading and trailing lines re-read from the actual output,
    its middle parts kept where they still occur)."""
    command_exit = Command(0, ["$ x"], expected).expected_exit
    old = Command(0, ["$ x"], expected).expected_output
    trailing_blanks = len(expected) - len(trim(expected))
    if command_exit == exit_code and matches(old, actual):
        return expected
    got = trim(actual)
    new = got
    if DOTS in [line.rstrip() for line in old]:
        segments = _segments([line.rstrip() for line in old])
        head, tail = len(segments[0]), len(segments[-1])
        if head + tail <= len(got):
            new = [*got[:head], DOTS]
            position, end = head, len(got) - tail
            for middle in segments[1:-1]:
                found = _find([normal(line) for line in got], [normal(line) for line in middle], position, end)
                if found >= 0 and middle:
                    new += [*got[found : found + len(middle)], DOTS]
                    position = found + len(middle)
            new += got[len(got) - tail :] if tail else []
    if exit_code:
        new = [*new, f"[exit {exit_code}]"]
    return new + [""] * trailing_blanks


def diff(command: Command, actual: list[str], exit_code: int, page: str) -> str:
    want = trim(command.expected)
    got = trim(actual) + ([f"[exit {exit_code}]"] if exit_code else [])
    lines = difflib.unified_diff(want, got, "shown in the docs", "printed", lineterm="", n=2)
    return f"{page}:{command.line}: `{command.script}` printed something else\n" + "\n".join(lines)


def rewrite(page: Path, block_index: int, outputs: list[list[str]]) -> None:
    """Write a console block's new expected outputs into its page, in place, under a lock (blocks of one page
    may be refreshed by parallel workers at once)."""
    # The lock is the page's own directory (never a file in the shared tmp, which another user could plant).
    lock = os.open(page.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            text = page.read_text()
            lines = text.split("\n")
            block = parse(text)[block_index]
            commands = block.commands()
            if len(commands) != len(outputs):
                raise ValueError(f"{page}:{block.line}: the block changed while it ran")
            body: list[str] = []
            for command, output in zip(commands, outputs, strict=True):
                body += command.source + output
            lines[block.body_start : block.body_start + len(block.body)] = body
            fresh = page.with_name(f".{page.name}.{os.getpid()}.new")
            fresh.write_text("\n".join(lines))
            os.replace(fresh, page)  # readers in other workers see the old page or the new one, never half
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    finally:
        os.close(lock)


def files_before(blocks: list[Block], block_index: int) -> Iterator[Block]:
    """The page's file= blocks above a block, in page order (skipped ones left out)."""
    for block in blocks[:block_index]:
        if block.file and block.skip is None:
            yield block
