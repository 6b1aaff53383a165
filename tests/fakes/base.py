"""A fake HTTP service in a thread on 127.0.0.1: routes answer requests, tests script failures and read the log."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# seconds: shutdown() waits for serve_forever to look at its flag, which it does this often (0.5 s by default,
# which every test using a fake would pay at its end)
POLL = 0.02


@dataclass(frozen=True)
class Seen:
    """One request as the service received it."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lowercased names
    body: bytes
    at: float = field(default_factory=time.monotonic)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """An answer: a status, a body (bytes, text, or anything JSON), headers, and a delay before it is sent."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return json.dumps(self.body).encode(), "application/json; charset=utf-8"


def json_reply(data: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, data, dict(headers))


class FakeService:
    """Subclasses answer in `route`; `script` queues replies that are sent first, in order, to any request."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.base = ""
        self._scripted: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._scripted.extend(replies)

    def route(self, request: Seen) -> Reply:
        raise NotImplementedError

    def answer(self, request: Seen) -> Reply:
        with self._lock:
            self.requests.append(request)
            scripted = self._scripted.popleft() if self._scripted else None
        return scripted if scripted is not None else self.route(request)

    def seen(self, path_prefix: str = "") -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith(path_prefix)]

    def wait(self, seconds: float) -> None:
        """A delayed answer that ends early when the service stops (so no test waits on a dead client)."""
        self._stop.wait(seconds)

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Run on a free port of 127.0.0.1; yields the base URL."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self.base = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
        thread.start()
        try:
            yield self.base
        finally:
            self._stop.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _handler_for(service: FakeService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            seen = Seen(self.command, parts.path, query, {k.lower(): v for k, v in self.headers.items()}, body)
            reply = service.answer(seen)
            if reply.delay:
                service.wait(reply.delay)
            data, kind = reply.encoded()
            try:
                self.send_response(reply.status)
                headers = {"Content-Type": kind, **reply.headers, "Content-Length": str(len(data))}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a timeout test)

        do_GET = do_POST = do_HEAD = _serve

        def log_message(self, *args: object) -> None:
            """Quiet: the tests read the request log, not stderr."""

    return Handler
