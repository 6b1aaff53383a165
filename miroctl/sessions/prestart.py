"""Servers started before miroctl has loaded itself, adopted by the session that would have started them.

A cold `miroctl call` spends ~0.8 s importing Typer, the core and the configuration's parsers before it
reaches the point where it starts the server; the server then boots while miroctl waits. The console
script reads the command line (with miroctl/launch's option table) and the configuration first
(cli/prestart.py) and starts the stdio servers it names at once, so they boot on the other core while
miroctl loads. The session adopts such a process
only when the command, arguments, working directory and whole environment are exactly those it would have
started; anything else (a different environment, a server the command did not use) is stopped unused
when the command has run, with its process group and whatever it detached (the run's sweep).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from contextlib import suppress
from dataclasses import dataclass

import anyio

from miroctl.base.models import ServerSpec
from miroctl.sessions.processes import RUN_ID, child_environment, signal_group, sweep_orphans

Key = tuple[str, tuple[str, ...], str | None, tuple[tuple[str, str], ...]]


def _key(spec: ServerSpec, env: dict[str, str]) -> Key:
    return (spec.command or "", tuple(spec.args), spec.cwd, tuple(sorted(env.items())))


class EarlyServers:
    """The servers one command line started early: each adopted by the session that would have started it
    (`take`, through the connector the command builds with them), the rest stopped when the command has run
    (`discard`). The console entry hands it to the command in its `Launch` object."""

    def __init__(self) -> None:
        self._started: dict[Key, tuple[subprocess.Popen[bytes], str]] = {}

    def __len__(self) -> int:
        """How many are started and not yet adopted."""
        return len(self._started)

    def start(self, spec: ServerSpec) -> bool:
        """Start a stdio server now, to be adopted later; False when it cannot be started (the session will
        say why when it tries)."""
        env = child_environment(spec)
        key = _key(spec, env)
        if key in self._started or (spec.cwd and not os.path.isdir(spec.cwd)):
            return False
        fd, stderr_path = tempfile.mkstemp(prefix="miroctl-prestart-", suffix=".stderr")
        try:
            process = subprocess.Popen(
                [spec.command or "", *spec.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=fd,
                env=env,
                cwd=spec.cwd,
                start_new_session=True,
            )
        except OSError:
            os.unlink(stderr_path)
            return False
        finally:
            os.close(fd)
        self._started[key] = (process, stderr_path)
        return True

    def take(self, spec: ServerSpec) -> tuple[Adopted, str] | None:
        """The process started early for exactly this spec (and its stderr file), now the caller's; or None."""
        found = self._started.pop(_key(spec, child_environment(spec)), None)
        if found is None:
            return None
        process, stderr_path = found
        return Adopted(process), stderr_path

    def processes(self) -> list[subprocess.Popen[bytes]]:
        """The processes started and not yet adopted."""
        return [process for process, _ in self._started.values()]

    def discard(self) -> None:
        """Stop every early server no session adopted (with its process group, and what it detached from that
        group at start-up: the run's sweep), and remove its stderr file."""
        if not self._started:
            return
        while self._started:
            _, (process, stderr_path) = self._started.popitem()
            signal_group(process.pid, signal.SIGKILL)
            with suppress(OSError, subprocess.SubprocessError):
                process.wait(timeout=2)
            for stream in (process.stdin, process.stdout):
                with suppress(OSError):
                    if stream is not None:
                        stream.close()
            with suppress(OSError):
                os.unlink(stderr_path)
        sweep_orphans(RUN_ID)


# ------------------------------------------------------------------------------- the adopted process


@dataclass
class _Reader:
    """A pipe from the server, read without blocking the event loop (chunks of bytes, as anyio's streams)."""

    fd: int

    def __post_init__(self) -> None:
        os.set_blocking(self.fd, False)

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> bytes:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            except OSError:
                raise StopAsyncIteration from None
            if not data:
                raise StopAsyncIteration
            return data

    async def aclose(self) -> None:
        with suppress(OSError):
            os.close(self.fd)


@dataclass
class _Writer:
    """A pipe to the server; a closed pipe raises anyio.BrokenResourceError, as anyio's streams do."""

    fd: int

    def __post_init__(self) -> None:
        os.set_blocking(self.fd, False)

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        with suppress(OSError):
            os.close(self.fd)


class Adopted:
    """An early-started server with the face of anyio's Process that miroctl's stdio transports use."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self.pid = process.pid
        # The Popen's file objects are left alone: the fds are read and written directly, and closed here.
        self.stdin = _Writer(os.dup(process.stdin.fileno()))
        self.stdout = _Reader(os.dup(process.stdout.fileno()))
        process.stdin.close()
        process.stdout.close()

    @property
    def returncode(self) -> int | None:
        return self._process.poll()
