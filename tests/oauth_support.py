"""Helpers of the OAuth tests: the protected server, a login driven without a browser, the stored record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from tests.conftest import HEALTHY_STARTUP, ROOT, serve_on_a_free_port

FAKE = str(ROOT / "tests" / "fakes" / "oauth_server.py")


@dataclass
class Protected:
    """The fake authorization server + protected MCP server, running."""

    base: str
    path: str = "/mcp"

    @property
    def url(self) -> str:
        return self.base + self.path

    def control(self, what: str) -> Any:
        method = "GET" if what == "stats" else "POST"
        return httpx2.request(method, f"{self.base}/_fake/{what}", timeout=30).json()


@contextmanager
def protected_server(*args: str) -> Iterator[Protected]:
    """tests/fakes/oauth_server.py on a free port (`--sse` for the SSE transport)."""
    proc, port = serve_on_a_free_port(
        lambda port: [sys.executable, FAKE, str(port), *args],
        timeout=180,  # the SDK alone takes long to import on a loaded machine
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield Protected(f"http://127.0.0.1:{port}", "/sse" if "--sse" in args else "/mcp")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def miroctl_env(auth_dir: Path) -> dict[str, str]:
    """The token directory of the test; the keyring of tests/fakes/keyring_backend.py when it has a file there."""
    keyring_file = auth_dir.parent / "keyring.json"
    if keyring_file.exists():
        return {
            **os.environ,
            "MIROCTL_AUTH_DIR": str(auth_dir),
            "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
            "FAKE_KEYRING_FILE": str(keyring_file),
        }
    return {**os.environ, "MIROCTL_AUTH_DIR": str(auth_dir), "MIROCTL_AUTH_STORE": "file"}


def run(auth_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "miroctl.cli", *args],
        capture_output=True,
        text=True,
        env=miroctl_env(auth_dir),
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


class LoginRun:
    """`miroctl auth ... --no-browser` in the background; the authorization URL is its first stdout line (on
    stderr with --json, where stdout is the one JSON document)."""

    def __init__(self, auth_dir: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "miroctl.cli", "auth", *args, "--no-browser"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=miroctl_env(auth_dir),
            cwd=ROOT,
        )
        self._stream = self.proc.stderr if "--json" in args else self.proc.stdout
        self._before: list[str] = []
        self._reader = threading.Thread(target=self._read_to_url, daemon=True)
        self._reader.start()

    def _read_to_url(self) -> None:
        for line in self._stream:
            self._before.append(line)
            if line.startswith("http"):
                return

    def authorization_url(self) -> str:
        self._reader.join(HEALTHY_STARTUP * 2)
        line = self._before[-1].strip() if self._before else ""
        assert line.startswith("http://"), f"no authorization URL: {self._before!r}"
        return line

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        """Exit code, stdout and stderr (with what was read before the URL)."""
        out, err = self.proc.communicate(timeout=timeout)
        early = "".join(self._before)
        if self._stream is self.proc.stdout:
            return self.proc.returncode, early + out, err
        return self.proc.returncode, out, early + err


def login(auth_dir: Path, config: Path, server: str = "demo", *extra: str) -> tuple[int, str, str]:
    """A whole login, the browser's part played here: visit the URL, follow the redirects to the callback."""
    running = LoginRun(auth_dir, server, "--config", str(config), *extra)
    page = httpx2.get(running.authorization_url(), follow_redirects=True, timeout=60)
    assert page.status_code == 200, page.text
    return running.finish()


def record(auth_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The one token record in the directory, and its contents."""
    files = sorted(auth_dir.glob("*.json"))
    assert len(files) == 1, files
    return files[0], json.loads(files[0].read_text())


def age_record(auth_dir: Path) -> None:
    """Make the stored access token look expired, as if an hour had passed."""
    path, data = record(auth_dir)
    data["expires_at"] = time.time() - 60
    path.write_text(json.dumps(data))
