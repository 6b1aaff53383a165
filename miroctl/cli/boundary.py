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

from miroctl.base.errors import ErrorKind, ExitCode, Interrupted, MiroctlError, OutputLost, behind, error_document
from miroctl.launch.handoff import Stopped, stop_in
from miroctl.render.output import Output

TRACEBACK_FLAG = "--traceback"
TRACEBACK_ENV = "MIROCTL_TRACEBACK"

# The Output of the running command: errors are reported through it, with its JSON mode and its secrets.
_current: ContextVar[Output | None] = ContextVar("miroctl_output", default=None)
_traceback: ContextVar[bool] = ContextVar("miroctl_traceback", default=False)


def output(json_mode: bool = False, *, json_to_stderr: bool = False) -> Output:
    """A command's Output, known to the boundary from now on."""
    out = Output(json_mode=json_mode, json_to_stderr=json_to_stderr)
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


def report(exc: BaseException, *, json_mode: bool = False) -> int:
    """Tell the user what went wrong, once, and return the exit code.

    With --json (the command's, or `json_mode` for errors found before the command ran) the error is also
    one `miroctl.error/1` document on stdout, unless the command already printed its own document."""
    lost = _output_lost(exc)
    if lost is not None:  # nothing more can go to stdout: not the error document either
        _stdout_to_null()
        if not lost.quiet:
            Output().error(lost.message, label=str(lost.kind))
        return lost.exit_code
    out = _current.get() or Output(json_mode=json_mode)
    wanted = _tracebacks_wanted()
    if wanted:
        traceback.print_exception(exc, file=sys.stderr)
    stop = stop_in(exc) if not isinstance(exc, MiroctlError) else None
    if isinstance(stop, Stopped):  # a stop signal outside the core's own handling, or wrapped (see stop_in)
        exc = Interrupted(stop.signum)
    elif stop is not None:
        exc = Interrupted(stopped=False)
    if isinstance(exc, MiroctlError):
        message, hint, kind, code = exc.message, exc.hint, str(exc.kind), exc.exit_code
    else:
        message, kind, code = f"{type(exc).__name__}: {exc}", str(ErrorKind.INTERNAL), int(ExitCode.INTERNAL)
        hint = None if wanted else f"this is a defect in miroctl: run again with {TRACEBACK_FLAG} to see where"
    if out.json_mode and not out.documents:
        out.json(error_document(message, kind, hint, code))  # the reason goes to stderr with it
    else:
        out.error(message, hint, label=kind)
    return code


def _output_lost(exc: BaseException) -> OutputLost | None:
    """The OutputLost that ended the command, also from inside a task's exception group."""
    return next((found for found in behind(exc) if isinstance(found, OutputLost)), None)


def _stdout_to_null() -> None:
    """Point stdout at /dev/null, so that nothing (Python's last flush included) writes to a closed pipe."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no file descriptor behind stdout (a test's capture): nothing to protect
        pass


def json_wanted(words: list[str]) -> bool:
    """Whether a command line asks for JSON (`--json` before any `--`), for errors found before it runs."""
    end = words.index("--") if "--" in words else len(words)
    return "--json" in words[:end]


def guarded(work: Callable[[], int]) -> int:
    """Run a command; any error it raises becomes its message and exit code."""
    try:
        return work()
    except (MiroctlError, KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - the boundary: no traceback escapes
        return report(exc)
