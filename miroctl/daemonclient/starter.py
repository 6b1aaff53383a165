"""Find this configuration's daemon, or start it: one at a time (a lock), a dead one's socket replaced
(standard library only, so that a command that goes to a daemon loads no more than the warm path)."""

from __future__ import annotations

import errno
import fcntl
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from miroctl.base.errors import ServerUnavailable, TimedOut
from miroctl.base.peercred import peer
from miroctl.daemonclient.places import Place, places
from miroctl.remote import GatewayClient

READY = b"ready\n"
START_WAIT = 60.0  # seconds a new daemon may take to listen (it loads the configuration and the core first)
STOP_WAIT = 10.0  # seconds a daemon stopped while it starts may take to exit before it is killed


@dataclass(frozen=True)
class Attached:
    """The daemon a command goes through: its socket, and whether this command started it (and replaced a
    dead one, whose servers' state is lost)."""

    socket: str
    started: bool = False
    replaced_dead: bool = False
    pid: int | None = None

    @property
    def url(self) -> str:
        return f"unix:{self.socket}"


def attach(place: Place, origin: str, config_name: str | None, idle: float) -> Attached:
    """The running daemon of `place`, or a new one started now, held in use until this process exits, so that
    it cannot leave for idleness between being found here and answering the command."""
    hold_in_use(place)
    return find_or_start(place, origin, config_name, idle)


def find_or_start(place: Place, origin: str, config_name: str | None, idle: float, cwd: str | None = None) -> Attached:
    """The running daemon of `place`, or a new one started now in `cwd` (the lock makes two first commands
    start one); the caller holds it in use (`hold_in_use`, `in_use`) from before this until its answer."""
    with _locked(place):
        if answers(place):
            return Attached(str(place.socket))
        dead = place.socket.exists()
        place.socket.unlink(missing_ok=True)
        place.record.unlink(missing_ok=True)
        pid = _spawn(place, config_name, idle, cwd)
    _replace_older(place, origin)
    return Attached(str(place.socket), started=True, replaced_dead=dead, pid=pid)


def answers(place: Place) -> bool:
    """Whether a process listens on the daemon's socket (a refused or missing socket: no daemon)."""
    return listener(place) is not None


def listener(place: Place) -> int | None:
    """The pid of the process of this user that listens on the daemon's socket; None when none listens."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5.0)
        try:
            sock.connect(str(place.socket))
            pid, uid = peer(sock)
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
                return None
            raise ServerUnavailable(f"cannot reach the daemon at {place.socket}: {exc.strerror or exc}") from None
    if uid != os.getuid():
        raise ServerUnavailable(f"the daemon's socket {place.socket} is served by uid {uid}, not by this user")
    return pid


def hold_in_use(place: Place) -> None:
    """Hold the daemon's in-use lock (shared) for the rest of this process: the descriptor is left open."""
    fd = os.open(place.in_use, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)


def in_use(place: Place) -> AbstractContextManager[None]:
    """Hold the daemon's in-use lock (shared) for the block: a long-lived client lets it leave when idle between
    its requests."""
    return _flocked(place.in_use, fcntl.LOCK_SH)


def _locked(place: Place) -> AbstractContextManager[None]:
    return _flocked(place.lock, fcntl.LOCK_EX)


@contextmanager
def _flocked(path: Path, operation: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)  # releases the lock


def _spawn(place: Place, config_name: str | None, idle: float, cwd: str | None) -> int:
    """Start the daemon in a session of its own (no terminal's Ctrl-C reaches it) and wait until it listens."""
    argv = [sys.executable, "-m", "miroctl.daemon", "--key", place.key, "--idle", repr(idle)]
    argv += ["--config", config_name] if config_name else []
    place.rotate_log()
    read_end, write_end = os.pipe()
    log = os.open(place.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            [*argv, "--ready-fd", str(write_end)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(write_end,),
            start_new_session=True,
            cwd=cwd,
        )
    finally:
        os.close(write_end)
        os.close(log)
    try:
        _wait_ready(read_end, place, process)
    except BaseException:  # Ctrl-C (or any failure) while it starts: no daemon is left running for its idle time
        _stop_starting(place, process)
        raise
    finally:
        os.close(read_end)
    # Reaped when it exits, should this process (a script's ToolManager) outlive it: no zombie is left.
    threading.Thread(target=process.wait, name="miroctl-daemon-reaper", daemon=True).start()
    return process.pid


def _wait_ready(fd: int, place: Place, process: subprocess.Popen[bytes]) -> None:
    """Until the daemon says it listens; its exit (the pipe's end) or a hang is ServerUnavailable with its log."""
    deadline = time.monotonic() + START_WAIT
    received = b""
    while READY not in received:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            process.kill()
            raise ServerUnavailable(f"the daemon did not start within {START_WAIT:g}s", hint=f"see {place.log}")
        chunk = os.read(fd, 64)
        if not chunk:
            code = process.wait()
            raise ServerUnavailable(
                f"the daemon exited with code {code} before it listened: {_last_line(place)}",
                hint=f"see {place.log}, or use --no-daemon",
            )
        received += chunk


def _stop_starting(place: Place, process: subprocess.Popen[bytes]) -> None:
    """End a daemon that has not said it listens: SIGTERM (it has started no server yet), SIGKILL after
    STOP_WAIT; then remove its socket and record, so that the next command finds no dead daemon's leftovers."""
    process.terminate()
    try:
        process.wait(STOP_WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    place.socket.unlink(missing_ok=True)
    place.record.unlink(missing_ok=True)


def _last_line(place: Place) -> str:
    try:
        lines = place.log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "no log"


def _replace_older(place: Place, origin: str) -> None:
    """Ask the daemons of the same origin (the same --config in the same directory) but an older configuration
    to drain and exit: the configuration changed."""
    for other in places(place.directory):
        if other.key != place.key and other.read_record().get("origin") == origin:
            stop(other)


def stop(place: Place) -> int | None:
    """Ask a daemon to drain and exit; its pid, or None when none listens. A daemon that listens but does not
    take the request (it fails, closes the connection or does not answer in time) is sent SIGTERM, which it
    handles the same way: never reported as not running while it still is."""
    pid = listener(place)
    if pid is None:
        return None
    try:
        answer = GatewayClient(f"unix:{place.socket}", timeout=10.0).request("/v1/daemon/stop")
    except (ServerUnavailable, TimedOut):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:  # it left meanwhile
            return None
        return pid
    answered = answer.get("pid")
    return answered if isinstance(answered, int) else pid
