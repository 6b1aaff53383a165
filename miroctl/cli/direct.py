"""The direct path: a plain cold `call` or `list`, read with the option table, runs its command without Typer.

Typer builds its command from the function's signature, parses the line and converts each value through
pydantic: ~60 ms of CPU on every cold command, while the command itself needs none of it. The early start's
reader (launch/reader.py) already reads these command lines, and takes only options whose every value the
command takes (tests/test_options_table.py holds it to the Typer app), so its reading is handed to the same
`perform` the Typer command calls. Whatever it is unsure of (--help, ad-hoc servers, an option it does not
take, a value the command would refuse, `--`) goes to the Typer app, which says what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from miroctl.base.errors import Interrupted
from miroctl.cli import boundary
from miroctl.cli import call as call_command
from miroctl.cli import list as list_command
from miroctl.config.sections import Mode
from miroctl.launch.handoff import Launch, Stopped
from miroctl.launch.options import CALL, LIST, seconds
from miroctl.launch.reader import Reading, read

# The Typer app's positional parameter of each command (tests/test_direct.py holds them to it).
POSITIONAL = {CALL: "target", LIST: "servers"}
# The values that are not text, converted as the Typer app converts them.
CONVERTED: dict[str, Callable[[str], object]] = {"timeout": seconds, "startup_timeout": seconds, "mode": Mode}
COMPLETION_ENV = "_MIROCTL_COMPLETE"  # set when a shell asks the Typer app for completions


def reading(words: list[str], environ: Mapping[str, str]) -> Reading | None:
    """The command line as the direct path takes it, or None when the Typer app must read it."""
    found = read(words, "early")
    if found is None or COMPLETION_ENV in environ or (found.command == CALL and not found.words):
        return None
    return found


def keywords(found: Reading) -> dict[str, Any]:
    """The command's `perform` keywords for a reading, each value of its parameter's type, as the Typer app
    would pass it."""
    values: dict[str, Any] = {
        dest: value if isinstance(value, bool) else CONVERTED.get(dest, str)(value)
        for dest, value in found.values.items()
    }
    if found.words:
        values[POSITIONAL[found.command]] = list(found.words)
    return values


def run(launch: Launch, environ: Mapping[str, str] | None = None) -> int | None:
    """The exit code of a plain cold `call` or `list`; None when the Typer app must run the command line."""
    found = reading(launch.words, os.environ if environ is None else environ)
    if found is None:
        return None
    perform = call_command.perform if found.command == CALL else list_command.perform
    try:
        options = keywords(found)
        boundary.begin()
        launch.release_interrupts()  # the command's own handling of Ctrl-C takes over, as inside the Typer app
        return boundary.guarded(lambda: perform(launch, **options))
    except Stopped as exc:  # a stop signal outside the core's own handling
        launch.close()
        return boundary.report(Interrupted(exc.signum), json_mode=found.flag("json_mode"))
