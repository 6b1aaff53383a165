"""`miroctl bench`: one tool called again and again on a warm session; latencies, throughput, errors by kind.

Calls share the pool's one session per server. The mcp SDK multiplexes requests on a session by their
JSON-RPC ids and its servers handle each request in a task of its own, so one session carries any number
of calls in flight; that is also how an agent's host talks to a server (one session each). A session per
concurrency slot would instead start N server processes and measure their start-up and the machine's
cores, not the server. The session's own cap on calls in flight is raised to the run's concurrency.

Without --rate the run is closed-loop: N workers, each starting its next call when the last one answered.
With --rate it is open-loop: calls start on a fixed schedule whether or not earlier ones answered (at most
N in flight; the rest wait for a slot), and each latency counts from the call's scheduled start, so a slow
server cannot hide its queueing delay (no coordinated omission). At most BACKLOG calls wait for a slot: a call
due while that many wait, or still waiting when --duration ends, is not made and counts as one that could not
keep up (it counts against the error rate), so the run ends at --duration plus what the calls in flight then
take, whatever the rate.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from miroctl.base.errors import (
    AuthRequired,
    ConfigError,
    ErrorKind,
    ExitCode,
    MiroctlError,
    NotFound,
    PolicyDenied,
    ServerUnavailable,
    kind_name,
)
from miroctl.base.models import CallOutcome, CallRequest, ServerSpec, ToolInfo
from miroctl.base.text import suggest
from miroctl.core import arguments as arguments_
from miroctl.core import envelopes
from miroctl.core.manager import Manager
from miroctl.remote import GatewayClient, list_from_dict, outcome_from_dict, readable
from miroctl.sessions.pool import CALLS_PER_SERVER, Unavailable

CallFn = Callable[[], Awaitable[CallOutcome]]
SCHEMA = "miroctl.bench/1"
# Answers that say every further call would be refused the same way: the run stops at the first of them.
REFUSALS = frozenset({ErrorKind.DENIED, ErrorKind.ARGUMENTS, ErrorKind.USAGE, ErrorKind.CONFIG, ErrorKind.NOT_FOUND})
BACKLOG = 1000  # open loop: the most scheduled calls waiting for a free slot at once
SCHEDULER_TICK = 0.001  # open loop: the scheduler wakes at most this often and releases every call due by then


@dataclass(frozen=True)
class Plan:
    """How much load, for how long: exactly one of `requests` and `duration` is set."""

    concurrency: int
    requests: int | None = None
    duration: float | None = None
    rate: float | None = None
    warmup: int = 0
    max_error_rate: float = 0.0
    timeout: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "duration_s": self.duration,
            "rate": self.rate,
            "warmup": self.warmup,
            "max_error_rate": self.max_error_rate,
            "timeout_s": self.timeout,
        }


@dataclass
class Tally:
    """What the run has seen so far: read by the live progress while it runs, summed up at the end."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    samples: dict[str, str] = field(default_factory=dict)  # the first message of each error kind
    started: float | None = None
    finished: float | None = None
    in_flight: int = 0
    max_in_flight: int = 0
    refusal: CallOutcome | None = None
    interrupted: bool = False
    missed: int = 0  # open loop: calls due that could not start in time (the backlog was full, or time was up)
    clock: Callable[[], float] = time.perf_counter  # seconds; a test gives a clock its calls advance

    @property
    def completed(self) -> int:
        return len(self.latencies_ms)

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished if self.finished is not None else self.clock()) - self.started

    def rate(self) -> float:
        elapsed = self.elapsed()
        return self.completed / elapsed if elapsed > 0 else 0.0

    async def one(self, call: CallFn, since: float) -> CallOutcome:
        """One call, timed from `since` (its start, or its scheduled start in an open loop)."""
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            outcome = await call()
        finally:
            self.in_flight -= 1
        self.latencies_ms.append((self.clock() - since) * 1000)
        if outcome.error_kind is not None:
            self.errors[outcome.error_kind] += 1
            self.samples.setdefault(outcome.error_kind, outcome.error or "")
        return outcome


async def run(plan: Plan, call: CallFn, tally: Tally) -> None:
    """Warm up, then load: closed-loop workers, or an open-loop schedule with --rate. A refusal stops it."""
    for _ in range(plan.warmup):
        outcome = await call()
        if outcome.error_kind in REFUSALS:
            tally.refusal = outcome
            return
    tally.started = tally.clock()
    try:
        async with anyio.create_task_group() as tg:
            if plan.rate:
                await _open_loop(plan, _stopping(call, tally, tg.cancel_scope), tally)
            else:
                issued = _Issued()
                for _ in range(plan.concurrency):
                    tg.start_soon(_worker, plan, _stopping(call, tally, tg.cancel_scope), tally, issued)
    finally:
        tally.finished = tally.clock()


def _stopping(call: CallFn, tally: Tally, scope: anyio.CancelScope) -> CallFn:
    async def guarded() -> CallOutcome:
        outcome = await call()
        if outcome.error_kind in REFUSALS and tally.refusal is None:
            tally.refusal = outcome
            scope.cancel()
        return outcome

    return guarded


class _Issued:
    """The count of calls started, shared by the workers of one closed-loop run."""

    def __init__(self) -> None:
        self.count = 0


async def _worker(plan: Plan, call: CallFn, tally: Tally, issued: _Issued) -> None:
    assert tally.started is not None
    deadline = tally.started + plan.duration if plan.duration else math.inf
    while True:
        if plan.requests is not None:
            if issued.count >= plan.requests:
                return
            issued.count += 1
        now = tally.clock()
        if now >= deadline:
            return
        await tally.one(call, now)


def scheduled_calls(plan: Plan) -> int:
    """How many calls an open loop's schedule holds: --requests, or one every 1/rate seconds of --duration."""
    assert plan.rate
    if plan.requests is not None:
        return plan.requests
    assert plan.duration is not None
    return max(1, math.ceil(round(plan.duration * plan.rate, 6)))


async def _open_loop(plan: Plan, call: CallFn, tally: Tally) -> None:
    """Release each call at its scheduled time into a backlog of at most BACKLOG that `concurrency` slots take
    calls from; what does not fit, and what is still waiting at the deadline, could not keep up."""
    assert tally.started is not None and plan.rate
    started, rate = tally.started, plan.rate
    deadline = started + plan.duration if plan.duration else math.inf
    total = scheduled_calls(plan)
    send, receive = anyio.create_memory_object_stream[float](BACKLOG)
    async with anyio.create_task_group() as slots:
        for _ in range(plan.concurrency):
            slots.start_soon(_slot, receive.clone(), call, tally, deadline)
        receive.close()
        async with send:
            released = 0
            while released < total:
                now = tally.clock()
                # every call scheduled before now (all the rest once the deadline has passed) is due
                due = total if now >= deadline else min(total, math.floor((now - started) * rate) + 1)
                room = BACKLOG - send.statistics().current_buffer_used
                for index in range(released, min(due, released + room)):
                    send.send_nowait(started + index / rate)
                tally.missed += max(0, due - released - room)
                released = due
                if released < total:
                    await anyio.sleep(max(SCHEDULER_TICK, started + released / rate - tally.clock()))


async def _slot(receive: MemoryObjectReceiveStream[float], call: CallFn, tally: Tally, deadline: float) -> None:
    async with receive:
        async for scheduled in receive:
            if tally.clock() >= deadline:
                tally.missed += 1  # still waiting when the time was up
            else:
                await tally.one(call, scheduled)


# ---------------------------------------------------------------------------------------------- targets


async def direct(manager: Manager, request: CallRequest, concurrency: int) -> tuple[CallFn, str, str]:
    """Check the call once before any load (route, arguments, policy: a refusal raises, nothing sent) and open
    its session; then every call goes through the manager's whole pipeline. Also the server and tool found."""
    early = manager.policy.check_urls(envelopes.raw_arguments(request))
    if early is not None:
        raise PolicyDenied(early.message, hint=f"reason: {early.reason}")
    try:
        route = await manager.router.resolve(request.server, request.tool, request.autocorrect)
        values = arguments_.build(route.tool.input_schema, request.arguments, request.pairs)
        values, _ = arguments_.lenient(route.tool, values)
        arguments_.validate(route.tool, values)
        _allowed(manager, route.spec, route.tool, values)
        handle = manager.handle(route.spec)
        await handle.connect()
    except Unavailable as exc:
        unusable = {"config": ConfigError, "auth": AuthRequired}.get(exc.failure.error_kind, ServerUnavailable)
        raise unusable(exc.failure.message, hint=exc.failure.hint) from None
    handle.call_slots.total_tokens = max(CALLS_PER_SERVER, concurrency)
    ready = CallRequest(route.spec.name, route.tool.name, values, timeout=request.timeout, autocorrect=False)

    async def call() -> CallOutcome:
        return await manager.call(ready)

    return call, route.spec.name, route.tool.name


def through_gateway(client: GatewayClient, target: list[str], base: dict[str, object], plan: Plan) -> CallFn:
    """Calls through a running gateway (`--via`), each a POST of its own, at most `concurrency` at once (one
    thread each: the warm client is the standard library's blocking http.client). Give a `client` that keeps
    its connections (keep_alive), so each thread reuses one for its calls; close it after the run."""
    url = client.url
    body = {"target": target, "arguments": base, "timeout": plan.timeout, "autocorrect": False}
    threads = anyio.CapacityLimiter(plan.concurrency)
    server, tool = [*target, "", ""][:2]

    async def call() -> CallOutcome:
        try:
            document = await anyio.to_thread.run_sync(client.call, body, limiter=threads, abandon_on_cancel=True)
            return readable(url, lambda: outcome_from_dict(document))
        except MiroctlError as exc:
            return CallOutcome(server, tool, error=exc.message, error_kind=kind_name(exc.kind), hint=exc.hint)

    return call


def gateway_ready(url: str, server: str, tool: str) -> None:
    """Before a run through a gateway: it answers, serves the server, and the server is up with the tool
    (otherwise the error and its exit code, before any call)."""
    if not server or not tool:
        return  # TOOL alone: the gateway finds its server
    document = GatewayClient(url).list_tools([server])
    entries = readable(url, lambda: list_from_dict(document))
    entry = next((e for e in entries if e.server == server), None)
    if entry is None:
        return
    if entry.failure is not None:
        raise ServerUnavailable(f"{server}: {entry.failure.message}", hint=entry.failure.hint)
    names = [t.name for t in entry.tools]
    if tool not in names:
        raise NotFound(f"{server} has no tool {tool!r} (through {url})", hint=suggest(tool, names))


def _allowed(manager: Manager, spec: ServerSpec, tool: ToolInfo, values: dict[str, object]) -> None:
    decision = manager.policy.decide(spec, tool.name, tool, values)
    if decision.allowed or (decision.needs_confirmation and manager.policy.assume_yes):
        return
    hint = f"reason: {decision.reason}"
    if decision.needs_confirmation:
        hint += "; a load test asks nobody: pass --yes (policy.assume_yes in the profile)"
    raise PolicyDenied(decision.message or f"{spec.name}.{tool.name} is denied by policy", hint=hint)


# ---------------------------------------------------------------------------------------------- summary


def percentile(ordered: list[float], p: float) -> float | None:
    """The nearest-rank percentile of sorted values (None when there are none)."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def summary(plan: Plan, tally: Tally, target: dict[str, object]) -> dict[str, object]:
    """The `bench --json` document (also what the table shows)."""
    ordered = sorted(tally.latencies_ms)
    asked = tally.completed + tally.missed  # a call that could not keep up did not succeed either
    rate = (tally.failed + tally.missed) / asked if asked else 0.0
    passed = rate <= plan.max_error_rate
    latency = {
        "min": _ms(ordered[0] if ordered else None),
        "mean": _ms(sum(ordered) / len(ordered) if ordered else None),
        **{f"p{p}": _ms(percentile(ordered, p)) for p in (50, 90, 99)},
        "max": _ms(ordered[-1] if ordered else None),
    }
    return {
        "schema": SCHEMA,
        **target,
        "plan": plan.to_dict(),
        "completed": tally.completed,
        "succeeded": tally.completed - tally.failed,
        "failed": tally.failed,
        "could_not_keep_up": tally.missed,
        "error_rate": round(rate, 6),
        "errors_by_kind": dict(sorted(tally.errors.items())),
        "error_samples": dict(sorted(tally.samples.items())),
        "latency_ms": latency,
        "throughput_rps": round(tally.rate(), 3),
        "elapsed_s": round(tally.elapsed(), 3),
        "max_in_flight": tally.max_in_flight,
        "interrupted": tally.interrupted,
        "passed": passed,
        "exit_code": int(ExitCode.OK if passed else ExitCode.FAILED),
    }


def _ms(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None
