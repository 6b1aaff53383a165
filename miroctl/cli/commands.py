"""`miroctl list` and `miroctl call`: parse, load the config, ask the manager, render, exit."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from miroctl.cli import remote
from miroctl.cli.base import (
    ConfigOpt,
    HeaderOpt,
    JsonOpt,
    LogOpt,
    ModeOpt,
    StartupOpt,
    StdioOpt,
    TaskIdOpt,
    UrlOpt,
    ViaOpt,
    YesOpt,
    app,
    check_log,
    check_output,
    fail,
    load_config,
    make_output,
    manager_for,
    run,
    select,
)
from miroctl.errors import UsageError


@app.command("list")
def list_(
    servers: Annotated[list[str] | None, typer.Argument(help="Servers to list (default: the profile's).")] = None,
    json_mode: JsonOpt = False,
    schema: Annotated[bool, typer.Option("--schema", help="Show each tool's full description and input schema.")] = False,
    resources: Annotated[bool, typer.Option("--resources", help="Also list each server's resources and resource "
                                            "templates (read one with miroctl read).")] = False,
    prompts: Annotated[bool, typer.Option("--prompts", help="Also list each server's prompts (get one with "
                                          "miroctl prompt).")] = False,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    startup_timeout: StartupOpt = None,
    mode: ModeOpt = None,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    via: ViaOpt = None,
) -> None:
    """List the tools of every selected server; failing servers are reported in place (exit 1)."""
    from miroctl.render import list_tables

    out = make_output(json_mode)
    extras = frozenset(name for name, asked in (("resources", resources), ("prompts", prompts)) if asked)
    if via and extras:
        fail(out, UsageError("--resources and --prompts are not served through a gateway", hint="drop --via"))
    gateway_url = remote.resolve_via(via, config, stdio, url, out)
    if gateway_url and not extras:  # MIROCTL_URL set: resources and prompts come from the servers directly
        remote.list_via(gateway_url, servers or [], json_mode, schema, out)
    loaded = load_config(config, stdio, url, header, out, startup_timeout)
    specs = select(loaded, servers, out)
    check_log(loaded, log, out)

    async def work() -> list[Any]:
        async with manager_for(loaded, out, mode, task_id=task_id, log=log) as manager:
            return await manager.list_tools(specs, extras)

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
    mode: ModeOpt = None,
    yes: YesOpt = False,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", help="Write the whole result text to this file (no max_result_chars cut).")] = None,
    via: ViaOpt = None,
    batch_file: Annotated[str | None, typer.Option(
        "--batch", help="JSON lines of {server, tool, arguments} (- for stdin): every call over one pool, one "
        "envelope per output line, in input order.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Calls in flight at once with --batch.")] = 8,
) -> None:
    """Call one tool and print its result; the exit code says how it went."""
    from miroctl import args as args_
    from miroctl import blobs
    from miroctl.manager import CallRequest
    from miroctl.render import call_result

    out = make_output(json_mode)
    check_output(output, out)
    gateway_url = remote.resolve_via(via, config, stdio, url, out)
    if batch_file is not None:
        remote.call_batch(batch_file, target, args, jobs, timeout, no_autocorrect, gateway_url, out,
                          lambda: manager_for(load_config(config, stdio, url, header, out, startup_timeout), out,
                                              mode, yes, task_id, log))
    if gateway_url:
        remote.call_via(gateway_url, target or [], args, timeout, no_autocorrect, save_dir, json_mode, out)
    loaded = load_config(config, stdio, url, header, out, startup_timeout)
    check_log(loaded, log, out)
    try:
        server, tool, pairs = split_target(target, loaded)
        for pair in pairs:
            args_.split_pair(pair)
        base = args_.load_base(args)
    except UsageError as exc:
        fail(out, exc)

    async def work() -> Any:
        async with manager_for(loaded, out, mode, yes, task_id, log) as manager:
            with out.progress(f"{tool}") as progress:
                request = CallRequest(server, tool, base, pairs, timeout=timeout,
                                      autocorrect=not no_autocorrect, progress=progress, output=output)
                return await manager.call(request)

    outcome = run(out, work)
    if json_mode:
        out.json(outcome.to_dict())
    else:
        saved = blobs.save(outcome.content, outcome.tool_name, save_dir) if outcome.ok else []
        call_result(out, outcome, saved)
    raise typer.Exit(int(outcome.exit_code))
