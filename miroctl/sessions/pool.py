"""One handle per server: its session, owned by one long-lived task, opened lazily, reopened after a loss.

The SDK requires a client to be entered and exited in the same task, so each connection lives in a
task of the pool's task group; callers share the session object and signal the owner to close.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import anyio
from anyio.abc import TaskGroup

from miroctl.base.models import Failure, ProgressFn, RejectedTool, ServerSpec, Step, ToolInfo
from miroctl.sessions.backoff import Backoff
from miroctl.sessions.connectors import SDK, Connector
from miroctl.sessions.exchange import PagingError, TimedOut, within
from miroctl.sessions.failures import (
    after_initialize,
    config_failure,
    died_during,
    leaf,
    startup_failure,
    startup_timeout,
)
from miroctl.sessions.listing import ListingError, list_tools
from miroctl.sessions.recording import Recorder
from miroctl.sessions.session import JSONObject, Session
from miroctl.sessions.session import closed as session_closed
from miroctl.sessions.stages import Stage, StageClock, TimeBudget
from miroctl.sessions.transports import Connection, Relay, Wire

if TYPE_CHECKING:
    from mcp import Client

T = TypeVar("T")
RETRY_AFTER = 5.0  # a server that failed to start is not tried again sooner (doubling up to RETRY_MAX)
RETRY_MAX = 60.0
START_RETRY_DELAY = 0.5  # as in the seeds: a failed start or connect is tried once more after this
# Failures that a second try may cure (a server still coming up, a flaky start); a missing command,
# a config error, a timeout (which would double the wait), bad auth or a noisy stdout will not be.
RETRYABLE_KINDS = frozenset({"exited", "crashed", "http"})

CRASH_BACKOFF = 1.0  # after a second crash in a row, wait this long before restarting (doubling up to RETRY_MAX)
CALLS_PER_SERVER = 16  # calls in flight on one session at once; more wait for a slot (within their timeout)


class Unavailable(Exception):
    """The server cannot be used; `failure` says why."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass
class _Generation:
    """One start of a server: its wire, its session once ready, and the events of its life."""

    wire: Wire
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ready: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    connection: Connection | None = None  # while the session is open
    opened: Connection | None = None  # the session it had, kept after it closed
    error: BaseException | None = None
    dead: bool = False  # a call found its connection closed


class ServerHandle:
    """The lazily opened session to one server, shared by every caller in the process."""

    def __init__(
        self,
        spec: ServerSpec,
        task_group: TaskGroup,
        startup_timeout: float,
        on_event: Callable[..., None] | None = None,
        on_tools_changed: Callable[[str], None] | None = None,
        relay: Relay | None = None,
        recorder: Recorder | None = None,
        stages: StageClock | None = None,
        connector: Connector = SDK,
        stop_grace: float | None = None,
    ) -> None:
        """With `on_tools_changed`, the session follows the server's tool-list changes and reports them;
        with `relay`, the server's own requests and log messages go there (a gateway's hosts); with
        `recorder`, every session's messages are recorded (--record); `stages` hears how far a start and a
        listing have got; `connector` opens each session (sessions/connectors.py); `stop_grace`: how long a
        stdio server may take to exit once its stdin is closed (None: transports.EOF_GRACE)."""
        self._connector = connector
        self._stop_grace = stop_grace
        self.relay = relay
        self._recorder = recorder
        self.spec = spec
        self._stages = stages or StageClock()
        self._on_event = on_event
        self._on_tools_changed = on_tools_changed
        self.startup_timeout = spec.startup_timeout or startup_timeout
        self._tg = task_group
        self._lock = anyio.Lock()
        self._current: _Generation | None = None
        self._gens: list[_Generation] = []
        self._tools: tuple[ToolInfo, ...] | None = None
        self.rejected: tuple[RejectedTool, ...] = ()  # tools of the last listing that the protocol rejects
        self.starts = 0
        self.restarted = False  # this session replaces a lost one (a persistent server's state is gone)
        self.failure: Failure | None = None
        self._start_backoff = Backoff(RETRY_AFTER, RETRY_MAX)  # after failed starts
        self._crash_backoff = Backoff(CRASH_BACKOFF, RETRY_MAX, free=1)  # after sessions lost without an answer
        self.call_slots = anyio.CapacityLimiter(CALLS_PER_SERVER)
        self.last_failure: Failure | None = None  # why the latest session ended or failed to start

    def stage(self, stage: Stage, detail: str = "", ms: float | None = None, budget: TimeBudget | None = None) -> None:
        """Report how far this server has got (see sessions/stages.py)."""
        self._stages(self.spec.name, stage, detail, ms, budget)

    @property
    def connected(self) -> bool:
        return self._current is not None and self._current.connection is not None and not self._current.done.is_set()

    @property
    def connection(self) -> Connection | None:
        return self._current.connection if self._current else None

    @property
    def wire(self) -> Wire | None:
        return self._current.wire if self._current else None

    async def connect(self) -> Connection:
        """The open session, starting the server if needed; Unavailable if it cannot be had."""
        if self.connected and self.connection is not None:
            return self.connection
        async with self._lock:
            if not self.connected:
                self._raise_recent_failure()
                self._raise_crash_loop()
                try:
                    await self._start_with_retry()
                except Unavailable as exc:
                    self._remember(exc.failure)
                    raise
                self.failure = None
                self._start_backoff.succeeded()
            if self.connection is None:  # it closed again at once
                raise Unavailable(died_during(self.wire or Wire(self.spec), Step("initialize")))
            return self.connection

    @property
    def crashes(self) -> int:
        """Sessions lost in a row without an answered call in between."""
        return self._crash_backoff.failures

    def _raise_recent_failure(self) -> None:
        if self.failure is not None and self._start_backoff.remaining() > 0:
            raise Unavailable(self.failure)

    def _remember(self, failure: Failure) -> None:
        self._start_backoff.failed()
        self.failure = self.last_failure = failure

    def _raise_crash_loop(self) -> None:
        wait = self._crash_backoff.remaining()
        if wait > 0:
            raise Unavailable(
                Failure(
                    "crashed",
                    f"server crashed {self.crashes} times in a row; next restart in {wait:.1f}s",
                    hint=self.last_failure.message if self.last_failure else None,
                    phase="connect",
                )
            )

    async def call_tool(
        self, connection: Connection, name: str, arguments: Mapping[str, object], progress: ProgressFn | None = None
    ) -> JSONObject:
        """One tools/call on the session, its result as JSON: at most CALLS_PER_SERVER at once; a closed
        connection marks its session dead (so `lost()` knows which one broke), an answer resets the crash count."""
        async with self.call_slots:
            try:
                result = await connection.session.call_tool(name, arguments, progress)
            except Exception as exc:
                gen = next((g for g in self._gens if g.opened is connection), None)
                if gen is not None and closed(exc):
                    gen.dead = True
                raise
        self._crash_backoff.succeeded()  # the session works: a later crash restarts at once again
        return result

    async def _start_with_retry(self) -> None:
        try:
            await self._start()
        except Unavailable as exc:
            if exc.failure.kind not in RETRYABLE_KINDS:
                raise
            if self._on_event is not None:
                self._on_event(
                    "server_retry", server=self.spec.name, failure=exc.failure.to_dict(), delay_s=START_RETRY_DELAY
                )
            await anyio.sleep(START_RETRY_DELAY)
            await self._start()

    async def _start(self) -> None:
        if problem := self.spec.config_error(os.environ):
            raise Unavailable(config_failure(problem))
        name = self.spec.name
        stdio = self.spec.transport == "stdio"
        budget = TimeBudget(self.startup_timeout, time.perf_counter())  # the wait for the session, below
        self._stages(name, "starting" if stdio else "initialising", budget=budget)
        wire = Wire(self.spec, on_spawned=lambda: self._stages(name, "initialising", budget=budget))
        if self._stop_grace is not None:
            wire.stop_grace = self._stop_grace
        gen = _Generation(wire=wire)
        self.restarted = self._current is not None
        self._current, self._tools = gen, None
        self._gens.append(gen)
        self.starts += 1
        self._tg.start_soon(self._own, gen)
        with anyio.move_on_after(self.startup_timeout) as waited:
            await gen.ready.wait()
        if waited.cancelled_caught:
            failure = startup_timeout(gen.wire, self.startup_timeout)
            gen.wire.hurry = True
            gen.scope.cancel()
            raise Unavailable(failure)
        if gen.connection is None:
            raise Unavailable(startup_failure(gen.error or RuntimeError("no session"), gen.wire))

    async def _own(self, gen: _Generation) -> None:
        try:
            with gen.scope:
                following = self._tools_changed if self._on_tools_changed is not None else None
                tap = self._recorder.tap(self.spec.name) if self._recorder is not None else None
                opened = self._connector(self.spec, gen.wire, on_tools_changed=following, relay=self.relay, tap=tap)
                async with (
                    opened as connection,
                    anyio.create_task_group() as changes,
                ):
                    gen.connection = gen.opened = connection
                    gen.ready.set()
                    if following is not None and connection.session.announces_tool_changes():
                        changes.start_soon(_listen_for_tool_changes, connection.session, following)
                    await gen.stop.wait()
                    changes.cancel_scope.cancel()
        except Exception as exc:  # noqa: BLE001 - reported through the generation, never raised into the pool
            gen.error = exc
        finally:
            gen.connection = None
            gen.ready.set()
            gen.done.set()

    def _tools_changed(self) -> None:
        """The server announced a new tool list: forget the cached one and pass the news on."""
        self._tools = None
        if self._on_tools_changed is not None:
            self._on_tools_changed(self.spec.name)

    async def tools(self) -> tuple[ToolInfo, ...]:
        """Every tool the server lists, all pages; cached until the session ends or the server announces a
        change (when followed). Unavailable when it cannot list them."""
        connection = await self.connect()
        if self._tools is not None:
            return self._tools
        name = self.spec.name
        self._stages(name, "listing", budget=TimeBudget(self.startup_timeout, time.perf_counter()))
        listed = await self.ask_session(connection, "tools/list", self.startup_timeout, lambda s: list_tools(name, s))
        self._tools, self.rejected = listed.tools, listed.rejected
        return self._tools

    async def ask(
        self, connection: Connection, method: str, timeout: float, send: Callable[[Client], Awaitable[T]]
    ) -> T:
        """`send(client)` on the session's SDK client (for what only it offers: resources, prompts, completion,
        logging levels) under `timeout`; every failure as Unavailable of its class, in the phase of `method`."""
        return await self.ask_session(connection, method, timeout, lambda _: send(connection.client))

    async def ask_session(
        self, connection: Connection, method: str, timeout: float, send: Callable[[Session], Awaitable[T]]
    ) -> T:
        """`send(session)` on the session under `timeout`; every failure as Unavailable of its class."""
        step = Step.request(method)
        answer = await within(connection.wire, timeout, lambda: send(connection.session))
        if isinstance(answer, TimedOut):
            raise Unavailable(startup_timeout(connection.wire, timeout, step))
        if isinstance(answer, BaseException):
            raise Unavailable(await self.failure_of(answer, step))
        return answer

    async def failure_of(self, exc: BaseException, step: Step) -> Failure:
        """Why a request failed; a broken session is closed first, so the server's exit status is known."""
        if isinstance(exc, PagingError):
            return Failure.at(step, "protocol", str(exc), hint="the server's nextCursor never ends")
        if isinstance(exc, ListingError):
            tail = self.wire.stderr_tail() if self.wire else ()
            return Failure.at(step, "protocol", str(exc), stderr_tail=tail)
        wire = await self.lost() if closed(exc) else self.wire
        return after_initialize(exc, wire or Wire(self.spec), step)

    async def lost(self) -> Wire | None:
        """The session broke: close what is left of it so that the next call starts afresh."""
        gen = self._lost_generation()
        if gen is None:
            return None
        if not gen.stop.is_set():  # several calls may notice one loss: count it once
            self._crash_backoff.failed()
        gen.stop.set()
        await gen.done.wait()
        self.last_failure = died_during(gen.wire, Step("call", "a call"))
        return gen.wire

    def _lost_generation(self) -> _Generation | None:
        """The current session, unless a call noticed an older one's loss late (then never close the new one)."""
        current = self._current
        if current is None or current.dead:
            return current
        return next((gen for gen in reversed(self._gens) if gen.dead), current)

    @property
    def state(self) -> str:
        """idle (never started), connected, backoff (waiting before a restart), failed or lost."""
        if self.connected:
            return "connected"
        if self.failure is not None:
            return "failed"
        if self._crash_backoff.remaining() > 0:
            return "backoff"
        if self._current is None:
            return "idle"
        return "lost"

    @property
    def restart_due(self) -> bool:
        """Down, and its backoff (after a failed start, or after crashes) has passed: a start may be tried now."""
        if self.connected:
            return False
        backoff = self._start_backoff if self.failure is not None else self._crash_backoff
        return backoff.remaining() <= 0

    async def close(self) -> None:
        gen = self._current
        if gen is not None:
            gen.stop.set()
            await gen.done.wait()

    def signal_close(self) -> None:
        if self._current is not None:
            self._current.stop.set()

    def discard_logs(self) -> None:
        for gen in self._gens:
            gen.wire.discard()


def closed(exc: BaseException) -> bool:
    """Whether a call failed because the session's connection is gone."""
    exc = leaf(exc)
    return session_closed(exc) or isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError))


async def _listen_for_tool_changes(session: Session, changed: Callable[[], None]) -> None:
    """Follow a server's tool-list changes on a subscriptions/listen stream (protocol 2026-07-28); servers on
    older versions send them unsolicited, which the connection's message handler takes instead."""
    try:
        await session.follow_tool_changes(changed)
    except Exception:  # noqa: BLE001 - a server that cannot keep the stream is still served, only not followed
        return
