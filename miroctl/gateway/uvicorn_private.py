"""The one place miroctl extends uvicorn's internals (tests/test_private_apis.py watches it).

uvicorn closes idle keep-alive connections, but gives a client all the time it wants to finish a
request's headers: a few hundred connections that each send a byte now and then (slowloris) hold the
gateway's sockets forever, and the ASGI app, which would check the token, never even sees them. This
subclass of uvicorn's h11 protocol starts a clock when a request's first byte arrives and closes the
connection if its headers are not complete within the read timeout. It reads the h11 connection
(`conn`), the transport and the loop that uvicorn (0.54) keeps on the protocol object.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import h11

if TYPE_CHECKING:
    import uvicorn


def header_timed_protocol(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a deadline of `seconds` on each request's headers."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimedProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn narrows asyncio's BaseTransport
            super().connection_made(transport)
            self._arm()  # a connection that never sends a byte is just as stuck

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()  # a request's head is still coming: its clock runs from its first byte
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()  # from here uvicorn's keep-alive timeout covers the silence
            self._disarm()

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE:
                self.transport.close()

    return HeaderTimedProtocol


def stop_accepting(server: uvicorn.Server) -> None:
    """Close a running uvicorn server's listening sockets (its `servers`): new connections are refused while
    the open ones finish. uvicorn's own shutdown closes them again, which is harmless."""
    for listener in getattr(server, "servers", None) or ():
        listener.close()
