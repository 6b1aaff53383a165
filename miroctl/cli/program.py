"""The cold path of the console entry: a cold `call` or `list` starts its stdio servers (cli/prestart.py),
then runs without Typer when the option table reads its command line (cli/direct.py); anything else goes to
the Typer app, with its usage errors as one line (and a hint) instead of a framed block. The `Launch` object
the entry made goes to the commands (as Typer's `obj`)."""

from __future__ import annotations

import sys

from miroctl.base.errors import ExitCode, Interrupted, UsageError
from miroctl.cli import boundary, direct, prestart
from miroctl.launch import early, helpcache
from miroctl.launch.handoff import Launch, Stopped
from miroctl.render import progress

DAEMON_COMMANDS = (["call"], ["list"], ["read"], ["prompt"])  # a daemon may keep their servers (cli/prestart.py)


def run(launch: Launch) -> int:
    """The exit code of the command line, run by the Typer app."""
    boundary.show_tracebacks(launch.traceback)
    launch.catch_interrupts()  # until the command's boundary (cli/root.py) takes Ctrl-C over
    if early.drawn is not None:  # the first line comes alive (a spinner, a clock) while Typer and the core load
        progress.adopt(progress.stderr_console(), early.drawn)
    try:
        through = prestart.for_daemon(launch) if launch.words[:1] in DAEMON_COMMANDS else None
        if through is not None:
            from miroctl.cli import keepalive  # noqa: PLC0415 - only a command that goes to a daemon loads it

            return keepalive.run(launch, *through)
        if launch.words[:1] in (["call"], ["list"]):
            prestart.begin(launch)
            code = direct.run(launch)  # a plain command line: its command, without Typer
            if code is not None:
                return code
        return _run_app(launch)
    finally:
        launch.release_interrupts()
        progress.stop_active()


def _run_app(launch: Launch) -> int:
    # Typer costs ~0.2 s at start-up: only the full command line pays it, never a call through a gateway.
    import typer  # noqa: PLC0415

    from miroctl.cli import root  # noqa: PLC0415 - Typer's (see above)

    words = launch.words
    if words[:1] in (["call"], ["list"]):
        app = root.only(words[0])  # Typer reads only this command's signature, not the thirty others'
    else:
        from miroctl.cli.app import app  # noqa: PLC0415 - the Typer app (see above)

    json_mode = boundary.json_wanted(words)
    recorder = helpcache.Recorder.install(sys) if helpcache.wanted(words) else None
    try:
        code = app(args=words, prog_name="miroctl", standalone_mode=False, obj=launch)
    except KeyboardInterrupt as exc:
        return boundary.report(exc, json_mode=json_mode)
    except Stopped as exc:  # a signal outside the core's own handling (Ctrl-C while Typer reads the line)
        launch.close()
        return boundary.report(Interrupted(exc.signum), json_mode=json_mode)
    except typer.Abort:
        return boundary.report(KeyboardInterrupt(), json_mode=json_mode)
    except typer.TyperException as exc:  # the command line's own usage errors (click's, as Typer vendors it)
        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else "miroctl"
        if exc.format_message():  # empty after a bare `miroctl`, whose help was just printed
            return boundary.report(UsageError(exc.format_message(), hint=f"see: {where} --help"), json_mode=json_mode)
        return int(getattr(exc, "exit_code", ExitCode.USAGE))
    finally:
        if recorder is not None:
            recorder.uninstall(sys)
    code = code if isinstance(code, int) else 0
    if recorder is not None and code == 0 and launch.help_rendered:
        helpcache.keep(words, recorder)  # the same help next time at a fraction of the cost
    return code
