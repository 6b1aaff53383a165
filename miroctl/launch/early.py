"""The first line of live feedback, drawn before anything slow is imported (standard library only).

A user pressing Enter sees `⠋ miroctl list: loading the configuration` at once; render/progress.py
(Rich) takes the line over as soon as it is loaded and fills it with the servers' stages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence

COMMANDS = frozenset({"list", "check", "call", "read", "prompt"})
QUIET_OPTIONS = frozenset({"--json", "--help", "-h", "--batch", "--via", "--install-completion", "--show-completion"})
_TAKES_VALUE = frozenset({"-c", "--config"})  # the app's own options before the command
ERASE = "\r\x1b[2K"
STARTED = time.perf_counter()  # about when the command line was entered: the clock of the first line

drawn: str | None = None  # the label of the line on the terminal now, until Rich takes it over


def command_of(words: Sequence[str]) -> str | None:
    """The command a miroctl command line runs (after the app's own options), or None."""
    items = iter(words)
    for word in items:
        if word == "--":
            return None
        if word in _TAKES_VALUE:
            next(items, None)
        elif not word.startswith("-"):
            return word
    return None


def wanted(words: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether a command line gets live feedback: a command that starts servers, stderr a terminal, and
    no --json, --help, --batch or gateway (which answer at once or print as they go)."""
    if command_of(words) not in COMMANDS or environ.get("MIROCTL_URL"):
        return False
    end = list(words).index("--") if "--" in words else len(words)
    if {word.partition("=")[0] for word in words[:end] if word.startswith("-")} & QUIET_OPTIONS:
        return False
    return os.isatty(2) and environ.get("TERM") != "dumb"


def first_line(words: Sequence[str], environ: Mapping[str, str]) -> None:
    """Write the first line on stderr now (no newline: the live display replaces it)."""
    global drawn
    if drawn is None and wanted(words, environ):
        drawn = f"miroctl {command_of(words)}: loading the configuration"
        try:
            os.write(2, f"\x1b[36m⠋ {drawn}\x1b[0m".encode())
        except OSError:
            drawn = None


def erase() -> str | None:
    """Take the first line back (the live display or an error takes its place); its label, if it was drawn."""
    global drawn
    label, drawn = drawn, None
    if label is not None:
        try:
            os.write(2, ERASE.encode())
        except OSError:
            pass
    return label
