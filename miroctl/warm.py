"""The warm path: `call`, `list` and `call --batch` through a running gateway, and the console entry point.

`main()` is what the `miroctl` command runs. A plain `call` or `list` that goes through a gateway
(--via URL or $MIROCTL_URL) is recognised here and answered without importing Typer, the mcp SDK or
OmegaConf, so a call from a shell loop costs little more than starting Python. Anything else (and
anything this narrow parser is unsure of) goes to the Typer app in miroctl/cli/, which calls the same
functions below for its own --via handling: one behaviour, two ways in.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from miroctl.errors import ExitCode, MiroctlError, UsageError

T = TypeVar("T")
URL_ENV = "MIROCTL_URL"
_FLAGS = {"call": {"--json": "json_mode", "--no-autocorrect": "no_autocorrect"},
          "list": {"--json": "json_mode", "--schema": "schema"}}
_VALUES = {"call": {"--via": "via", "--timeout": "timeout", "-t": "timeout", "--args": "args", "-a": "args",
                    "--save-dir": "save_dir"},
           "list": {"--via": "via"}}


def main(argv: Sequence[str] | None = None) -> None:
    """The `miroctl` command: the warm path when it certainly applies, the full CLI otherwise."""
    words = list(sys.argv[1:] if argv is None else argv)
    parsed = parse(words, os.environ)
    if parsed is None:
        sys.exit(run_cli(words))
    command, options, rest = parsed
    from miroctl.render import Output

    out = Output(json_mode=bool(options.get("json_mode")))
    if command == "call":
        sys.exit(call(options.pop("via"), rest, out=out, **options))
    sys.exit(list_servers(options.pop("via"), rest, out=out, **options))


def run_cli(words: list[str]) -> int:
    """The Typer app, with its usage errors as one line (and a hint) instead of a framed block."""
    from miroctl.cli import app

    try:
        code = app(args=words, prog_name="miroctl", standalone_mode=False)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # only the command line's own usage errors (they can format a message)
        if not hasattr(exc, "format_message"):
            raise
        from miroctl.render import Output

        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else "miroctl"
        if exc.format_message():  # empty after a bare `miroctl`, whose help was just printed
            Output().error(exc.format_message(), f"see: {where} --help", label="usage")
        return int(getattr(exc, "exit_code", ExitCode.USAGE))
    return code if isinstance(code, int) else 0


def parse(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, dict[str, Any], list[str]] | None:
    """(command, options, words) for a `call`/`list` through a gateway, or None to leave it to the CLI."""
    if not argv or argv[0] not in _FLAGS:
        return None
    command, options, words = argv[0], {}, []
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
        options["timeout"] = float(options["timeout"])
    except ValueError:
        return False
    return options["timeout"] >= 0.001


def resolve_via(via: str | None, named_servers: bool) -> str | None:
    """The gateway to go through: --via, else $MIROCTL_URL unless servers were named another way."""
    if via and named_servers:
        raise UsageError("--via goes through a gateway, which has its own servers",
                         hint="drop --config/--stdio/--url, or drop --via")
    if via or named_servers:
        return via
    return os.environ.get(URL_ENV) or None


def guarded(out: Any, work: Callable[[], T]) -> T | int:
    """Run a gateway request; an error becomes its one-line message and exit code (returned as an int)."""
    try:
        return work()
    except MiroctlError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        out.error("interrupted by SIGINT", label="interrupted")
        return int(ExitCode.INTERRUPTED)


# ---------------------------------------------------------------------------------------------- commands


def call(via: str, target: list[str], *, out: Any, args: str | None = None, timeout: float | None = None,
         no_autocorrect: bool = False, save_dir: str | None = None, json_mode: bool = False) -> int:
    """`miroctl call ... --via URL`: the gateway's envelope, printed as the direct path would; the exit code."""
    from miroctl import args as args_
    from miroctl.client_http import GatewayClient, outcome_from_dict

    def ask() -> dict[str, Any]:
        if not target:
            raise UsageError("call needs a tool: miroctl call SERVER TOOL [key=value ...]")
        body = {"target": target, "arguments": args_.load_base(args), "timeout": timeout,
                "autocorrect": not no_autocorrect}
        return GatewayClient(via).call(body)

    envelope = guarded(out, ask)
    if isinstance(envelope, int):
        return envelope
    outcome = outcome_from_dict(envelope)
    if json_mode:
        out.json(envelope)
    else:
        from miroctl import blobs
        from miroctl.render import call_result

        call_result(out, outcome, blobs.save(outcome.content, outcome.tool_name, save_dir) if outcome.ok else [])
    return int(outcome.exit_code)


def list_servers(via: str, servers: list[str], *, out: Any, json_mode: bool = False, schema: bool = False) -> int:
    """`miroctl list ... --via URL`: the gateway's list document, as `list` prints it; the exit code."""
    from miroctl.client_http import GatewayClient, server_tools_from_dict

    document = guarded(out, lambda: GatewayClient(via).list(servers))
    if isinstance(document, int):
        return document
    entries = [server_tools_from_dict(entry) for entry in document.get("servers", [])]
    if json_mode:
        out.json(document)
    else:
        from miroctl.render import list_tables

        list_tables(out, entries, schema=schema)
    return 0 if all(entry.ok for entry in entries) else 1


def batch(via: str, text: str, *, out: Any, jobs: int, timeout: float | None, no_autocorrect: bool) -> int:
    """`miroctl call --batch FILE --via URL`: the gateway's envelopes, one JSON line each; the exit code."""
    from miroctl.client_http import GatewayClient

    documents = guarded(out, lambda: GatewayClient(via).batch(text, jobs, timeout, no_autocorrect))
    if isinstance(documents, int):
        return documents
    for document in documents:
        out.json(document)
    return 0 if all(document.get("exit_code") == 0 for document in documents) else 1
