"""A bundled server answers its handshake and tool list from the snapshot of its own answers, without the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": MODERN}}
CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "memory_usage", "arguments": {}, "_meta": MODERN},
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Server:
    """`python -P -m miroctl.servers system`, talked to a message at a time."""

    def __init__(self, cache: Path, *flags: str, **env: str) -> None:
        environ = {**os.environ, "MIROCTL_SERVER_CACHE": str(cache), "PYTHONPATH": str(ROOT), **env}
        self.process = subprocess.Popen(
            [sys.executable, *flags, "-P", "-m", "miroctl.servers", "system"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
        )

    def ask(self, message: dict[str, Any]) -> dict[str, Any] | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        if "id" not in message:
            return None
        answer = json.loads(self.process.stdout.readline())
        assert answer["id"] == message["id"], answer
        return answer

    def close(self) -> tuple[bytes, str]:
        rest, err = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, err.decode()
        return rest, err.decode()


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time")}


def test_the_second_start_answers_discover_and_tools_list_as_the_first_did_without_importing_the_sdk(tmp_path):
    first = Server(tmp_path)
    answers = [first.ask(DISCOVER), first.ask(LIST)]
    first.close()
    assert "memory_usage" in [tool["name"] for tool in answers[1]["result"]["tools"]]
    assert len(list(tmp_path.glob("system-*.json"))) == 1
    second = Server(tmp_path, "-X", "importtime")
    assert [second.ask(DISCOVER), second.ask(LIST)] == answers
    rest, err = second.close()
    assert rest == b""
    assert not {name for name in imported(err) if name.split(".")[0] in ("mcp", "mcp_types", "pydantic")}


def test_a_call_after_answers_from_the_snapshot_is_answered_by_the_real_server(tmp_path):
    for _ in range(2):  # the first start makes the snapshot, the second answers from it and then hands over
        server = Server(tmp_path)
        server.ask(DISCOVER)
        server.ask(LIST)
        called = server.ask(CALL)
        rest, _ = server.close()
        assert rest == b""
        assert "Memory:" in called["result"]["content"][0]["text"]


def test_a_legacy_handshake_answered_from_the_snapshot_is_replayed_to_the_real_server_unseen(tmp_path):
    legacy_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    legacy_call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_usage"}}
    seen = []
    for _ in range(2):
        server = Server(tmp_path)
        answers = [server.ask(INITIALIZE), server.ask(INITIALIZED), server.ask(legacy_list), server.ask(legacy_call)]
        rest, _ = server.close()
        assert rest == b""  # nothing else on stdout: the replayed handshake's answers were dropped
        assert "Memory:" in answers[3]["result"]["content"][0]["text"]
        seen.append(answers[:3])
    assert seen[0] == seen[1]


def test_another_environment_is_another_snapshot(tmp_path):
    for value in ("a", "b"):
        server = Server(tmp_path, MIROCTL_TEST_SETTING=value)
        server.ask(DISCOVER)
        server.ask(LIST)
        server.close()
    assert len(list(tmp_path.glob("system-*.json"))) == 2


def test_the_snapshot_key_changes_when_the_servers_or_the_miroctl_code_they_use_change(monkeypatch):
    from miroctl.servers.helpers import quickstart

    watched = [quickstart.SERVERS_ROOT / "system.py", quickstart.MIROCTL_ROOT / "base" / "stamps.py"]
    before = quickstart.snapshot_key("system")
    for path in watched:
        stat = path.stat()
        try:
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
            assert quickstart.snapshot_key("system") != before, path
        finally:
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert quickstart.snapshot_key("system") == before
