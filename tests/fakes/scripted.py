"""A scriptable HTTP service on 127.0.0.1 for the fakes: routes, queued replies, recorded requests.

Each fake module (OpenAI, Anthropic, Gemini, Docker, E2B) subclasses FakeService with routes that
answer as the real API documents; a test may queue replies (errors, delays, malformed bodies) for a
route, which are served first, in order. A delayed reply waits on an event that shutdown sets, so no
handler thread outlives its test.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.base import POLL


@dataclass
class Reply:
    """One HTTP answer. `body` wins over `json`; `chunks` are written one by one (streamed bodies)."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: list[bytes] | None = None
    content_type: str = "application/json"


@dataclass
class Request:
    """What the fake received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def form(self) -> dict[str, Any]:
        """A multipart/form-data body: field name -> text, or (filename, bytes) for files."""
        raw = f"Content-Type: {self.headers.get('content-type', '')}\r\n\r\n".encode() + self.body
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw)
        fields: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True) or b""
            filename = part.get_filename()
            fields[str(name)] = (filename, payload) if filename else payload.decode()
        return fields


Handler = Callable[[Request, re.Match[str]], Reply]


class FakeService:
    """Routes are (METHOD, regex over the path); queued replies for a route come before its handler."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.queued: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self.url = ""

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        self.routes.append((method, re.compile(pattern), handler))

    def queue(self, name: str, *replies: Reply) -> None:
        """Serve these replies, in order, to the next requests matching route `name` (its pattern)."""
        with self._lock:
            self.queued[name].extend(replies)

    def seen(self, pattern: str) -> list[Request]:
        """The requests whose "METHOD /path" matches the regex."""
        return [r for r in self.requests if re.search(pattern, f"{r.method} {r.path}")]

    def answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        for method, pattern, handler in self.routes:
            match = pattern.fullmatch(request.path)
            if method != request.method or match is None:
                continue
            with self._lock:
                waiting = self.queued.get(pattern.pattern)
                queued = waiting.popleft() if waiting else None
            return queued or handler(request, match)
        return self.not_found(request)

    def not_found(self, request: Request) -> Reply:
        return Reply(404, {"message": f"no route for {request.method} {request.path}"})

    @contextmanager
    def running(self) -> Iterator[FakeService]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            self.stopping.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _handler_class(service: FakeService) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = Request(self.command, parts.path, parse_qs(parts.query), headers, body)
            reply = service.answer(request)
            if reply.delay and service.stopping.wait(reply.delay):
                return
            self._write(reply)

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            headers = {"Content-Type": reply.content_type, **reply.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            if reply.chunks is not None:
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in reply.chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                return
            data = reply.body if reply.body is not None else json.dumps(reply.json).encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_PUT = _serve

        def log_message(self, *args: object) -> None:
            """Quiet: the tests read the recorded requests."""

    return _Handler
