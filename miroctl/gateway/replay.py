"""`miroctl replay FILE`: an MCP server that answers from a recording (`--record`), deterministically.

A request is matched by its method and its params in canonical form (keys sorted, `_meta` left out, ids
ignored); a value masked in the recording (`****`) matches any value. The same request recorded more than
once gets its answers in recorded order, the last one repeated. `initialize` and `server/discover` are
answered even when the client describes itself differently. A request the recording lacks gets a
JSON-RPC error naming the closest recorded request.
"""

from __future__ import annotations

import difflib
import json
import socket
from collections import defaultdict
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from miroctl.base.errors import UsageError
from miroctl.base.masking import MASK
from miroctl.gateway.guard import Guard, HttpSettings
from miroctl.gateway.stdio import StdoutWriter, claimed_stdout, stdin_lines
from miroctl.gateway.uvicorn_private import header_timed_protocol

if TYPE_CHECKING:
    from starlette.types import ASGIApp

NOT_RECORDED = -32004  # in JSON-RPC's range for implementation-defined server errors
HANDSHAKES = ("initialize", "server/discover")
MAX_RECORDING_BYTES = 512 * 1024 * 1024


@dataclass
class Recorded:
    """One request as recorded, and the answer it got."""

    method: str
    params: object
    answer: Mapping[str, object]  # {"result": ...} or {"error": ...}

    @property
    def key(self) -> str:
        return f"{self.method} {canonical(self.params)}"


@dataclass
class Replay:
    """The recorded exchanges of one server, and how far each repeated request has been answered."""

    server: str
    exchanges: list[Recorded]
    _served: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def answer(self, message: Mapping[str, object]) -> dict[str, object] | None:
        """The JSON-RPC answer to one incoming message (None for a notification or an answer)."""
        method, ident = message.get("method"), message.get("id")
        if not isinstance(method, str) or ident is None:
            return None
        params = message.get("params")
        found = self._matching(method, params)
        if found is not None:
            return {"jsonrpc": "2.0", "id": ident, **found.answer}
        if method == "ping":
            return {"jsonrpc": "2.0", "id": ident, "result": {}}
        return {"jsonrpc": "2.0", "id": ident, "error": self._missing(method, params)}

    def _matching(self, method: str, params: object) -> Recorded | None:
        wanted = strip_meta(params)
        same = [r for r in self.exchanges if r.method == method and matches(strip_meta(r.params), wanted)]
        if not same and method in HANDSHAKES:
            same = [r for r in self.exchanges if r.method == method]
        if not same:
            return None
        key = f"{method} {canonical(params)}"
        index = self._served[key]
        self._served[key] = index + 1
        return same[min(index, len(same) - 1)]

    def _missing(self, method: str, params: object) -> dict[str, object]:
        key = f"{method} {canonical(params)}"
        closest = closest_to(key, [r.key for r in self.exchanges])
        message = f"not in the recording of {self.server}: {_short(key)}"
        if closest:
            message += f"; closest recorded: {_short(closest)}"
        return {"code": NOT_RECORDED, "message": message, "data": {"closest": closest}}


def closest_to(key: str, keys: list[str]) -> str | None:
    """The recorded request most like `key` (difflib's ratio), the same method first."""
    if not keys:
        return None
    method = key.split(" ", 1)[0]
    pool = [k for k in dict.fromkeys(keys) if k.split(" ", 1)[0] == method] or list(dict.fromkeys(keys))
    return max(pool, key=lambda k: difflib.SequenceMatcher(None, key, k, autojunk=False).ratio())


def canonical(params: object) -> str:
    """Params as one string: keys sorted, `_meta` left out (it holds per-request ids and client details)."""
    return json.dumps(strip_meta(params), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def strip_meta(params: object) -> object:
    if isinstance(params, Mapping):
        return {k: v for k, v in params.items() if k != "_meta"}
    return {} if params is None else params


def matches(recorded: object, given: object) -> bool:
    """Equal, where a masked recorded string (`****`) stands for any string."""
    if recorded == MASK:
        return isinstance(given, str)
    if isinstance(recorded, Mapping) and isinstance(given, Mapping):
        return recorded.keys() == given.keys() and all(matches(recorded[k], given[k]) for k in recorded)
    if isinstance(recorded, list) and isinstance(given, list):
        return len(recorded) == len(given) and all(matches(a, b) for a, b in zip(recorded, given))
    return bool(recorded == given)


def load(path: str, server: str | None = None) -> Replay:
    """The exchanges of one server of a recording; UsageError (exit 2) for a file that is not one."""
    lines = _lines(path)
    servers = list(dict.fromkeys(name for e in lines if isinstance(name := e.get("server"), str)))
    if not servers:
        raise UsageError(
            f"{path}: no recorded messages", hint="record with --record FILE on list, call, check or serve"
        )
    if server is None and len(servers) > 1:
        raise UsageError(
            f"{path} records {len(servers)} servers: {', '.join(servers)}", hint="choose one with --server"
        )
    chosen = server or servers[0]
    if chosen not in servers:
        raise UsageError(f"{path} has no server {chosen!r}", hint=f"it records {', '.join(servers)}")
    return Replay(chosen, _exchanges([e for e in lines if e.get("server") == chosen]))


def _lines(path: str) -> list[dict[str, object]]:
    file = Path(path).expanduser()
    try:
        if file.stat().st_size > MAX_RECORDING_BYTES:
            raise UsageError(f"{path}: too large for a recording")
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            raise UsageError(f"{path}:{number}: not a JSON line of a recording") from None
        if not isinstance(entry, dict):
            raise UsageError(f"{path}:{number}: not a recorded message")
        entries.append(entry)
    return entries


def _exchanges(entries: list[dict[str, object]]) -> list[Recorded]:
    """Requests paired with their answers (by session and id), in the order they were sent."""
    pending: dict[tuple[object, str], tuple[str, object]] = {}
    order: list[tuple[object, str]] = []
    answers: dict[tuple[object, str], Mapping[str, object]] = {}
    for entry in entries:
        message = entry.get("message")
        if not isinstance(message, Mapping) or "id" not in message:
            continue
        key = (entry.get("session"), json.dumps(message["id"]))
        method = message.get("method")
        if entry.get("direction") == "to_server" and isinstance(method, str):
            pending[key] = (method, message.get("params"))
            order.append(key)
        elif entry.get("direction") == "from_server" and ("result" in message or "error" in message):
            answers[key] = {k: message[k] for k in ("result", "error") if k in message}
    return [Recorded(*pending[key], answers[key]) for key in order if key in answers]


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- serving


def respond(replay: Replay, line: str) -> str | None:
    """The answer line to one incoming line (a JSON-RPC message or a batch of them), or None."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    if isinstance(message, list):
        answers = [a for m in message if isinstance(m, Mapping) and (a := replay.answer(m)) is not None]
        return json.dumps(answers, ensure_ascii=False) if answers else None
    answer = replay.answer(message) if isinstance(message, Mapping) else None
    return json.dumps(answer, ensure_ascii=False) if answer is not None else None


async def serve_stdio(replay: Replay) -> None:
    """Answer newline-delimited JSON-RPC on stdin until it ends (fd 1 is the protocol's alone meanwhile)."""
    with claimed_stdout() as fd:
        writer = StdoutWriter(fd)
        async for line in stdin_lines():
            if line.strip() and (answer := respond(replay, line)) is not None:
                await writer.write(answer + "\n")


def build_app(replay: Replay, settings: HttpSettings) -> ASGIApp:
    """/mcp as streamable HTTP with JSON answers (no SSE streams, no sessions), behind the gateway's guard."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def mcp(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        answer = respond(replay, (await request.body()).decode("utf-8", errors="replace"))
        if answer is None:
            return Response(status_code=202)
        return Response(answer, media_type="application/json")

    return Guard(Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST", "DELETE"])]), settings)


async def serve_http(replay: Replay, settings: HttpSettings, sock: socket.socket) -> None:
    """Serve until cancelled."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        # miroctl's own boundary turns signals into a cancellation (Any: uvicorn types its own as a generator's)
        def capture_signals(self) -> Any:
            return nullcontext()

    config = uvicorn.Config(
        build_app(replay, settings),
        http=header_timed_protocol(settings.read_timeout),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = QuietServer(config)
    async with anyio.create_task_group() as tg:

        async def stop_when_cancelled() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                server.should_exit = True

        tg.start_soon(stop_when_cancelled)
        with anyio.CancelScope(shield=True):
            await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()
