"""python: a code sandbox. Create a sandbox, run shell commands and Python in it, move files in and out.

Backends: local (default; a private directory per sandbox, limited subprocesses; isolation, not a
security boundary) and E2B (cloud VMs, when E2B_API_KEY is set or SANDBOX_BACKEND=e2b). Settings
(environment): SANDBOX_DIR, SANDBOX_TIMEOUT, SANDBOX_MAX_TIMEOUT, SANDBOX_MEMORY_MB, SANDBOX_FILE_MB,
SANDBOX_MAX_OUTPUT, SANDBOX_PYTHON, SANDBOX_TTL_HOURS, SANDBOX_DOWNLOAD_DIR, SANDBOX_BACKEND,
SANDBOX_DOWNLOAD_MB, SANDBOX_DOWNLOAD_TIMEOUT; for E2B also SANDBOX_LIFETIME, SANDBOX_RETRIES, SANDBOX_RETRY_DELAY.
"""

from __future__ import annotations

import os
import posixpath
import signal
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from miroctl.base.version import __version__

from .helpers.common import groupable, human_bytes, number_setting, result, scratch_dir, setting
from .helpers.fetching import fetch_url
from .helpers.sandbox_e2b import E2BSandboxes
from .helpers.sandbox_local import E2B_HOME, LocalSandboxes, limits_from_env
from .helpers.sandbox_run import Run, stop_all

mcp = MCPServer("python", version=__version__, log_level="WARNING")

# Ids that models make up instead of calling create_sandbox (as the seeds list them).
MADE_UP_IDS = frozenset(
    {
        "default",
        "sandbox",
        "sandbox_id",
        "sandbox-id",
        "sandboxid",
        "your_sandbox_id",
        "your-sandbox-id",
        "<sandbox_id>",
        "{sandbox_id}",
        "auto",
        "new",
        "none",
        "null",
        "nil",
        "undefined",
        "test",
        "example",
        "id",
        "local",
        "current",
        "main",
        "temp",
        "tmp",
        "python",
        "sbx",
        "my_sandbox",
        "my-sandbox",
        "sandbox1",
        "sandbox_1",
        "sandbox-1",
        "0",
        "1",
        "123",
    }
)
MAX_CODE_CHARS = 1_000_000
_RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
)
def create_sandbox(timeout: Annotated[int, Field(ge=30, le=86_400)] | None = None) -> CallToolResult:
    """Create a new, empty sandbox and return its sandbox_id.

    Create one sandbox per task and reuse its sandbox_id for every run_command, run_python_code
    and file transfer: files written in a sandbox stay there between calls (variables do not: each
    run is a fresh process). `timeout` is how many seconds the sandbox may sit unused before it is
    removed (default: SANDBOX_TTL_HOURS locally, SANDBOX_LIFETIME on E2B); each use starts the count
    again. Returns text starting with "sandbox_id: sbx-...".
    """
    backend = sandbox_backend()
    sandbox_id = backend.create(timeout)
    lasts = f" It is removed after {timeout} s unused." if timeout else ""
    text = (
        f"sandbox_id: {sandbox_id}\nA new {backend.name} sandbox is ready. Pass this sandbox_id to "
        f"run_command, run_python_code and the file tools; files stay between calls.{lasts}"
    )
    return result(text, {"sandbox_id": sandbox_id, "backend": backend.name, "timeout": timeout})


@mcp.tool(annotations=_RUNS)
def run_command(command: str, sandbox_id: str, timeout_seconds: float | None = None) -> CallToolResult:
    """Run a shell command (bash) in the sandbox's working directory and return its output.

    Use it to install packages, list or inspect files, or run scripts. The run is stopped at its
    time limit (`timeout_seconds`, default SANDBOX_TIMEOUT, 120 s) and under memory, CPU-time and
    file-size limits; background processes end with it. Returns the exit code, the duration, and
    stdout and stderr (long output is cut in the middle, with a marker). A non-zero exit or a
    stopped run is reported as an error, with the same output. Needs a sandbox_id from create_sandbox.
    """
    _require_text(command, "command")
    backend = sandbox_backend()
    handle = _existing(backend, sandbox_id)
    run = backend.run_command(handle, command, limits_from_env(timeout_seconds))
    return run_report(run, sandbox_id)


@mcp.tool(annotations=_RUNS)
def run_python_code(code_block: str, sandbox_id: str = "", timeout_seconds: float | None = None) -> CallToolResult:
    """Run a block of Python 3 code in the sandbox and return what it printed.

    The code runs as a script in a fresh interpreter in the sandbox's working directory: use print()
    to see values (stdin is empty); files it writes stay for later calls with the same sandbox_id. Without a valid
    sandbox_id (empty, made up like "default", or unknown) the code runs in a one-shot sandbox that
    is deleted afterwards, and the answer says so. Limits as for run_command. Returns the exit code,
    the duration, stdout and stderr (a traceback on failure); an exception or a stopped run is
    reported as an error, with the same output.
    """
    _require_text(code_block, "code_block")
    if len(code_block) > MAX_CODE_CHARS:
        raise ToolError(f"code_block is {len(code_block):,} characters; the limit is {MAX_CODE_CHARS:,}")
    backend = sandbox_backend()
    limits = limits_from_env(timeout_seconds)
    handle, why = _existing_or_none(backend, sandbox_id)
    run = backend.run_python(handle, code_block, limits)
    return run_report(run, sandbox_id if handle is not None else None, why)


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    )
)
def upload_file_from_local_to_sandbox(
    sandbox_id: str, local_file_path: str, sandbox_file_path: str = E2B_HOME
) -> CallToolResult:
    """Copy a file from this machine into a sandbox, so code in the sandbox can use it.

    `local_file_path` is a file on the machine running the server. `sandbox_file_path` is the
    directory in the sandbox to put it in (default: the working directory, also written /home/user);
    a file of the same name there is replaced. Returns the file's path inside the sandbox.
    """
    backend = sandbox_backend()
    handle = _existing(backend, sandbox_id)
    local = Path(local_file_path).expanduser()
    if not local.is_file():
        raise ToolError(f"no such local file: {local_file_path}")
    placed = backend.upload(handle, local, sandbox_file_path)
    return result(
        f"uploaded {local.name} to {placed} in sandbox {sandbox_id}",
        {"sandbox_id": sandbox_id, "sandbox_path": str(placed)},
    )


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    )
)
def download_file_from_sandbox_to_local(
    sandbox_id: str, sandbox_file_path: str, local_filename: str | None = None
) -> CallToolResult:
    """Copy a file out of a sandbox to this machine and return its local path.

    Files inside a sandbox cannot be read by other tools: download them first, then pass the
    returned local path to a tool such as read_file. `sandbox_file_path` is relative to the
    sandbox's working directory (or starts with /home/user). `local_filename` is an optional plain
    file name to save it as; the directory is SANDBOX_DOWNLOAD_DIR (a temp directory by default).
    """
    backend = sandbox_backend()
    handle = _existing(backend, sandbox_id)
    name = _plain_name(local_filename) if local_filename else Path(sandbox_file_path.strip()).name
    if not name:
        raise ToolError(f"{sandbox_file_path!r} does not name a file")
    saved = backend.download(handle, sandbox_file_path, scratch_dir("SANDBOX_DOWNLOAD_DIR", "downloads") / name)
    return result(
        f"downloaded {sandbox_file_path} from sandbox {sandbox_id} to {saved}",
        {"sandbox_id": sandbox_id, "local_path": str(saved)},
    )


@mcp.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True)
)
def download_file_from_internet_to_sandbox(
    sandbox_id: str, url: str, sandbox_file_path: str = E2B_HOME
) -> CallToolResult:
    """Download a file from an http(s) URL into a sandbox, so code there can use it; returns its path there.

    `sandbox_file_path` is a directory in the sandbox (default: the working directory, also written
    /home/user; the file keeps the URL's name) or a file path ending in a file name with an
    extension. The download follows redirects, is checked against miroctl's URL rules at every hop,
    and is capped at SANDBOX_DOWNLOAD_MB (default 100 MB); a file of the same name is replaced.
    """
    backend = sandbox_backend()
    handle = _existing(backend, sandbox_id)
    limit = int(number_setting("SANDBOX_DOWNLOAD_MB", 100, minimum=1) * 2**20)
    fetched = fetch_url(url, limit, timeout=number_setting("SANDBOX_DOWNLOAD_TIMEOUT", 60.0, minimum=1.0))
    target = _download_target(sandbox_file_path, fetched.name)
    placed = backend.write(handle, target, fetched.data)
    return result(
        f"downloaded {url} ({human_bytes(len(fetched.data))}, {fetched.mime}) to {placed} in sandbox {sandbox_id}",
        {
            "sandbox_id": sandbox_id,
            "sandbox_path": str(placed),
            "bytes": len(fetched.data),
            "content_type": fetched.mime,
        },
    )


# ---------------------------------------------------------------------------------------------- helpers


def _download_target(given: str, name: str) -> str:
    """The file path in the sandbox: `given` itself when it names a file, else `given`/name."""
    text = given.strip() or E2B_HOME
    last = posixpath.basename(text.rstrip("/"))
    if text.endswith("/") or "." not in last or text in (".", E2B_HOME):
        return posixpath.join(text, name)
    return text


@groupable(_RUNS)
def stateless_python(code: str) -> CallToolResult:
    """Run a Python program in a fresh one-shot sandbox and return its output; nothing is kept between calls.

    code: the program (print what you want to see). Returns its exit code, stdout and stderr. To keep files
    or state between runs, create a sandbox and use run_python_code instead.
    """
    return run_python_code(code_block=code)


def sandbox_backend() -> Any:
    """E2B when asked for (SANDBOX_BACKEND=e2b) or when E2B_API_KEY is set and not overridden; else local."""
    choice = (setting("SANDBOX_BACKEND") or "auto").lower()
    if choice not in ("auto", "local", "e2b"):
        raise ToolError(f"SANDBOX_BACKEND must be auto, local or e2b, got {choice!r}")
    if choice == "e2b" or (choice == "auto" and setting("E2B_API_KEY")):
        return E2BSandboxes.from_env()
    return LocalSandboxes.from_env()


def made_up(sandbox_id: str) -> bool:
    """Whether an id is empty or one of the placeholders models invent."""
    return sandbox_id.strip().lower() in MADE_UP_IDS or not sandbox_id.strip()


def _existing(backend: Any, sandbox_id: str) -> Any:
    if made_up(sandbox_id):
        raise ToolError(
            f"{sandbox_id!r} is not a sandbox id: call create_sandbox first and pass the sandbox_id it returns"
        )
    handle = backend.find(sandbox_id.strip())
    if handle is None:
        raise ToolError(f"no sandbox has id {sandbox_id!r} (it may have expired): call create_sandbox for a new one")
    return handle


def _existing_or_none(backend: Any, sandbox_id: str) -> tuple[Any, str | None]:
    """The sandbox, or (None, why) when the code must run in a one-shot sandbox instead."""
    keep = "its files are gone; call create_sandbox to keep files between runs"
    if not sandbox_id.strip():
        return None, f"no sandbox_id was given, so this ran in a one-shot sandbox: {keep}"
    if made_up(sandbox_id):
        return None, f"{sandbox_id!r} is not a sandbox id, so this ran in a one-shot sandbox: {keep}"
    handle = backend.find(sandbox_id.strip())
    if handle is None:
        return None, f"no sandbox has id {sandbox_id!r}, so this ran in a one-shot sandbox: {keep}"
    return handle, None


def _require_text(value: str, name: str) -> None:
    if not value.strip():
        raise ToolError(f"{name} is empty: nothing to run")


def _plain_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned or "/" in cleaned or "\\" in cleaned or cleaned in (".", ".."):
        raise ToolError(f"local_filename must be a plain file name without directories, got {name!r}")
    return cleaned


def run_report(run: Run, sandbox_id: str | None, one_shot: str | None = None) -> CallToolResult:
    """A run as text for a model (status first, then output) and as data; an error unless it exited 0."""
    where = f"in sandbox {sandbox_id}" if sandbox_id else "in a one-shot sandbox"
    status = f"exit code {run.exit_code}" if run.killed is None else f"stopped: {run.killed}"
    lines = [f"{status}, after {run.seconds:.2f} s {where}"]
    lines += [f"note: {text}" for text in ([one_shot] if one_shot else []) + run.notes]
    lines += ["", "stdout:", run.stdout.rstrip("\n") or "(empty)"]
    if run.stderr.strip():
        lines += ["", "stderr:", run.stderr.rstrip("\n")]
    data = {
        "sandbox_id": sandbox_id,
        "one_shot": sandbox_id is None,
        "exit_code": run.exit_code,
        "killed": run.killed,
        "seconds": round(run.seconds, 3),
        "stdout": run.stdout,
        "stderr": run.stderr,
        "cut_bytes": run.cut_bytes,
        "notes": ([one_shot] if one_shot else []) + run.notes,
    }
    return result("\n".join(lines), data, error=not run.ok)


def _terminated(signum: int, frame: Any) -> None:
    stop_all()
    os._exit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminated)
    try:
        mcp.run("stdio")
    finally:
        stop_all()
