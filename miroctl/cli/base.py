"""The Typer app, the options every command shares, and the one error boundary (`run`, `fail`).

Only the cli package turns errors into exit codes. Nothing heavy is imported at module level, so
`miroctl --help` and `--version` stay fast.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NoReturn, TypeVar

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
ViaOpt = Annotated[str | None, typer.Option(
    "--via", help="Go through a running `miroctl serve --transport http` at this URL (fast: no SDK, warm "
    "servers). [env: MIROCTL_URL, unless --config/--stdio/--url is given]")]


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


def load_config(config: str | None, stdio: list[str] | None, url: list[str] | None,
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


def make_output(json_mode: bool) -> Any:
    from miroctl.render import Output

    return Output(json_mode=json_mode)


def manager_for(loaded: Any, out: Any, mode: Mode | None = None, yes: bool = False, task_id: str | None = None,
                log: str | None = None, *, ask_on_terminal: bool = True, follow_changes: bool = False) -> Any:
    """A Manager with the profile's policy and the command line's --mode, --yes, --task-id and --log."""
    from miroctl.manager import Manager
    from miroctl.policy import Policy

    policy = Policy.from_profile(loaded.profile).with_overrides(mode=mode.value if mode else None,
                                                                assume_yes=True if yes else None)
    confirm = _confirm_on_terminal(out) if ask_on_terminal else None
    return Manager(loaded, policy=policy, confirm=confirm, log_path=log, task_id=task_id,
                   follow_changes=follow_changes)


def _confirm_on_terminal(out: Any) -> Any:
    """Mode ask's prompt, only when someone can answer it (stdin and stderr are terminals)."""
    import sys

    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def confirm(question: Any) -> bool:
        import anyio

        return await anyio.to_thread.run_sync(out.confirm, question, abandon_on_cancel=True)

    return confirm


def check_log(loaded: Any, path: str | None, out: Any) -> None:
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


def check_output(path: str | None, out: Any) -> None:
    from pathlib import Path

    if path and not Path(path).expanduser().resolve().parent.is_dir():
        out.error(f"--output {path}: its directory does not exist", label="usage")
        raise typer.Exit(int(ExitCode.USAGE))


def select(config: Any, names: list[str] | None, out: Any) -> list[Any]:
    try:
        return config.select(names or ())
    except UsageError as exc:
        out.error(exc.message, exc.hint, label=exc.kind)
        raise typer.Exit(int(exc.exit_code)) from None



def fail(out: Any, exc: MiroctlError) -> NoReturn:
    """Report an error found outside the async core and exit with its code."""
    out.error(exc.message, exc.hint, label=exc.kind)
    raise typer.Exit(int(exc.exit_code))


def guard(out: Any, work: Callable[[], T]) -> T:
    """Run synchronous work whose MiroctlError becomes its message and exit code."""
    try:
        return work()
    except MiroctlError as exc:
        fail(out, exc)

