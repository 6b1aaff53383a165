"""The one place miroctl reaches into the mcp SDK's private attributes (tests/test_private_apis.py watches it).

The HTTP gateway's metrics count the MCP sessions open, which StreamableHTTPSessionManager (2.3) keeps in
the private `_server_instances`; if a new SDK moves it, the metric reads 0 and the test fails loudly.

A request handler's session lives as long as the request; a gateway that tells hosts on protocols before
2026-07-28 about tool-list changes, or about updates of resources they subscribed to, needs the connection
behind it, which the SDK (2.3) keeps as the
private `ServerSession._connection`. If a new SDK moves it, the test fails loudly and those hosts are
simply not told meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager


class Host(Protocol):
    """Where the gateway tells a host of changes outside a request: the connection behind a request's session,
    or the session itself."""

    async def send_tool_list_changed(self) -> None: ...

    async def send_resource_updated(self, uri: str) -> None: ...


def request_connection(session: ServerSession) -> Host | None:
    """The long-lived connection behind a request's session, or None when the SDK does not expose it."""
    return getattr(session, "_connection", None)


def open_sessions(manager: StreamableHTTPSessionManager) -> int:
    """How many MCP sessions a StreamableHTTPSessionManager holds open (0 when the SDK does not expose it)."""
    instances = getattr(manager, "_server_instances", None)
    return len(instances) if isinstance(instances, dict) else 0
