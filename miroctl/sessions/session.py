"""The one seam between miroctl and an MCP session: a typed `Session`, its JSON-RPC messages, its one error type.

Two implementations answer it: the lean JSON-RPC client of a cold stdio list or call (sessions/lean.py), and
the adapter over the mcp SDK's client (sessions/sdk_session.py) that owns every use of the SDK's private
API, every `model_dump`, and the translation of the SDK's errors into `RpcError` and `InvalidResult`. What
sits above (listing, the pool, the manager) sees only this module: the server's JSON, never an SDK model.
The message types are TypedDicts, free at run time, so the cold path imports nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NotRequired, Protocol, TypedDict

from miroctl.base.models import ProgressFn

# A JSON object as the server sent it: its values are unknown until checked where they are read
JSONObject = dict[str, object]  # a JSON object as the server sent it (its values are checked where they are read)

CONNECTION_CLOSED, REQUEST_TIMEOUT = -32000, -32001
INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_VERSION = -32600, -32601, -32022


class ErrorBody(TypedDict):
    code: int
    message: str
    data: NotRequired[object]


class Request(TypedDict):
    jsonrpc: Literal["2.0"]
    id: int | str
    method: str
    params: NotRequired[JSONObject]


class Notification(TypedDict):
    jsonrpc: Literal["2.0"]
    method: str
    params: NotRequired[JSONObject]


class Answer(TypedDict):
    """A result or an error for a request's id."""

    jsonrpc: Literal["2.0"]
    id: int | str | None
    result: NotRequired[JSONObject]
    error: NotRequired[ErrorBody]


Message = Request | Notification | Answer


class ListedTool(TypedDict):
    """A tools/list item that passed `toolcheck.tool_problem` (its other fields, `_meta`, `icons`... as sent)."""

    name: str
    inputSchema: JSONObject
    title: NotRequired[str | None]
    description: NotRequired[str | None]
    outputSchema: NotRequired[JSONObject | None]
    annotations: NotRequired[object]


class RpcError(Exception):
    """A request answered with a JSON-RPC error, or ended by a lost connection (code -32000): the one error
    type both sessions raise for what the server (or the wire) said."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    @property
    def closed(self) -> bool:
        return self.code == CONNECTION_CLOSED


class InvalidResult(Exception):
    """An answer whose shape the protocol rejects; the message is one line (`field: what is wrong`)."""


@dataclass(frozen=True)
class ServerInfo:
    name: str
    version: str


class Session(Protocol):
    """One initialized MCP session, whichever client runs it."""

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def server_info(self) -> ServerInfo | None: ...

    @property
    def instructions(self) -> str | None:
        """How to use the server, as it said in its handshake (`instructions`), or None."""
        ...

    @property
    def capabilities(self) -> JSONObject:
        """The server's capabilities as it declared them (JSON)."""
        ...

    async def request(self, method: str, params: Mapping[str, object] | None = None) -> JSONObject:
        """One request, its result as the server sent it (unchecked); RpcError for an error answer."""
        ...

    def learn_tools(self, tools: Sequence[ListedTool], complete: bool) -> frozenset[str]:
        """Take checked tools/list items as if the session had listed them (their output schemas check later
        results); a complete listing replaces what was known. The names kept (a session may drop some)."""
        ...

    async def call_tool(
        self, name: str, arguments: Mapping[str, object], progress: ProgressFn | None = None
    ) -> JSONObject:
        """tools/call; the result as the server's JSON, checked as the protocol asks (InvalidResult if not)."""
        ...

    async def notify(self, method: str, params: Mapping[str, object] | None = None) -> None:
        """Send a notification (fire and forget)."""
        ...

    def announces_tool_changes(self) -> bool:
        """Whether the server said it announces changes to its tool list."""
        ...

    async def follow_tool_changes(self, changed: Callable[[], None]) -> None:
        """Call `changed` for each tool-list change the server announces on a stream of its own (2026-07-28);
        returns when the stream ends. Older servers' unsolicited notifications reach the connection instead."""
        ...

    def close(self) -> None:
        """The connection is gone: every waiting and later request fails with "Connection closed"."""
        ...


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside nested ExceptionGroups (the SDK's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def closed(exc: BaseException) -> bool:
    """Whether `exc` says the session's connection is gone."""
    return isinstance(exc, RpcError) and exc.closed
