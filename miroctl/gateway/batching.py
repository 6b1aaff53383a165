"""POST /v1/batch: JSON lines in, one envelope per line out (JSON lines, in input order), each envelope sent
as soon as it and every earlier one are done.

The body arrives whole (the guard reads it, up to its size limit); its lines are parsed one at a time as the
calls go, and an envelope is let go once written. When the client reads slowly, writing waits for it, and the
batch takes no new line meanwhile: the gateway's memory does not grow with the batch's length beyond its body.
When the client goes away, the calls in flight are cancelled and no new one starts.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio

from miroctl.base import escaping
from miroctl.base.errors import MiroctlError, UsageError
from miroctl.core import batch
from miroctl.gateway.api import error_document
from miroctl.gateway.server import Gateway

if TYPE_CHECKING:  # starlette is loaded by `serve --http` only
    from starlette.datastructures import QueryParams
    from starlette.types import Receive, Scope, Send

    from miroctl.base.models import CallOutcome

HEADERS = [(b"content-type", b"application/jsonl")]


class BatchEndpoint:
    """The ASGI app behind POST /v1/batch."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.requests import Request
        from starlette.responses import Response

        request = Request(scope, receive)
        try:
            jobs, timeout, autocorrect = options(request.query_params)
        except MiroctlError as exc:
            document = escaping.dumps(self.gateway.masker.data(error_document(exc)))
            await Response(document, status_code=400, media_type="application/json")(scope, receive, send)
            return
        body = await request.body()
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})

        async def emit(outcome: CallOutcome) -> None:
            line = escaping.dumps(self.gateway.masker.data(outcome.to_dict())) + "\n"
            await send({"type": "http.response.body", "body": line.encode(), "more_body": True})

        left = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                left.set()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            lines = batch.read_lines(_whole(body), timeout, autocorrect)
            await batch.run(lines, self.gateway.call, emit, jobs)
            tg.cancel_scope.cancel()
        if not left.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def options(query: QueryParams) -> tuple[int, float | None, bool]:
    """jobs, timeout and autocorrect from /v1/batch's query string (as --jobs, --timeout, --no-autocorrect)."""
    try:
        jobs = max(1, int(query.get("jobs", batch.DEFAULT_JOBS)))
        timeout = float(query["timeout"]) if query.get("timeout") else None
    except ValueError:
        raise UsageError("jobs and timeout must be numbers") from None
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise UsageError("timeout must be a positive number of seconds")
    return jobs, timeout, query.get("autocorrect") != "0"


async def _whole(body: bytes) -> AsyncIterator[bytes]:
    yield body
