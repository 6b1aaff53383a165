"""`call --batch`: many calls from JSON lines over one pool, bounded concurrency, envelopes in input order.

Each input line is {"server": ..., "tool": ..., "arguments": {...}} (optionally "timeout",
"autocorrect"). A line that cannot be read becomes an envelope with error_kind "usage"; one failing
call never stops the others. Envelopes are written as soon as every earlier line has its own.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

import anyio
from anyio.abc import TaskGroup

from miroctl.base.errors import UsageError
from miroctl.base.models import CallOutcome, CallRequest
from miroctl.core.bodies import Body, loads

DEFAULT_JOBS = 8
WINDOW = 4  # lines started ahead of the oldest one not yet emitted, per job
LINE_KEYS = {"server", "tool", "arguments", "timeout", "autocorrect"}

CallFn = Callable[[CallRequest], Awaitable[CallOutcome]]
EmitFn = Callable[[CallOutcome], None]


@dataclass(frozen=True)
class Line:
    """One input line: a request to make, or the reason it cannot be made."""

    number: int
    request: CallRequest | None = None
    problem: CallOutcome | None = None


def read_source(source: str) -> str:
    """The batch text from a file, or from stdin for `-`."""
    if source == "-":
        return sys.stdin.read()
    try:
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the batch file {source}: {getattr(exc, 'strerror', None) or exc}") from None


def with_defaults(lines: list[Line], timeout: float | None, autocorrect: bool) -> list[Line]:
    """Apply --timeout (where a line has none) and --no-autocorrect to every request."""
    for line in lines:
        if line.request is not None:
            line.request.timeout = line.request.timeout or timeout
            line.request.autocorrect = line.request.autocorrect and autocorrect
    return lines


def parse_lines(text: str) -> list[Line]:
    """Every non-blank line of a batch, numbered from 1 as in the file."""
    return [parse_line(number, raw) for number, raw in enumerate(text.splitlines(), 1) if raw.strip()]


def parse_line(number: int, raw: str) -> Line:
    try:
        data = loads(raw)
    except ValueError as exc:
        detail = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        return _bad(number, None, None, f"not JSON ({detail})")
    try:
        return Line(number, request=line_request(data))
    except UsageError as exc:
        named = {k: data[k] for k in ("server", "tool") if isinstance(data, Mapping) and isinstance(data.get(k), str)}
        return _bad(number, named.get("server"), named.get("tool"), exc.message)


def line_request(data: object) -> CallRequest:
    """A CallRequest from one decoded line; UsageError says what is wrong with it."""
    body = Body(data, LINE_KEYS, "a line", body="a line")
    return CallRequest(
        body.string("server"),
        body.tool(),
        body.mapping("arguments"),
        timeout=body.seconds("timeout"),
        autocorrect=body.flag("autocorrect", True),
    )


def _bad(number: int, server: str | None, tool: str | None, reason: str) -> Line:
    outcome = CallOutcome(
        server,
        tool or "",
        error=f"line {number}: {reason}",
        error_kind="usage",
        hint='each line is {"server": ..., "tool": ..., "arguments": {...}}',
    )
    return Line(number, problem=outcome)


async def run(lines: Iterable[Line], call: CallFn, emit: EmitFn, jobs: int = DEFAULT_JOBS) -> list[CallOutcome]:
    """Make every call (at most `jobs` at once), emit the envelopes in input order; the ones that failed.

    A line starts only while fewer than `jobs` * WINDOW earlier lines wait for their envelope, and an envelope
    is let go once emitted: a batch's memory does not grow with its length.
    """
    failed: list[CallOutcome] = []
    limiter = anyio.CapacityLimiter(max(1, jobs))
    send, receive = anyio.create_memory_object_stream[tuple[anyio.Event, list[CallOutcome]]](max(1, jobs) * WINDOW)

    async def one(line: Line, done: anyio.Event, holder: list[CallOutcome]) -> None:
        if line.problem is not None:
            holder.append(line.problem)
        elif line.request is not None:  # a line has one of the two
            async with limiter:
                holder.append(await call(line.request))
        done.set()

    async def start(tg: TaskGroup) -> None:
        async with send:
            for line in lines:
                done, holder = anyio.Event(), list[CallOutcome]()
                await send.send((done, holder))  # waits while the window is full
                tg.start_soon(one, line, done, holder)

    async with anyio.create_task_group() as tg:
        tg.start_soon(start, tg)
        async with receive:
            async for done, holder in receive:
                await done.wait()
                for outcome in holder:
                    emit(outcome)
                    if not outcome.ok:
                        failed.append(outcome)
    return failed


def exit_code(outcomes: Iterable[CallOutcome]) -> int:
    """0 when none of `outcomes` failed, 1 when any did (each envelope has its own exit_code)."""
    return 0 if all(outcome.ok for outcome in outcomes) else 1
