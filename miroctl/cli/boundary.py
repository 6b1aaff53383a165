"""The one error boundary: an error becomes a one-line message, a hint and its exit code, here only.

Both ways in use it: the console entry (the warm `--via` path and the Typer app behind it) and the Typer
app's own command group (what tests drive with CliRunner). Commands raise `MiroctlError`s; nothing else
prints an error and exits. A defect in miroctl itself is reported the same way with exit 70, and
`--traceback` (anywhere on the command line) or `MIROCTL_TRACEBACK=1` shows where it came from.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from contextvars import ContextVar

from miroctl.base.errors import ErrorKind, ExitCode, Interrupted, MiroctlError
from miroctl.render.output import Output

TRACEBACK_FLAG = "--traceback"
TRACEBACK_ENV = "MIROCTL_TRACEBACK"

# The Output of the running command: errors are reported through it, with its JSON mode and its secrets.
_current: ContextVar[Output | None] = ContextVar("miroctl_output", default=None)
_traceback: ContextVar[bool] = ContextVar("miroctl_traceback", default=False)


def output(json_mode: bool = False) -> Output:
    """A command's Output, known to the boundary from now on."""
    out = Output(json_mode=json_mode)
    _current.set(out)
    return out


def begin() -> None:
    """A new command starts: no Output is known yet (errors before it exists go to a plain one)."""
    _current.set(None)


def show_tracebacks(shown: bool = True) -> None:
    """Whether errors show their traceback too (`--traceback`)."""
    _traceback.set(shown)


def _tracebacks_wanted() -> bool:
    return _traceback.get() or os.environ.get(TRACEBACK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def strip_traceback_flag(words: list[str]) -> list[str]:
    """The words without `--traceback` (before any `--`), which may stand anywhere on the command line."""
    end = words.index("--") if "--" in words else len(words)
    show_tracebacks(TRACEBACK_FLAG in words[:end])
    return [word for i, word in enumerate(words) if not (i < end and word == TRACEBACK_FLAG)]


def report(exc: BaseException) -> int:
    """Tell the user what went wrong, once, and return the exit code."""
    out = _current.get() or Output()
    wanted = _tracebacks_wanted()
    if wanted:
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, KeyboardInterrupt):
        exc = Interrupted(stopped=False)
    if isinstance(exc, MiroctlError):
        out.error(exc.message, exc.hint, label=exc.kind)
        return exc.exit_code
    hint = None if wanted else f"this is a defect in miroctl: run again with {TRACEBACK_FLAG} to see where"
    out.error(f"{type(exc).__name__}: {exc}", hint, label=ErrorKind.INTERNAL)
    return int(ExitCode.INTERNAL)


def guarded(work: Callable[[], int]) -> int:
    """Run a command; any error it raises becomes its message and exit code."""
    try:
        return work()
    except (MiroctlError, KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - the boundary: no traceback escapes
        return report(exc)
