"""`miroctl serve`: the pool as one MCP server over stdio or HTTP, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import gc
import os
import socket
import sys
from dataclasses import replace
from typing import Annotated, Any

import anyio
import typer

from miroctl.base.errors import Interrupted, UsageError
from miroctl.base.models import ServerSpec
from miroctl.cli import boundary, completion
from miroctl.cli.common import check_record, load_config, manager_for, remember, run
from miroctl.cli.helptext import HTTP, OUTPUT, SERVING
from miroctl.cli.options import (
    AgentOpt,
    ConfigOpt,
    EnvOpt,
    HeaderOpt,
    LogOpt,
    ModeOpt,
    RecordOpt,
    StartupOpt,
    StdioOpt,
    TaskIdOpt,
    UrlOpt,
    seconds,
)
from miroctl.config.loader import Config
from miroctl.gateway import toolmap
from miroctl.gateway.guard import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_SESSION_IDLE,
    HttpSettings,
    check_bind,
)
from miroctl.gateway.http import DEFAULT_GRACE, address_of, bind, serve_http
from miroctl.gateway.server import Gateway, gateway_task_id, serve_stdio
from miroctl.gateway.stdio import STOP_GRACE, host_left
from miroctl.launch.handoff import Launch
from miroctl.render.output import Output
from miroctl.render.serving import serve_report


def serve(
    ctx: typer.Context,
    servers: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SERVER",
            help="Servers to serve (default: the profile's).",
            show_default=False,
            autocompletion=completion.servers,
        ),
    ] = None,
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            "-T",
            metavar="stdio|http",
            rich_help_panel=SERVING,
            help="stdio (for an MCP host) or http. [default: stdio]",
            show_default=False,
        ),
    ] = "stdio",
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="HOST",
            rich_help_panel=SERVING,
            help="Address (http). [default: 127.0.0.1]",
            show_default=False,
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port",
            "-p",
            min=0,
            max=65535,
            metavar="PORT",
            rich_help_panel=SERVING,
            help="Port (http; 0: a free one). [default: 8765]",
            show_default=False,
        ),
    ] = 8765,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            metavar="NAME",
            rich_help_panel=SERVING,
            help="Require this variable's token as Bearer (http).",
        ),
    ] = None,
    separator: Annotated[
        str,
        typer.Option(
            "--separator",
            metavar="TEXT",
            rich_help_panel=SERVING,
            help="Between server and tool in names. [default: __]",
            show_default=False,
        ),
    ] = "__",
    lazy: Annotated[
        bool,
        typer.Option(
            "--lazy",
            rich_help_panel=SERVING,
            help="Expose list_tools and call_tool, not every tool.",
        ),
    ] = False,
    plain_names: Annotated[
        bool,
        typer.Option(
            "--plain-names",
            rich_help_panel=SERVING,
            help="Expose tools, prompts and resources unprefixed.",
        ),
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="HOST[:PORT]",
            rich_help_panel=HTTP,
            hidden=True,
            help="Another Host header to accept, e.g. gateway.lan:8765 or gateway.lan:* (http).",
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="ORIGIN",
            rich_help_panel=HTTP,
            hidden=True,
            help="Another browser Origin to accept, e.g. https://app.example (http).",
        ),
    ] = None,
    max_body: Annotated[
        int,
        typer.Option(
            "--max-body",
            min=1,
            metavar="BYTES",
            rich_help_panel=HTTP,
            hidden=True,
            help="Largest request body in bytes (http).",
        ),
    ] = 4 * 1024 * 1024,
    read_timeout: Annotated[
        float,
        typer.Option(
            "--read-timeout",
            parser=seconds,
            metavar="SECONDS",
            rich_help_panel=HTTP,
            hidden=True,
            help="Seconds a client may take to send a request's headers (then the connection is closed), "
            "and three times that for its body (http).",
        ),
    ] = DEFAULT_READ_TIMEOUT,
    max_sessions: Annotated[
        int,
        typer.Option(
            "--max-sessions",
            min=1,
            metavar="N",
            rich_help_panel=HTTP,
            hidden=True,
            help="MCP sessions open at once; more get 503 (http).",
        ),
    ] = DEFAULT_MAX_SESSIONS,
    session_idle: Annotated[
        float,
        typer.Option(
            "--session-idle",
            parser=seconds,
            metavar="SECONDS",
            rich_help_panel=HTTP,
            hidden=True,
            help="An MCP session with no request for this long is closed (http).",
        ),
    ] = DEFAULT_SESSION_IDLE,
    retry_every: Annotated[
        float,
        typer.Option(
            "--retry-every",
            min=0,
            metavar="SECONDS",
            rich_help_panel=SERVING,
            help="Recheck a down server. [default: 5.0]",
            show_default=False,
        ),
    ] = 5.0,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            parser=seconds,
            metavar="SECONDS",
            rich_help_panel=SERVING,
            help="Calls' time to end on stop. [default: 20.0]",
            show_default=False,
        ),
    ] = DEFAULT_GRACE,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    env: EnvOpt = None,
    startup_timeout: StartupOpt = None,
    mode: ModeOpt = None,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    record: RecordOpt = None,
    json_mode: Annotated[
        bool,
        typer.Option(
            "--json",
            rich_help_panel=OUTPUT,
            help="The ready line and errors as JSON (stdio: on stderr).",
        ),
    ] = False,
) -> None:
    """Serve the selected servers as one MCP server (stdio or HTTP); stop it with Ctrl-C or SIGTERM."""
    if isinstance(ctx.obj, Launch):  # the console entry's run, which ends the process
        ctx.obj.at_exit(_leave_quickly)
    out = boundary.output(json_mode, json_to_stderr=transport == "stdio")
    toolmap.check_separator(separator)
    if transport not in ("stdio", "http"):
        raise UsageError(f"unknown transport {transport!r}", hint="use stdio or http")
    check_record(record, None)
    token = _token(token_env)
    if token:
        out.masker = out.masker.with_secrets([token])
    # Mode ask's questions go to the calling host as elicitations (gateway/approval.py); a host that cannot
    # answer them is denied unless the profile assumes yes.
    options = {
        "separator": separator,
        "lazy": lazy,
        "plain": plain_names,
        "manager": {
            "mode": mode,
            "task_id": task_id or os.environ.get("TASK_ID") or gateway_task_id(),
            "log": log,
            "record": record,
            "stop_grace": STOP_GRACE if transport == "stdio" else None,
        },
        "retry_every": retry_every,
        "grace": grace,
    }
    settings = None
    if transport == "http":
        settings = HttpSettings(
            host=host,
            port=port,
            token=token,
            allow_hosts=allow_host or (),
            allow_origins=allow_origin or (),
            max_body=max_body,
            read_timeout=read_timeout,
            max_sessions=max_sessions,
            session_idle=session_idle,
        )
        check_bind(settings)
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env, agent)
    specs = loaded.select(servers or ())
    if settings is not None:
        _serve_http(loaded, specs, options, out, settings)
    else:
        _serve_stdio(loaded, specs, options, out)


def _leave_quickly() -> None:
    """Once serve is done (its servers stopped, its output written), the interpreter's shutdown would collect
    every object of the SDK's modules again and again, ~0.5 s on an idle machine and over a second on a busy one,
    while the host that closed stdin counts the seconds before it kills serve: frozen, they are left to the
    process's end instead."""
    gc.freeze()


def _token(token_env: str | None) -> str | None:
    if token_env is None:
        return None
    value = os.environ.get(token_env, "")
    if not value.strip():
        raise UsageError(
            f"--token-env {token_env}: that environment variable is empty or unset",
            hint=f"export {token_env}=<a long random token>",
        )
    return value.strip()


def _serve_stdio(loaded: Config, specs: list[ServerSpec], options: dict[str, Any], out: Output) -> None:
    """Serve until stdin ends; a host that closed it and signals serve at once is not an interruption."""
    try:
        run(lambda: _gateway(loaded, specs, options, out))
    except Interrupted:
        if not host_left():
            raise


def _serve_http(
    loaded: Config, specs: list[ServerSpec], options: dict[str, Any], out: Output, settings: HttpSettings
) -> None:
    sock = bind(settings)
    try:
        run(lambda: _gateway(loaded, specs, options, out, (settings, sock)))
    finally:
        sock.close()


async def _gateway(
    loaded: Config,
    specs: list[ServerSpec],
    options: dict[str, Any],
    out: Output,
    http: tuple[HttpSettings, socket.socket] | None = None,
) -> None:
    """Start the pool, report what is served, and serve (stdio, or http: settings and bound socket).

    Over HTTP a stop (SIGTERM, Ctrl-C) drains instead of cutting: the pool runs shielded from the
    cancellation, which only ends the start-up or, once serving, starts the server's drain; the
    servers are stopped after the calls in flight are done."""
    if http is None:
        await _pool(loaded, specs, options, out, None, anyio.CancelScope(), anyio.Event())
        return
    stopping, startup = anyio.Event(), anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_on_stop, stopping, startup)
        with anyio.CancelScope(shield=True):
            await _pool(loaded, specs, options, out, http, startup, stopping)
        tg.cancel_scope.cancel()


async def _on_stop(stopping: anyio.Event, startup: anyio.CancelScope) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        stopping.set()
        startup.cancel()


async def _pool(
    loaded: Config,
    specs: list[ServerSpec],
    options: dict[str, Any],
    out: Output,
    http: tuple[HttpSettings, socket.socket] | None,
    startup: anyio.CancelScope,
    stopping: anyio.Event,
) -> None:
    served = replace(loaded, servers=tuple(specs), default_names=tuple(s.name for s in specs))
    manager_options, retry_every = options.pop("manager"), options.pop("retry_every")
    grace = options.pop("grace")
    clashes: tuple[toolmap.Collision, ...] = ()
    async with manager_for(served, out, **manager_options, ask_on_terminal=False, follow_changes=True) as manager:
        gateway = Gateway(manager, specs, masker=out.masker, **options)
        with startup:
            await gateway.refresh()
        remember(specs, {entry.server: entry.tools for entry in gateway.entries if entry.ok})
        clashes = gateway.map.collisions if gateway.plain else ()
        if not clashes and not startup.cancel_called:
            async with anyio.create_task_group() as watching:
                watching.start_soon(gateway.watch, retry_every)
                await _serve(gateway, out, http, stopping, grace)
                watching.cancel_scope.cancel()
    toolmap.check_plain(clashes)  # raised here, outside the pool's task groups, as one line


async def _serve(
    gateway: Gateway,
    out: Output,
    http: tuple[HttpSettings, socket.socket] | None,
    stopping: anyio.Event,
    grace: float,
) -> None:
    """Report what is served, then serve it until the caller stops (stdio: until stdin ends)."""
    if http is None:
        _ready(out, gateway, "stdio", None)
        if not out.json_mode and sys.stdin.isatty():  # someone typed `miroctl serve` to see what it does
            out.note(
                "waiting for an MCP host on stdin: a host's config starts this (`miroctl install CLIENT` "
                "writes one); Ctrl-C stops",
                "dim",
            )
        await serve_stdio(gateway)
        return
    settings, sock = http
    _ready(out, gateway, "http", f"{address_of(sock)}/mcp")
    await serve_http(gateway, settings, sock, grace, stopping)


def _ready(out: Output, gateway: Gateway, transport: str, url: str | None) -> None:
    """The ready line: one JSON document with --json, else the human report on stderr."""
    if out.json_mode:
        out.json(gateway.ready_document(transport, url))
    else:
        serve_report(out, gateway.health(), url or transport, "" if gateway.plain else gateway.separator)
