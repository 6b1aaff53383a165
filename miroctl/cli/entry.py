"""The `miroctl` command: the warm path when it certainly applies, the Typer app otherwise.

A plain `call`, `list`, `read` or `prompt` through a gateway (--via URL or $MIROCTL_URL) is recognised here and
answered by miroctl.cli.remote without importing Typer, the mcp SDK or OmegaConf, so a call from a shell
loop costs little more than starting Python. Anything else (and anything this narrow parser is unsure
of) goes to the Typer app, whose --via handling calls the same functions: one behaviour, two ways in.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from miroctl.cli import helpcache
from miroctl.render import early

# Nothing else at the top: on a terminal, the first line of live feedback is drawn before Rich, the
# boundary and the warm client are imported (render/early.py); `run` imports them for start-up time.

_FLAGS = {
    "call": {"--json": "json_mode", "--no-autocorrect": "no_autocorrect"},
    "list": {"--json": "json_mode", "--schema": "schema"},
    "read": {"--json": "json_mode"},
    "prompt": {"--json": "json_mode"},
}
_VALUES = {
    "call": {
        "--via": "via",
        "--timeout": "timeout",
        "-t": "timeout",
        "--args": "args",
        "-a": "args",
        "--save-dir": "save_dir",
    },
    "list": {"--via": "via"},
    "read": {"--via": "via", "--timeout": "timeout", "-t": "timeout", "--save-dir": "save_dir"},
    "prompt": {"--via": "via", "--timeout": "timeout", "-t": "timeout", "--save-dir": "save_dir"},
}


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exits with miroctl's exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if helpcache.answer(words):  # the same help as last time, without loading Typer (cli/helpcache.py)
        sys.exit(0)
    early.first_line(words, os.environ)
    sys.exit(run(words))


def run(words: list[str]) -> int:
    """The exit code of one miroctl command line."""
    from miroctl.cli import boundary, remote  # noqa: PLC0415 - after the first line (see above)

    words = boundary.strip_traceback_flag(words)
    parsed = parse(words, os.environ)
    if parsed is None:
        return run_cli(words)

    command, options, rest = parsed
    out = boundary.output(json_mode=bool(options.pop("json_mode", False)))
    via = options.pop("via")
    if command == "call":
        return boundary.guarded(lambda: remote.call(via, rest, out=out, **options))
    if command == "read":
        return boundary.guarded(lambda: remote.read(via, rest, out=out, **options))
    if command == "prompt":
        return boundary.guarded(lambda: remote.prompt(via, rest, out=out, **options))
    return boundary.guarded(lambda: remote.list_servers(via, rest, out=out, **options))


def run_cli(words: list[str]) -> int:
    """The Typer app, with its usage errors as one line (and a hint) instead of a framed block. A cold `call`
    or `list` starts its stdio servers first (cli/prestart.py), so they boot while the rest loads."""
    from miroctl.render import progress  # noqa: PLC0415 - after the first line (see above)

    if early.drawn is not None:  # the first line comes alive (a spinner, a clock) while Typer and the core load
        progress.adopt(progress.stderr_console(), early.drawn)
    try:
        if words[:1] in (["call"], ["list"]):
            _prestart(words)
        return _run_app(words)
    finally:
        progress.stop_active()
        early_servers = sys.modules.get("miroctl.sessions.prestart")
        if early_servers is not None:  # whatever was started early and not adopted (even after Ctrl-C) stops
            early_servers.discard()
        early_reader = sys.modules.get("miroctl.cli.prestart")
        if early_reader is not None:
            early_reader.forget()


def _prestart(words: list[str]) -> None:
    from miroctl.cli import prestart  # noqa: PLC0415 - only a cold call or list loads the core this early

    prestart.begin(words)


def _run_app(words: list[str]) -> int:
    # Typer costs ~0.2 s at start-up: only the full command line pays it, never a call through a gateway.
    import typer  # noqa: PLC0415

    from miroctl.base.errors import ExitCode, UsageError  # noqa: PLC0415 - after the first line (see above)
    from miroctl.cli import boundary, root  # noqa: PLC0415 - after the first line (see above)

    if words[:1] in (["call"], ["list"]):
        app = root.only(words[0])  # Typer reads only this command's signature, not the thirty others'
    else:
        from miroctl.cli.app import app  # noqa: PLC0415 - the Typer app (see above)

    json_mode = boundary.json_wanted(words)
    recorder = helpcache.Recorder.install(sys) if helpcache.wanted(words) else None
    try:
        code = app(args=words, prog_name="miroctl", standalone_mode=False)
    except KeyboardInterrupt as exc:
        return boundary.report(exc, json_mode=json_mode)
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
    if recorder is not None and code == 0:
        helpcache.keep(words, recorder)  # the same help next time at a fraction of the cost
    return code


def parse(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, dict[str, Any], list[str]] | None:
    """(command, options, words) for a call, list, read or prompt through a gateway; None: the CLI decides."""
    from miroctl.remote import URL_ENV  # noqa: PLC0415 - after the first line (see above)

    if not argv or argv[0] not in _FLAGS:
        return None
    command, words = argv[0], []
    options: dict[str, Any] = {}
    items = iter(argv[1:])
    for word in items:
        name, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in _FLAGS[command] and not equals:
            options[_FLAGS[command][name]] = True
        elif name in _VALUES[command] and _VALUES[command][name] not in options:
            value = inline if equals else next(items, None)
            if value is None:
                return None
            options[_VALUES[command][name]] = value
        elif word.startswith("-"):
            return None  # an option this parser does not know: the CLI decides
        else:
            words.append(word)
    options["via"] = options.get("via") or env.get(URL_ENV)
    if not options["via"] or not _timeout_ok(options):
        return None
    return command, options, words


def _timeout_ok(options: dict[str, Any]) -> bool:
    if "timeout" not in options:
        return True
    try:
        timeout = options["timeout"] = float(options["timeout"])
    except ValueError:
        return False
    return math.isfinite(timeout) and timeout >= 0.001  # anything else: the CLI explains the problem
