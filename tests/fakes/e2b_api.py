"""A fake E2B: the control API (create, connect, timeout, kill) and a sandbox's code-interpreter and files routes.

The SDK is pointed here with E2B_API_URL and E2B_SANDBOX_URL (one server plays both; requests for a
sandbox carry its id in the E2b-Sandbox-Id header). Code "runs" by a tiny interpreter of `print(...)`
lines, which is enough to see what the SDK sent and how the server reads the answer: the /execute
stream of JSON lines (stdout, stderr, result, error, end_of_execution) as the code interpreter writes
it. Not faked: envd's Connect-RPC process API, which run_command needs.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import time
from typing import Any

from tests.fakes.scripted import FakeService, Reply, Request

CREATE = r"/v2/sandboxes"
CONNECT = r"/v2/sandboxes/([^/]+)/connect"
TIMEOUT = r"/sandboxes/([^/]+)/timeout"
KILL = r"/sandboxes/([^/]+)"
EXECUTE = r"/execute"
FILES = r"/files"


def error(status: int, message: str) -> Reply:
    """An API error as E2B's OpenAPI Error schema: {"code", "message"}."""
    return Reply(status, {"code": status, "message": message})


class E2BFake(FakeService):
    """Sandboxes live in `sandboxes` (id -> files); `key` is the only API key accepted."""

    def __init__(self, key: str = "e2b_test_0123456789abcdef") -> None:
        super().__init__()
        self.key = key
        self.sandboxes: dict[str, dict[str, bytes]] = {}
        self.route("POST", CREATE, self._create)
        self.route("POST", CONNECT, self._connect)
        self.route("POST", TIMEOUT, self._timeout)
        self.route("DELETE", KILL, self._kill)
        self.route("POST", EXECUTE, self._execute)
        self.route("POST", FILES, self._write)
        self.route("GET", FILES, self._read)

    def _sandbox(self, sandbox_id: str) -> dict[str, Any]:
        return {
            "templateID": "code-interpreter-v1",
            "sandboxID": sandbox_id,
            "clientID": "6532622b",
            "envdVersion": "0.4.0",
            "envdAccessToken": "envd-token-" + sandbox_id,
            "domain": None,
        }

    def _authorized(self, request: Request) -> Reply | None:
        if request.headers.get("x-api-key") == self.key:
            return None
        return error(
            401, "Invalid API key, it must start with 'e2b_' prefix and be followed by 40 alphanumeric characters"
        )

    def _create(self, request: Request, match: re.Match[str]) -> Reply:
        refused = self._authorized(request)
        if refused is not None:
            return refused
        sandbox_id = "i" + secrets.token_hex(9)
        self.sandboxes[sandbox_id] = {}
        return Reply(201, self._sandbox(sandbox_id))

    def _connect(self, request: Request, match: re.Match[str]) -> Reply:
        refused = self._authorized(request)
        if refused is not None:
            return refused
        if match.group(1) not in self.sandboxes:
            return error(404, f"sandbox {match.group(1)} not found")
        return Reply(200, self._sandbox(match.group(1)))

    def _timeout(self, request: Request, match: re.Match[str]) -> Reply:
        if match.group(1) not in self.sandboxes:
            return error(404, f"sandbox {match.group(1)} not found")
        return Reply(204, body=b"")

    def _kill(self, request: Request, match: re.Match[str]) -> Reply:
        if self.sandboxes.pop(match.group(1), None) is None:
            return error(404, f"sandbox {match.group(1)} not found")
        return Reply(204, body=b"")

    def _execute(self, request: Request, match: re.Match[str]) -> Reply:
        code = request.json()["code"]
        lines = []
        for statement in code.splitlines():
            printed = re.fullmatch(r"\s*print\((.*)\)\s*", statement)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            if printed:
                text = str(ast.literal_eval(printed.group(1)))
                lines.append({"type": "stdout", "text": text + "\n", "timestamp": stamp})
            elif statement.strip().startswith("raise"):
                lines.append(
                    {
                        "type": "error",
                        "name": "ValueError",
                        "value": "bad value",
                        "traceback": "Traceback ...\nValueError: bad value",
                    }
                )
        lines.append({"type": "end_of_execution"})
        body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        return Reply(200, body=body, content_type="application/x-ndjson")

    def _write(self, request: Request, match: re.Match[str]) -> Reply:
        sandbox_id = request.headers.get("e2b-sandbox-id", "")
        if sandbox_id not in self.sandboxes:
            return Reply(404, {"code": 404, "message": "sandbox not found"})
        path = request.query["path"][0]
        _, data = request.form()["file"]
        self.sandboxes[sandbox_id][path] = data
        return Reply(200, [{"name": path.rpartition("/")[2], "type": "file", "path": path}])

    def _read(self, request: Request, match: re.Match[str]) -> Reply:
        files = self.sandboxes.get(request.headers.get("e2b-sandbox-id", ""), {})
        path = request.query["path"][0]
        if path not in files:
            return Reply(404, {"code": 404, "message": f"path '{path}' does not exist"})
        return Reply(200, body=files[path], content_type="application/octet-stream")
