"""Phased health probes for `miroctl check`: config, spawn or connect, initialize, tools/list, ping, smoke.

Each server is probed through the pool's ServerHandle (the sessions `list` and `call` use too),
under one time budget for all of its phases, so a hung server costs its own timeout and nobody
else's. A probe never raises: whatever happens becomes the server's row.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

import anyio

from miroctl.base.errors import ConfigError
from miroctl.base.models import CallOutcome, CallRequest, Failure, ServerSpec, Step
from miroctl.base.text import counted
from miroctl.check.report import DEFAULT_CONCURRENCY, ProbeReport, SmokeCall
from miroctl.core.manager import Manager
from miroctl.sessions.exchange import TimedOut, within
from miroctl.sessions.failures import config_failure, leaf, stdout_noise
from miroctl.sessions.listing import Listing, list_tools
from miroctl.sessions.pool import ServerHandle, Unavailable
from miroctl.sessions.stages import TimeBudget
from miroctl.sessions.transports import Connection

TIMEOUT_HINT = "raise --timeout (or the server's startup_timeout) if the server is just slow"
SMOKE_KEYS = {"tool", "arguments"}
RESULT_CHARS = 200
DoneFn = Callable[[ProbeReport], Awaitable[None]]


@dataclass
class Budget:
    """The time one server's probe may take, all phases together."""

    seconds: float
    began: float = field(default_factory=time.perf_counter)

    def remaining(self) -> float:
        return max(0.0, self.seconds - (time.perf_counter() - self.began))

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.began) * 1000


def _ms(since: float, until: float | None = None) -> float:
    return ((until if until is not None else time.perf_counter()) - since) * 1000


def _timeout(step: Step, budget: Budget, tail: tuple[str, ...] = ()) -> Failure:
    return Failure.at(
        step,
        "timeout",
        f"no answer to {step} within the {budget.seconds:g}s timeout",
        hint=TIMEOUT_HINT,
        stderr_tail=tail,
    )


class Prober:
    """Runs the phases of a probe for one server at a time, on a Manager's sessions."""

    def __init__(self, manager: Manager, *, timeout: float | None = None, smoke: bool = False) -> None:
        self.manager = manager
        self.timeout = timeout
        self.smoke = smoke

    def budget_for(self, spec: ServerSpec) -> Budget:
        return Budget(self.timeout or spec.startup_timeout or self.manager.config.profile.startup_timeout)

    async def probe(self, spec: ServerSpec) -> ProbeReport:
        """Every phase in order until one fails; the report says how far it got and why not further."""
        report = ProbeReport.start(spec)
        budget = self.budget_for(spec)
        try:
            await self._phases(spec, report, budget)
        except Exception as exc:  # noqa: BLE001 - a bug in one probe must not cost the other servers their rows
            error = leaf(exc)
            report.failure = Failure("crashed", f"probe failed: {type(error).__name__}: {error}")
        report.duration_ms = budget.elapsed_ms()
        kind = report.failure.kind if report.failure is not None else ""
        self.manager.handle(spec).stage("failed" if kind else "done", kind, report.duration_ms)
        return report

    async def _phases(self, spec: ServerSpec, report: ProbeReport, budget: Budget) -> None:
        if problem := spec.config_error(os.environ):
            report.fail("config", config_failure(problem), None)
            return
        report.passed("config", None)
        handle = self.manager.handle(spec)
        connection = await self._start(handle, report, budget)
        if connection is None or not await self._list(handle, connection, report, budget):
            return
        if not await self._ping(handle, connection, report, budget):
            return
        if self.smoke and not await self._smoke(spec, report, budget):
            return
        if not self.smoke:
            report.skipped("smoke", "not asked for (--smoke)")
        noise = stdout_noise(connection.wire, Step("stdout"))
        if noise is not None:
            report.failure = noise

    # ------------------------------------------------------------------------------------- start

    async def _start(self, handle: ServerHandle, report: ProbeReport, budget: Budget) -> Connection | None:
        handle.startup_timeout = budget.seconds  # the first step: the budget is still whole
        began = time.perf_counter()
        try:
            connection = await handle.connect()
        except Unavailable as exc:
            self._start_failed(handle, report, exc.failure, began)
            return None
        ready = time.perf_counter()
        client = connection.client
        report.protocol_version = connection.protocol_version
        self._split_start(handle, report, began, ready)
        if client.server_info is not None:
            report.server_name, report.server_version = client.server_info.name, client.server_info.version
        report.capabilities = client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        return connection

    def _split_start(self, handle: ServerHandle, report: ProbeReport, began: float, ready: float) -> None:
        """Spawn (or connect) and initialize times, split where the transport saw the first sign of life."""
        if handle.spec.transport == "memory":
            report.skipped(report.start_phase, "in-process server")
            mark = None
        else:
            mark = self._first_sign_of_life(handle, report, began)
            if mark is None:
                report.skipped(report.start_phase, "not measured apart from initialize")
        report.passed("initialize", _ms(mark or began, ready), report.protocol_version)

    def _first_sign_of_life(self, handle: ServerHandle, report: ProbeReport, began: float) -> float | None:
        """When the process was running (stdio) or the first HTTP answer came; the start phase ends there."""
        wire = handle.wire
        mark = (wire.spawned_at or wire.first_response_at) if wire is not None else None
        if wire is not None and mark is not None:
            report.passed(report.start_phase, _ms(began, mark), f"pid {wire.pid}" if wire.pid else None)
        return mark

    def _start_failed(self, handle: ServerHandle, report: ProbeReport, failure: Failure, began: float) -> None:
        if failure.kind == "timeout":
            failure = replace(failure, hint=TIMEOUT_HINT)
        if failure.phase in ("spawn", "connect", "config"):
            report.fail(report.start_phase, failure, _ms(began))
            return
        mark = self._first_sign_of_life(handle, report, began)
        report.fail("initialize", failure, _ms(mark or began))

    # ------------------------------------------------------------------------------------- tools/list

    async def _list(self, handle: ServerHandle, connection: Connection, report: ProbeReport, budget: Budget) -> bool:
        """Every page of tools/list; a server that cannot list its tools is not healthy."""
        began = time.perf_counter()
        handle.stage("listing", budget=TimeBudget(budget.seconds, budget.began))  # the whole probe's budget
        answer = await within(
            connection.wire, budget.remaining(), lambda: list_tools(handle.spec.name, connection.session)
        )
        if not isinstance(answer, Listing):
            failure = await self._failure(handle, connection, answer, budget, Step.request("tools/list"))
            report.fail("tools", failure, _ms(began))
            return False
        visible = [tool for tool in answer.tools if self.manager.policy.visible(handle.spec, tool)]
        report.tools = tuple(visible)
        if answer.rejected:
            report.fail("tools", rejected_failure(answer, connection), _ms(began))
            return False
        hidden = f", {len(answer.tools) - len(visible)} hidden by policy" if len(visible) < len(answer.tools) else ""
        report.passed("tools", _ms(began), f"{counted(len(visible), 'tool')}{hidden}, {counted(answer.pages, 'page')}")
        return True

    async def _failure(
        self, handle: ServerHandle, connection: Connection, answer: BaseException | TimedOut, budget: Budget, step: Step
    ) -> Failure:
        """Why a request of the probe's failed: no answer within the budget, or the failure of its class."""
        if isinstance(answer, TimedOut):
            return _timeout(step, budget, connection.wire.stderr_tail())
        return await handle.failure_of(answer, step)

    # ------------------------------------------------------------------------------------- ping

    async def _ping(self, handle: ServerHandle, connection: Connection, report: ProbeReport, budget: Budget) -> bool:
        """Ping where the negotiated protocol still has it (it was removed in 2026-07-28)."""
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        version = connection.protocol_version
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            report.skipped("ping", f"not supported: removed in protocol {version}")
            return True
        began = time.perf_counter()
        answer = await within(connection.wire, budget.remaining(), connection.client.session.send_ping)
        if isinstance(answer, (BaseException, TimedOut)):
            report.fail(
                "ping", await self._failure(handle, connection, answer, budget, Step.request("ping")), _ms(began)
            )
            return False
        report.passed("ping", _ms(began))
        return True

    # ------------------------------------------------------------------------------------- smoke

    async def _smoke(self, spec: ServerSpec, report: ProbeReport, budget: Budget) -> bool:
        """The server file's smoke calls, through the manager (policy, validation): none may fail."""
        try:
            calls = smoke_calls(spec.smoke, spec.source or spec.name)
        except ConfigError as exc:
            report.fail("smoke", Failure("config", exc.message, phase="smoke"), None)
            return False
        if not calls:
            report.skipped("smoke", "no smoke call in the server's file")
            return True
        began = time.perf_counter()
        for call in calls:
            report.smoke.append(call)
            failure = await self._smoke_call(spec, call, budget)
            if failure is not None:
                report.fail("smoke", failure, _ms(began))
                return False
        report.passed("smoke", _ms(began), ", ".join(f"{c.tool} ok" for c in calls))
        return True

    async def _smoke_call(self, spec: ServerSpec, call: SmokeCall, budget: Budget) -> Failure | None:
        remaining = budget.remaining()
        request = CallRequest(spec.name, call.tool, call.arguments, timeout=max(remaining, 0.001), autocorrect=False)
        # Routing may list the tools again before the call: that, too, gets only what is left.
        self.manager.handle(spec).startup_timeout = max(remaining, 0.001)
        outcome = None
        with anyio.move_on_after(remaining):  # the hard bound: routing and the call together
            outcome = await self.manager.call(request)
        if outcome is None:
            return _timeout(Step("smoke", f"the smoke call to {call.tool}"), budget)
        call.ok, call.duration_ms = outcome.ok, outcome.duration_ms
        call.result = (outcome.result or "")[:RESULT_CHARS] if outcome.ok else None
        call.error = None if outcome.ok else (outcome.error or "")[:RESULT_CHARS]
        return None if outcome.ok else smoke_failure(call, outcome, budget)


def rejected_failure(listing: Listing, connection: Connection) -> Failure:
    """Tools the protocol rejects make a server unhealthy: other clients reject its whole listing for them."""
    names = ", ".join(item.name for item in listing.rejected[:5]) + (", ..." if len(listing.rejected) > 5 else "")
    first = listing.rejected[0]
    return Failure(
        "protocol",
        f"tools/list: {counted(len(listing.rejected), 'tool')} the protocol rejects: {names}",
        hint=f"{first.name}: {first.reason}; its {counted(len(listing.tools), 'valid tool')} still work with miroctl",
        phase="tools",
        stderr_tail=connection.wire.stderr_tail(),
    )


def smoke_failure(call: SmokeCall, outcome: CallOutcome, budget: Budget) -> Failure:
    """Why a smoke call did not pass, as a failure of its class."""
    if outcome.failure is not None:
        return replace(outcome.failure, phase="smoke")
    if outcome.error_kind == "timeout":
        return _timeout(Step("smoke", f"the smoke call to {call.tool}"), budget)
    if outcome.error_kind in ("arguments", "usage"):
        return Failure(
            "config",
            f"smoke arguments for {call.tool} do not fit its schema: {outcome.error}",
            hint=outcome.hint,
            phase="smoke",
        )
    what = {"tool_error": "returned an error", "denied": "was denied", "not_found": "could not be made"}
    reason = what.get(outcome.error_kind or "", "failed")
    return Failure("smoke", f"smoke call {call.tool} {reason}: {outcome.error}", hint=outcome.hint, phase="smoke")


def smoke_calls(value: object, where: str) -> list[SmokeCall]:
    """The `smoke:` key of a server file: one {tool, arguments} mapping or a list of them."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("tool"), str) or not item["tool"]:
            raise ConfigError(f"{where}: smoke must be {{tool: NAME, arguments: {{...}}}} (or a list of them)")
        unknown = sorted(set(item) - SMOKE_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown smoke key {unknown[0]!r} (use tool and arguments)")
        arguments = item.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise ConfigError(f"{where}: smoke arguments for {item['tool']} must be a mapping")
        calls.append(SmokeCall(item["tool"], dict(arguments)))
    return calls


# ------------------------------------------------------------------------------------------ the whole run


def warm_up(specs: Sequence[ServerSpec]) -> None:
    """Import the SDK before any clock starts, so that miroctl's own import is not a server's spawn time."""
    from mcp import Client  # noqa: F401

    if any(spec.transport in ("streamable_http", "sse") for spec in specs):
        import mcp.client.sse
        import mcp.client.streamable_http  # noqa: F401


async def probe_all(
    manager: Manager,
    specs: Sequence[ServerSpec],
    *,
    timeout: float | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    smoke: bool = False,
    on_done: DoneFn | None = None,
) -> list[ProbeReport]:
    """Probe every server concurrently (at most `concurrency` at once); one report per server, in order."""
    warm_up(specs)
    prober = Prober(manager, timeout=timeout, smoke=smoke)
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    reports: list[ProbeReport | None] = [None] * len(specs)

    async def one(index: int, spec: ServerSpec) -> None:
        # A server its config keeps from starting is reported at once: it needs no slot to wait for.
        async with limiter if spec.config_error(os.environ) is None else nullcontext():
            reports[index] = report = await prober.probe(spec)
        if on_done is not None:
            await on_done(report)
        await manager.handle(spec).close()  # free the server now, not when the slowest probe ends

    async with anyio.create_task_group() as tg:
        for index, spec in enumerate(specs):
            tg.start_soon(one, index, spec)
    return [r for r in reports if r is not None]
