"""Helpers for the policy layer's tests: the webtools fixture server, in-memory pools, a local web server."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.config.sections import Sections
from tests.conftest import HEALTHY_STARTUP, WEBTOOLS


def webtools_spec(name: str, *args: str, **fields: Any) -> ServerSpec:
    """The webtools fixture over stdio."""
    fields.setdefault("startup_timeout", HEALTHY_STARTUP)
    return ServerSpec(name=name, command=sys.executable, args=(WEBTOOLS, "--name", name, *args), **fields)


def webtools_yaml(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A server file (the seeds' shape) running the webtools fixture."""
    return {"name": name, "tool_command": "python", "args": [WEBTOOLS, "--name", name, *args], **fields}


def memory_spec(name: str = "web", record: Path | None = None, **fields: Any) -> ServerSpec:
    """The webtools fixture's tools in-process (for rules where the process is not the point)."""
    from tests.servers.webtools import build

    opts = argparse.Namespace(record=str(record) if record else None, scrape_error="upstream refused the page")
    return ServerSpec(name=name, transport="memory", target=build(name, opts), **fields)


def pool(*specs: ServerSpec, blacklist: Any = (), **sections: Any) -> Config:
    """A config of these servers (all on by default) with the given blacklist and profile sections."""
    profile = Profile(
        sections=Sections.parse(sections), startup_timeout=HEALTHY_STARTUP, blacklist=frozenset(blacklist)
    )
    return Config(servers=specs, profile=profile, default_names=tuple(s.name for s in specs))


def calls(record: Path) -> list[str]:
    """The "call TOOL ..." lines the webtools fixture recorded."""
    if not record.exists():
        return []
    return [line for line in record.read_text().splitlines() if line.startswith("call ")]


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@contextmanager
def web_server(pages: Mapping[str, tuple[int, str, str | bytes]]) -> Iterator[str]:
    """Serve {path: (status, content type or Location, body)} on 127.0.0.1; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, kind, body = pages.get(self.path, (404, "text/plain", "not here"))
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Location" if 300 <= status < 400 else "Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
