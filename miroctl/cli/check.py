"""`miroctl check`: phased health probes, the table, JSON, JUnit and the tool-surface lock."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import _click as click

from miroctl.base.errors import UsageError
from miroctl.base.models import ServerSpec
from miroctl.base.text import counted, suggest
from miroctl.check import junit, lint, lockfile
from miroctl.check.probe import probe_all, warm_up
from miroctl.check.report import CheckRun
from miroctl.cli import boundary, completion, remote
from miroctl.cli.common import check_record, load_config, manager_for, remember, run
from miroctl.cli.helptext import CHECK, CONNECTION, OUTPUT, WordedCommand
from miroctl.cli.options import (
    AgentOpt,
    ConfigOpt,
    EnvOpt,
    HeaderOpt,
    JsonOpt,
    LogOpt,
    ModeOpt,
    RecordOpt,
    StdioOpt,
    TaskIdOpt,
    UrlOpt,
    seconds,
)
from miroctl.config.loader import Config
from miroctl.core.manager import Manager
from miroctl.remote import GatewayClient, readable
from miroctl.render.checks import check_table
from miroctl.render.output import Output

StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        rich_help_panel=CHECK,
        help="Also lint the tools' names and schemas for model providers (openai, anthropic, gemini; "
        "--strict=gemini for one, =openai-strict for OpenAI's strict mode); findings alone exit 7.",
    ),
]
StrictForOpt = Annotated[str | None, typer.Option("--strict-for", hidden=True)]


class CheckCommand(WordedCommand):
    """`--strict=openai,gemini` is `--strict` for those providers: Typer has no options with an optional value,
    so the form with `=` is read as the hidden --strict-for before parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rewritten: list[str] = []
        for index, arg in enumerate(args):
            if arg == "--":
                rewritten += args[index:]
                break
            if arg.startswith("--strict="):
                rewritten += ["--strict", "--strict-for", arg.removeprefix("--strict=")]
            else:
                rewritten.append(arg)
        return super().parse_args(ctx, rewritten)


def check(
    servers: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SERVER",
            help="Servers to check (default: the profile's).",
            show_default=False,
            autocompletion=completion.servers,
        ),
    ] = None,
    json_mode: JsonOpt = False,
    junit: Annotated[
        str | None,
        typer.Option(
            "--junit",
            metavar="FILE",
            rich_help_panel=OUTPUT,
            help="Also write JUnit XML (one testcase per server) to FILE.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            "-t",
            parser=seconds,
            metavar="SECONDS",
            rich_help_panel=CHECK,
            help="Seconds each server's probe may take, all phases (default: its startup_timeout, 30).",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            "-j",
            min=1,
            metavar="N",
            rich_help_panel=CHECK,
            help="Servers probed at once (default: the profile's concurrency, which is 4 unless it sets one).",
            show_default=False,
        ),
    ] = None,
    smoke: Annotated[
        bool,
        typer.Option(
            "--smoke",
            rich_help_panel=CHECK,
            help="Also make each server's smoke call (smoke: {tool, arguments} in its file).",
        ),
    ] = False,
    lock: Annotated[
        str | None,
        typer.Option(
            "--lock",
            metavar="FILE",
            rich_help_panel=CHECK,
            help="Write the healthy servers' tool names, descriptions, schemas to FILE.",
        ),
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            metavar="FILE",
            rich_help_panel=CHECK,
            help="Compare the tools with a lock file; any change fails the check.",
        ),
    ] = None,
    allow_fail: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-fail",
            metavar="NAME",
            rich_help_panel=CHECK,
            help="A server known to be broken: reported, but not failing (repeatable).",
        ),
    ] = None,
    strict: StrictOpt = False,
    strict_for: StrictForOpt = None,
    mode: ModeOpt = None,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    config: ConfigOpt = None,
    agent: AgentOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    env: EnvOpt = None,
    via: Annotated[
        str | None,
        typer.Option(
            "--via",
            metavar="URL",
            rich_help_panel=CONNECTION,
            help="A running `miroctl serve` probes its servers. [env: MIROCTL_URL]",
        ),
    ] = None,
    record: RecordOpt = None,
) -> None:
    """Probe every selected server phase by phase; exit 1 if any is unhealthy or its tools drifted."""
    out = boundary.output(json_mode)
    providers = lint.parse_providers(strict_for or "all") if strict or strict_for else None
    check_record(record, via)
    gateway_url = remote.resolve_via(via, bool(config or agent or stdio or url or record))
    if gateway_url:
        body = {
            "servers": servers or [],
            "timeout": timeout,
            "concurrency": concurrency,
            "smoke": smoke,
            "allow_fail": allow_fail or [],
            "surface": bool(lock or against or providers),
        }
        _check_via(
            out,
            gateway_url,
            body,
            {"--mode": mode, "--task-id": task_id, "--log": log},
            json_mode,
            (junit, lock, against),
            providers,
        )
    loaded = load_config(config, stdio, url, header, out, None, env, agent)
    concurrency = concurrency or loaded.profile.concurrency
    specs = list({spec.name: spec for spec in loaded.select(servers or ())}.values())
    allowed, locked = _check_inputs(loaded, specs, allow_fail or [], against, (junit, lock))
    with out.live(f"checking {counted(len(specs), 'server')}") as view:
        stages = view.on_stage if view else None
        manager = manager_for(loaded, out, mode, task_id=task_id, log=log, record=record, stages=stages)
        result = run(lambda: _probe(manager, specs, timeout, concurrency, smoke))
    result.allow(allowed)
    if providers is not None:
        result.lint_tools(providers)
    remember(specs, {report.server: report.tools for report in result.reports if report.ok})
    _finish(out, result, locked, json_mode, junit, lock, against)


def _finish(
    out: Output,
    result: CheckRun,
    locked: lockfile.Lock | None,
    json_mode: bool,
    junit: str | None,
    lock: str | None,
    against: str | None,
) -> None:
    """Lock, JUnit, the table or the JSON document, and the exit code: the same with or without --via."""
    if lock or against:
        result.lock = _lock(out, result, locked, lock, against)
    if junit:
        _write_junit(out, junit, result.to_dict())
    if json_mode:
        out.json(result.to_dict())
    else:
        check_table(out, result)
    raise typer.Exit(result.exit_code)


def _check_via(
    out: Output,
    gateway_url: str,
    body: dict[str, Any],
    local: dict[str, Any],
    json_mode: bool,
    files: tuple[str | None, str | None, str | None],
    providers: tuple[str, ...] | None,
) -> None:
    """`check --via URL`: the gateway probes its servers afresh; lock, lint, JUnit and output are made here."""
    junit, lock, against = files
    _local_only(local)
    locked = lockfile.read(against) if against else None
    for path in (junit, lock):
        _writable(path)
    with out.progress(f"checking through {gateway_url}"):
        document = GatewayClient(gateway_url).check(body)
    surface = document.pop("surface", None)
    checked = readable(gateway_url, lambda: CheckRun.from_dict(document, surface))
    if providers is not None:
        checked.lint_tools(providers)
    _finish(out, checked, locked, json_mode, junit, lock, against)


def _local_only(options: dict[str, Any]) -> None:
    """Options that set this process's own policy, which a check through a gateway would silently drop."""
    given = [name for name, value in options.items() if value]
    if given:
        raise UsageError(
            f"{given[0]} does not apply to a check through a gateway: it probes with its own policy, task id and log",
            hint=f"drop {given[0]}, or set it on `miroctl serve`",
        )


def _check_inputs(
    loaded: Config, specs: list[ServerSpec], allow_fail: list[str], against: str | None, outputs: tuple[str | None, ...]
) -> tuple[list[str], lockfile.Lock | None]:
    """Everything about a check's command line that can be wrong, found before any server starts."""
    if not specs:
        raise UsageError(f"no servers to check in {loaded.source}", hint="name some, or add server files")
    allowed = _allowed_failures(loaded, specs, allow_fail)
    locked = lockfile.read(against) if against else None
    for path in outputs:
        _writable(path)
    return allowed, locked


async def _probe(
    manager: Manager, specs: list[ServerSpec], timeout: float | None, concurrency: int, smoke: bool
) -> CheckRun:
    started = time.perf_counter()  # the run's time is the wall time of the check, loading the SDK included
    warm_up(specs)  # before any server's clock starts: miroctl's own import is not a server's spawn time
    async with manager:
        reports = await probe_all(manager, specs, timeout=timeout, concurrency=concurrency, smoke=smoke)
    return CheckRun(
        reports,
        manager.config.source,
        duration_ms=(time.perf_counter() - started) * 1000,
        concurrency=concurrency,
        timeout=timeout,
        smoke=smoke,
    )


def _allowed_failures(loaded: Config, specs: list[ServerSpec], names: list[str]) -> list[str]:
    """--allow-fail names as the selected servers' names; an unknown name is a usage error."""
    selected = [spec.name for spec in specs]
    allowed = []
    for name in names:
        spec = loaded.get(name)
        if spec is None or spec.name not in selected:
            raise UsageError(f"--allow-fail {name}: no such server among those checked", hint=suggest(name, selected))
        allowed.append(spec.name)
    return allowed


def _writable(path: str | None) -> None:
    if path and not Path(path).expanduser().resolve().parent.is_dir():
        raise UsageError(f"cannot write {path}: its directory does not exist")


def _lock(
    out: Output, result: CheckRun, locked: lockfile.Lock | None, lock: str | None, against: str | None
) -> lockfile.LockCheck:
    current = lockfile.surface(result.reports, mask=out.masker.data)
    check = lockfile.compare(locked, current) if locked is not None else lockfile.LockCheck()
    check.against = against
    findings = {r.server: r.lint for r in result.reports if r.ok and r.lint is not None}
    if locked is not None and result.strict is not None:
        lockfile.compare_lint(check, locked, findings)
    if lock:
        previous = locked if against == lock else _previous_lock(lock)
        keys = {server: lint.keys(found) for server, found in findings.items()} if result.strict is not None else None
        try:
            lockfile.write(lock, lockfile.document(current, previous, keys))
        except OSError as exc:
            raise UsageError(f"cannot write lock file {lock}: {exc.strerror or exc}") from None
        check.written = lock
    return check


def _previous_lock(path: str) -> lockfile.Lock | None:
    """The lock file being replaced, if it is one: servers this run did not see healthy stay in it."""
    if not Path(path).is_file():
        return None
    try:
        return lockfile.read(path)
    except UsageError:
        return None


def _write_junit(out: Output, path: str, document: dict[str, Any]) -> None:
    try:
        junit.write(path, out.masker.data(document))
    except OSError as exc:
        raise UsageError(f"cannot write JUnit file {path}: {exc.strerror or exc}") from None
