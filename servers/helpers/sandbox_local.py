"""The local sandbox backend: a sandbox is a private directory; each run is a limited subprocess in it.

This isolates work (its own directory and HOME, a scrubbed environment, resource limits, a time
limit) but it is not a security boundary: code runs as the server's user and can read what that
user can read and reach the network. Use the E2B backend for untrusted code.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from .common import number_setting, scratch_dir, setting
from .sandbox_run import Limits, Run, run_limited

SANDBOX_ID = re.compile(r"sbx-[0-9a-f]{16}")
E2B_HOME = "/home/user"  # the working directory E2B sandboxes use; accepted as a name for ours
MAX_TIMEOUT = 600.0


def limits_from_env(timeout: float | None = None) -> Limits:
    """The run limits from SANDBOX_* settings; `timeout` (from the call) within SANDBOX_MAX_TIMEOUT."""
    default = number_setting("SANDBOX_TIMEOUT", 120.0, minimum=0.1)
    ceiling = number_setting("SANDBOX_MAX_TIMEOUT", MAX_TIMEOUT, minimum=0.1)
    if timeout is not None and timeout <= 0:
        raise ToolError(f"timeout_seconds must be positive, got {timeout:g}")
    if timeout is not None and timeout > ceiling:
        raise ToolError(f"timeout_seconds may be at most {ceiling:g} (SANDBOX_MAX_TIMEOUT), got {timeout:g}")
    return Limits(
        timeout=timeout or min(default, ceiling),
        memory_bytes=int(number_setting("SANDBOX_MEMORY_MB", 1024, minimum=32) * 2**20),
        file_bytes=int(number_setting("SANDBOX_FILE_MB", 100, minimum=1) * 2**20),
        output_bytes=int(number_setting("SANDBOX_MAX_OUTPUT", 20_000, minimum=200)),
    )


class LocalSandboxes:
    """Sandboxes as directories under one root; ids look like sbx-0123456789abcdef."""

    name = "local"

    def __init__(self, root: Path, python: str | None = None) -> None:
        self.root = root
        self.python = python or sys.executable

    @classmethod
    def from_env(cls) -> LocalSandboxes:
        return cls(scratch_dir("SANDBOX_DIR", "sandboxes"), setting("SANDBOX_PYTHON"))

    def create(self, timeout: int | None = None) -> str:
        """A new sandbox; with `timeout`, it is removed once unused for that many seconds."""
        self._prune()
        sandbox_id = f"sbx-{secrets.token_hex(8)}"
        try:
            (self.root / sandbox_id).mkdir(parents=True, mode=0o700)
            if timeout:
                self._timeout_file(sandbox_id).write_text(str(int(timeout)))
        except OSError as exc:
            raise ToolError(f"cannot create a sandbox directory: {exc.strerror or exc}") from None
        return sandbox_id

    def find(self, sandbox_id: str) -> Path | None:
        """The sandbox's directory, or None when no sandbox has this id (or it timed out, and is removed now)."""
        if not SANDBOX_ID.fullmatch(sandbox_id):
            return None
        path = self.root / sandbox_id
        if not path.is_dir():
            return None
        if self._expired(sandbox_id, path):
            self._remove(sandbox_id)
            return None
        os.utime(path)  # in use: keep it from being pruned, and start its timeout again
        return path

    def write(self, directory: Path, path: str, data: bytes) -> Path:
        """Write bytes to a file in the sandbox (parent directories made); its resolved path."""
        target = inside(directory, path)
        if target.is_dir():
            raise ToolError(f"{path} is a directory in the sandbox; give a file path or a directory ending in /")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return target

    def _timeout_file(self, sandbox_id: str) -> Path:
        return self.root / f"{sandbox_id}.timeout"

    def _expired(self, sandbox_id: str, path: Path) -> bool:
        try:
            seconds = float(self._timeout_file(sandbox_id).read_text())
            return path.stat().st_mtime + seconds < time.time()
        except (OSError, ValueError):
            return False

    def _remove(self, sandbox_id: str) -> None:
        shutil.rmtree(self.root / sandbox_id, ignore_errors=True)
        self._timeout_file(sandbox_id).unlink(missing_ok=True)

    def run_command(self, directory: Path, command: str, limits: Limits) -> Run:
        shell = shutil.which("bash") or "/bin/sh"
        return run_limited([shell, "-c", command], directory, limits)

    def run_python(self, directory: Path | None, code: str, limits: Limits) -> Run:
        """Run code in the sandbox, or in a one-shot directory removed afterwards when None."""
        if directory is not None:
            return run_limited([self.python, "-u", "-"], directory, limits, stdin=code.encode())
        with tempfile.TemporaryDirectory(prefix="miroctl-oneshot-") as scratch:
            return run_limited([self.python, "-u", "-"], Path(scratch), limits, stdin=code.encode())

    def upload(self, directory: Path, local: Path, destination: str) -> Path:
        target_dir = inside(directory, destination)
        if target_dir.exists() and not target_dir.is_dir():
            raise ToolError(f"{destination} is a file in the sandbox; give the directory to put the file in")
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / local.name
        shutil.copyfile(local, target)
        return target

    def download(self, directory: Path, path: str, destination: Path) -> Path:
        source = inside(directory, path)
        if not source.is_file():
            raise ToolError(f"no such file in the sandbox: {path}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
        return destination

    def _prune(self) -> None:
        """Remove sandboxes unused for longer than SANDBOX_TTL_HOURS (default 24) or their own timeout."""
        ttl = number_setting("SANDBOX_TTL_HOURS", 24.0, minimum=0.0) * 3600
        if not self.root.is_dir():
            return
        cutoff = time.time() - ttl if ttl else float("-inf")
        for entry in self.root.iterdir():
            try:
                ours = SANDBOX_ID.fullmatch(entry.name)
                stale = ours and (entry.stat().st_mtime < cutoff or self._expired(entry.name, entry))
            except OSError:
                continue
            if stale:
                self._remove(entry.name)


def inside(directory: Path, given: str) -> Path:
    """A path given by a caller, resolved inside the sandbox directory (or a clear error)."""
    text = given.strip() or "."
    if text == E2B_HOME or text.startswith(E2B_HOME + "/"):
        text = text[len(E2B_HOME) :].lstrip("/") or "."
    base = directory.resolve()
    path = Path(text)
    resolved = (path if path.is_absolute() else base / path).resolve()
    if not resolved.is_relative_to(base):
        raise ToolError(
            f"{given} is outside the sandbox: use paths relative to its working directory ({E2B_HOME} also names it)"
        )
    return resolved
