"""The processes of stdio servers: how they start, what they inherit, and how none outlives miroctl.

Each server starts in its own process group, so a signal to the group takes its children along.
Every child also carries this run's marker in its environment (MIROCTL_RUN), so a process that
left the group (setsid, a daemonizing launcher) is still found and killed when miroctl stops.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from miroctl.base.models import FailureKind, ServerSpec

if TYPE_CHECKING:
    import psutil


class SendPipe(Protocol):
    """A pipe to a server's stdin: anyio's byte stream, or the pipe of a server started early."""

    async def send(self, item: bytes, /) -> None: ...

    async def aclose(self) -> None: ...


class ReceivePipe(Protocol):
    """A pipe from a server's stdout, read in chunks of bytes."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class ServerProcess(Protocol):
    """A stdio server's process as its transport drives and stops it: anyio's Process, or one started early
    while miroctl loaded and adopted by its session (sessions/prestart.py)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdin(self) -> SendPipe | None: ...

    @property
    def stdout(self) -> ReceivePipe | None: ...


RUN_MARKER = "MIROCTL_RUN"
# A miroctl started by another miroctl (a gateway of gateways) marks its servers as part of the outer run,
# so the outer one's sweep finds them even when this one is killed before it could stop them.
RUN_ID = "/".join(part for part in (os.environ.get(RUN_MARKER), f"{os.getpid()}-{uuid.uuid4().hex[:8]}") if part)
INHERITED_ENV: tuple[str, ...] = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
INHERITED_ENV += ("XDG_CACHE_HOME", "MIROCTL_SERVER_CACHE")  # where servers keep caches (the bundled snapshots)


def child_environment(spec: ServerSpec) -> dict[str, str]:
    """A small inherited environment, the config's env over it, and the run marker."""
    env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ and not os.environ[k].startswith("()")}
    env.update(spec.env)
    if "TASK_ID" not in env and os.environ.get("TASK_ID"):  # the seeds: per-task state stays apart
        env["TASK_ID"] = os.environ["TASK_ID"]
    env[RUN_MARKER] = run_marker(spec.env)
    return env


def sub_run_id(label: str) -> str:
    """A marker for one Manager's servers within this run: swept with that Manager, and with the whole run."""
    return f"{RUN_ID}/{label}-{uuid.uuid4().hex[:8]}"


def run_marker(env: Mapping[str, str]) -> str:
    """The marker a child carries: this run's, or a sub-run's of it (never one a config made up)."""
    given = env.get(RUN_MARKER) or ""
    return given if given.startswith(f"{RUN_ID}/") else RUN_ID


class SpawnError(Exception):
    """The server process could not be started at all."""

    def __init__(self, message: str, *, kind: FailureKind = "not_found", hint: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.hint = hint


async def spawn(spec: ServerSpec) -> tuple[anyio.abc.Process, str]:
    """Start the server in its own process group; its stderr goes to a temp file, whose path comes back."""
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise SpawnError(f"working directory does not exist: {spec.cwd}", kind="config")
    fd, stderr_path = tempfile.mkstemp(prefix=f"miroctl-{_safe(spec.name)}-", suffix=".stderr")
    try:
        process = await anyio.open_process(
            [spec.command or "", *spec.args],
            stdin=-1,
            stdout=-1,
            stderr=fd,
            env=child_environment(spec),
            cwd=spec.cwd,
            start_new_session=True,
        )
    except OSError as exc:
        os.unlink(stderr_path)
        raise _spawn_error(spec, exc) from None
    finally:
        os.close(fd)
    return process, stderr_path


# Launchers that servers are commonly run with, and what installs each of them.
NODE = "install Node.js from https://nodejs.org/en/download (Debian/Ubuntu: apt-get install -y nodejs npm)"
INSTALLS = {"npx": f"npx comes with Node.js: {NODE}", "npm": f"npm comes with Node.js: {NODE}", "node": NODE}
INSTALLS |= {"uvx": "uvx comes with uv: pip install uv", "uv": "pip install uv"}


def _spawn_error(spec: ServerSpec, exc: OSError) -> SpawnError:
    if isinstance(exc, FileNotFoundError):
        hint = INSTALLS.get(Path(spec.command or "").name, "is it installed and on PATH?")
        return SpawnError(f"command not found: {spec.command}", hint=hint)
    if isinstance(exc, PermissionError):
        return SpawnError(f"command is not executable: {spec.command}", hint="check its permissions")
    return SpawnError(f"cannot start {spec.command}: {exc.strerror or exc}")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]


def signal_group(pgid: int, sig: int) -> None:
    """Send a signal to a server's whole process group, which may be gone already."""
    if sys.platform == "win32":  # pragma: no cover
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def sweep_orphans(run_id: str = RUN_ID) -> int:
    """Kill processes that carry this run's marker (or a sub-run's of it) but escaped their server's group."""
    import psutil

    victims = []
    for proc in psutil.process_iter():
        try:
            marker = proc.environ().get(RUN_MARKER) or ""
            if proc.pid != os.getpid() and (marker == run_id or marker.startswith(f"{run_id}/")):
                victims.append(proc)
        except (psutil.Error, OSError):
            continue
    for proc in victims:
        with suppress(psutil.Error):
            proc.kill()
    wait_dead(victims, timeout=2)
    return len(victims)


def wait_dead(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until each process is gone or a zombie; the ones still running after `timeout`. A process that is
    not miroctl's child (a killed orphan, a stopped daemon) is dead once it is a zombie, whenever its parent
    (init, which may take a second or more) gets round to reaping it. miroctl's own are reaped here."""
    import psutil

    deadline = time.monotonic() + timeout
    alive = procs
    while alive and time.monotonic() < deadline:
        _, alive = psutil.wait_procs(alive, timeout=0.01)
        alive = [proc for proc in alive if not _zombie(proc)]
    return alive


def _zombie(proc: psutil.Process) -> bool:
    import psutil

    try:
        return bool(proc.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False
