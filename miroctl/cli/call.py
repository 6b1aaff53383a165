"""`miroctl call`: parse, load the config, ask the manager, render, exit."""

from __future__ import annotations

from typing import Annotated, BinaryIO

import typer

from miroctl.base.errors import UsageError
from miroctl.base.models import CallOutcome, CallRequest
from miroctl.cli import boundary, completion, remote
from miroctl.cli.common import (
    Deferred,
    check_log,
    check_output,
    check_record,
    lean_connector,
    load_config,
    manager_for,
    run,
)
from miroctl.cli.helptext import CALL, OUTPUT, POLICY
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
    YesOpt,
    performed,
    seconds,
)
from miroctl.config.loader import Config
from miroctl.config.sections import Mode
from miroctl.core import batch, toolcache
from miroctl.core.arguments import load_base, split_pair, split_target
from miroctl.core.manager import Manager
from miroctl.launch.handoff import Launch
from miroctl.render import blobs
from miroctl.render.output import Output
from miroctl.render.results import call_result


def call(
    ctx: typer.Context,
    target: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SERVER TOOL KEY=VALUE",
            autocompletion=completion.call_target,
            help="SERVER TOOL, SERVER.TOOL or TOOL, then key=value pairs (key:=json for raw JSON).",
            show_default=False,
        ),
    ] = None,
    args: Annotated[
        str | None,
        typer.Option(
            "--args",
            "-a",
            metavar="JSON|@FILE|-",
            rich_help_panel=CALL,
            help="Base arguments: a JSON object, @file.json, or - for stdin; pairs override it.",
        ),
    ] = None,
    json_mode: JsonOpt = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            "-t",
            parser=seconds,
            metavar="SECONDS",
            rich_help_panel=CALL,
            help="Seconds the call may take (default: server, profile, 900).",
        ),
    ] = None,
    no_autocorrect: Annotated[
        bool,
        typer.Option(
            "--no-autocorrect",
            rich_help_panel=POLICY,
            help="Never re-route a call to the one server that has the tool.",
        ),
    ] = False,
    save_dir: Annotated[
        str | None,
        typer.Option(
            "--save-dir",
            metavar="DIR",
            rich_help_panel=OUTPUT,
            help="Where images, audio and blobs of the result are saved (default: a new temp dir).",
        ),
    ] = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    env: EnvOpt = None,
    startup_timeout: StartupOpt = None,
    mode: ModeOpt = None,
    yes: YesOpt = False,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            rich_help_panel=OUTPUT,
            help="Write the whole result text to this file (no max_result_chars cut).",
        ),
    ] = None,
    via: ViaOpt = None,
    no_daemon: NoDaemonOpt = False,
    batch_file: Annotated[
        str | None,
        typer.Option(
            "--batch",
            metavar="FILE",
            rich_help_panel=CALL,
            help="JSON lines of {server, tool, arguments} (- for stdin): every call over one pool, one "
            "envelope per output line, in input order.",
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", min=1, metavar="N", rich_help_panel=CALL, help="Calls in flight at once with --batch."
        ),
    ] = 8,
    record: RecordOpt = None,
) -> None:
    """Call one tool and print its result; the exit code says how it went."""
    raise performed(perform, ctx, locals())


def perform(
    launch: Launch | None,
    *,
    target: list[str] | None = None,
    args: str | None = None,
    json_mode: bool = False,
    timeout: float | None = None,
    no_autocorrect: bool = False,
    save_dir: str | None = None,
    config: str | None = None,
    agent: str | None = None,
    stdio: list[str] | None = None,
    url: list[str] | None = None,
    header: list[str] | None = None,
    env: list[str] | None = None,
    startup_timeout: float | None = None,
    mode: Mode | None = None,
    yes: bool = False,
    task_id: str | None = None,
    log: str | None = None,
    output: str | None = None,
    via: str | None = None,
    no_daemon: bool = False,
    batch_file: str | None = None,
    jobs: int = 8,
    record: str | None = None,
) -> int:
    """`miroctl call` once its command line is read (by Typer, or by the option table: cli/direct.py): the
    exit code."""
    del no_daemon  # read before this runs (cli/prestart.py)
    out = boundary.output(json_mode)
    check_output(output)
    blobs.check_dir(save_dir)
    check_record(record, via)
    gateway_url = remote.resolve_via(via, bool(config or agent or stdio or url or record))
    if batch_file is not None:
        if target or args:
            raise UsageError("--batch reads every call from its lines", hint="drop SERVER TOOL, key=value and --args")
        if gateway_url and task_id:
            raise UsageError(
                "--task-id does not reach a gateway's --batch calls",
                hint="drop --via (the servers then start with this task id), or give each call its own --task-id",
            )
        with batch.closing(batch.open_source(batch_file)) as source:  # unreadable: exit 2, nothing started
            if gateway_url:
                code = remote.batch(
                    gateway_url, source, out=out, jobs=jobs, timeout=timeout, no_autocorrect=no_autocorrect
                )
            else:
                loaded = load_config(config, stdio, url, header, out, startup_timeout, env, agent, launch=launch)
                connector = lean_connector(launch)
                manager = manager_for(loaded, out, mode, yes, task_id, log, record=record, connector=connector)
                code = _batch(out, manager, source, jobs, timeout, no_autocorrect)
        return code
    if gateway_url and output:
        raise UsageError("--output is not supported through a gateway", hint="drop --via, or redirect stdout")
    if gateway_url:
        return remote.call(
            gateway_url,
            target or [],
            out=out,
            args=args,
            timeout=timeout,
            no_autocorrect=no_autocorrect,
            save_dir=save_dir,
            task_id=task_id,
        )
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env, agent, launch=launch)
    check_log(loaded, log)
    server, tool, pairs = split_target(target or [], loaded)
    for pair in pairs:
        split_pair(pair, *_parameters(loaded, server, tool))
    base = load_base(args)

    deferred = Deferred()
    with out.live(f"call {server + '.' if server else ''}{tool}" if tool else f"call {server}") as view:

        async def work() -> CallOutcome:
            stages = view.on_stage if view else None
            manager = manager_for(
                loaded,
                out,
                mode,
                yes,
                task_id,
                log,
                record=record,
                stages=stages,
                connector=lean_connector(launch),
            )
            async with manager:
                request = CallRequest(
                    server,
                    tool,
                    base,
                    pairs,
                    timeout=timeout,
                    autocorrect=not no_autocorrect,
                    progress=view.on_progress if view else None,
                    output=output,
                )
                outcome = await manager.call(request)
                with deferred.catching():
                    _show(out, outcome, save_dir)  # at once: a server may take its time to stop
            deferred.check()
            return outcome

        outcome = run(work)
    return int(outcome.exit_code)


def _show(out: Output, outcome: CallOutcome, save_dir: str | None) -> None:
    """The call's envelope (--json) or its result, saved blobs named."""
    out.end_live()
    if out.json_mode:
        out.json(outcome.to_dict())
    else:
        saved = blobs.save(outcome.content, outcome.tool_name, save_dir) if outcome.ok else None
        call_result(out, outcome, saved)


def _batch(
    out: Output, manager: Manager, source: BinaryIO, jobs: int, timeout: float | None, no_autocorrect: bool
) -> int:
    """--batch: JSON lines in, one envelope per line out (always JSON lines), in input order; the lines are
    read as the calls go, so the first envelopes come before the last line is read."""

    async def work() -> list[CallOutcome]:
        lines = batch.read_lines(batch.chunks_of(source), timeout, not no_autocorrect)
        async with manager:
            return await batch.run(lines, manager.call, lambda outcome: out.json(outcome.to_dict()), jobs)

    return batch.exit_code(run(work))


def _parameters(loaded: Config, server: str | None, tool: str) -> tuple[list[str] | None, str | None]:
    """The tool's parameter names if a listing of its server was cached (nothing is started for them), and
    the command that shows them."""
    spec = loaded.get(server) if server else None
    surface = toolcache.lookup(spec) if spec is not None and tool else None
    shows = f"miroctl list {server} {tool}" if server and tool else None
    return (surface or {}).get(tool), shows
