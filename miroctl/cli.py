"""The miroctl command line: parse, load the config, ask the core, render, exit.

The one error boundary: only here do exceptions become exit codes. Nothing heavy is imported at
module level, so `miroctl --help` and `--version` stay fast.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from miroctl import __version__
from miroctl.errors import ExitCode, MiroctlError, UsageError

T = TypeVar("T")

app = typer.Typer(
    name="miroctl",
    help="Run, probe, check and serve pools of MCP servers.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

ConfigOpt = Annotated[str | None, typer.Option(
    "--config", "-c", help="Profile yaml, one server yaml, or an mcpServers JSON file. [env: MIROCTL_CONFIG]")]
StdioOpt = Annotated[list[str] | None, typer.Option(
    "--stdio", help="An ad-hoc stdio server: \"CMD ARGS\" (repeatable; replaces the configured servers).")]
UrlOpt = Annotated[list[str] | None, typer.Option(
    "--url", help="An ad-hoc HTTP server: streamable HTTP, or SSE when the path ends in /sse (repeatable).")]
HeaderOpt = Annotated[list[str] | None, typer.Option("--header", "-H", help="'Name: value' for --url servers.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
StartupOpt = Annotated[float | None, typer.Option(
    "--startup-timeout", min=0.001, help="Seconds a server may take to start and list its tools.")]
ViaOpt = Annotated[str | None, typer.Option(
    "--via", help="Go through a running `miroctl serve --transport http` at this URL (fast: no SDK, warm "
    "servers). [env: MIROCTL_URL, unless --config/--stdio/--url is given]")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"miroctl {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """Run, probe, check and serve pools of MCP servers."""


# ---------------------------------------------------------------------------------------------- boundary


def run(out: Any, work: Callable[[], Awaitable[T]]) -> T:
    """Run the async core once; turn errors, Ctrl-C and SIGTERM into messages and exit codes."""
    import anyio

    received: list[int] = []

    async def guarded() -> T:
        results: list[T] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_signals, tg.cancel_scope, received)
            results.append(await work())
            tg.cancel_scope.cancel()
        return results[0] if results else None  # type: ignore[return-value]

    try:
        result = anyio.run(guarded)
    except MiroctlError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None
    except KeyboardInterrupt:
        received.append(signal.SIGINT)
    if received:
        out.error(f"interrupted by {signal.Signals(received[0]).name}; every server was stopped", label="interrupted")
        raise typer.Exit(int(ExitCode.INTERRUPTED) if received[0] == signal.SIGINT else 128 + received[0])
    return result


async def _watch_signals(scope: Any, received: list[int]) -> None:
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            received.append(signum)
            scope.cancel()
            return


def _load_config(config: str | None, stdio: list[str] | None, url: list[str] | None,
                 header: list[str] | None, out: Any, startup_timeout: float | None = None) -> Any:
    from dataclasses import replace

    from miroctl import config as config_

    try:
        loaded = config_.load(config, stdio=stdio or (), urls=url or (), headers=header or ())
    except MiroctlError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None
    out.masker = out.masker.with_secrets(loaded.secrets())
    if startup_timeout:
        loaded = replace(loaded, profile=replace(loaded.profile, startup_timeout=startup_timeout))
    return loaded


def _output(json_mode: bool) -> Any:
    from miroctl.render import Output

    return Output(json_mode=json_mode)


def _select(config: Any, names: list[str] | None, out: Any) -> list[Any]:
    try:
        return config.select(names or ())
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None


# ---------------------------------------------------------------------------------------------- list


@app.command("list")
def list_(
    servers: Annotated[list[str] | None, typer.Argument(help="Servers to list (default: the profile's).")] = None,
    json_mode: JsonOpt = False,
    schema: Annotated[bool, typer.Option("--schema", help="Show each tool's full description and input schema.")] = False,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    startup_timeout: StartupOpt = None,
    via: ViaOpt = None,
) -> None:
    """List the tools of every selected server; failing servers are reported in place (exit 1)."""
    from miroctl.manager import Manager
    from miroctl.render import list_tables

    out = _output(json_mode)
    gateway_url = _resolve_via(via, config, stdio, url, out)
    if gateway_url:
        _list_via(gateway_url, servers or [], json_mode, schema, out)
    loaded = _load_config(config, stdio, url, header, out, startup_timeout)
    specs = _select(loaded, servers, out)

    async def work() -> list[Any]:
        async with Manager(loaded) as manager:
            return await manager.list_tools(specs)

    entries = run(out, work)
    if json_mode:
        out.json({"schema": "miroctl.list/1", "config": loaded.source, "servers": [e.to_dict() for e in entries]})
    else:
        list_tables(out, entries, schema=schema)
    raise typer.Exit(0 if all(e.ok for e in entries) else 1)


# ---------------------------------------------------------------------------------------------- call


def split_target(words: list[str], config: Any) -> tuple[str | None, str, list[str]]:
    """SERVER TOOL [k=v...], SERVER.TOOL [k=v...], or TOOL [k=v...] (the server found by its tool)."""
    if not words:
        raise UsageError("call needs a tool: miroctl call SERVER TOOL [key=value ...]")
    first, rest = words[0], words[1:]
    if "." in first and "=" not in first:
        server, _, tool = first.partition(".")
        if config.get(server) is not None:
            return server, tool, rest
    if rest and "=" not in rest[0]:
        return first, rest[0], rest[1:]
    if "=" in first:
        raise UsageError(f"expected a tool name before the arguments, got {first!r}")
    only = config.select() if len(config.default_names) == 1 else []
    return (only[0].name if only else None), first, rest


@app.command()
def call(
    target: Annotated[list[str] | None, typer.Argument(
        help="SERVER TOOL, SERVER.TOOL or TOOL, then key=value pairs (key:=json for raw JSON).",
        show_default=False)] = None,
    args: Annotated[str | None, typer.Option(
        "--args", "-a", help="Base arguments: a JSON object, @file.json, or - for stdin; pairs override it.")] = None,
    json_mode: JsonOpt = False,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", "-t", min=0.001, help="Seconds the call may take (default: server, profile, 900).")] = None,
    no_autocorrect: Annotated[bool, typer.Option(
        "--no-autocorrect", help="Never re-route a call to the one server that has the tool.")] = False,
    save_dir: Annotated[str | None, typer.Option(
        "--save-dir", help="Where images, audio and blobs of the result are saved (default: a new temp dir).")] = None,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    startup_timeout: StartupOpt = None,
    via: ViaOpt = None,
    batch_file: Annotated[str | None, typer.Option(
        "--batch", help="JSON lines of {server, tool, arguments} (- for stdin): every call over one pool, one "
        "envelope per output line, in input order.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Calls in flight at once with --batch.")] = 8,
) -> None:
    """Call one tool and print its result; the exit code says how it went."""
    from miroctl import args as args_
    from miroctl import blobs
    from miroctl.manager import CallRequest, Manager
    from miroctl.render import call_result

    out = _output(json_mode)
    gateway_url = _resolve_via(via, config, stdio, url, out)
    if batch_file is not None:
        _call_batch(batch_file, target, args, jobs, timeout, no_autocorrect, gateway_url, out,
                    lambda: _load_config(config, stdio, url, header, out, startup_timeout))
    if gateway_url:
        _call_via(gateway_url, target or [], args, timeout, no_autocorrect, save_dir, json_mode, out)
    loaded = _load_config(config, stdio, url, header, out, startup_timeout)
    try:
        server, tool, pairs = split_target(target, loaded)
        for pair in pairs:
            args_.split_pair(pair)
        base = args_.load_base(args)
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None

    async def work() -> Any:
        async with Manager(loaded) as manager:
            with out.progress(f"{tool}") as progress:
                request = CallRequest(server, tool, base, pairs, timeout=timeout,
                                      autocorrect=not no_autocorrect, progress=progress)
                return await manager.call(request)

    outcome = run(out, work)
    if json_mode:
        out.json(outcome.to_dict())
    else:
        saved = blobs.save(outcome.content, outcome.tool_name, save_dir) if outcome.ok else []
        call_result(out, outcome, saved)
    raise typer.Exit(int(outcome.exit_code))


# ---------------------------------------------------------------------------------------------- warm path


def _resolve_via(via: str | None, config: str | None, stdio: list[str] | None, url: list[str] | None,
                 out: Any) -> str | None:
    """The gateway URL to go through (miroctl.warm decides); a usage error exits 2 here."""
    from miroctl import warm

    try:
        return warm.resolve_via(via, bool(config or stdio or url))
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None


def _call_via(gateway_url: str, target: list[str], args: str | None, timeout: float | None,
              no_autocorrect: bool, save_dir: str | None, json_mode: bool, out: Any) -> None:
    from miroctl import warm

    raise typer.Exit(warm.call(gateway_url, target, out=out, args=args, timeout=timeout,
                               no_autocorrect=no_autocorrect, save_dir=save_dir, json_mode=json_mode))


def _list_via(gateway_url: str, servers: list[str], json_mode: bool, schema: bool, out: Any) -> None:
    from miroctl import warm

    raise typer.Exit(warm.list_servers(gateway_url, servers, out=out, json_mode=json_mode, schema=schema))


def _remote(out: Any, work: Callable[[], T]) -> T:
    """Run work whose MiroctlError becomes its message and exit code."""
    try:
        return work()
    except MiroctlError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None


def _call_batch(source: str, target: list[str] | None, args: str | None, jobs: int, timeout: float | None,
                no_autocorrect: bool, gateway_url: str | None, out: Any, load: Callable[[], Any]) -> None:
    """--batch: JSON lines in, one envelope per line out (always JSON lines), in input order."""
    from miroctl import batch

    if target or args:
        out.error("--batch reads every call from its lines", "drop SERVER TOOL, key=value and --args",
                  label="usage")
        raise typer.Exit(int(ExitCode.USAGE))
    text = _remote(out, lambda: batch.read_source(source))
    if gateway_url:
        from miroctl import warm

        raise typer.Exit(warm.batch(gateway_url, text, out=out, jobs=jobs, timeout=timeout,
                                    no_autocorrect=no_autocorrect))
    loaded = load()
    lines = batch.with_defaults(batch.parse_lines(text), timeout, not no_autocorrect)

    async def work() -> list[Any]:
        from miroctl.manager import Manager

        async with Manager(loaded) as manager:
            return await batch.run(lines, manager.call, lambda outcome: out.json(outcome.to_dict()), jobs)

    raise typer.Exit(batch.exit_code(run(out, work)))


# ---------------------------------------------------------------------------------------------- serve


@app.command()
def serve(
    servers: Annotated[list[str] | None, typer.Argument(help="Servers to serve (default: the profile's).")] = None,
    transport: Annotated[str, typer.Option("--transport", "-T", help="stdio (for an MCP host that starts "
                                           "miroctl) or http (streamable HTTP, plus the JSON API).")] = "stdio",
    host: Annotated[str, typer.Option("--host", help="Address to listen on (http); anything but loopback "
                                      "needs --token-env.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port (http); 0 picks a free one.")]
    = 8765,
    token_env: Annotated[str | None, typer.Option("--token-env", help="Require `Authorization: Bearer` with "
                                                     "the token held by this environment variable (http).")] = None,
    separator: Annotated[str, typer.Option("--separator", help="Between server and tool in exposed names.")] = "__",
    lazy: Annotated[bool, typer.Option("--lazy", help="Expose two meta-tools, list_tools and call_tool, instead "
                                       "of every tool (saves a host's prompt tokens on big pools).")] = False,
    allow_host: Annotated[list[str] | None, typer.Option("--allow-host", help="Another Host header to accept, "
                                                            "e.g. gateway.lan:8765 or gateway.lan:* (http).")] = None,
    allow_origin: Annotated[list[str] | None, typer.Option("--allow-origin", help="Another browser Origin to "
                                                              "accept, e.g. https://app.example (http).")] = None,
    max_body: Annotated[int, typer.Option("--max-body", min=1, help="Largest request body in bytes (http).")]
    = 4 * 1024 * 1024,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    startup_timeout: StartupOpt = None,
) -> None:
    """Serve the selected servers as one MCP server (stdio or HTTP); stop it with Ctrl-C or SIGTERM."""
    from miroctl import toolmap

    out = _output(False)
    try:
        toolmap.check_separator(separator)
        if transport not in ("stdio", "http"):
            raise UsageError(f"unknown transport {transport!r}", hint="use stdio or http")
        token = _token(token_env)
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None
    if token:
        out.masker = out.masker.with_secrets([token])
    options = {"separator": separator, "lazy": lazy}
    if transport == "http":
        _serve_http(servers, options, out, config, stdio, url, header, startup_timeout, host=host, port=port,
                    token=token, allow_hosts=allow_host or (), allow_origins=allow_origin or (), max_body=max_body)
    loaded = _load_config(config, stdio, url, header, out, startup_timeout)
    specs = _select(loaded, servers, out)
    run(out, lambda: _gateway(loaded, specs, options, out))
    raise typer.Exit(0)


def _token(token_env: str | None) -> str | None:
    import os

    if token_env is None:
        return None
    value = os.environ.get(token_env, "")
    if not value.strip():
        raise UsageError(f"--token-env {token_env}: that environment variable is empty or unset",
                         hint=f"export {token_env}=<a long random token>")
    return value.strip()


def _serve_http(servers: list[str] | None, options: dict[str, Any], out: Any, config: str | None,
                stdio: list[str] | None, url: list[str] | None, header: list[str] | None,
                startup_timeout: float | None, **http: Any) -> None:
    from miroctl.gateway_http import HttpSettings, bind, check_bind

    settings = HttpSettings(**http)
    try:
        check_bind(settings)
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None
    loaded = _load_config(config, stdio, url, header, out, startup_timeout)
    specs = _select(loaded, servers, out)
    sock = _remote(out, lambda: bind(settings))
    try:
        run(out, lambda: _gateway(loaded, specs, options, out, (settings, sock)))
    finally:
        sock.close()
    raise typer.Exit(0)


async def _gateway(loaded: Any, specs: list[Any], options: dict[str, Any], out: Any,
                   http: tuple[Any, Any] | None = None) -> None:
    """Start the pool, report what is served, and serve (stdio, or http: settings and bound socket)."""
    from dataclasses import replace

    from miroctl.gateway import Gateway, serve_stdio
    from miroctl.manager import Manager
    from miroctl.render import serve_report

    served = replace(loaded, servers=tuple(specs), default_names=tuple(s.name for s in specs))
    async with Manager(served) as manager:
        gateway = Gateway(manager, specs, masker=out.masker, **options)
        await gateway.refresh()
        if http is None:
            serve_report(out, gateway.health(), "stdio", options["separator"])
            await serve_stdio(gateway)
            return
        from miroctl.gateway_http import address_of, serve_http

        settings, sock = http
        serve_report(out, gateway.health(), f"{address_of(sock)}/mcp", options["separator"])
        await serve_http(gateway, settings, sock)


if __name__ == "__main__":  # pragma: no cover
    app()
