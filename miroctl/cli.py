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
from miroctl.policy import Mode

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


ModeOpt = Annotated[Mode | None, typer.Option(
    "--mode", help="Permission mode (default: the profile's policy.mode, else normal).", show_default=False)]
YesOpt = Annotated[bool, typer.Option(
    "--yes", "-y", help="Answer yes to mode ask's questions (destructive and high-risk tools).")]
TaskIdOpt = Annotated[str | None, typer.Option(
    "--task-id", help="Passed to every server as TASK_ID, so per-task state stays apart. [env: TASK_ID]")]
LogOpt = Annotated[str | None, typer.Option(
    "--log", help="Append one JSON line per step (start, decision, retry, fallback, end) to this file.")]


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
        errors: list[MiroctlError] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_signals, tg.cancel_scope, received)
            try:
                results.append(await work())
            except MiroctlError as exc:  # raised outside the task group, so it is not wrapped in a group
                errors.append(exc)
            tg.cancel_scope.cancel()
        if errors:
            raise errors[0]
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


def _manager(loaded: Any, out: Any, mode: Mode | None = None, yes: bool = False, task_id: str | None = None,
             log: str | None = None) -> Any:
    """A Manager with the profile's policy and the command line's --mode, --yes, --task-id and --log."""
    from miroctl.manager import Manager
    from miroctl.policy import Policy

    policy = Policy.from_profile(loaded.profile).with_overrides(mode=mode.value if mode else None,
                                                                assume_yes=True if yes else None)
    return Manager(loaded, policy=policy, confirm=_confirm_on_terminal(out), log_path=log, task_id=task_id)


def _confirm_on_terminal(out: Any) -> Any:
    """Mode ask's prompt, only when someone can answer it (stdin and stderr are terminals)."""
    import sys

    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def confirm(question: Any) -> bool:
        import anyio

        return await anyio.to_thread.run_sync(out.confirm, question, abandon_on_cancel=True)

    return confirm


def _check_log(loaded: Any, path: str | None, out: Any) -> None:
    """Open the call log (--log, else the profile's) once before anything starts: exit 2 if it cannot be."""
    from miroctl.calllog import CallLog
    from miroctl.errors import ConfigError

    path = path or loaded.profile.sections.get("log")
    if path:
        try:
            CallLog(path).close()
        except ConfigError as exc:
            out.error(exc.message, exc.hint, label=exc.kind)
            raise typer.Exit(int(exc.exit_code)) from None


def _check_output(path: str | None, out: Any) -> None:
    from pathlib import Path

    if path and not Path(path).expanduser().resolve().parent.is_dir():
        out.error(f"--output {path}: its directory does not exist", label="usage")
        raise typer.Exit(int(ExitCode.USAGE))


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
    mode: ModeOpt = None,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
) -> None:
    """List the tools of every selected server; failing servers are reported in place (exit 1)."""
    from miroctl.render import list_tables

    out = _output(json_mode)
    loaded = _load_config(config, stdio, url, header, out, startup_timeout)
    specs = _select(loaded, servers, out)
    _check_log(loaded, log, out)

    async def work() -> list[Any]:
        async with _manager(loaded, out, mode, task_id=task_id, log=log) as manager:
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
    target: Annotated[list[str], typer.Argument(
        help="SERVER TOOL, SERVER.TOOL or TOOL, then key=value pairs (key:=json for raw JSON).",
        show_default=False)],
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
) -> None:
    """Call one tool and print its result; the exit code says how it went."""
    from miroctl import args as args_
    from miroctl import blobs
    from miroctl.manager import CallRequest
    from miroctl.render import call_result

    out = _output(json_mode)
    _check_output(output, out)
    loaded = _load_config(config, stdio, url, header, out, startup_timeout)
    _check_log(loaded, log, out)
    try:
        server, tool, pairs = split_target(target, loaded)
        for pair in pairs:
            args_.split_pair(pair)
        base = args_.load_base(args)
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None

    async def work() -> Any:
        async with _manager(loaded, out, mode, yes, task_id, log) as manager:
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


# ---------------------------------------------------------------------------------------------- check


@app.command()
def check(
    servers: Annotated[list[str] | None, typer.Argument(help="Servers to check (default: the profile's).")] = None,
    json_mode: JsonOpt = False,
    junit: Annotated[str | None, typer.Option(
        "--junit", metavar="FILE", help="Also write JUnit XML (one testcase per server) to FILE.")] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", "-t", min=0.001,
        help="Seconds each server's probe may take, all phases (default: its startup_timeout, 30).")] = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-j", min=1, help="Servers probed at once (default: the profile's concurrency, 8).",
        show_default=False)] = None,
    smoke: Annotated[bool, typer.Option(
        "--smoke", help="Also make each server's smoke call (smoke: {tool, arguments} in its file).")] = False,
    lock: Annotated[str | None, typer.Option(
        "--lock", metavar="FILE", help="Write the healthy servers' tool names, descriptions, schemas to FILE.")] = None,
    against: Annotated[str | None, typer.Option(
        "--against", metavar="FILE", help="Compare the tools with a lock file; any change fails the check.")] = None,
    allow_fail: Annotated[list[str] | None, typer.Option(
        "--allow-fail", metavar="NAME", help="A server known to be broken: reported, but not failing (repeatable).")] = None,
    mode: ModeOpt = None,
    task_id: TaskIdOpt = None,
    log: LogOpt = None,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
) -> None:
    """Probe every selected server phase by phase; exit 1 if any is unhealthy or its tools drifted."""
    out = _output(json_mode)
    loaded = _load_config(config, stdio, url, header, out)
    concurrency = concurrency or loaded.profile.concurrency
    specs = list({spec.name: spec for spec in _select(loaded, servers, out)}.values())
    try:
        allowed, locked = _check_inputs(loaded, specs, allow_fail or [], against, (junit, lock))
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None
    manager = _manager(loaded, out, mode, task_id=task_id, log=log)
    result = run(out, lambda: _probe(out, manager, specs, timeout, concurrency, smoke))
    result.allow(allowed)
    if lock or against:
        result.lock = _lock(out, result, locked, lock, against)
    if junit:
        _write_junit(out, junit, result.to_dict())
    if json_mode:
        out.json(result.to_dict())
    else:
        from miroctl.render import check_table

        check_table(out, result)
    raise typer.Exit(result.exit_code)


def _check_inputs(loaded: Any, specs: list[Any], allow_fail: list[str], against: str | None,
                  outputs: tuple[str | None, ...]) -> tuple[list[str], Any]:
    """Everything about a check's command line that can be wrong, found before any server starts."""
    from miroctl import lockfile

    if not specs:
        raise UsageError(f"no servers to check in {loaded.source}", hint="name some, or add server files")
    allowed = _allowed_failures(loaded, specs, allow_fail)
    locked = lockfile.read(against) if against else None
    for path in outputs:
        _writable(path)
    return allowed, locked


async def _probe(out: Any, manager: Any, specs: list[Any], timeout: float | None, concurrency: int,
                 smoke: bool) -> Any:
    import time

    from miroctl.check_report import CheckRun
    from miroctl.probe import probe_all, warm_up

    warm_up(specs)  # miroctl's own import of the SDK is not part of any server's time, nor of the run's
    started = time.perf_counter()
    with out.progress(f"checking {len(specs)} servers") as progress:
        finished: list[str] = []

        async def done(report: Any) -> None:
            finished.append(report.server)
            await progress(len(finished), len(specs), report.server)

        async with manager:
            reports = await probe_all(manager, specs, timeout=timeout, concurrency=concurrency, smoke=smoke,
                                      on_done=done)
    return CheckRun(reports, manager.config.source, duration_ms=(time.perf_counter() - started) * 1000,
                    concurrency=concurrency, timeout=timeout, smoke=smoke)


def _allowed_failures(loaded: Any, specs: list[Any], names: list[str]) -> list[str]:
    """--allow-fail names as the selected servers' names; an unknown name is a usage error."""
    from miroctl.config import suggest

    selected = [spec.name for spec in specs]
    allowed = []
    for name in names:
        spec = loaded.get(name)
        if spec is None or spec.name not in selected:
            raise UsageError(f"--allow-fail {name}: no such server among those checked",
                             hint=suggest(name, selected))
        allowed.append(spec.name)
    return allowed


def _writable(path: str | None) -> None:
    from pathlib import Path

    if path and not Path(path).expanduser().resolve().parent.is_dir():
        raise UsageError(f"cannot write {path}: its directory does not exist")


def _lock(out: Any, result: Any, locked: Any, lock: str | None, against: str | None) -> Any:
    from miroctl import lockfile

    current = lockfile.surface(result.reports, mask=out.masker.data)
    check = lockfile.compare(locked, current) if locked is not None else lockfile.LockCheck()
    check.against = against
    if lock:
        previous = locked if against == lock else _previous_lock(lock)
        try:
            lockfile.write(lock, lockfile.document(current, previous))
        except OSError as exc:
            out.error(f"cannot write lock file {lock}: {exc.strerror or exc}", label="usage")
            raise typer.Exit(int(ExitCode.USAGE)) from None
        check.written = lock
    return check


def _previous_lock(path: str) -> Any:
    """The lock file being replaced, if it is one: servers this run did not see healthy stay in it."""
    from pathlib import Path

    from miroctl import lockfile

    if not Path(path).is_file():
        return None
    try:
        return lockfile.read(path)
    except UsageError:
        return None


def _write_junit(out: Any, path: str, document: Any) -> None:
    from miroctl import junit

    try:
        junit.write(path, out.masker.data(document))
    except OSError as exc:
        out.error(f"cannot write JUnit file {path}: {exc.strerror or exc}", label="usage")
        raise typer.Exit(int(ExitCode.USAGE)) from None


if __name__ == "__main__":  # pragma: no cover
    app()
