"""`miroctl list`: parse, load the config, ask the manager, render, exit."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from miroctl.base.errors import Interrupted, UsageError
from miroctl.base.models import ServerSpec, ServerTools, list_document
from miroctl.base.text import counted
from miroctl.cli import boundary, completion, remote
from miroctl.cli.common import (
    Deferred,
    check_log,
    check_record,
    lean_connector,
    load_config,
    manager_for,
    remember,
    run,
)
from miroctl.cli.helptext import OUTPUT
from miroctl.cli.options import (
    AgentOpt,
    ConfigOpt,
    EnvOpt,
    HeaderOpt,
    JsonOpt,
    LogOpt,
    ModeOpt,
    NoDaemonOpt,
    RecordOpt,
    StartupOpt,
    StdioOpt,
    TaskIdOpt,
    UrlOpt,
    ViaOpt,
    performed,
)
from miroctl.config.loader import Config
from miroctl.config.sections import Mode
from miroctl.core.arguments import list_target, only_tool
from miroctl.launch.handoff import Launch
from miroctl.render.listing import View, list_tables
from miroctl.render.output import Output
from miroctl.sessions.connectors import SDK


def list_(
    ctx: typer.Context,
    servers: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SERVER",
            help="Servers to list (default: the profile's), or SERVER TOOL (SERVER.TOOL) for one tool in detail.",
            show_default=False,
            autocompletion=completion.servers,
        ),
    ] = None,
    json_mode: JsonOpt = False,
    schema: Annotated[
        bool,
        typer.Option(
            "--schema",
            rich_help_panel=OUTPUT,
            help="Each tool in detail: parameters, nested and output schemas, an example call.",
        ),
    ] = False,
    brief: Annotated[
        bool,
        typer.Option(
            "--brief",
            rich_help_panel=OUTPUT,
            help="One line per tool: name(parameter*: type, ...) and its description's first sentence.",
        ),
    ] = False,
    resources: Annotated[
        bool,
        typer.Option(
            "--resources",
            rich_help_panel=OUTPUT,
            help="Also list each server's resources and resource templates (read one with miroctl read).",
        ),
    ] = False,
    prompts: Annotated[
        bool,
        typer.Option(
            "--prompts", rich_help_panel=OUTPUT, help="Also list each server's prompts (get one with miroctl prompt)."
        ),
    ] = False,
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
    via: ViaOpt = None,
    no_daemon: NoDaemonOpt = False,
    record: RecordOpt = None,
) -> None:
    """List the tools of every selected server; failing servers are reported in place (exit 1)."""
    raise performed(perform, ctx, locals())


def perform(
    launch: Launch | None,
    *,
    servers: list[str] | None = None,
    json_mode: bool = False,
    schema: bool = False,
    brief: bool = False,
    resources: bool = False,
    prompts: bool = False,
    config: str | None = None,
    agent: str | None = None,
    stdio: list[str] | None = None,
    url: list[str] | None = None,
    header: list[str] | None = None,
    env: list[str] | None = None,
    startup_timeout: float | None = None,
    mode: Mode | None = None,
    task_id: str | None = None,
    log: str | None = None,
    via: str | None = None,
    no_daemon: bool = False,
    record: str | None = None,
) -> int:
    """`miroctl list` once its command line is read (by Typer, or by the option table: cli/direct.py): the
    exit code."""
    del no_daemon  # read before this runs (cli/prestart.py)
    out = boundary.output(json_mode)
    extras = frozenset(name for name, asked in (("resources", resources), ("prompts", prompts)) if asked)
    if via and extras:
        raise UsageError("--resources and --prompts are not served through a gateway", hint="drop --via")
    if brief and schema:
        raise UsageError("--brief and --schema do not go together", hint="--brief: one line per tool; --schema: all")
    check_record(record, via)
    gateway_url = remote.resolve_via(via, bool(config or agent or stdio or url or record))
    if gateway_url and not extras:  # MIROCTL_URL set: resources and prompts come from the servers directly
        return remote.list_servers(gateway_url, servers or [], out=out, schema=schema, brief=brief)
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env, agent, launch=launch)
    servers, tool = list_target(servers or [], loaded, adhoc=bool(stdio or url))
    shown = View(
        schema=schema or tool is not None, brief=brief, connection=_connection(config, agent, stdio, url, header, env)
    )
    specs = loaded.select(servers)
    check_log(loaded, log)

    answered: list[ServerTools] = []  # each server's entry as it comes: shown even when Ctrl-C stops the rest
    printed: list[ServerTools] = []  # what was shown, before the servers were stopped
    deferred = Deferred()
    stopped: Interrupted | None = None
    with out.live(f"listing {counted(len(specs), 'server')}") as view:

        async def work() -> None:
            stages = view.on_stage if view else None
            async with manager_for(
                loaded,
                out,
                mode,
                task_id=task_id,
                log=log,
                record=record,
                stages=stages,
                connector=SDK if extras else lean_connector(launch),
            ) as manager:
                entries = await manager.list_tools(specs, extras, on_entry=answered.append)
                with deferred.catching():  # no such tool, a full disk: said once the servers are stopped
                    printed.extend(_show(out, loaded, specs, entries, tool, shown))  # at once: servers may stop slowly
            deferred.check()

        try:
            run(work)
        except Interrupted as exc:
            stopped = exc
    if stopped is not None:
        if not printed:
            _show_answered(out, loaded, _in_order(answered, specs), tool, shown)
        raise stopped  # after the servers that answered: the interruption's line and exit code
    return 0 if all(e.healthy for e in printed) else 1


def _show(
    out: Output, loaded: Config, specs: list[ServerSpec], entries: list[ServerTools], tool: str | None, shown: View
) -> list[ServerTools]:
    """Every server's entry as a table (or one JSON document), remembered for completion; what was shown."""
    out.end_live()
    remember(specs, {entry.server: entry.tools for entry in entries if entry.ok})
    if tool is not None:
        entries = [only_tool(entry, tool) for entry in entries]
    if out.json_mode:
        out.json(list_document(loaded.source, entries))
    else:
        list_tables(out, entries, shown)
    return entries


def _in_order(entries: list[ServerTools], specs: list[ServerSpec]) -> list[ServerTools]:
    """The entries in the order of the selected servers (they answer in any order)."""
    order = {spec.name: index for index, spec in enumerate(specs)}
    return sorted(entries, key=lambda entry: order.get(entry.server, len(order)))


def _show_answered(out: Output, loaded: Config, entries: list[ServerTools], tool: str | None, shown: View) -> None:
    """An interrupted listing: the servers that had answered, as `list` shows them (nothing if none had)."""
    if tool is not None:
        entries = [replace(e, tools=tuple(t for t in e.tools if t.name == tool)) if e.ok else e for e in entries]
    if not entries:
        return
    if out.json_mode:
        out.json(list_document(loaded.source, entries))
    else:
        list_tables(out, entries, shown)


def _connection(
    config: str | None,
    agent: str | None,
    stdio: list[str] | None,
    url: list[str] | None,
    header: list[str] | None,
    env: list[str] | None,
) -> tuple[str, ...]:
    """The options that chose the servers, as words a `miroctl call` line needs to reach the same ones."""
    words: list[str] = []
    for option, value in (("-c", config), ("--agent", agent)):
        if value:
            words += [option, value]
    for option, values in (("--stdio", stdio), ("--url", url), ("--header", header), ("--env", env)):
        for value in values or ():
            words += [option, value]
    return tuple(words)
