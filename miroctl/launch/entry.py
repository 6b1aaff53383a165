"""The `miroctl` command: the help cache, the first line, then the warm path or the Typer app.

A plain `call`, `list`, `read` or `prompt` through a gateway (--via URL or $MIROCTL_URL), or to a running daemon
whose route matches (launch/shortcut.py), is read here with the option table (launch/reader.py) and handed to
miroctl.cli.warm, which answers it without Typer, the mcp SDK
or OmegaConf, so a call from a shell loop costs little more than starting Python. Anything else goes to
miroctl.cli.program: the early start of a cold call's servers, then the command itself (cli/direct.py) for a
plain `call` or `list`, else the Typer app. Both get the one
`Launch` object (launch/handoff.py) and return the exit code; nothing is handed over in module globals.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence

from miroctl.launch import early, helpcache, reader, shortcut
from miroctl.launch.handoff import Launch, Stopped, stop_in
from miroctl.launch.options import URL_ENV
from miroctl.launch.reader import Reading

# Nothing else at the top: on a terminal, the first line of live feedback is drawn before Rich, the
# boundary and the warm client are imported (launch/early.py); they are imported where they are handed over.
TRACEBACK_FLAG = "--traceback"


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exits with miroctl's exit code."""
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))


def run(words: list[str]) -> int:
    """The exit code of one miroctl command line."""
    launch = Launch(*_without_traceback_flag(words))
    try:
        if helpcache.answer(launch.words):  # the same help as last time, without loading Typer
            return 0
        early.first_line(launch.words, os.environ)
        return _hand_over(launch)
    except (KeyboardInterrupt, Stopped, Exception, BaseExceptionGroup) as exc:  # while loading: one line, nothing left
        stop = stop_in(exc)
        if stop is None:  # a defect: its traceback, as Python prints it
            raise
        launch.close()
        return _interrupted(launch, stop)
    finally:
        launch.close()


def warm(words: Sequence[str], environ: Mapping[str, str]) -> tuple[Reading, str] | None:
    """The warm path's reading of a command line and the gateway it goes through; None: the Typer app's."""
    reading = reader.read(words, "warm")
    url = (reading.text("via") or environ.get(URL_ENV)) if reading is not None else None
    return (reading, url) if reading is not None and url else None


def _hand_over(launch: Launch) -> int:
    through = warm(launch.words, os.environ) or shortcut.daemon_route(launch.words, os.environ)
    if through is not None:
        from miroctl.cli import warm as warm_path  # noqa: PLC0415 - the hand-over (stdlib only, see the contract)

        return warm_path.run(launch, *through)
    # Before the early start's first server (cli/prestart.py), and for every command: a stop signal outside the
    # core's run (before it, or once it has stopped the servers and the result is being shown) then ends
    # miroctl with its one line, as Ctrl-C does, instead of killing it halfway through its output.
    launch.catch_stop_signals()
    from miroctl.cli import program  # noqa: PLC0415 - the hand-over to the Typer app (Typer, the core)

    return program.run(launch)


def _without_traceback_flag(words: list[str]) -> tuple[list[str], bool]:
    """The words without `--traceback` (before any `--`), which may stand anywhere; whether it was there."""
    end = words.index("--") if "--" in words else len(words)
    kept = [word for i, word in enumerate(words) if not (i < end and word == TRACEBACK_FLAG)]
    return kept, len(kept) != len(words)


def _interrupted(launch: Launch, exc: BaseException) -> int:
    """The interruption as the boundary words it (stderr, and the error document with --json)."""
    # Only now: a help from the cache prints before JSON and the error kinds are loaded.
    from miroctl.base.errors import Interrupted, error_document  # noqa: PLC0415
    from miroctl.base.escaping import dumps  # noqa: PLC0415

    error = Interrupted(exc.signum if isinstance(exc, Stopped) else signal.SIGINT, stopped=launch.started > 0)
    early.erase()
    _write(2, f"miroctl: {error.kind}: {error.message}\n")
    end = launch.words.index("--") if "--" in launch.words else len(launch.words)
    if "--json" in launch.words[:end]:
        document = error_document(error.message, str(error.kind), error.hint, error.exit_code)
        _write(1, dumps(document) + "\n")
    return error.exit_code


def _write(fd: int, text: str) -> None:
    try:
        os.write(fd, text.encode())
    except OSError:
        pass
