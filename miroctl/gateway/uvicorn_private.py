"""The one place miroctl extends uvicorn's internals (tests/test_private_apis.py watches it).

uvicorn closes idle keep-alive connections, but gives a client all the time it wants to finish a
request's headers: a few hundred connections that each send a byte now and then (slowloris) hold the
gateway's sockets forever, and the ASGI app, which would check the token, never even sees them. The
subclasses here of uvicorn's two HTTP/1.1 protocols (httptools, the fast one, when it is installed; else
h11) start a clock when the connection opens, when a request's first byte arrives, and when bytes arrive while
no request is being answered (blank lines, which httptools skips but which stop uvicorn's keep-alive timer),
and close the connection if no request's headers are complete within the read timeout. They also:

- tell the app when its client goes away without a task per request that waits for `http.disconnect`: each
  request's scope carries its connection's `Departure` (`departure(scope)`), whose callbacks run when the
  connection is lost;
- write an answer's head and the start of its body in one socket write, not two: a head waits for the next
  write of the same turn of the loop (the body, which Starlette sends right after it), or for the end of it.

They read what uvicorn (0.55) keeps on the protocol object: the loop, the transport, h11's connection
(`conn`), the request's `scope` and `cycle` (its `response_complete`); and httptools' parser callbacks
`on_message_begin` and `on_headers_complete`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import h11

if TYPE_CHECKING:
    import uvicorn

Parser = Literal["httptools", "h11"]
DEPARTURE = "miroctl.departure"  # the scope key of a request's Departure
HELD = 16 * 1024  # bytes: a write this small (an answer's head) waits for the next one...
JOINED = 256 * 1024  # ...and is sent in one with it when that one is no larger than this


class Departure:
    """One connection's end, as the requests on it see it: `gone` once lost, and callbacks run at that moment."""

    def __init__(self) -> None:
        self.gone = False
        self._callbacks: list[Callable[[], object]] = []

    @contextmanager
    def calling(self, callback: Callable[[], object]) -> Iterator[None]:
        """Run `callback` if the connection is lost while the block runs (at once if it is lost already)."""
        if self.gone:
            callback()
        self._callbacks.append(callback)
        try:
            yield
        finally:
            self._callbacks.remove(callback)

    def lost(self) -> None:
        self.gone = True
        for callback in list(self._callbacks):
            callback()


def departure(scope: Any) -> Departure | None:
    """The Departure of the connection a request came on, when a protocol of this module serves it."""
    found = scope.get(DEPARTURE)
    return found if isinstance(found, Departure) else None


def header_timed_protocol(seconds: float, parser: Parser | None = None) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol (h11's without httptools, or `parser` "h11"/"httptools") with a deadline of
    `seconds` on each request's headers, the requests' Departure, and one write per answer's head and body."""
    if parser == "h11" or (parser is None and not _has_httptools()):
        return _h11_protocol(seconds)
    return _httptools_protocol(seconds)


def protocol_name(protocol: type[asyncio.Protocol]) -> Parser:
    """Which parser a protocol of this module uses: "httptools" or "h11"."""
    return "httptools" if any(kind.__name__ == "HttpToolsProtocol" for kind in protocol.__mro__) else "h11"


def _has_httptools() -> bool:
    try:
        import httptools  # noqa: F401, PLC0415 - a compiled parser, looked for when serving starts
    except ImportError:
        return False
    return True


class _Corked:
    """A transport that holds a small write (an answer's head) until the next write of the same turn of the loop,
    sent with it as one, or until the end of that turn. Everything else is the transport's own."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._held: bytes | None = None
        self._flush: asyncio.Handle | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            if self._flush is not None:
                self._flush.cancel()
                self._flush = None
            if len(data) <= JOINED:
                self._transport.write(held + data)
                return
            self._transport.write(held)  # a large piece is not copied to save one write
        elif len(data) <= HELD:
            self._held = bytes(data)
            self._flush = self._loop.call_soon(self.flush)
            return
        self._transport.write(data)

    def flush(self) -> None:
        self._flush = None
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _HeaderClock:
    """The deadline on a request's headers, the connection's Departure, and the corked transport."""

    loop: asyncio.AbstractEventLoop
    transport: Any
    _header_timer: asyncio.TimerHandle | None = None
    _departure: Departure

    def _cork(self, transport: asyncio.Transport) -> Any:
        self._departure = Departure()
        return _Corked(transport, self.loop)

    def _arm(self, seconds: float) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        self.transport.close()

    def _lost(self) -> None:
        self._disarm()
        self._departure.lost()


def _httptools_protocol(seconds: float) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeaderTimedHttpTools(_HeaderClock, HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn narrows asyncio's BaseTransport
            super().connection_made(self._cork(transport))
            self._arm(seconds)  # a connection that never sends a byte is just as stuck

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                # No request is being answered: bytes that begin none (blank lines) stopped uvicorn's keep-alive
                # timer, so this clock closes the connection unless a request's head completes in time.
                self._arm(seconds)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope[DEPARTURE] = self._departure  # type: ignore[literal-required]  # miroctl's own key
            self._arm(seconds)  # a request's head is coming: its clock runs from its first byte

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._lost()
            super().connection_lost(exc)

    return HeaderTimedHttpTools


def _h11_protocol(seconds: float) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimedH11(_HeaderClock, H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn narrows asyncio's BaseTransport
            super().connection_made(self._cork(transport))
            self._arm(seconds)  # a connection that never sends a byte is just as stuck

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm(seconds)  # a request's head is still coming: its clock runs from its first byte
            else:
                self._disarm()

        def handle_events(self) -> None:
            scope = self.scope
            super().handle_events()
            if self.scope is not scope and self.scope is not None:  # a new request: its scope was just made
                self.scope[DEPARTURE] = self._departure  # type: ignore[literal-required]  # miroctl's own key

        def connection_lost(self, exc: Exception | None) -> None:
            self._lost()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()  # from here uvicorn's keep-alive timeout covers the silence
            self._disarm()

        def _too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE:
                self.transport.close()

    return HeaderTimedH11


def stop_accepting(server: uvicorn.Server) -> None:
    """Close a running uvicorn server's listening sockets (its `servers`): new connections are refused while
    the open ones finish. uvicorn's own shutdown closes them again, which is harmless."""
    for listener in getattr(server, "servers", None) or ():
        listener.close()
