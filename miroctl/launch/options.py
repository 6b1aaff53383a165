"""The command-line options that the early readers know, in one table (standard library only).

The console entry reads a command line before Typer is loaded, twice over: the warm path answers a call
through a gateway without the Typer app, and the early start starts a cold call's servers while the rest
of miroctl loads, then runs the command on the same reading, again without Typer (cli/direct.py). Both
read it with this table; tests/test_options_table.py holds the Typer app to it
(every option of these commands, its names, whether it takes a value, and the verdict on its value), so
the two cannot drift. A reader that meets anything it is unsure of hands the command line to the Typer
app untouched, and the early start starts nothing.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

Kind = Literal["flag", "value", "values"]  # values: the option may be given more than once
# What the early start does with an option: use its value, accept it (checked as Typer checks it) and
# go on, or start nothing early (it changes the servers, their environment, or what is read first).
EarlyRole = Literal["read", "skip", "refuse"]
URL_ENV = "MIROCTL_URL"  # a gateway for every command (miroctl.remote.URL_ENV)
DAEMON_ENV = "MIROCTL_DAEMON"  # always | never | (unset) the profile's `daemon:` (docs/daemon.md)
DAEMON_IDLE_ENV = "MIROCTL_DAEMON_IDLE"  # seconds a daemon lives on with nothing to do
MODES = ("bypass", "read_only", "normal", "ask")  # config.sections.Mode (tests hold them equal)


def seconds(text: str) -> float:
    """A positive, finite number of seconds (nan and inf are not: click's ranges let them through)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value >= 0.001):
        raise ValueError(f"{text!r} is not a positive number of seconds")
    return value


def mode(text: str) -> str:
    """One of the permission modes, spelled exactly."""
    if text not in MODES:
        raise ValueError(f"{text!r} is not one of {', '.join(MODES)}")
    return text


def probe_writable(target: Path) -> None:
    """Open the file for writing without changing it (a new one is removed again); OSError if that fails."""
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "it is a directory")
    if target.exists():
        if target.is_file():  # a device or a pipe (>(cat), /dev/stdout) is only checked, never opened here
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND))
        elif not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, "permission denied")
        return
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    target.unlink()


def writable(text: str) -> str:
    """A file miroctl can create or write (what the commands check before anything starts)."""
    probe_writable(Path(text).expanduser())
    return text


def directory(text: str) -> str:
    """A directory, or a path that can become one."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory")
    return text


class Option(NamedTuple):
    """One option: its names, the parameter it fills, and how the early readers treat it."""

    names: tuple[str, ...]
    dest: str  # the Typer parameter's name
    kind: Kind
    commands: frozenset[str]
    check: Callable[[str], object] | None = None  # raises ValueError or OSError where the command refuses
    warm: bool = False  # the warm path (a call through a gateway) reads it; any other option: the Typer app
    early: EarlyRole = "refuse"


CALL, LIST, READ, PROMPT = "call", "list", "read", "prompt"
_ALL = frozenset({CALL, LIST, READ, PROMPT})
_CALL_LIST = frozenset({CALL, LIST})
_FETCH = frozenset({CALL, READ, PROMPT})


def _opt(
    names: str,
    dest: str,
    kind: Kind,
    commands: frozenset[str],
    *,
    check: Callable[[str], object] | None = None,
    warm: bool = False,
    early: EarlyRole = "refuse",
) -> Option:
    return Option(tuple(names.split()), dest, kind, commands, check, warm, early)


OPTIONS: tuple[Option, ...] = (
    _opt("--json", "json_mode", "flag", _ALL, warm=True, early="skip"),
    _opt("--via", "via", "value", _ALL, warm=True),
    _opt("--timeout -t", "timeout", "value", _FETCH, check=seconds, warm=True, early="skip"),
    _opt("--save-dir", "save_dir", "value", _FETCH, check=directory, warm=True, early="skip"),
    _opt("--no-autocorrect", "no_autocorrect", "flag", frozenset({CALL}), warm=True, early="skip"),
    _opt("--schema", "schema", "flag", frozenset({LIST}), warm=True, early="skip"),
    _opt("--brief", "brief", "flag", frozenset({LIST}), warm=True, early="skip"),
    _opt("--args -a", "args", "value", frozenset({CALL}), warm=True),  # stdin is the call's, not read early
    _opt("--config -c", "config", "value", _ALL, early="read"),
    _opt("--mode", "mode", "value", _CALL_LIST, check=mode, early="read"),
    _opt("--startup-timeout", "startup_timeout", "value", _ALL, check=seconds, early="skip"),
    _opt("--yes -y", "yes", "flag", frozenset({CALL}), early="skip"),
    _opt("--log", "log", "value", _CALL_LIST, check=writable, early="skip"),
    _opt("--output -o", "output", "value", frozenset({CALL}), check=writable, early="skip"),
    _opt("--record", "record", "value", _CALL_LIST, check=writable, early="skip"),
    _opt("--stdio", "stdio", "values", _ALL),
    _opt("--url", "url", "values", _ALL),
    _opt("--header -H", "header", "values", _ALL),
    _opt("--env -e", "env", "values", _ALL),
    _opt("--agent", "agent", "value", _CALL_LIST),
    _opt("--task-id", "task_id", "value", frozenset({CALL}), warm=True),  # sent with the call (a gateway's)
    _opt("--task-id", "task_id", "value", frozenset({LIST})),
    _opt("--batch", "batch_file", "value", frozenset({CALL})),
    _opt("--jobs -j", "jobs", "value", frozenset({CALL})),
    _opt("--resources", "resources", "flag", frozenset({LIST})),
    _opt("--prompts", "prompts", "flag", frozenset({LIST})),
    _opt("--no-daemon", "no_daemon", "flag", _ALL, early="skip"),
    _opt("--help -h", "help", "flag", _ALL),
)
# The app's own options, before the command (`miroctl -c research list`); --traceback may stand anywhere.
ROOT: tuple[Option, ...] = (
    _opt("--config -c", "config", "value", frozenset()),
    _opt("--traceback", "traceback", "flag", frozenset()),
    _opt("--version -V", "version", "flag", frozenset()),
    _opt("--help -h", "help", "flag", frozenset()),
    _opt("--install-completion", "install_completion", "flag", frozenset()),
    _opt("--show-completion", "show_completion", "flag", frozenset()),
)


def options_of(command: str) -> dict[str, Option]:
    """Every option of one command, by each of its names."""
    return {name: option for option in OPTIONS if command in option.commands for name in option.names}
