"""How a session is opened: the one choice between the lean client and the SDK's, made when a Manager is built.

A connector turns a server's spec into an open `Connection` (an async context manager). `SDK` always uses
the mcp SDK's client; `LEAN` gives a stdio server that needs no relay (a gateway's hosts) the lean client
(sessions/lean.py), which follows tool-list changes as the SDK's does, so that a cold list or call and the
library's sessions never import the SDK, and every other session the SDK's.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from miroctl.base.models import ServerSpec
from miroctl.sessions.lean import open_lean_connection
from miroctl.sessions.prestart import EarlyServers
from miroctl.sessions.recording import TapFn
from miroctl.sessions.transports import Connection, Relay, Wire, open_connection

Opened = AbstractAsyncContextManager[Connection]


class Connector(Protocol):
    """Opens one session to `spec`, observed through `wire`."""

    def __call__(
        self,
        spec: ServerSpec,
        wire: Wire,
        *,
        on_tools_changed: Callable[[], None] | None = None,
        relay: Relay | None = None,
        tap: TapFn | None = None,
    ) -> Opened: ...


def sdk(
    spec: ServerSpec,
    wire: Wire,
    *,
    on_tools_changed: Callable[[], None] | None = None,
    relay: Relay | None = None,
    tap: TapFn | None = None,
) -> Opened:
    """Every session on the mcp SDK's client (HTTP, SSE, OAuth, relays, resources and prompts, checks)."""
    return open_connection(spec, wire, on_tools_changed=on_tools_changed, relay=relay, tap=tap)


class Lean:
    """The lean client where it serves (a stdio server's tools, nothing relayed), else the SDK's;
    a server the command line's early start began (`early_servers`) is adopted instead of started again."""

    def __init__(self, early_servers: EarlyServers | None = None) -> None:
        self.early_servers = early_servers

    def __call__(
        self,
        spec: ServerSpec,
        wire: Wire,
        *,
        on_tools_changed: Callable[[], None] | None = None,
        relay: Relay | None = None,
        tap: TapFn | None = None,
    ) -> Opened:
        if spec.transport == "stdio" and relay is None:
            return open_lean_connection(
                spec, wire, tap=tap, early_servers=self.early_servers, on_tools_changed=on_tools_changed
            )
        return sdk(spec, wire, on_tools_changed=on_tools_changed, relay=relay, tap=tap)


SDK: Connector = sdk
LEAN: Connector = Lean()
