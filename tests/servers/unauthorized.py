"""An HTTP endpoint on 127.0.0.1 that answers every request with 401, like an MCP server behind auth.

    python tests/servers/unauthorized.py PORT      (or `with serving() as url:` inside a test)

Standard library only: the point is the status code, not MCP.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Unauthorized(BaseHTTPRequestHandler):
    """401 with a Bearer challenge and a JSON body, for any method and path."""

    challenge: str | None = 'Bearer realm="mcp", error="invalid_token"'  # None: no WWW-Authenticate at all

    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps({"error": "invalid_token", "error_description": "missing bearer token"}).encode()
        self.send_response(401)
        if self.challenge is not None:
            self.send_header("WWW-Authenticate", self.challenge)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _refuse

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        return


@contextmanager
def serving(port: int = 0, challenge: str | None = Unauthorized.challenge) -> Iterator[str]:
    """Serve in a thread; yields the /mcp URL and stops the server afterwards. `challenge` is the
    WWW-Authenticate header of every answer (None: none)."""
    handler = type("Refusing", (Unauthorized,), {"challenge": challenge})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="unauthorized-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Unauthorized).serve_forever()
