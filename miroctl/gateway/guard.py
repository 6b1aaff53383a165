"""The HTTP gateway's guard: every request is checked here before any route sees it.

In order: Host and Origin (the MCP transport spec's defence against DNS rebinding: a foreign Host gets
421, a foreign Origin 403), CORS preflights of origins allowed with --allow-origin (answered without a
token, since browsers never send one there), the bearer token in constant time (401 with
WWW-Authenticate), then the body: read whole within the read timeout (408) and at most --max-body bytes
(413, whether the size was declared or the body came chunked), then replayed to the route. Responses to
an allowed origin carry Access-Control-Allow-* headers, so a web page there can read them.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from miroctl.base import escaping
from miroctl.base.errors import UsageError

if TYPE_CHECKING:  # starlette is loaded by `serve --http` only
    from starlette.datastructures import Headers
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from miroctl.gateway.uvicorn_private import Parser

DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 4 * 1024 * 1024
DEFAULT_READ_TIMEOUT = 10.0  # seconds for a request's headers; its body gets BODY_TIME_FACTOR times this
BODY_TIME_FACTOR = 3
DEFAULT_MAX_SESSIONS = 256
DEFAULT_SESSION_IDLE = 600.0
OPEN_PATHS = ("/livez", "/readyz")  # what a kubelet or load balancer probes, with neither token nor known Host
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CORS_METHODS = "GET, POST, DELETE, OPTIONS"
CORS_HEADERS = "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id"
CORS_EXPOSED = "mcp-session-id, mcp-protocol-version, www-authenticate"


@dataclass(frozen=True)
class HttpSettings:
    """Where the gateway listens, whom it lets in, and how much time and room a client gets."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    allow_hosts: Sequence[str] = ()
    allow_origins: Sequence[str] = ()
    max_body: int = DEFAULT_MAX_BODY
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    session_idle: float = DEFAULT_SESSION_IDLE
    parser: Parser | None = None  # uvicorn's HTTP/1.1 parser (None: httptools when installed, else h11)
    hosts: tuple[str, ...] = field(init=False, default=())
    origins: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        loopback = tuple(n for name in LOOPBACK_NAMES for n in (name, f"{name}:*"))
        any_host = not is_loopback(self.host) and not self.allow_hosts
        object.__setattr__(self, "hosts", () if any_host else (*loopback, *self.allow_hosts))
        local = tuple(
            f"{scheme}://{name}{port}" for scheme in ("http", "https") for name in LOOPBACK_NAMES for port in ("", ":*")
        )
        object.__setattr__(self, "origins", (*local, *self.allow_origins))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(settings: HttpSettings) -> None:
    """Refuse to listen beyond this machine without a token (exit 2, nothing started)."""
    if not is_loopback(settings.host) and not settings.token:
        raise UsageError(
            f"refusing to listen on {settings.host} without a token",
            hint="pass --token-env VAR (a variable holding the token), or bind 127.0.0.1",
        )


def matches(value: str, patterns: Sequence[str]) -> bool:
    """Exact match, or `base:*` for any port of base."""
    return any(value == p or (p.endswith(":*") and value.startswith(p[:-1])) for p in patterns)


def token_ok(header: str | None, token: str) -> bool:
    """Whether `Authorization: Bearer <token>` carries the token, compared in constant time."""
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


class Guard:
    """ASGI middleware: Host, Origin, CORS, token, then the body (time and size), before any route runs."""

    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.settings = settings
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"] == "GET" and scope["path"] in OPEN_PATHS):
            await self.app(scope, receive, send)  # probes: no token, any Host (they tell only up or ready)
            return
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        origin = headers.get("origin")
        cors = origin if origin is not None and matches(origin, self.settings.allow_origins) else None
        send = _with_cors(send, cors) if cors else send
        refusal = self.refusal(scope["method"], headers, cors)
        if refusal is None:
            body = await self.body(headers, receive)
            refusal = body if not isinstance(body, list) else None
            receive = _replay(body, receive) if isinstance(body, list) else receive
        await (refusal or self.app)(scope, receive, send)

    def refusal(self, method: str, headers: Headers, cors: str | None) -> ASGIApp | None:
        """The answer for a request that goes no further (a refusal, or a CORS preflight), or None."""
        host, origin = headers.get("host", ""), headers.get("origin")
        if self.settings.hosts and not matches(host, self.settings.hosts):
            return refuse(421, "this gateway does not answer to that Host header")
        if origin is not None and not matches(origin, self.settings.origins):
            return refuse(403, "requests from that Origin are not allowed")
        if method == "OPTIONS" and cors and headers.get("access-control-request-method"):
            return _preflight
        if self.settings.token and not token_ok(headers.get("authorization"), self.settings.token):
            error = ', error="invalid_token"' if headers.get("authorization") else ""
            return refuse(
                401, "a valid bearer token is required", {"WWW-Authenticate": f'Bearer realm="miroctl"{error}'}
            )
        return None

    async def body(self, headers: Headers, receive: Receive) -> list[Message] | Response:
        """The request's messages up to the end of its body, or the refusal (408, 413) that ends it."""
        limit = self.settings.max_body
        if _declared_size(headers) > limit:
            return self.too_large()
        messages: list[Message] = []
        size = 0
        seconds = self.settings.read_timeout * BODY_TIME_FACTOR
        with anyio.move_on_after(seconds):
            while True:
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request":
                    return messages
                size += len(message.get("body", b""))
                if size > limit:
                    return self.too_large()
                if not message.get("more_body", False):
                    return messages
        return refuse(408, f"the request body did not arrive within {seconds:g}s", {"Connection": "close"})

    def too_large(self) -> Response:
        return refuse(413, f"the request body is larger than {self.settings.max_body} bytes", {"Connection": "close"})


def _declared_size(headers: Headers) -> int:
    try:
        return int(headers.get("content-length") or 0)
    except ValueError:
        return 0


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A receive that gives the messages already read, then whatever comes next (a disconnect)."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def _with_cors(send: Send, origin: str) -> Send:
    """A send that adds the CORS headers for `origin` to the response."""
    extra = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", CORS_EXPOSED.encode()),
        (b"vary", b"Origin"),
    ]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def _preflight(scope: Scope, receive: Receive, send: Send) -> None:
    """A CORS preflight of an allowed origin: which methods and headers it may use (no token needed)."""
    from starlette.responses import Response

    headers = {
        "Access-Control-Allow-Methods": CORS_METHODS,
        "Access-Control-Allow-Headers": CORS_HEADERS,
        "Access-Control-Max-Age": "600",
    }
    await Response(status_code=204, headers=headers)(scope, receive, send)


def refuse(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """A refusal as JSON: {"schema": "miroctl.error/1", "is_error": true, "error", "error_kind": "http", "status"}."""
    from starlette.responses import Response

    body = {"schema": "miroctl.error/1", "is_error": True, "error": message, "error_kind": "http", "status": status}
    return Response(escaping.dumps(body), status_code=status, headers=headers, media_type="application/json")
