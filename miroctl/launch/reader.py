"""Read a command line with the option table before Typer is loaded (standard library only).

One reader serves the warm path, the early start and a command that goes to a daemon; each says which options
it takes (launch/options.py).
Whatever it is unsure of (an option it does not take, a value the command would refuse, `--`, an option
given twice) gives None: the Typer app then reads the command line and says what is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from miroctl.launch.options import CALL, LIST, OPTIONS, Option, options_of

Reader = Literal["warm", "early", "daemon"]
COMMANDS: dict[Reader, frozenset[str]] = {
    "warm": frozenset(command for option in OPTIONS for command in option.commands),
    "early": frozenset({CALL, LIST}),
    "daemon": frozenset(command for option in OPTIONS for command in option.commands),
}
# A command that goes to a daemon (miroctl.daemon) is the warm path's, with the configuration it names.
DAEMON_TAKES = frozenset({"config"})


class Reading(NamedTuple):
    """A command line as the table reads it: the command, each option's value by its parameter's name (True
    for a flag), and the positional words."""

    command: str
    values: dict[str, str | bool]
    words: tuple[str, ...] = ()

    def text(self, dest: str) -> str | None:
        value = self.values.get(dest)
        return value if isinstance(value, str) else None

    def flag(self, dest: str) -> bool:
        return self.values.get(dest) is True


def read(words: Sequence[str], reader: Reader) -> Reading | None:
    """The command line as `reader` takes it, or None when the Typer app must read it."""
    if not words or words[0] not in COMMANDS[reader]:
        return None
    known = options_of(words[0])
    values: dict[str, str | bool] = {}
    positional: list[str] = []
    items = iter(words[1:])
    for word in items:
        if word == "--":
            return None
        if not word.startswith("-") or word == "-":
            positional.append(word)
            continue
        name, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        option = known.get(name)
        if option is None or not _takes(option, reader) or option.dest in values:
            return None
        if option.kind == "flag":
            if equals:
                return None
            values[option.dest] = True
            continue
        value = inline if equals else next(items, None)
        if value is None or not _valid(option, value):
            return None
        values[option.dest] = value
    return Reading(words[0], values, tuple(positional))


def _takes(option: Option, reader: Reader) -> bool:
    if reader == "daemon":
        return (option.warm and option.dest != "via") or option.dest in DAEMON_TAKES
    return option.warm if reader == "warm" else option.early != "refuse"


def _valid(option: Option, value: str) -> bool:
    """Whether the command would take this value (the same check it makes: launch/options.py)."""
    if option.check is None:
        return True
    try:
        option.check(value)
    except (ValueError, OSError):
        return False
    return True
