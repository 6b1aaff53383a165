"""Helpers for the research servers' tests: quick retry settings, a refusing proxy, results as JSON."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from miroctl.base.models import CallOutcome
from tests.fakes.base import POLL


def quick_retries(monkeypatch: pytest.MonkeyPatch, *, attempts: int = 3, timeout: float = 10.0) -> None:
    """Retries that do not slow the tests down: tiny backoff, a short longest wait."""
    monkeypatch.setenv("HTTP_RETRIES", str(attempts))
    monkeypatch.setenv("HTTP_BACKOFF", "0.01")
    monkeypatch.setenv("HTTP_MAX_WAIT", "5")
    monkeypatch.setenv("HTTP_TIMEOUT", str(timeout))


def payload(outcome: CallOutcome) -> Any:
    """The JSON text of a successful call."""
    assert outcome.ok, outcome.error
    return json.loads(outcome.result)


@contextmanager
def refusing_proxy() -> Iterator[tuple[str, list[str]]]:
    """An HTTP proxy on 127.0.0.1 that refuses every CONNECT with 403: yields its URL and the request lines."""
    seen: list[str] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            seen.append(self.rfile.readline().decode("latin-1").strip())
            while self.rfile.readline() not in (b"", b"\r\n", b"\n"):
                pass
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
