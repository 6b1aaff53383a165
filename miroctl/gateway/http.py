"""serve over HTTP: /mcp (streamable HTTP), /healthz, /metrics, the JSON API under /v1, behind one guard;
and /livez and /readyz, which the guard lets through without a token (they tell nothing but up or ready).

The guard (gateway/guard.py) checks every request before anything else sees it. The caller's token
stays there: upstream sessions are opened from the config alone, so it is never forwarded. A client
gets `read_timeout` seconds to send its request's headers (slowloris: the connection is closed before
even the token is looked at), and MCP sessions are capped and expire when idle.

Stopping (SIGTERM, Ctrl-C) drains: /readyz turns 503, the listening socket closes (new connections are
refused), requests still arriving on open connections get 503, and the calls in flight get up to the
grace period to finish; then uvicorn closes what is left and the caller stops the servers.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import anyio

from miroctl.base import escaping
from miroctl.base.errors import MiroctlError, UsageError
from miroctl.core.bodies import loads
from miroctl.gateway.api import call_document, error_document, list_document, prompt_document, read_document
from miroctl.gateway.batching import BatchEndpoint
from miroctl.gateway.check import check_document
from miroctl.gateway.guard import Guard, HttpSettings
from miroctl.gateway.metrics import INSTALL_HINT, Metrics, available
from miroctl.gateway.sdk_private import open_sessions
from miroctl.gateway.server import Gateway, build_server
from miroctl.gateway.uvicorn_private import departure, header_timed_protocol, stop_accepting

if TYPE_CHECKING:  # starlette and the SDK's HTTP parts are loaded by `serve --http` only
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Receive, Scope, Send


Endpoint = Callable[["Request"], Awaitable["Response"]]

DEFAULT_GRACE = 20.0  # seconds the calls in flight get to finish when the gateway is stopped
FLUSH = 1  # second uvicorn gets, once nothing is in flight, to finish sending and close the connections
PROBES = ("/livez", "/readyz")
STREAMED = 1 << 20  # characters of text from which an answer is encoded and sent in pieces


class Inflight:
    """ASGI middleware: counts the requests being answered (a host's listening GET /mcp stream, the probes
    and a metrics scrape are not calls), and answers 503 to new ones while the gateway drains."""

    def __init__(self, app: ASGIApp | None, gateway: Gateway) -> None:
        self.app, self.gateway = app, gateway
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None, "build_app sets the app before serving"
        if scope["type"] != "http" or scope["path"] in PROBES or scope["path"] == "/metrics":  # a scrape is no call
            await self.app(scope, receive, send)
            return
        if self.gateway.draining:
            await _draining(scope, receive, send)
            return
        listening = scope["method"] == "GET" and scope["path"] == "/mcp"
        self.count += 0 if listening else 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.count -= 0 if listening else 1

    async def idle(self) -> None:
        while self.count > 0:
            await anyio.sleep(0.05)


async def _draining(scope: Scope, receive: Receive, send: Send) -> None:
    from starlette.responses import Response

    body = {"schema": "miroctl.error/1", "error": "the gateway is stopping", "error_kind": "http", "status": 503}
    headers = {"Connection": "close", "Retry-After": "1"}
    await Response(escaping.dumps(body), 503, headers, media_type="application/json")(scope, receive, send)


# ---------------------------------------------------------------------------------------------- app


def build_app(gateway: Gateway, settings: HttpSettings) -> tuple[ASGIApp, Inflight]:
    """The Starlette app: /mcp, /healthz, /livez, /readyz, /metrics, /v1/call, list, batch, check, read and
    prompt, behind the in-flight counter and the guard; and the counter, which a drain waits on."""
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
        app=build_server(gateway),
        security_settings=security,
        max_request_body_size=settings.max_body,
        max_sessions=settings.max_sessions,
        session_idle_timeout=settings.session_idle,
    )
    inflight = Inflight(None, gateway)  # wraps the app, once built
    routes = [
        Route("/mcp", endpoint=StreamableHTTPASGIApp(sessions)),
        Route("/metrics", endpoint=_metrics(gateway, sessions, inflight), methods=["GET"]),
        Route("/healthz", endpoint=_health(gateway), methods=["GET"]),
        Route("/livez", endpoint=_live, methods=["GET"]),
        Route("/readyz", endpoint=_ready(gateway), methods=["GET"]),
        Route("/v1/call", endpoint=api_endpoint(gateway, call_document), methods=["POST"]),
        Route("/v1/list", endpoint=api_endpoint(gateway, list_document), methods=["POST"]),
        Route("/v1/batch", endpoint=BatchEndpoint(gateway), methods=["POST"]),
        Route("/v1/check", endpoint=api_endpoint(gateway, check_document), methods=["POST"]),
        Route("/v1/read", endpoint=api_endpoint(gateway, read_document), methods=["POST"]),
        Route("/v1/prompt", endpoint=api_endpoint(gateway, prompt_document), methods=["POST"]),
    ]
    inflight.app = Starlette(routes=routes, lifespan=lambda _app: sessions.run())
    return Guard(inflight, settings), inflight


async def _live(request: Request) -> Response:
    """/livez: the process answers (nothing about its servers)."""
    return json_response({"status": "alive"})


def _ready(gateway: Gateway) -> Endpoint:
    """/readyz: 200 once every server started and listed its tools; 503 before, when one is down, or draining."""

    async def ready(request: Request) -> Response:
        if gateway.ready:
            return json_response({"status": "ready"})
        listed = sum(1 for entry in gateway.entries if entry.ok)
        status = "draining" if gateway.draining else "not ready"
        return json_response({"status": status, "servers": len(gateway.specs), "listed": listed}, 503)

    return ready


def _metrics(gateway: Gateway, sessions: StreamableHTTPSessionManager, inflight: Inflight) -> Endpoint:
    """/metrics in Prometheus' text format; without prometheus-client, a 501 that says what to install."""
    collected = Metrics(gateway, lambda: open_sessions(sessions), lambda: inflight.count) if available() else None
    if collected is not None:
        gateway.observers.append(collected.observe)

    async def metrics(request: Request) -> Response:
        from starlette.responses import Response

        if collected is None:
            document = {
                "schema": "miroctl.error/1",
                "error": f"metrics need prometheus-client: {INSTALL_HINT}",
                "error_kind": "http",
                "status": 501,
            }
            return json_response(document, 501)
        body, content_type = collected.render()
        return Response(body, media_type=content_type)

    return metrics


def json_response(document: object, status: int = 200) -> Response:
    """A JSON answer in strict JSON (a NaN from a server becomes "NaN", never an HTTP 500); one that carries
    much text (a large result) is written in pieces as it is encoded, never held whole as text and bytes."""
    from starlette.responses import Response, StreamingResponse

    if not _holds_text(document, STREAMED):
        return Response(escaping.dumps(document), status_code=status, media_type="application/json")

    async def encoded() -> AsyncIterator[bytes]:
        for piece in escaping.pieces(document):
            yield piece.encode()

    return StreamingResponse(encoded(), status_code=status, media_type="application/json")


def _holds_text(document: object, limit: int) -> bool:
    """Whether the strings inside a JSON-like document add up to `limit` characters or more."""
    pending, count = [document], 0
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            count += len(value)
            if count >= limit:
                return True
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


def _health(gateway: Gateway) -> Endpoint:
    async def health(request: Request) -> Response:
        return json_response(gateway.health())

    return health


def api_endpoint(gateway: Gateway, answer: Callable[[object, Gateway], Awaitable[dict[str, object]]]) -> Endpoint:
    """A JSON endpoint; the work is cancelled if the client goes away (so is the upstream call)."""

    async def endpoint(request: Request) -> Response:
        try:
            body = await _json_body(request)
            document = await _until_disconnect(request, answer(body, gateway))
        except MiroctlError as exc:
            return json_response(gateway.masker.data(error_document(exc)), 400)
        return json_response(document)

    return endpoint


async def _json_body(request: Request) -> object:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"the request body is not JSON: {exc}") from None


async def _until_disconnect(request: Request, work: Awaitable[dict[str, object]]) -> dict[str, object]:
    """`work`'s document, unless the client goes away first (then the work is cancelled)."""
    connection = departure(request.scope)
    if connection is None:  # another protocol than miroctl's: a task waits for the disconnect
        return await _watched(request, work)
    with anyio.CancelScope() as scope, connection.calling(scope.cancel):
        return await work
    raise UsageError("the client went away")


async def _watched(request: Request, work: Awaitable[dict[str, object]]) -> dict[str, object]:
    documents: list[dict[str, object]] = []
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


async def serve_http(
    gateway: Gateway,
    settings: HttpSettings,
    sock: socket.socket,
    grace: float = DEFAULT_GRACE,
    stop: anyio.Event | None = None,
) -> None:
    """Serve until `stop` is set (or until cancelled); then drain: refuse new connections and requests, give
    the calls in flight up to `grace` seconds, and return. The servers must outlive this (the caller shields
    them from the cancellation)."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        # miroctl's own boundary turns signals into a cancellation (Any: uvicorn types its own as a generator's)
        def capture_signals(self) -> Any:
            return nullcontext()

    app, inflight = build_app(gateway, settings)
    config = uvicorn.Config(
        app,
        http=header_timed_protocol(settings.read_timeout, settings.parser),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=FLUSH,
    )
    server = QuietServer(config)

    async def drain_when_stopped() -> None:
        try:
            await (stop.wait() if stop is not None else anyio.sleep_forever())
        finally:
            with anyio.CancelScope(shield=True):
                gateway.draining = True
                stop_accepting(server)
                with anyio.move_on_after(grace):
                    await inflight.idle()
                server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain_when_stopped)
        with anyio.CancelScope(shield=True):
            await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def address_of(sock: socket.socket) -> str:
    """The base URL of a bound socket (its real port when 0 was asked for)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
