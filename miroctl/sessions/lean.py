"""A lean MCP client for the cold `list` and `call`: plain JSON-RPC over miroctl's own stdio transport.

Importing the mcp SDK costs ~0.9 s of CPU (building its pydantic models), and a cold `miroctl call` would
spend most of its life there while the server it started waits. This client says on the wire what the
SDK's `Client(mode="auto")` says (tests/test_lean.py compares the two message by message): `server/discover`
at the newest modern version, the `initialize` handshake as the fallback (with the SDK's retry on -32022),
the modern `_meta` stamp on every request, progress tokens, `notifications/cancelled` for an abandoned
call, the SDK's answers to a server's own requests (ping; sampling, elicitation and roots refused), the
same checks of what comes back: each listed tool alone (sessions/toolcheck.py), a call's result shape, and its
structured content against the tool's output schema; and the SDK's following of tool-list changes: a
`subscriptions/listen` stream on a 2026-07-28 session, and the unsolicited `notifications/tools/list_changed`
of older servers.

It serves a stdio server's tools only (the cold `list` and `call`, the library's sessions); the SDK keeps
everything else (HTTP, SSE, OAuth, the gateway's relays, `check`, resources and prompts).
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import cast

import anyio

from miroctl.base.models import ProgressFn, ServerSpec
from miroctl.base.version import __version__
from miroctl.sessions.frames import as_text, parse_plain
from miroctl.sessions.prestart import EarlyServers
from miroctl.sessions.processes import SendPipe, spawn
from miroctl.sessions.recording import FROM_SERVER, TO_SERVER, TapFn
from miroctl.sessions.resultcheck import result_problem
from miroctl.sessions.session import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
    UNSUPPORTED_VERSION,
    Answer,
    InvalidResult,
    JSONObject,
    ListedTool,
    Message,
    Notification,
    Request,
    RpcError,
    ServerInfo,
)
from miroctl.sessions.toolcheck import output_validator, read_bool
from miroctl.sessions.transports import OUTBOX_BYTES, Connection, Wire, count_noise, read_lines, stop_process

__all__ = ["InvalidResult", "LeanClient", "RpcError", "ServerInfo", "check_call_result", "open_lean_connection"]

# The SDK's (mcp_types.version), repeated because importing them loads every model; tests/test_lean.py
# fails when the SDK's lists change.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
LATEST_MODERN = MODERN_VERSIONS[-1]
DISCOVER_TIMEOUT = 10.0  # as the SDK's: a server that never answers server/discover gets the handshake
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TOOLS_CHANGED = "notifications/tools/list_changed"
LISTEN_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
CANCELLED = "notifications/cancelled"
LISTEN_IDS = itertools.count(1)  # "listen-N", process-wide as the SDK's: never one of the requests' integer ids

REFUSED = {  # a server's requests that need a capability miroctl does not declare here: the SDK's answers
    "sampling/createMessage": "Sampling not supported",
    "elicitation/create": "Elicitation not supported",
    "roots/list": "List roots not supported",
}


@dataclass
class _Listen:
    """One subscriptions/listen stream, as the SDK's route keeps it: the filter the server acknowledged (events
    before that are dropped), and its end (an answer to the request, the server's cancel, a lost connection)."""

    changed: Callable[[], None]
    honoured: JSONObject | None = None
    ended: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class _Pending:
    on_progress: ProgressFn | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None
    error: RpcError | None = None


Send = Callable[[Message], None]  # queues one message for the server; never waits (see Outbox)


class LeanClient:
    """One initialized session (a `Session`): requests out through `send`, every message in through `receive`."""

    def __init__(self, send: Send, legacy: bool = False, on_tools_changed: Callable[[], None] | None = None) -> None:
        """`legacy`: the initialize handshake only, no server/discover (a server file's `protocol: legacy`);
        `on_tools_changed` hears every tool-list change the server sends, on a listen stream or unsolicited (as
        the SDK's message handler does)."""
        self._send = send
        self._legacy = legacy
        self._on_tools_changed = on_tools_changed
        self._listens: dict[str, _Listen] = {}
        self._pending: dict[int | str, _Pending] = {}
        self._next_id = 0
        self.protocol_version: str | None = None
        self.server_info: ServerInfo | None = None
        self.instructions: str | None = None
        self.capabilities: JSONObject = {}
        self._stamp: JSONObject | None = None  # the modern `_meta` stamp, once adopted
        self._output_schemas: dict[str, JSONObject | None] = {}
        self.closed = False

    # ------------------------------------------------------------------------------------- negotiation

    async def connect(self) -> None:
        """mode="auto" as the SDK does it: server/discover, the initialize handshake for a legacy server."""
        if self._legacy:
            await self._initialize()
            return
        version = LATEST_MODERN
        for attempt in range(2):
            try:
                raw = await self._discover(version)
            except RpcError as exc:
                supported = _supported(exc)
                mutual = [v for v in MODERN_VERSIONS if v in (supported or ())]
                if exc.code == UNSUPPORTED_VERSION and mutual and attempt == 0:
                    version = mutual[-1]
                    continue
                if exc.closed or (supported is not None and not any(v in HANDSHAKE_VERSIONS for v in supported)):
                    raise  # gone, or a modern-only server that shares no version with miroctl
                try:
                    await self._initialize()
                except RpcError as handshake:
                    mutual = [v for v in MODERN_VERSIONS if v in (_supported(handshake) or ())]
                    if handshake.code != UNSUPPORTED_VERSION or attempt != 0 or not mutual:
                        raise
                    version = mutual[-1]
                    continue
                return
            versions = raw.get("supportedVersions")
            mutual = [v for v in MODERN_VERSIONS if isinstance(versions, list) and v in versions]
            if not mutual or not isinstance(raw.get("capabilities"), dict):
                await self._initialize()  # not a modern server's answer: the handshake decides
                return
            self._adopt_modern(mutual[-1], raw)
            return
        raise RpcError(UNSUPPORTED_VERSION, "the server and miroctl share no protocol version")  # not reached

    async def _discover(self, version: str) -> JSONObject:
        meta = {META_VERSION: version, META_CLIENT: _client_info(), META_CAPABILITIES: {}}
        with anyio.move_on_after(DISCOVER_TIMEOUT):
            return await self._request("server/discover", {"_meta": meta}, cancellable=False)
        raise RpcError(REQUEST_TIMEOUT, f"server/discover: no answer within {DISCOVER_TIMEOUT:g}s")

    async def _initialize(self) -> None:
        params = {"protocolVersion": LATEST_HANDSHAKE, "capabilities": {}, "clientInfo": _client_info()}
        result = await self._request("initialize", params, cancellable=False)
        version, info, capabilities = (
            result.get("protocolVersion"),
            result.get("serverInfo"),
            result.get("capabilities"),
        )
        if not isinstance(version, str) or not isinstance(capabilities, dict):
            raise InvalidResult("the answer to initialize has no protocolVersion or capabilities")
        if not isinstance(info, dict) or not isinstance(info.get("name"), str):
            raise InvalidResult("serverInfo.name: Field required")
        if version not in HANDSHAKE_VERSIONS:
            raise RuntimeError(f"Unsupported protocol version from the server: {version}")
        self.protocol_version, self.capabilities = version, capabilities
        self.server_info = ServerInfo(info["name"], str(info.get("version") or ""))
        self.instructions = _text(result.get("instructions"))
        await self.notify("notifications/initialized")

    def _adopt_modern(self, version: str, result: JSONObject) -> None:
        capabilities = result["capabilities"]  # checked by the discovery's caller
        self.protocol_version, self.capabilities = version, capabilities if isinstance(capabilities, dict) else {}
        self.instructions = _text(result.get("instructions"))
        self._stamp = {META_VERSION: version, META_CLIENT: _client_info(), META_CAPABILITIES: {}}
        meta = result.get("_meta")
        info = meta.get(META_SERVER) if isinstance(meta, dict) else None
        if isinstance(info, dict) and isinstance(info.get("name"), str):  # display only: a bad one is ignored
            self.server_info = ServerInfo(info["name"], str(info.get("version") or ""))

    # ----------------------------------------------------------------------------------------- requests

    async def request(self, method: str, params: Mapping[str, object] | None = None) -> JSONObject:
        return await self._request(method, params)

    async def _request(
        self,
        method: str,
        params: Mapping[str, object] | None = None,
        progress: ProgressFn | None = None,
        cancellable: bool = True,
        ident: int | str | None = None,
    ) -> JSONObject:
        """The result of one request (`ident`: its id, else the next number); RpcError for an error answer or a
        lost connection. Cancelled (a timeout), the server is told with notifications/cancelled, as the SDK does."""
        if self.closed:
            raise RpcError(CONNECTION_CLOSED, "Connection closed")
        if ident is None:
            self._next_id += 1
            ident = self._next_id
        body: JSONObject = dict(params or {})
        if self._stamp is not None or progress is not None:
            given = body.get("_meta")
            meta = dict(given) if isinstance(given, dict) else {}
            if self._stamp is not None:
                meta.update(self._stamp)
            if progress is not None:
                meta["progressToken"] = ident  # the request id doubles as the token, as in the SDK
            body["_meta"] = meta
        message: Request = {"jsonrpc": "2.0", "id": ident, "method": method}
        if body:
            message["params"] = body
        pending = self._pending[ident] = _Pending(progress)
        try:
            self._write(message)
            await pending.done.wait()
        except anyio.get_cancelled_exc_class():
            if cancellable and not self.closed and not pending.done.is_set():
                await self.notify(CANCELLED, {"requestId": ident, "reason": "caller cancelled"})
            raise
        finally:
            self._pending.pop(ident, None)
        return _result(pending)

    async def notify(self, method: str, params: Mapping[str, object] | None = None) -> None:
        message: Notification = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        with suppress(RpcError):  # fire and forget, as the SDK's
            self._write(message)

    def _write(self, message: Message) -> None:
        try:
            self._send(message)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.WouldBlock) as exc:
            self.close()
            raise RpcError(CONNECTION_CLOSED, "Connection closed") from exc

    # ----------------------------------------------------------------------------------- what comes in

    async def receive(self, message: JSONObject) -> None:
        """One message from the server: an answer, a notification, or a request of its own. Never waits for
        the server: an answer to its request is queued (a server that writes before it reads never blocks)."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._answer(message["id"], method)
            elif method == "notifications/progress":
                await self._progress(message.get("params"))
            else:
                self._notified(method, message.get("params"))
            return
        pending = self._waiting(message.get("id"))
        if pending is not None and not pending.done.is_set():
            pending.answer = cast("Answer", message)  # it has no method, so it is an answer (frames.py checked it)
            pending.done.set()

    def _waiting(self, ident: object) -> _Pending | None:
        """The request an answer's (or a progress notification's) id names, if miroctl still waits for it."""
        number = _request_id(ident)
        if number is None and isinstance(ident, str):
            return self._pending.get(ident)  # a listen stream's request ("listen-N")
        return self._pending.get(number) if number is not None else None

    def _notified(self, method: str, params: object) -> None:
        """A notification: a listen stream's acknowledgement, event or end is routed to it first, and a tool-list
        change is passed on whether it rides a stream or not (the SDK's message handler hears both)."""
        if isinstance(params, dict) and self._listens:
            self._route(method, params)
        if method == TOOLS_CHANGED and self._on_tools_changed is not None and _plain_params(params):
            self._on_tools_changed()

    def _route(self, method: str, params: JSONObject) -> None:
        """The SDK's listen demultiplexing: frames stamped with a stream's id (its request's), and the server's
        cancel of that request, which ends the stream."""
        if method == CANCELLED:
            ended = self._stream(params.get("requestId"))
            if ended is not None:
                ended.ended.set()
            return
        meta = params.get("_meta")
        stream = self._stream(meta.get(META_SUBSCRIPTION)) if isinstance(meta, dict) else None
        if stream is None or stream.ended.is_set():
            return
        if method == LISTEN_ACKNOWLEDGED:
            if stream.honoured is None:  # the first acknowledgement wins
                stream.honoured = _subscription_filter(params.get("notifications"))
        elif method == TOOLS_CHANGED and stream.honoured is not None and stream.honoured.get("toolsListChanged"):
            stream.changed()

    def _stream(self, ident: object) -> _Listen | None:
        """The open stream a frame names by its id (the streams' ids are strings: anything else names none)."""
        return self._listens.get(ident) if isinstance(ident, str) else None

    def stray(self) -> None:
        """A line that is not JSON-RPC: before the handshake's answer it ends the start at once (the spec allows
        nothing else on stdout, and an answer glued to it would otherwise be waited for until the timeout)."""
        if self.protocol_version is None:
            self.close()

    def _answer(self, ident: object, method: str) -> None:
        """The SDK's answers to a server's requests when no callbacks are given."""
        reply: Answer = {"jsonrpc": "2.0", "id": ident if isinstance(ident, (int, str)) else None}
        if method == "ping":
            reply["result"] = {}
        elif method in REFUSED:
            reply["error"] = {"code": INVALID_REQUEST, "message": REFUSED[method]}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
        with suppress(RpcError):
            self._write(reply)

    async def _progress(self, params: object) -> None:
        if not isinstance(params, dict):
            return
        token, progress, total, text = (params.get(k) for k in ("progressToken", "progress", "total", "message"))
        if isinstance(token, bool) or isinstance(progress, bool) or not isinstance(progress, (int, float)):
            return
        pending = self._waiting(token)
        if pending is None or pending.on_progress is None:
            return
        with suppress(Exception):  # a failing progress display never fails the call
            await pending.on_progress(
                float(progress),
                float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
                text if isinstance(text, str) else None,
            )

    def close(self) -> None:
        """The connection is gone: every waiting request fails with "Connection closed", as the SDK's."""
        self.closed = True
        for pending in self._pending.values():
            if not pending.done.is_set():
                pending.error = RpcError(CONNECTION_CLOSED, "Connection closed")
                pending.done.set()

    # ------------------------------------------------------------------------------------------- tools

    def learn_tools(self, tools: Sequence[ListedTool], complete: bool) -> frozenset[str]:
        """The output schemas of listed tools (a complete listing replaces what was known)."""
        schemas = {tool["name"]: tool.get("outputSchema") for tool in tools}
        if complete:
            self._output_schemas = schemas
        else:
            self._output_schemas.update(schemas)
        return frozenset(schemas)

    @property
    def knows_tools(self) -> bool:
        return bool(self._output_schemas)

    def announces_tool_changes(self) -> bool:
        tools = self.capabilities.get("tools")
        return isinstance(tools, dict) and read_bool(tools.get("listChanged")) is True

    async def follow_tool_changes(self, changed: Callable[[], None]) -> None:
        """The SDK's `Client.listen(tools_list_changed=True)`: a subscriptions/listen stream whose tool-list
        changes reach `changed` once the server has acknowledged them; returns when the server ends the stream
        (an answer, its cancel, its exit). Cancelled, the server is told. Before 2026-07-28 there are no streams:
        changes come unsolicited, to `on_tools_changed`."""
        if self.protocol_version not in MODERN_VERSIONS:
            return
        ident = f"listen-{next(LISTEN_IDS)}"
        stream = self._listens[ident] = _Listen(changed)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._listen, ident, stream)
                await stream.ended.wait()
                tg.cancel_scope.cancel()  # the server cancelled it: the SDK cancels its request in turn
        finally:
            self._listens.pop(ident, None)

    async def _listen(self, ident: str, stream: _Listen) -> None:
        """The stream's request, which the server answers only to end it."""
        with suppress(RpcError):  # an error answer or a lost connection ends it as surely as a result
            await self._request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, ident=ident)
        stream.ended.set()

    async def call_tool(
        self, name: str, arguments: Mapping[str, object], progress: ProgressFn | None = None
    ) -> JSONObject:
        """tools/call; the result as the server sent it, checked as the SDK checks a CallToolResult."""
        result = await self._request("tools/call", {"name": name, "arguments": dict(arguments)}, progress)
        check_call_result(result, self.protocol_version)
        if not result.get("isError"):
            self._check_structured(name, result)
        return result

    def _check_structured(self, name: str, result: JSONObject) -> None:
        schema = self._output_schemas.get(name)
        if schema is None:
            return
        if "structuredContent" not in result:
            raise RuntimeError(f"Tool {name} has an output schema but did not return structured content")
        problem = output_validator(name, schema)(result["structuredContent"])
        if problem is not None:
            raise RuntimeError(problem)


def _result(pending: _Pending) -> JSONObject:
    """A finished request's result, or the RpcError it ended with."""
    if pending.error is not None:
        raise pending.error
    answer = pending.answer
    if answer is not None and "error" in answer:
        error = answer["error"]
        raise RpcError(error["code"], error["message"], error.get("data"))
    result = answer.get("result") if answer is not None else None
    if not isinstance(result, dict):
        raise RpcError(CONNECTION_CLOSED, "Connection closed")
    return result


def check_call_result(result: JSONObject, version: str | None = None) -> None:
    """InvalidResult unless `result` has the shape of a CallToolResult at `version` (the SDK rejects the same)."""
    if result.get("resultType", "complete") != "complete":
        raise RuntimeError(f"call_tool: the server asked for more input ({result.get('resultType')!r})")
    problem = result_problem(result, version)
    if problem is not None:
        raise InvalidResult(problem)


def _supported(exc: RpcError) -> list[str] | None:
    """The `supported` versions an -32022 error names, or None."""
    data = exc.data
    supported = data.get("supported") if isinstance(data, dict) else None
    if exc.code != UNSUPPORTED_VERSION or not isinstance(supported, list):
        return None
    return [v for v in supported if isinstance(v, str)]


def _plain_params(params: object) -> bool:
    """Whether the SDK takes a list_changed notification with these params (its `_meta`, if any, an object)."""
    return params is None or (isinstance(params, dict) and isinstance(params.get("_meta"), (dict, type(None))))


FILTER_FLAGS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


def _subscription_filter(raw: object) -> JSONObject | None:
    """An acknowledged SubscriptionFilter as the SDK reads it (flags in pydantic's lax booleans, by alias or by
    field name), or None when the SDK would not take it (then the stream stays unacknowledged)."""
    if not isinstance(raw, dict):
        return None
    honoured: JSONObject = {}
    for flag in FILTER_FLAGS:
        value = raw[flag] if flag in raw else raw.get(_snake(flag))
        reading = read_bool(value)
        if value is not None and reading is None:
            return None
        honoured[flag] = reading is True
    uris = raw["resourceSubscriptions"] if "resourceSubscriptions" in raw else raw.get("resource_subscriptions")
    if uris is not None and not (isinstance(uris, list) and all(isinstance(uri, str) for uri in uris)):
        return None
    return honoured


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _text(value: object) -> str | None:
    """A handshake's optional text (`instructions`): a string, else nothing."""
    return value if isinstance(value, str) else None


def _request_id(value: object) -> int | None:
    """An id as the SDK compares them: "7" and 7 are one request (miroctl's ids are numbers; None: not one)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    return None


def _client_info() -> dict[str, str]:
    return {"name": "miroctl", "version": __version__}


# ---------------------------------------------------------------------------------------------- stdio


class Outbox:
    """Messages on their way to the server, written by one task, so that nothing that reads ever waits for the
    server to read: a server that writes many requests before it reads again (a flood of pings) has its
    answers queued, up to OUTBOX_BYTES; past that, it is not reading at all, and the session ends."""

    def __init__(self, wire: Wire, tap: TapFn | None = None, limit: int = OUTBOX_BYTES) -> None:
        self._wire, self._tap, self._limit = wire, tap, limit
        self._sending, self._queue = anyio.create_memory_object_stream[bytes](math.inf)
        self.queued = 0

    def put(self, message: Message) -> None:
        """Queue one message (never waits); WouldBlock when the queue is over its limit or closed."""
        if self._tap is not None:
            self._tap(TO_SERVER, message)
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        if self.queued + len(data) > self._limit:
            self._wire.flooded = self._wire.hurry = True
            self._sending.close()
            raise anyio.WouldBlock
        self.queued += len(data)
        self._sending.send_nowait(data)

    async def run(self, stdin: SendPipe) -> None:
        """Write what is queued, in order, until the queue is closed or the pipe breaks (then stop writing)."""
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async with self._queue:
                async for data in self._queue:
                    self.queued -= len(data)
                    await stdin.send(data)

    def close(self) -> None:
        self._sending.close()


@asynccontextmanager
async def open_lean_connection(
    spec: ServerSpec,
    wire: Wire,
    tap: TapFn | None = None,
    early_servers: EarlyServers | None = None,
    on_tools_changed: Callable[[], None] | None = None,
) -> AsyncIterator[Connection]:
    """Start a stdio server (or adopt the one `early_servers` started for it while miroctl loaded itself,
    cli/prestart.py), negotiate, and yield the session; the process is stopped on exit as the SDK path stops
    it (close stdin, wait, SIGTERM, SIGKILL to its group). `on_tools_changed` hears the tool-list changes the
    server sends (see LeanClient)."""
    early = early_servers.take(spec) if early_servers is not None else None
    process, stderr_path = early if early is not None else await spawn(spec)
    wire.pid, wire.spawned_at, wire.stderr_path = process.pid, time.perf_counter(), stderr_path
    if wire.on_spawned is not None:
        wire.on_spawned()
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None, "spawn opens both pipes"
    outbox = Outbox(wire, tap)
    client = LeanClient(outbox.put, legacy=spec.protocol == "legacy", on_tools_changed=on_tools_changed)

    async def write() -> None:
        await outbox.run(stdin)
        client.close()  # the server stopped reading: nothing sent from now on would arrive

    async def pump() -> None:
        try:
            async for line in read_lines(stdout, wire):
                if not line.strip():
                    continue
                message = parse_plain(line)  # the bytes as they came: a long answer is not decoded first
                if message is None:
                    count_noise(as_text(line), wire)
                    client.stray()
                    continue
                del line  # a long answer's bytes go now, not when the server writes its next line
                if tap is not None:
                    tap(FROM_SERVER, message)
                await client.receive(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            client.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        tg.start_soon(write)
        try:
            await client.connect()
            yield Connection(client, wire)
        finally:
            client.close()
            outbox.close()
            with anyio.CancelScope(shield=True):
                await stop_process(process, wire)
            tg.cancel_scope.cancel()
