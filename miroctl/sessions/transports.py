"""Open an MCP client session for a spec: stdio, streamable HTTP, SSE, or in-process (tests).

The stdio transport is miroctl's own because the SDK's hides what a health report needs: the
process id and exit status, how many non-JSON lines the server wrote to stdout, and a cap on one
message's size. It keeps the SDK's shutdown order (close stdin, wait, SIGTERM, SIGKILL to the
process group) and adds a last SIGKILL to the group, so grandchildren go with their server.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import Process

from miroctl.base.masking import Masker
from miroctl.base.models import ServerSpec
from miroctl.base.version import __version__
from miroctl.sessions.anyio_private import close_transport
from miroctl.sessions.frames import as_text, parse_line
from miroctl.sessions.oauth import background_auth
from miroctl.sessions.processes import ServerProcess, signal_group, spawn
from miroctl.sessions.recording import FROM_SERVER, TO_SERVER, TapFn
from miroctl.sessions.sdk_session import SdkSession
from miroctl.sessions.session import METHOD_NOT_FOUND, RpcError, Session

if TYPE_CHECKING:  # the SDK and its HTTP client cost ~1 s to import: only the code paths that talk load them
    import httpx2
    from mcp import Client
    from mcp.client.session import IncomingMessage, MessageHandlerFnT


class Relay(Protocol):
    """Where a server's own requests (sampling, elicitation, roots) and log messages go: the gateway passes
    them to the host whose call caused them. Without a relay, miroctl declares none of those capabilities."""

    async def request(self, server: str, method: str, params: Any) -> Any:
        """The host's answer (a result model, or the SDK's ErrorData) to `method` with `params`."""
        ...

    async def log(self, server: str, params: Any) -> None: ...

    async def updated(self, server: str, uri: str) -> None:
        """A resource the server was subscribed to changed (notifications/resources/updated)."""
        ...


EOF_GRACE = 2.0
TERM_GRACE = 1.0
MAX_MESSAGE_BYTES = int(os.environ.get("MIROCTL_MAX_MESSAGE_BYTES") or 64 * 1024 * 1024)
OUTBOX_BYTES = 16 * 1024 * 1024  # answers to a server's own requests waiting for it to read them, at most
NOISE_SAMPLES = 3
TAIL_LINES = 20
TAIL_BYTES = 16 * 1024


@dataclass
class Wire:
    """What a transport observed: process, stdout noise, stderr file, HTTP statuses."""

    spec: ServerSpec
    pid: int | None = None
    returncode: int | None = None
    noise_lines: int = 0
    noise_samples: list[str] = field(default_factory=list)
    oversize: bool = False
    flooded: bool = False  # it sent requests and never read the answers (over lean.OUTBOX_BYTES waited)
    http_status: int | None = None
    www_authenticate: str | None = None  # the challenge of the last 401/403, when the server sent one
    stderr_path: str | None = None
    stdout_eof: bool = False
    exited_on_its_own: bool = False
    hurry: bool = False  # the server is known to be stuck: skip most of the grace period
    # Seconds the server gets to exit once its stdin is closed, before SIGTERM (which gets half as long, at most
    # TERM_GRACE): shorter where miroctl itself must be gone soon (serve, whose host stops it)
    stop_grace: float = EOF_GRACE
    spawned_at: float | None = None  # perf_counter() when the process was started (stdio)
    first_response_at: float | None = None  # perf_counter() when the first HTTP response arrived
    on_spawned: Callable[[], None] | None = None  # told when the process runs (stdio): the handshake begins

    @property
    def broke_framing(self) -> bool:
        """It wrote what is not JSON-RPC to stdout, an endless line, or requests it never read the answers to."""
        return bool(self.noise_lines or self.oversize or self.flooded)

    def stderr_tail(self, lines: int = TAIL_LINES) -> tuple[str, ...]:
        """The last lines the server wrote to stderr, secrets masked."""
        if not self.stderr_path:
            return ()
        try:
            with open(self.stderr_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - TAIL_BYTES))
                data = handle.read()
        except OSError:
            return ()
        text = data.decode("utf-8", errors="replace")
        masker = Masker(self.spec.secrets)
        return tuple(masker.text(line) for line in text.splitlines()[-lines:] if line.strip())

    def discard(self) -> None:
        if self.stderr_path:
            with suppress(OSError):
                os.unlink(self.stderr_path)
            self.stderr_path = None


@dataclass
class Started:
    """A stdio server's process, spawned before its transport exists; `owned` once the transport runs it."""

    process: Process
    stderr_path: str
    owned: bool = False


@dataclass
class Connection:
    """An open, initialized session to one server, and what its transport observed."""

    session: Session
    wire: Wire

    @property
    def protocol_version(self) -> str | None:
        return self.session.protocol_version

    @property
    def server_version(self) -> str | None:
        info = self.session.server_info
        if info is None:
            return None
        return f"{info.name} {info.version}".strip()

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    @property
    def client(self) -> Client:
        """The SDK's client, for what only it offers (resources, prompts, ping, completion, subscriptions)."""
        if not isinstance(self.session, SdkSession):
            raise RpcError(METHOD_NOT_FOUND, "this session is the lean client's: it offers tools only")
        return self.session.client


@asynccontextmanager
async def open_connection(
    spec: ServerSpec,
    wire: Wire,
    on_tools_changed: Callable[[], None] | None = None,
    relay: Relay | None = None,
    tap: TapFn | None = None,
) -> AsyncIterator[Connection]:
    """Start or reach the server, run the handshake, and yield the session; close it all on exit.

    `on_tools_changed` hears the tools/list_changed notifications that servers on protocols before
    2026-07-28 send unsolicited (later ones announce changes on a subscriptions/listen stream). `tap` hears
    every message both ways (--record).
    """
    # Stored OAuth tokens, or AuthRequired before the SDK is even loaded (a CI run without a login fails at once).
    oauth = background_auth(spec) if spec.transport in ("streamable_http", "sse") else None
    async with AsyncExitStack() as stack:
        started = await _start_early(spec, wire, stack)
        from mcp import Client
        from mcp.types import Implementation

        quiet_sdk_loggers()
        target = stdio_transport(spec, wire, started) if started else await _transport(spec, wire, stack, oauth)
        if tap is not None and spec.transport != "memory":
            target = tapped(target, tap)
        client = Client(
            target,
            mode="legacy" if spec.protocol == "legacy" else "auto",
            client_info=Implementation(name="miroctl", version=__version__),
            message_handler=_message_handler(on_tools_changed, _updates(spec.name, relay)),
            **(_relayed(spec.name, relay) if relay is not None else {}),
        )
        await stack.enter_async_context(client)
        yield Connection(SdkSession(client), wire)


def _relayed(server: str, relay: Relay) -> dict[str, Any]:
    """The Client's callbacks that hand a server's requests and log messages to the relay."""

    async def sampling(context: Any, params: Any) -> Any:
        return await relay.request(server, "sampling/createMessage", params)

    async def elicitation(context: Any, params: Any) -> Any:
        return await relay.request(server, "elicitation/create", params)

    async def roots(context: Any) -> Any:
        return await relay.request(server, "roots/list", None)

    async def logging(params: Any) -> None:
        await relay.log(server, params)

    return {
        "log_level": "debug",  # 2026-07-28 servers log only for requests that opt in; the host's own level filters
        "sampling_callback": sampling,
        "elicitation_callback": elicitation,
        "list_roots_callback": roots,
        "logging_callback": logging,
    }


@asynccontextmanager
async def tapped(transport: Any, tap: TapFn) -> AsyncIterator[tuple[Any, ...]]:
    """A transport whose messages pass through `tap` on their way, both directions, as they happen."""
    async with transport as streams:
        read, write = streams[0], streams[1]
        read_in, read_out = anyio.create_memory_object_stream[Any](0)
        write_in, write_out = anyio.create_memory_object_stream[Any](0)

        async def incoming() -> None:
            async with read_in:
                async for item in read:
                    if not isinstance(item, Exception):
                        tap(FROM_SERVER, item.message)
                    await read_in.send(item)

        async def outgoing() -> None:
            async with write_out:
                async for item in write_out:
                    tap(TO_SERVER, item.message)
                    await write.send(item)
            await write.aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(_guard, incoming)
            tg.start_soon(_guard, outgoing)
            try:
                yield (read_out, write_in, *streams[2:])
            finally:
                with anyio.CancelScope(shield=True):
                    await read_out.aclose()
                    await write_in.aclose()
                tg.cancel_scope.cancel()


async def _start_early(spec: ServerSpec, wire: Wire, stack: AsyncExitStack) -> Started | None:
    """A stdio server's process, started before the SDK is imported: the SDK costs ~1 s of CPU to import, and
    the server boots on another core meanwhile instead of after it. None for the other transports.

    The import runs in a worker thread so that the event loop stays free: the other servers of a pool are
    started too before any of them waits for the SDK. Until the transport owns the process, the stack stops
    it if anything (a timeout, Ctrl-C, an import error, a client that never started) ends the start."""
    if spec.transport != "stdio":
        return None
    process, stderr_path = await spawn(spec)
    started = Started(process, stderr_path)
    wire.pid, wire.spawned_at, wire.stderr_path = process.pid, time.perf_counter(), stderr_path

    async def stop_unless_owned() -> None:
        if not started.owned:
            with anyio.CancelScope(shield=True):
                await stop_process(process, wire)

    stack.push_async_callback(stop_unless_owned)
    if "mcp" not in sys.modules:  # once per process: later sessions (a gateway, the tests) find it loaded
        await anyio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
    return started


_IMPORTING = threading.Lock()


def _import_sdk() -> None:
    """The SDK's client, imported in a worker thread while a server starts; one thread at a time, so that
    the servers of a pool never import it concurrently (Python's import locks could see a deadlock)."""
    with _IMPORTING:
        import mcp  # noqa: F401


def _updates(server: str, relay: Relay | None) -> Callable[[str], Awaitable[None]] | None:
    """Where a server's resource updates go: to the relay (a gateway's subscribed hosts), or nowhere."""
    if relay is None:
        return None

    async def updated(uri: str) -> None:
        await relay.updated(server, uri)

    return updated


def _message_handler(
    on_tools_changed: Callable[[], None] | None, on_updated: Callable[[str], Awaitable[None]] | None = None
) -> MessageHandlerFnT:
    """Server notifications miroctl does not relay are dropped; a tool-list change is passed on if asked, and
    a resource update to the relay."""

    async def handle(message: IncomingMessage) -> None:
        method = getattr(message, "method", None)
        if on_tools_changed is not None and method == "notifications/tools/list_changed":
            on_tools_changed()
        if on_updated is not None and method == "notifications/resources/updated":
            await on_updated(str(getattr(getattr(message, "params", None), "uri", "")))
        await anyio.lowlevel.checkpoint()

    return handle


async def _transport(spec: ServerSpec, wire: Wire, stack: AsyncExitStack, oauth: httpx2.Auth | None) -> Any:
    """What mcp.Client connects to: an in-process server, or a transport's context manager."""
    if spec.transport == "memory":
        return spec.target
    if spec.transport == "stdio":
        return stdio_transport(spec, wire)
    url = spec.url or ""
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
            return _http_client(wire, oauth)  # the spec's headers and miroctl's timeouts, whatever sse_client asks

        # sse_client enters (and closes) the client it gets from the factory itself.
        return answered_sse(sse_client(url, headers=dict(spec.headers), httpx_client_factory=factory))
    from mcp.client.streamable_http import streamable_http_client

    http_client = await stack.enter_async_context(_http_client(wire, oauth))
    return streamable_http_client(url, http_client=http_client)


@asynccontextmanager
async def answered_sse(transport: Any) -> AsyncIterator[tuple[Any, ...]]:
    """The SSE transport, with a message the SDK could not parse turned into an answer for its request.

    The SDK's sse_client puts its parse exception into the read stream, where the session only logs it: the
    pending request would wait out its whole timeout. Read as the stdio transport reads a line (frames.parse_line),
    the message becomes the error for its id (or, for a lone surrogate, the message decoded leniently)."""
    async with transport as streams:
        read_in, read_out = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with read_in:
                async for item in streams[0]:
                    await read_in.send(sse_item(item))

        async with anyio.create_task_group() as tg:
            tg.start_soon(_guard, pump)
            try:
                yield (read_out, *streams[1:])
            finally:
                with anyio.CancelScope(shield=True):
                    await read_out.aclose()
                tg.cancel_scope.cancel()


def sse_item(item: Any) -> Any:
    """An item of sse_client's read stream; its exception for an unparsable message becomes that message as
    parse_line reads it, when that says something (an error for an answer's id); other items pass unchanged."""
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    if not isinstance(item, ValidationError) or not item.errors():
        return item
    raw = item.errors()[0].get("input")  # the event's data, or the object it parsed to when it is not JSON-RPC
    try:
        text = raw if isinstance(raw, str) else json.dumps(raw) if isinstance(raw, dict) else ""
    except (TypeError, ValueError, RecursionError):
        return item
    message = parse_line(text.strip()) if text else None
    return SessionMessage(message) if message is not None else item


def _http_client(wire: Wire, auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
    """An HTTP client with the server's headers (and OAuth) that records the last error status it saw."""
    import httpx2

    async def record(response: httpx2.Response) -> None:
        if wire.first_response_at is None:
            wire.first_response_at = time.perf_counter()
        if response.status_code >= 400:
            wire.http_status = response.status_code
            if response.status_code in (401, 403):
                wire.www_authenticate = response.headers.get("www-authenticate")

    return httpx2.AsyncClient(
        headers=dict(wire.spec.headers),
        timeout=httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        event_hooks={"response": [record]},
    )


def quiet_sdk_loggers() -> None:
    """The SDK logs tracebacks for server misbehaviour that miroctl reports itself."""
    for name in ("mcp", "httpx2", "httpx"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


# ---------------------------------------------------------------------------------------------- stdio


@asynccontextmanager
async def stdio_transport(
    spec: ServerSpec, wire: Wire, started: Started | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """The server as a child process speaking newline-delimited JSON-RPC on stdin/stdout (`started`: a
    process spawned already, which this transport now owns)."""
    from mcp.shared.message import SessionMessage

    if started is None:
        started = Started(*await spawn(spec))
        wire.pid, wire.spawned_at = started.process.pid, time.perf_counter()
    started.owned = True
    process, wire.stderr_path = started.process, started.stderr_path
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None, "spawn opens both pipes"
    if wire.on_spawned is not None:  # the process runs (spawned here, or early): the handshake begins
        wire.on_spawned()
    read_in, read_out = anyio.create_memory_object_stream[Any](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

    async def pump_stdout() -> None:
        async with read_in:
            async for line in read_lines(stdout, wire):
                message = _parse(line, wire)
                del line  # a long answer's bytes go now, not when the server writes its next line
                if message is not None:
                    await read_in.send(message)
                del message

    async def pump_stdin() -> None:
        try:
            async with write_out:
                async for item in write_out:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(_guard, pump_stdout)
        tg.start_soon(_guard, pump_stdin)
        try:
            yield read_out, write_in
        finally:
            with anyio.CancelScope(shield=True):
                await read_out.aclose()
                await write_in.aclose()
                await stop_process(process, wire)
            tg.cancel_scope.cancel()


async def _guard(pump: Callable[[], Awaitable[None]]) -> None:
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        await pump()


async def read_lines(stream: AsyncIterable[bytes], wire: Wire) -> AsyncIterator[bytes]:
    """Split a byte stream into lines, scanning each byte once; an endless line ends the stream. A line is
    copied out of the buffer once (not sliced, then copied), so a long answer is held twice, not three times,
    while it is cut off."""
    buffer = bytearray()
    async for chunk in stream:
        start = len(buffer)
        buffer += chunk
        while (end := buffer.find(b"\n", start)) >= 0:
            with memoryview(buffer) as view, view[:end] as head:
                line = bytes(head)
            del buffer[: end + 1]
            yield line
            del line  # the consumer has it: a long line is not kept here until the next one
            start = 0
        if len(buffer) > MAX_MESSAGE_BYTES:
            wire.oversize = True
            return
    wire.stdout_eof = True


def _parse(line: bytes, wire: Wire) -> Any:
    """A JSON-RPC message (an unreadable answer becomes an error for its id), or None for a line that is not
    JSON-RPC at all (counted as stdout noise)."""
    from mcp.shared.message import SessionMessage

    if not line.strip():
        return None
    message = parse_line(line)  # the bytes as they came: a long answer is not decoded into a copy first
    if message is not None:
        return SessionMessage(message)
    count_noise(as_text(line), wire)
    return None


def count_noise(text: str, wire: Wire) -> None:
    """A stdout line that is not JSON-RPC: counted, and the first few kept (masked) for the report."""
    wire.noise_lines += 1
    if len(wire.noise_samples) < NOISE_SAMPLES:
        wire.noise_samples.append(Masker(wire.spec.secrets).text(text[:200]))


async def stop_process(process: ServerProcess, wire: Wire) -> None:
    """Close stdin, give the server its stop grace (EOF_GRACE) to exit, then SIGTERM and SIGKILL its whole group."""
    if wire.stdout_eof:  # it closed stdout first: most likely it is exiting, let the exit status arrive
        await _exited(process, min(0.5, wire.stop_grace))
    wire.exited_on_its_own = process.returncode is not None
    with suppress(Exception):
        if process.stdin is not None:
            await process.stdin.aclose()
    if not await _exited(process, min(0.2, wire.stop_grace) if wire.hurry else wire.stop_grace):
        signal_group(process.pid, signal.SIGTERM)
        if not await _exited(process, min(TERM_GRACE, wire.stop_grace / 2)):
            signal_group(process.pid, signal.SIGKILL)
            await _exited(process, 2.0)
    # Whatever the server left running in its group goes with it.
    signal_group(process.pid, signal.SIGKILL)
    wire.returncode = process.returncode
    with suppress(Exception):
        if process.stdout is not None:
            await process.stdout.aclose()
    close_transport(process)


async def _exited(process: ServerProcess, timeout: float) -> bool:
    deadline = anyio.current_time() + timeout
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(0.01)
    return True
