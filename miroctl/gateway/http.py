"""serve over HTTP: /mcp (streamable HTTP), /healthz, and the JSON API under /v1, behind one guard.

The guard checks every request before anything else sees it: Host and Origin (the MCP transport
spec's defence against DNS rebinding; a foreign Origin gets 403), the bearer token in constant
time (401 with WWW-Authenticate), and the body size (413). The caller's token stays here: upstream
sessions are opened from the config alone, so it is never forwarded.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import anyio

from miroctl.base.errors import MiroctlError, UsageError
from miroctl.core import batch
from miroctl.core.bodies import loads
from miroctl.gateway.api import call_document, error_document, list_document
from miroctl.gateway.check import check_document
from miroctl.gateway.server import Gateway, build_server

DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 4 * 1024 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SHUTDOWN_GRACE = 2  # seconds


@dataclass(frozen=True)
class HttpSettings:
    """Where the gateway listens and whom it lets in."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    allow_hosts: Sequence[str] = ()
    allow_origins: Sequence[str] = ()
    max_body: int = DEFAULT_MAX_BODY
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


# ---------------------------------------------------------------------------------------------- guard


class Guard:
    """ASGI middleware: Host, Origin, token and body size, before any route runs."""

    def __init__(self, app: Any, settings: HttpSettings) -> None:
        from mcp.server.transport_security import RequestBodyLimitMiddleware

        self.settings = settings
        self.app = RequestBodyLimitMiddleware(app, settings.max_body)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        refusal = self.refusal(scope) if scope["type"] == "http" else None
        await (refusal or self.app)(scope, receive, send)

    def refusal(self, scope: Any) -> Any:
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        host, origin = headers.get("host", ""), headers.get("origin")
        if self.settings.hosts and not matches(host, self.settings.hosts):
            return _refuse(421, "this gateway does not answer to that Host header")
        if origin is not None and not matches(origin, self.settings.origins):
            return _refuse(403, "requests from that Origin are not allowed")
        if self.settings.token and not token_ok(headers.get("authorization"), self.settings.token):
            error = ', error="invalid_token"' if headers.get("authorization") else ""
            return _refuse(
                401, "a valid bearer token is required", {"WWW-Authenticate": f'Bearer realm="miroctl"{error}'}
            )
        if _declared_size(headers) > self.settings.max_body:
            return _refuse(413, f"the request body is larger than {self.settings.max_body} bytes")
        return None


def _declared_size(headers: Any) -> int:
    try:
        return int(headers.get("content-length") or 0)
    except ValueError:
        return 0


def token_ok(header: str | None, token: str) -> bool:
    """Whether `Authorization: Bearer <token>` carries the token, compared in constant time."""
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _refuse(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import JSONResponse

    body = {"schema": "miroctl.error/1", "error": message, "error_kind": "http", "status": status}
    return JSONResponse(body, status_code=status, headers=headers)


# ---------------------------------------------------------------------------------------------- app


def build_app(gateway: Gateway, settings: HttpSettings) -> Any:
    """The Starlette app: /mcp, /healthz, /v1/call, /v1/list, /v1/batch, /v1/check, all behind the guard."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=bool(settings.hosts),
        allowed_hosts=list(settings.hosts),
        allowed_origins=list(settings.origins),
    )
    sessions = StreamableHTTPSessionManager(
        app=build_server(gateway), security_settings=security, max_request_body_size=settings.max_body
    )
    routes = [
        Route("/mcp", endpoint=StreamableHTTPASGIApp(sessions)),
        Route("/healthz", endpoint=_health(gateway), methods=["GET"]),
        Route("/v1/call", endpoint=_api(gateway, call_document), methods=["POST"]),
        Route("/v1/list", endpoint=_api(gateway, list_document), methods=["POST"]),
        Route("/v1/batch", endpoint=_batch(gateway), methods=["POST"]),
        Route("/v1/check", endpoint=_api(gateway, check_document), methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lambda _app: sessions.run())
    return Guard(app, settings)


def _health(gateway: Gateway) -> Callable[[Any], Awaitable[Any]]:
    async def health(request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse(gateway.health())

    return health


def _api(gateway: Gateway, answer: Callable[[Any, Gateway], Awaitable[dict[str, Any]]]) -> Callable[[Any], Any]:
    """A JSON endpoint; the work is cancelled if the client goes away (so is the upstream call)."""

    async def endpoint(request: Any) -> Any:
        from starlette.responses import JSONResponse

        try:
            body = await _json_body(request)
            document = await _until_disconnect(request, answer(body, gateway))
        except MiroctlError as exc:
            return JSONResponse(error_document(exc), status_code=400)
        return JSONResponse(document)

    return endpoint


async def _json_body(request: Any) -> Any:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"the request body is not JSON: {exc}") from None


async def _until_disconnect(request: Any, work: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """`work`'s document, unless the client goes away first (then the work is cancelled)."""
    documents: list[dict[str, Any]] = []
    errors: list[MiroctlError] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        try:  # caught here: leaving the task group would wrap it in an ExceptionGroup
            documents.append(await work)
        except MiroctlError as exc:
            errors.append(exc)
        tg.cancel_scope.cancel()
    if errors:
        raise errors[0]
    if not documents:
        raise UsageError("the client went away")
    return documents[0]


def _batch(gateway: Gateway) -> Callable[[Any], Any]:
    """POST /v1/batch: JSON lines in, one envelope per line out (JSON lines, in input order)."""

    async def endpoint(request: Any) -> Any:
        from starlette.responses import Response

        lines = batch.parse_lines((await request.body()).decode("utf-8", errors="replace"))
        chunks: list[str] = []

        def emit(outcome: Any) -> None:
            chunks.append(json.dumps(gateway.masker.data(outcome.to_dict()), ensure_ascii=False) + "\n")

        async def work() -> dict[str, Any]:
            jobs, timeout, autocorrect = _batch_options(request.query_params)
            await batch.run(batch.with_defaults(lines, timeout, autocorrect), gateway.call, emit, jobs)
            return {}

        try:
            await _until_disconnect(request, work())
        except MiroctlError as exc:
            return Response(json.dumps(error_document(exc)), status_code=400, media_type="application/json")
        return Response("".join(chunks), media_type="application/jsonl")

    return endpoint


def _batch_options(query: Any) -> tuple[int, float | None, bool]:
    """jobs, timeout and autocorrect from /v1/batch's query string (as --jobs, --timeout, --no-autocorrect)."""
    try:
        jobs = max(1, int(query.get("jobs", batch.DEFAULT_JOBS)))
        timeout = float(query["timeout"]) if query.get("timeout") else None
    except ValueError:
        raise UsageError("jobs and timeout must be numbers") from None
    if timeout is not None and timeout <= 0:
        raise UsageError("timeout must be a positive number of seconds")
    return jobs, timeout, query.get("autocorrect") != "0"


# ---------------------------------------------------------------------------------------------- serving


def bind(settings: HttpSettings) -> socket.socket:
    """The listening socket, bound before anything starts, so a busy port is a one-line error."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}",
            hint="choose another --port (0 picks a free one)",
        ) from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(gateway: Gateway, settings: HttpSettings, sock: socket.socket) -> None:
    """Serve until cancelled; then stop taking requests, finish or drop the open ones, and return."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        def capture_signals(self) -> Any:  # miroctl's own boundary turns signals into a cancellation
            return nullcontext()

    config = uvicorn.Config(
        build_app(gateway, settings),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )
    server = QuietServer(config)

    async def stop_when_cancelled() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_when_cancelled)
        with anyio.CancelScope(shield=True):
            await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def address_of(sock: socket.socket) -> str:
    """The base URL of a bound socket (its real port when 0 was asked for)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
