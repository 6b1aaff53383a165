"""serve over HTTP: /mcp (streamable HTTP), /healthz, and the JSON API under /v1, behind one guard.

The guard (gateway/guard.py) checks every request before anything else sees it. The caller's token
stays there: upstream sessions are opened from the config alone, so it is never forwarded. A client
gets `read_timeout` seconds to send its request's headers (slowloris: the connection is closed before
even the token is looked at), and MCP sessions are capped and expire when idle.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import Any

import anyio

from miroctl.base import escaping
from miroctl.base.errors import MiroctlError, UsageError
from miroctl.core import batch
from miroctl.core.bodies import loads
from miroctl.gateway.api import call_document, error_document, list_document, prompt_document, read_document
from miroctl.gateway.check import check_document
from miroctl.gateway.guard import Guard, HttpSettings
from miroctl.gateway.server import Gateway, build_server
from miroctl.gateway.uvicorn_private import header_timed_protocol

SHUTDOWN_GRACE = 2  # seconds


# ---------------------------------------------------------------------------------------------- app


def build_app(gateway: Gateway, settings: HttpSettings) -> Any:
    """The Starlette app: /mcp, /healthz, /v1/call, list, batch, check, read and prompt, all behind the guard."""
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
    routes = [
        Route("/mcp", endpoint=StreamableHTTPASGIApp(sessions)),
        Route("/healthz", endpoint=_health(gateway), methods=["GET"]),
        Route("/v1/call", endpoint=_api(gateway, call_document), methods=["POST"]),
        Route("/v1/list", endpoint=_api(gateway, list_document), methods=["POST"]),
        Route("/v1/batch", endpoint=_batch(gateway), methods=["POST"]),
        Route("/v1/read", endpoint=_api(gateway, read_document), methods=["POST"]),
        Route("/v1/prompt", endpoint=_api(gateway, prompt_document), methods=["POST"]),
        Route("/v1/check", endpoint=_api(gateway, check_document), methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lambda _app: sessions.run())
    return Guard(app, settings)


def json_response(document: Any, status: int = 200) -> Any:
    """A JSON answer in strict JSON (a NaN from a server becomes "NaN", never an HTTP 500)."""
    from starlette.responses import Response

    return Response(escaping.dumps(document), status_code=status, media_type="application/json")


def _health(gateway: Gateway) -> Callable[[Any], Awaitable[Any]]:
    async def health(request: Any) -> Any:
        return json_response(gateway.health())

    return health


def _api(gateway: Gateway, answer: Callable[[Any, Gateway], Awaitable[dict[str, Any]]]) -> Callable[[Any], Any]:
    """A JSON endpoint; the work is cancelled if the client goes away (so is the upstream call)."""

    async def endpoint(request: Any) -> Any:
        try:
            body = await _json_body(request)
            document = await _until_disconnect(request, answer(body, gateway))
        except MiroctlError as exc:
            return json_response(gateway.masker.data(error_document(exc)), 400)
        return json_response(document)

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
            chunks.append(escaping.dumps(gateway.masker.data(outcome.to_dict())) + "\n")

        async def work() -> dict[str, Any]:
            jobs, timeout, autocorrect = _batch_options(request.query_params)
            await batch.run(batch.with_defaults(lines, timeout, autocorrect), gateway.call, emit, jobs)
            return {}

        try:
            await _until_disconnect(request, work())
        except MiroctlError as exc:
            return json_response(gateway.masker.data(error_document(exc)), 400)
        return Response("".join(chunks), media_type="application/jsonl")

    return endpoint


def _batch_options(query: Any) -> tuple[int, float | None, bool]:
    """jobs, timeout and autocorrect from /v1/batch's query string (as --jobs, --timeout, --no-autocorrect)."""
    try:
        jobs = max(1, int(query.get("jobs", batch.DEFAULT_JOBS)))
        timeout = float(query["timeout"]) if query.get("timeout") else None
    except ValueError:
        raise UsageError("jobs and timeout must be numbers") from None
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
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
        http=header_timed_protocol(settings.read_timeout),
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
