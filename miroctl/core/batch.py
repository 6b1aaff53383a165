"""`call --batch`: many calls from JSON lines over one pool, bounded concurrency, envelopes in input order.

Each input line is {"server": ..., "tool": ..., "arguments": {...}} (optionally "timeout",
"autocorrect"). A line that cannot be read becomes an envelope with error_kind "usage"; one failing
call never stops the others. Envelopes are written as soon as every earlier line has its own.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import anyio
from anyio.abc import TaskGroup

from miroctl.base.errors import UsageError
from miroctl.base.models import CallOutcome, CallRequest
from miroctl.core.bodies import Body, loads

DEFAULT_JOBS = 8
WINDOW = 4  # lines started ahead of the oldest one not yet emitted, per job
LINE_KEYS = {"server", "tool", "arguments", "timeout", "autocorrect"}
CHUNK = 1 << 16  # bytes of a batch read at a time

CallFn = Callable[[CallRequest], Awaitable[CallOutcome]]
EmitFn = Callable[[CallOutcome], Awaitable[None] | None]  # may wait (a slow reader of the envelopes)


@dataclass(frozen=True)
class Line:
    """One input line: a request to make, or the reason it cannot be made."""

    number: int
    request: CallRequest | None = None
    problem: CallOutcome | None = None


def open_source(source: str) -> BinaryIO:
    """The batch's bytes, to be read as the calls go: a file, or stdin for `-`. A file that cannot be opened is
    a usage error before anything starts."""
    if source == "-":
        return sys.stdin.buffer
    try:
        return open(source, "rb")
    except OSError as exc:
        raise UsageError(f"cannot read the batch file {source}: {exc.strerror or exc}") from None


@contextmanager
def closing(handle: BinaryIO) -> Iterator[BinaryIO]:
    """`handle` for a `with` block, closed at its end unless it is stdin's."""
    try:
        yield handle
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def pieces_of(handle: BinaryIO) -> Iterator[bytes]:
    """`handle`'s bytes as they come: a pipe's as soon as it has some (read1), not once CHUNK bytes have
    arrived or it has closed; a file's CHUNK at a time."""
    read = getattr(handle, "read1", handle.read)
    return iter(lambda: read(CHUNK), b"")


async def chunks_of(handle: BinaryIO) -> AsyncIterator[bytes]:
    """pieces_of(handle), each read in a worker thread so that the calls in flight go on while the next lines
    are awaited."""
    pieces = pieces_of(handle)
    while chunk := await anyio.to_thread.run_sync(next, pieces, b"", abandon_on_cancel=True):
        yield chunk


async def read_lines(
    chunks: AsyncIterable[bytes], timeout: float | None = None, autocorrect: bool = True
) -> AsyncIterator[Line]:
    """Every non-blank line of a batch as its bytes arrive, numbered from 1 as in the file, with --timeout
    (where a line has none) and --no-autocorrect applied. Only the line being read is held, never the batch."""
    number, pending = 0, bytearray()  # the part of a line read so far: only new bytes are searched and copied
    async for chunk in chunks:
        start, search = 0, len(pending)
        pending += chunk
        while (end := pending.find(b"\n", search)) >= 0:
            number, raw, start = number + 1, bytes(pending[start:end]), end + 1
            search = start
            if raw.strip():
                yield with_default(_decoded(number, raw), timeout, autocorrect)
        del pending[:start]
    if pending.strip():
        yield with_default(_decoded(number + 1, bytes(pending)), timeout, autocorrect)


def with_default(line: Line, timeout: float | None, autocorrect: bool) -> Line:
    """Apply --timeout (where the line has none) and --no-autocorrect to one line's request."""
    if line.request is not None:
        line.request.timeout = line.request.timeout or timeout
        line.request.autocorrect = line.request.autocorrect and autocorrect
    return line


def _decoded(number: int, raw: bytes) -> Line:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _bad(number, None, None, f"not UTF-8 (byte {exc.start + 1})")
    return parse_line(number, text)


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


async def run(
    lines: Iterable[Line] | AsyncIterable[Line], call: CallFn, emit: EmitFn, jobs: int = DEFAULT_JOBS
) -> list[CallOutcome]:
    """Make every call (at most `jobs` at once), emit the envelopes in input order; the ones that failed.

    A line is taken in only while fewer than `jobs` * WINDOW earlier lines wait for their envelope, and an
    envelope is let go once emitted: with lines read as they come (read_lines), a batch's memory does not grow
    with its length.
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
            async for line in _each(lines):
                done, holder = anyio.Event(), list[CallOutcome]()
                await send.send((done, holder))  # waits while the window is full
                tg.start_soon(one, line, done, holder)

    async with anyio.create_task_group() as tg:
        tg.start_soon(start, tg)
        async with receive:
            async for done, holder in receive:
                await done.wait()
                for outcome in holder:
                    if (written := emit(outcome)) is not None:
                        await written
                    if not outcome.ok:
                        failed.append(outcome)
    return failed


async def _each(lines: Iterable[Line] | AsyncIterable[Line]) -> AsyncIterator[Line]:
    if isinstance(lines, AsyncIterable):
        async for line in lines:
            yield line
    else:
        for line in lines:
            yield line


def exit_code(outcomes: Iterable[CallOutcome]) -> int:
    """0 when none of `outcomes` failed, 1 when any did (each envelope has its own exit_code)."""
    return 0 if all(outcome.ok for outcome in outcomes) else 1
