"""`miroctl bench`: load-test one tool on a warm session (or through a gateway); the summary and its exit code."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NoReturn

import anyio
import typer

from miroctl.base.errors import ErrorKind, Interrupted, MiroctlError, UsageError
from miroctl.base.models import CallRequest
from miroctl.cli import boundary, remote
from miroctl.cli.common import check_log, load_config, manager_for, run
from miroctl.cli.helptext import CALL, LOAD
from miroctl.cli.options import (
    ConfigOpt,
    EnvOpt,
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
    seconds,
)
from miroctl.core import bench
from miroctl.core.arguments import load_base, split_pair, split_target
from miroctl.remote import GatewayClient
from miroctl.render.bench import bench_summary, progress_line
from miroctl.render.output import Output

TICK = 0.2  # seconds between updates of the live progress
DEFAULT_TIMEOUT = 30.0  # a load test measures: an answer slower than this is a timeout, not a long wait


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number of calls per second") from None
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{text!r} is not a positive number of calls per second")
    return value


def _jobs(text: str) -> int:
    """1 to 10000 calls in flight (a parser, not a range: Typer's range would widen the help's columns)."""
    try:
        value = int(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a whole number of calls") from None
    if not 1 <= value <= 10000:
        raise typer.BadParameter(f"{value} is not in the range 1<=x<=10000")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number between 0 and 1") from None
    if not 0 <= value <= 1:  # NaN fails this too
        raise typer.BadParameter(f"{text!r} is not between 0 and 1 (0.05 means 5%)")
    return value


def bench_(
    target: Annotated[
        list[str] | None,
        typer.Argument(help="SERVER TOOL (or SERVER.TOOL, or TOOL), then key=value pairs.", show_default=False),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", "-j", rich_help_panel=LOAD, parser=_jobs, metavar="N", help="Calls in flight (1 to 10000)."
        ),
    ] = 1,
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration",
            "-d",
            rich_help_panel=LOAD,
            parser=seconds,
            metavar="SECONDS",
            help="Run this long (or --requests).",
        ),
    ] = None,
    requests: Annotated[
        int | None,
        typer.Option(
            "--requests", "-n", rich_help_panel=LOAD, min=1, help="Make exactly this many calls (or --duration)."
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            rich_help_panel=LOAD,
            parser=_rate,
            metavar="PER_SECOND",
            help=(
                "Open loop: start calls on this schedule, answered or not (latency from the scheduled start; "
                "calls that cannot start in time count as could not keep up)."
            ),
        ),
    ] = None,
    warmup: Annotated[
        int, typer.Option("--warmup", rich_help_panel=LOAD, min=0, help="Calls made first and not counted.")
    ] = 0,
    max_error_rate: Annotated[
        float,
        typer.Option(
            "--max-error-rate",
            rich_help_panel=LOAD,
            parser=_fraction,
            metavar="FRACTION",
            help="Exit 1 above this share of failed calls.",
        ),
    ] = 0.0,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            "-t",
            rich_help_panel=LOAD,
            parser=seconds,
            metavar="SECONDS",
            help="Seconds each call may take.",
        ),
    ] = DEFAULT_TIMEOUT,
    args: Annotated[
        str | None,
        typer.Option(
            "--args", "-a", metavar="JSON", rich_help_panel=CALL, help="Base arguments: JSON, @file.json or -."
        ),
    ] = None,
    json_mode: JsonOpt = False,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    env: EnvOpt = None,
    startup_timeout: StartupOpt = None,
    mode: ModeOpt = None,
    yes: YesOpt = False,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    via: ViaOpt = None,
) -> None:
    """Call one tool many times at once: latency percentiles, throughput, errors by kind."""
    out = boundary.output(json_mode)
    if (duration is None) == (requests is None):
        raise UsageError("bench needs exactly one of --duration SECONDS and --requests N")
    words = target or []
    if not words:
        raise UsageError("bench needs a tool: miroctl bench SERVER TOOL [key=value ...]")
    base = load_base(args)
    plan = bench.Plan(concurrency, requests, duration, rate, warmup, max_error_rate, timeout)
    tally = bench.Tally()
    gateway_url = remote.resolve_via(via, bool(config or stdio or url))
    if gateway_url and task_id:
        raise UsageError(
            "--task-id does not reach the calls of a bench through a gateway",
            hint="drop --via (the server then starts with this task id)",
        )
    if gateway_url:
        server, tool = _names(words)
        bench.gateway_ready(gateway_url, server, tool)
        client = GatewayClient(gateway_url, timeout=plan.timeout, keep_alive=True)
        call = bench.through_gateway(client, words, base, plan)
        try:
            _finish(
                out,
                plan,
                tally,
                {"server": server, "tool": tool, "via": gateway_url},
                lambda: _load(out, plan, tally, call),
            )
        finally:
            client.close()
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env)
    check_log(loaded, log)
    server_name, tool, pairs = split_target(words, loaded)
    for pair in pairs:
        split_pair(pair)
    about: dict[str, Any] = {"server": server_name, "tool": tool, "via": None}

    async def work() -> None:
        refused: list[MiroctlError] = []  # raised outside the manager's task group, so not wrapped in a group
        async with manager_for(loaded, out, mode, yes, task_id, log, ask_on_terminal=False) as manager:
            request = CallRequest(server_name, tool, base, pairs, timeout=timeout)
            try:
                with out.progress(f"starting {server_name or ''} {tool}".replace("  ", " ")):
                    call, about["server"], about["tool"] = await bench.direct(manager, request, concurrency)
            except MiroctlError as exc:
                refused.append(exc)
            else:
                await _load(out, plan, tally, call)
        if refused:
            raise refused[0]

    _finish(out, plan, tally, about, work)


async def _load(out: Output, plan: bench.Plan, tally: bench.Tally, call: bench.CallFn) -> None:
    """The run, with its live progress on a terminal's stderr."""
    total = plan.requests or plan.duration
    with out.progress("bench") as update:

        async def ticker() -> None:
            while True:
                done = tally.completed if plan.requests else min(tally.elapsed(), plan.duration or 0)
                await update(done, total, progress_line(tally))
                await anyio.sleep(TICK)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await bench.run(plan, call, tally)
            tg.cancel_scope.cancel()


def _finish(
    out: Output, plan: bench.Plan, tally: bench.Tally, about: dict[str, Any], work: Callable[[], Awaitable[None]]
) -> NoReturn:
    """Run, then print the summary (a partial one after Ctrl-C) and exit with its code."""
    try:
        run(work)
    except Interrupted:
        tally.interrupted = True
        _show(out, bench.summary(plan, tally, about))
        raise
    if tally.refusal is not None:
        refused = tally.refusal
        raise _refused(refused.error or "refused", refused.hint, refused.error_kind)
    document = bench.summary(plan, tally, about)
    _show(out, document)
    code = document["exit_code"]
    raise typer.Exit(code if isinstance(code, int) else 1)


def _show(out: Output, document: dict[str, Any]) -> None:
    if out.json_mode:
        out.json(document)
    else:
        bench_summary(out, document)


def _refused(message: str, hint: str | None, kind: str | None) -> MiroctlError:
    """The first answer said every call would be refused: the run stopped, with that answer's kind."""
    error = MiroctlError(f"the load test stopped: {message}", hint=hint)
    if kind is not None:
        error.kind = ErrorKind(kind)
    return error


def _names(words: list[str]) -> tuple[str, str]:
    """SERVER and TOOL as the command line gives them (the gateway resolves them itself)."""
    first, second = words[0], words[1] if len(words) > 1 and "=" not in words[1] else ""
    if not second and "." in first:
        return (first.split(".", 1)[0], first.split(".", 1)[1])
    return (first, second) if second else ("", first)
