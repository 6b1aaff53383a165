"""One limited run of a program: resource limits, a scrubbed environment, a timeout that kills the group.

The limits (address space, CPU time, file size) are set with `resource` by sandbox_launch.py, which
then runs the program. On Linux the launcher is the run's keeper, a child subreaper: what the program
leaves running, even in a new session with an empty environment, comes to it and is killed when the
program ends, or when the server stops the run (SIGTERM, at the timeout or when it shuts down). The run
also has its own process group, killed as a whole after that, so nothing it started in the background
outlives it. Output is kept to a bounded head and tail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

# Markers miroctl and its tests use to find every process a server started; they are not secrets.
TRACKING_VARIABLES = ("MIROCTL_RUN", "MIROCTL_TEST_TAG")
LAUNCHER = Path(__file__).with_name("sandbox_launch.py")
SWEEP_GRACE = 5.0  # seconds the launcher has to kill what a stopped run left before its group is killed
_ACTIVE: set[subprocess.Popen[bytes]] = set()
_ACTIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Limits:
    """What one run may use."""

    timeout: float = 120.0  # wall-clock seconds
    memory_bytes: int = 1024 * 1024 * 1024  # address space
    file_bytes: int = 100 * 1024 * 1024  # largest file it may write
    output_bytes: int = 20_000  # stdout and stderr, each, kept for the answer


@dataclass
class Capture:
    """The first and last bytes of a stream, and how many in between were dropped."""

    limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit * 2 // 3 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            keep = self.limit - self.limit * 2 // 3
            if len(self.tail) > keep:
                del self.tail[: len(self.tail) - keep]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped:,} bytes of output cut ...]\n{tail}"


@dataclass
class Run:
    """How a run ended and what it printed."""

    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    killed: str | None = None  # why the run was stopped, in words
    cut_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.killed is None


def run_limited(
    argv: list[str], cwd: Path, limits: Limits, *, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> Run:
    """Run argv in cwd under the limits; never raises for what the program does."""
    started = time.monotonic()
    process = _spawn(argv, cwd, limits, env or sandbox_environment(cwd))
    captures = (Capture(limits.output_bytes), Capture(limits.output_bytes))
    threads = [_pump(process.stdout, captures[0]), _pump(process.stderr, captures[1])]
    threads.append(_feed(process, stdin))
    killed = None
    try:
        process.wait(timeout=limits.timeout)
    except subprocess.TimeoutExpired:
        killed = f"it ran past its {limits.timeout:g} s time limit"
    finally:
        _finish(process, threads)
    seconds = time.monotonic() - started
    code = process.returncode
    run = Run(code, captures[0].text(), captures[1].text(), seconds, killed, captures[0].dropped + captures[1].dropped)
    explain(run, limits)
    return run


def explain(run: Run, limits: Limits) -> None:
    """Say in words which limit stopped a run, when one did."""
    code = run.exit_code
    if run.killed is None and code is not None and code < 0:
        run.killed = _signal_reason(-code, limits)
    if "MemoryError" in run.stderr or "Cannot allocate memory" in run.stderr:
        run.notes.append(f"the memory limit is {limits.memory_bytes // 2**20} MB of address space")
    if "File too large" in run.stderr:
        run.notes.append(f"the file-size limit is {limits.file_bytes // 2**20} MB per file")
    if run.cut_bytes:
        run.notes.append(f"{run.cut_bytes:,} bytes of output were cut (the first and last parts are kept)")


def _signal_reason(signum: int, limits: Limits) -> str:
    if signum == signal.SIGXCPU:
        return "it used up its CPU-time limit"
    if signum == signal.SIGXFSZ:
        return f"it tried to write a file larger than the {limits.file_bytes // 2**20} MB file-size limit"
    if signum == signal.SIGKILL:
        return "it was killed with SIGKILL (past the CPU-time limit, or out of memory)"
    try:
        return f"it was killed by {signal.Signals(signum).name}"
    except ValueError:
        return f"it was killed by signal {signum}"


def sandbox_environment(home: Path) -> dict[str, str]:
    """A small, clean environment: no secrets from the server's, HOME inside the sandbox."""
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
    }
    env.update({k: os.environ[k] for k in TRACKING_VARIABLES if k in os.environ})
    return env


def stop_all() -> None:
    """Kill every run still going (the server is shutting down)."""
    with _ACTIVE_LOCK:
        running = list(_ACTIVE)
    for process in running:
        _stop(process)


# ---------------------------------------------------------------------------------------------- process


def _spawn(argv: list[str], cwd: Path, limits: Limits, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        _launcher(limits) + argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    with _ACTIVE_LOCK:
        _ACTIVE.add(process)
    return process


def _launcher(limits: Limits) -> list[str]:
    """The command that sets the limits in the child and then execs the program."""
    cpu = int(limits.timeout) + 2
    numbers = (os.getpid(), limits.memory_bytes, cpu, limits.file_bytes)
    return [sys.executable, "-I", "-S", str(LAUNCHER), *(str(n) for n in numbers), "--"]


def _pump(stream: IO[bytes] | None, capture: Capture) -> threading.Thread:
    def drain() -> None:
        if stream is None:
            return
        read = getattr(stream, "read1", stream.read)  # a pipe is a BufferedReader: read1 returns what is there
        with suppress(OSError, ValueError):
            for chunk in iter(lambda: read(65536), b""):
                capture.feed(chunk)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread


def _feed(process: subprocess.Popen[bytes], data: bytes | None) -> threading.Thread:
    def write() -> None:
        stdin = process.stdin
        if stdin is None:
            return
        with suppress(OSError, ValueError):
            if data:
                stdin.write(data)
            stdin.close()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _finish(process: subprocess.Popen[bytes], threads: list[threading.Thread]) -> None:
    """Stop what is left of the run, reap it, and collect the rest of its output."""
    _stop(process)
    streams = (process.stdout, process.stderr, process.stdin)
    for thread, stream in zip(threads, streams):
        thread.join(timeout=2.0)
        if stream is not None and not thread.is_alive():  # a reader still blocked (escaped the group) keeps its pipe
            with suppress(OSError, ValueError):
                stream.close()
    with _ACTIVE_LOCK:
        _ACTIVE.discard(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Ask the launcher to kill the run and everything it left (SIGTERM), then kill the run's group and reap."""
    if process.poll() is None:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=SWEEP_GRACE)
    _kill_group(process.pid)
    process.wait()


def _kill_group(pgid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
