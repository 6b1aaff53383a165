"""What every command does the same way: load the config, make the Output and the Manager, run the core.

Errors are raised, never printed here: the boundary (miroctl.cli.boundary) reports them.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import anyio

from miroctl.base.errors import Interrupted, MiroctlError, UsageError
from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.config.loader import Config, load
from miroctl.config.sections import Mode
from miroctl.core import toolcache
from miroctl.core.calllog import CallLog
from miroctl.core.manager import Confirmation, ConfirmFn, Manager
from miroctl.launch.handoff import Launch, ignored
from miroctl.launch.options import probe_writable
from miroctl.policy.decisions import Policy
from miroctl.render.output import Output
from miroctl.sessions import connectors
from miroctl.sessions.connectors import Connector
from miroctl.sessions.prestart import EarlyServers
from miroctl.sessions.stages import StageFn
from miroctl.sessions.tokens import stored_secrets

T = TypeVar("T")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Deferred:
    """An error met while a result is shown inside the block that runs the servers: raised by `check` once the
    block has stopped them, as it would have been raised after it (not wrapped in the block's task group)."""

    def __init__(self) -> None:
        self.error: MiroctlError | None = None

    @contextmanager
    def catching(self) -> Iterator[None]:
        try:
            yield
        except MiroctlError as exc:  # OutputLost too: stdout cannot take it (render/output.py)
            self.error = exc

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def run(work: Callable[[], Awaitable[T]]) -> T:
    """Run the async core once; Ctrl-C, SIGTERM and SIGHUP stop it (every server first) as `Interrupted`.

    The signals stay miroctl's until the core has finished stopping: a second Ctrl-C, or a supervisor's
    SIGTERM after it, is absorbed instead of killing miroctl halfway through stopping its servers. One that
    was ignored when miroctl started (nohup's SIGHUP) stays ignored."""
    received: list[int] = []

    async def guarded() -> T:
        results: list[T] = []
        errors: list[MiroctlError] = []
        taken = [signum for signum in STOP_SIGNALS if not ignored(signum)]  # an ignored one stays ignored
        with _handlers_restored(), anyio.open_signal_receiver(*taken) as signals:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_watch_signals, signals, tg.cancel_scope, received)
                try:
                    results.append(await work())
                except MiroctlError as exc:  # raised outside the task group, so it is not wrapped in a group
                    errors.append(exc)
                tg.cancel_scope.cancel()
        if errors:
            raise errors[0]
        if not results:
            raise Interrupted(received[0] if received else signal.SIGINT)
        return results[0]

    try:
        result = anyio.run(guarded)
    except KeyboardInterrupt:
        received.append(signal.SIGINT)
    if received:
        raise Interrupted(received[0])
    return result


@contextmanager
def _handlers_restored() -> Iterator[None]:
    """The stop signals' handlers as they were before the core took them. anyio's receiver leaves each at its
    default action (asyncio's `remove_signal_handler` does), under which a SIGTERM between the core's end and
    miroctl's exit killed it without a word, its output perhaps unwritten, instead of ending it as the
    command line's own handler says (launch/handoff.py: one line, exit 143)."""
    before = [(signum, signal.getsignal(signum)) for signum in STOP_SIGNALS]
    try:
        yield
    finally:
        for signum, handler in before:
            if handler is not None:  # None: a handler not set from Python, which Python cannot put back
                signal.signal(signum, handler)


async def _watch_signals(signals: AsyncIterator[int], scope: anyio.CancelScope, received: list[int]) -> None:
    """The first stop signal cancels the core; later ones only wait in the receiver while it stops."""
    async for signum in signals:
        received.append(signum)
        scope.cancel()
        return


def lean_connector(launch: Launch | None) -> Connector:
    """The lean connector of a cold call or list, adopting the servers the early start began for it."""
    early = launch.early_servers if launch is not None else None
    return connectors.Lean(early) if isinstance(early, EarlyServers) else connectors.LEAN


def load_config(
    config: str | None,
    stdio: list[str] | None,
    url: list[str] | None,
    header: list[str] | None,
    out: Output,
    startup_timeout: float | None = None,
    env: list[str] | None = None,
    agent: str | None = None,
    *,
    launch: Launch | None = None,
) -> Config:
    """The config the command line names (the one the early start read, when it read this one); its secrets
    (and the OAuth tokens stored for it) are masked in `out`."""
    early = launch.take_config(config) if launch is not None and not (stdio or url or header or env or agent) else None
    if not isinstance(early, Config):
        early = load(config, stdio=stdio or (), urls=url or (), headers=header or (), env=env or (), agent=agent)
    loaded = early
    tokens = stored_secrets(spec.url for spec in loaded.servers if spec.url)
    out.masker = out.masker.with_secrets(loaded.secrets() | tokens)
    if startup_timeout:
        loaded = replace(loaded, profile=replace(loaded.profile, startup_timeout=startup_timeout))
    return loaded


def manager_for(
    loaded: Config,
    out: Output,
    mode: Mode | None = None,
    yes: bool = False,
    task_id: str | None = None,
    log: str | None = None,
    *,
    ask_on_terminal: bool = True,
    follow_changes: bool = False,
    record: str | None = None,
    stages: StageFn | None = None,
    connector: Connector = connectors.SDK,
    stop_grace: float | None = None,
) -> Manager:
    """A Manager with the profile's policy and the command line's --mode, --yes, --task-id and --log."""
    policy = Policy.from_profile(loaded.profile).with_overrides(
        mode=mode.value if mode else None, assume_yes=True if yes else None
    )
    confirm = _confirm_on_terminal(out) if ask_on_terminal else None
    return Manager(
        loaded,
        policy=policy,
        confirm=confirm,
        log_path=log,
        task_id=task_id,
        follow_changes=follow_changes,
        record_path=record,
        stages=stages,
        connector=connector,
        masker=out.masker,  # every file miroctl writes masks what its stdout masks
        stop_grace=stop_grace,
    )


def _confirm_on_terminal(out: Output) -> ConfirmFn | None:
    """Mode ask's prompt, only when someone can answer it (stdin and stderr are terminals)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def confirm(question: Confirmation) -> bool:
        return await anyio.to_thread.run_sync(out.confirm, question, abandon_on_cancel=True)

    return confirm


def remember(specs: list[ServerSpec], listed: dict[str, tuple[ToolInfo, ...]]) -> None:
    """Keep what each server listed for shell completion (names only; see miroctl.core.toolcache)."""
    for spec in specs:
        if spec.name in listed:
            toolcache.store(spec, listed[spec.name])


def check_log(loaded: Config, path: str | None) -> None:
    """Open the call log (--log, else the profile's) once before anything starts: exit 2 if it cannot be."""
    path = path or loaded.profile.sections.log
    if path:
        CallLog(path).close()


def check_record(path: str | None, via: str | None) -> None:
    """--record must name a writable file, and the traffic must be miroctl's own to see (no --via)."""
    if not path:
        return
    if via:
        raise UsageError("--record sees the traffic of servers miroctl runs itself", hint="drop --via")
    try:
        probe_writable(Path(path).expanduser())
    except OSError as exc:
        raise UsageError(f"--record {path}: cannot write there: {exc.strerror or exc}") from None


def check_output(path: str | None) -> None:
    """--output must name a file miroctl can create or write (exit 2 before anything starts or is sent)."""
    if not path:
        return
    target = Path(path).expanduser()
    try:
        probe_writable(target)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError):
            reason = "its directory does not exist"
        raise UsageError(f"--output {path}: cannot write there: {reason}", hint="give a writable file path") from None
