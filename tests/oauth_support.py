"""Helpers of the OAuth tests: the protected server, a login driven without a browser, the stored record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import keyring
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import HEALTHY_STARTUP, ROOT, serve_on_a_free_port
from tests.fakes.keyring_backend import FileKeyring

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


def run_process(auth_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """miroctl as a real process: a later run that knows only what the first one stored."""
    return subprocess.run(
        [sys.executable, "-m", "miroctl.cli", *args],
        capture_output=True,
        text=True,
        env=miroctl_env(auth_dir),
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


class WatchedRunner(CliRunner):
    """A CliRunner whose captured stdout and stderr can be read while the command still runs."""

    def __init__(self) -> None:
        super().__init__()
        self.streams: tuple[Any, Any, Any] | None = None

    @contextmanager
    def isolation(self, *args: Any, **kwargs: Any) -> Iterator[Any]:  # type: ignore[override]
        with super().isolation(*args, **kwargs) as streams:
            self.streams = streams
            yield streams

    def text(self, stream: int) -> str:
        return self.streams[stream].getvalue().decode() if self.streams is not None else ""


@contextmanager
def _auth_env(auth_dir: Path) -> Iterator[dict[str, str]]:
    """miroctl_env's variables for CliRunner, and the file keyring installed while it runs when the test has one."""
    keyring_file = auth_dir.parent / "keyring.json"
    if not keyring_file.exists():
        yield {"MIROCTL_AUTH_DIR": str(auth_dir), "MIROCTL_AUTH_STORE": "file"}
        return
    before = keyring.get_keyring()
    keyring.set_keyring(FileKeyring())
    try:
        yield {"MIROCTL_AUTH_DIR": str(auth_dir), "FAKE_KEYRING_FILE": str(keyring_file)}
    finally:
        keyring.set_keyring(before)


def run(auth_dir: Path, *args: str, runner: CliRunner | None = None) -> subprocess.CompletedProcess[str]:
    """miroctl in this process (the same CLI, config loading and token store as the console script)."""
    with _auth_env(auth_dir) as env:
        result = (runner or CliRunner()).invoke(app, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["miroctl", *args], result.exit_code, result.stdout, result.stderr)


def authorize_in_process(
    auth_dir: Path, browser: Callable[[str], Any], *args: str
) -> tuple[subprocess.CompletedProcess[str], Any]:
    """`miroctl auth ARGS --no-browser` in this process, while `browser` gets the authorization URL it prints
    (first stdout line; on stderr with --json) in a thread of its own, as a person would. Returns what miroctl
    did and what `browser` returned."""
    runner = WatchedRunner()
    stream = 1 if "--json" in args else 0
    got: dict[str, Any] = {}

    def play() -> None:
        deadline = time.monotonic() + HEALTHY_STARTUP * 2
        try:
            while not (line := _url_line(runner.text(stream))):
                assert time.monotonic() < deadline, "no authorization URL"
                time.sleep(0.02)
            got["value"] = browser(line)
        except BaseException as exc:  # noqa: BLE001  # re-raised in the test's thread
            got["error"] = exc

    player = threading.Thread(target=play, daemon=True)
    player.start()
    result = run(auth_dir, "auth", *args, "--no-browser", runner=runner)
    player.join(HEALTHY_STARTUP * 2)
    if "error" in got:
        raise got["error"]
    assert "value" in got, f"the browser never got a URL: {result.stdout!r} {result.stderr!r}"
    return result, got["value"]


def _url_line(text: str) -> str:
    for line in text.splitlines(keepends=True):
        if line.startswith("http") and line.endswith("\n"):
            return line.strip()
    return ""


def visit(url: str) -> httpx2.Response:
    """The browser's part of a login: open the URL, follow the redirects to miroctl's callback."""
    page = httpx2.get(url, follow_redirects=True, timeout=60)
    assert page.status_code == 200, page.text
    return page


def login(auth_dir: Path, config: Path, server: str = "demo", *extra: str) -> tuple[int, str, str]:
    """A whole login in this process, the browser's part played here: visit the URL, follow the redirects."""
    result, _ = authorize_in_process(auth_dir, visit, server, "--config", str(config), *extra)
    return result.returncode, result.stdout, result.stderr


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
