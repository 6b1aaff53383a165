"""The loopback redirect target of a login: one HTTP request on 127.0.0.1, checked, answered, then closed.

The browser comes back to http://127.0.0.1:PORT/callback?code=...&state=... . The first request to that
path decides: a `state` other than the one this login sent is refused (it is not this login's answer), an
`error` from the authorization server is reported, and either way the listener closes. Other paths (a
browser's favicon) get a 404 and change nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import Listener, SocketAttribute, SocketStream

from miroctl.base.errors import AuthRequired, TimedOut

CALLBACK_PATH = "/callback"
MAX_REQUEST_BYTES = 16 * 1024
READ_TIMEOUT = 10.0

_PAGE = (
    "<!doctype html><meta charset=utf-8><title>miroctl</title>"
    "<body style='font-family:sans-serif'><h3>{}</h3><p>{}</p></body>"
)


@dataclass(frozen=True)
class Callback:
    """What the authorization server sent back."""

    code: str
    state: str
    iss: str | None = None


class Loopback:
    """A listener for one authorization callback; `expect(state)` arms it, `wait()` returns the code."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
        self._state: str | None = None
        self.done = anyio.Event()
        self._result: Callback | None = None
        self._error: Exception | None = None

    def expect(self, state: str) -> None:
        self._state = state

    async def wait(self, timeout: float) -> Callback:
        with anyio.move_on_after(timeout):
            await self.done.wait()
        if not self.done.is_set():
            raise TimedOut(
                f"no authorization arrived within {timeout:g}s",
                hint="open the URL and approve, or give --timeout more seconds",
            )
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(READ_TIMEOUT):
                    target = await _request_target(stream)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError, ValueError):
                return
            parts = urlsplit(target)
            if parts.path != CALLBACK_PATH or self.done.is_set():
                await _respond(stream, 404, "Not found", "This is miroctl's login callback.")
                return
            status, title, text = self._decide(parse_qs(parts.query))
            await _respond(stream, status, title, text)
            self.done.set()

    def _decide(self, query: dict[str, list[str]]) -> tuple[int, str, str]:
        """Check one callback; sets the result or the error, and returns the page to show."""
        first = {key: values[0] for key, values in query.items() if values}
        state = first.get("state", "")
        if self._state is None or not secrets.compare_digest(state.encode(), self._state.encode()):
            self._error = AuthRequired(
                "authorization refused: the callback's state does not match the login miroctl started",
                hint="a stale or forged callback; run miroctl auth again and use the URL it shows",
            )
            return 400, "Login refused", "The answer does not belong to this login. Run miroctl auth again."
        if "error" in first:
            reason = first["error"] + (f": {first['error_description']}" if first.get("error_description") else "")
            self._error = AuthRequired(f"the authorization server refused the login: {reason[:300]}")
            return 400, "Login refused", "The authorization server refused the login; see the terminal."
        if not first.get("code"):
            self._error = AuthRequired("the authorization callback carried no code")
            return 400, "Login failed", "No authorization code arrived."
        self._result = Callback(code=first["code"], state=state, iss=first.get("iss"))
        return 200, "miroctl is authorized", "You can close this tab and return to the terminal."


@asynccontextmanager
async def listening(*ports: int) -> AsyncIterator[Loopback]:
    """Listen on 127.0.0.1, on the first of `ports` that is free (0: any); closed after one callback."""
    listener = await _bind(ports or (0,))
    async with listener:
        loop = Loopback(listener.extra(SocketAttribute.local_port))
        async with anyio.create_task_group() as tg:
            tg.start_soon(_serve, listener, loop)
            try:
                yield loop
            finally:
                tg.cancel_scope.cancel()


async def _bind(ports: tuple[int, ...]) -> Listener[SocketStream]:
    for port in ports[:-1]:
        try:
            return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
        except OSError:
            continue
    return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=ports[-1])


async def _serve(listener: Listener[SocketStream], loop: Loopback) -> None:
    async with anyio.create_task_group() as handlers:

        async def close_when_done() -> None:
            await loop.done.wait()
            await anyio.sleep(0.05)  # the page on its way to the browser
            handlers.cancel_scope.cancel()

        handlers.start_soon(close_when_done)
        await listener.serve(loop.handle, handlers)
    await listener.aclose()  # one callback only: nothing more is accepted


async def _request_target(stream: SocketStream) -> str:
    """The target of an HTTP request line (`GET /callback?... HTTP/1.1`); the headers are read and ignored."""
    data = b""
    while b"\r\n\r\n" not in data and b"\n\n" not in data:
        chunk = await stream.receive(4096)
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError("request too large")
    method, target, _version = data.split(b"\r\n", 1)[0].split(b"\n", 1)[0].decode("latin-1").split(" ", 2)
    if method != "GET":
        raise ValueError("not a GET")
    return target


async def _respond(stream: SocketStream, status: int, title: str, text: str) -> None:
    body = _PAGE.format(title, text).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    )
    try:
        await stream.send(head.encode() + body)
    except (anyio.BrokenResourceError, OSError):
        pass
