"""The daemon process: the configuration's servers behind the gateway's JSON API on a Unix socket.

It serves what `miroctl call/list/read/prompt --via` ask (the same documents and exit codes as in-process),
plus its own status and stop; it exits when stopped (`miroctl daemon stop`, SIGTERM, SIGINT, SIGHUP), when a
newer daemon of the same origin replaces it, or after `idle` seconds without a request. Every way out drains
the calls in flight and then stops every server and their children (the Manager's exit). Its log is its
stderr (a file next to its socket), with secrets masked.
"""

from __future__ import annotations

import argparse
import fcntl
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import anyio

from miroctl.base import escaping
from miroctl.base.masking import Masker
from miroctl.config.loader import load
from miroctl.core.manager import Manager
from miroctl.daemon import keeper
from miroctl.daemon.peers import same_user_only
from miroctl.daemonclient.keys import config_key, origin_key
from miroctl.daemonclient.places import LOG_LIMIT, Place, runtime_dir
from miroctl.gateway.api import call_document, list_document, prompt_document, read_document
from miroctl.gateway.http import FLUSH, api_endpoint, json_response
from miroctl.gateway.server import Gateway
from miroctl.gateway.uvicorn_private import header_timed_protocol, stop_accepting
from miroctl.policy.decisions import Policy
from miroctl.sessions.processes import RUN_ID, sub_run_id

READY = b"ready\n"
GRACE = 20.0  # seconds the calls in flight get when the daemon is stopped
HEADER_TIMEOUT = 10.0
CONTROL = "/v1/daemon/"  # status and stop: they do not count as activity
IDLE_RECHECK = 0.5  # seconds between looks at an idle daemon that a command holds in use


class Activity:
    """ASGI middleware: the requests in flight and when the last one ended (the idle clock), and 503 once
    the daemon drains."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.count = 0
        self.last = time.monotonic()
        self.draining = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith(CONTROL):
            await self.app(scope, receive, send)
            return
        if self.draining:
            await json_response({"schema": "miroctl.error/1", "error": "the daemon is stopping"}, 503)(
                scope, receive, send
            )
            return
        self.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.count -= 1
            self.last = time.monotonic()

    def idle_for(self) -> float:
        return 0.0 if self.count else time.monotonic() - self.last


class Files:
    """The daemon's socket and record, removed once, as soon as it starts to leave: a command from then on
    finds no daemon and starts a new one (never one that reaches this daemon while it drains)."""

    def __init__(self, place: Place, inode: int) -> None:
        self.place, self.inode = place, inode
        self.forgotten = False

    def forget(self) -> None:
        if not self.forgotten:
            self.forgotten = True
            _remove_own(self.place, self.inode)


class Daemon:
    """One daemon: its gateway, its files, and the event that stops it."""

    def __init__(self, files: Files, gateway: Gateway, idle: float, origin: str, started: float) -> None:
        self.files, self.place = files, files.place
        self.gateway, self.idle, self.origin = gateway, idle, origin
        self.started = started
        self.stop = anyio.Event()
        self.activity = Activity(None)
        self.reason = "stopped"

    def status(self) -> dict[str, Any]:
        """This daemon as `daemon status --json` shows it (secrets masked)."""
        health = self.gateway.health()
        open_sessions = sum(1 for s in health["servers"] if s["state"] == "connected")
        document = {
            "pid": os.getpid(),
            "id": self.place.key,
            "config": self.gateway.manager.config.source,
            "cwd": os.getcwd(),
            "socket": str(self.place.socket),
            "log": str(self.place.log),
            "started": self.started,
            "idle_seconds": round(self.activity.idle_for(), 1),
            "idle_exit_after": self.idle,
            "requests_in_flight": self.activity.count,
            "sessions": open_sessions,
            "servers": [{"name": s["name"], "state": s["state"], "starts": s["starts"]} for s in health["servers"]],
        }
        return self.gateway.masker.data(document)

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        gateway = self.gateway

        async def status(request: Any) -> Any:
            return json_response(self.status())

        async def stop(request: Any) -> Any:
            log(gateway.masker, "asked to stop")
            self.reason = "asked to stop"
            self.stop.set()
            return json_response({"stopping": True, "pid": os.getpid()})

        routes = [
            Route("/v1/call", endpoint=api_endpoint(gateway, call_document), methods=["POST"]),
            Route("/v1/list", endpoint=api_endpoint(gateway, list_document), methods=["POST"]),
            Route("/v1/read", endpoint=api_endpoint(gateway, read_document), methods=["POST"]),
            Route("/v1/prompt", endpoint=api_endpoint(gateway, prompt_document), methods=["POST"]),
            Route(f"{CONTROL}status", endpoint=status, methods=["POST"]),
            Route(f"{CONTROL}stop", endpoint=stop, methods=["POST"]),
        ]
        self.activity.app = Starlette(routes=routes)
        return self.activity

    async def until_idle(self) -> None:
        """Set `stop` once nothing has been asked for `idle` seconds and no command is about to ask."""
        while not self.stop.is_set():
            left = self.idle - self.activity.idle_for()
            if left <= 0 and self._leave_unused():
                log(self.gateway.masker, f"idle for {self.idle:g}s: exiting")
                self.reason = "idle"
                self.stop.set()
                return
            await anyio.sleep(max(left, IDLE_RECHECK))

    def _leave_unused(self) -> bool:
        """Whether no command holds this daemon in use; if so, its socket is removed at once, so the next
        command starts a new daemon instead of reaching this one while it drains."""
        fd = os.open(self.place.in_use, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        else:
            self.files.forget()
            return True
        finally:
            os.close(fd)

    async def until_signalled(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                log(self.gateway.masker, f"{signal.Signals(signum).name}: exiting")
                self.reason = signal.Signals(signum).name
                self.stop.set()
                return

    async def serve(self, sock: socket.socket) -> None:
        """Serve until stopped; then refuse new requests, let those in flight finish (up to GRACE), return."""
        import uvicorn

        masker = self.gateway.masker

        class QuietServer(uvicorn.Server):
            def capture_signals(self) -> Any:  # the daemon's own receiver turns signals into `stop`
                return nullcontext()

        def refused(pid: int, uid: int) -> None:
            log(masker, f"refused a connection from pid {pid}, uid {uid} (not this user)")

        config = uvicorn.Config(
            self.app(),
            http=same_user_only(header_timed_protocol(HEADER_TIMEOUT), refused),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=FLUSH,
        )
        server = QuietServer(config)

        async def drain_when_stopped() -> None:
            await self.stop.wait()
            self.files.forget()
            self.activity.draining = True
            stop_accepting(server)
            with anyio.move_on_after(GRACE):
                while self.activity.count:
                    await anyio.sleep(0.05)
            server.should_exit = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain_when_stopped)
            tg.start_soon(self.until_idle)
            tg.start_soon(self.until_signalled)
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()


def log(masker: Masker, line: str) -> None:
    """One line of the daemon's log (its stderr), timestamped, secrets masked, escapes shown literally."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    sys.stderr.write(f"{stamp} miroctl daemon[{os.getpid()}]: {escaping.visible(masker.text(line))}\n")
    sys.stderr.flush()


def bind(path: Path) -> socket.socket:
    """The listening socket, mode 0600 from the start (umask), in the private directory."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        path.unlink(missing_ok=True)
        sock.bind(str(path))
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def options(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="miroctl-daemon")
    parser.add_argument("--key", required=True)
    parser.add_argument("--config", default=None)
    parser.add_argument("--idle", type=float, required=True)
    parser.add_argument("--ready-fd", type=int, default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one daemon until it is stopped or idle; its exit code."""
    opts = options(sys.argv[1:] if argv is None else argv)
    if not (math.isfinite(opts.idle) and opts.idle > 0):
        raise SystemExit("--idle must be a positive number of seconds")
    place = Place(runtime_dir(), opts.key).checked()
    config = load(opts.config)
    if config_key(config, os.getcwd(), os.environ) != opts.key:  # the files changed since the client read them
        raise SystemExit(f"the configuration {config.source} is not the one this daemon was started for: try again")
    masker = Masker(config.secrets())
    sock = bind(place.socket)
    files = Files(place, place.socket.stat().st_ino)
    held, kept_by = keeper.start(RUN_ID)  # a SIGKILL of this daemon leaves no server's child behind either
    try:
        return anyio.run(_run, files, config, masker, opts, sock)
    finally:
        sock.close()
        files.forget()
        keeper.stop(held, kept_by)


async def _run(files: Files, config: Any, masker: Masker, opts: argparse.Namespace, sock: socket.socket) -> int:
    place = files.place
    manager = Manager(config, policy=Policy.from_profile(config.profile), run_id=sub_run_id("daemon"))
    async with manager:
        gateway = Gateway(manager, list(config.servers), masker=masker)
        gateway.observers.append(lambda outcome: _log_call(masker, place, outcome))
        daemon = Daemon(files, gateway, opts.idle, origin_key(opts.config, os.getcwd()), time.time())
        _write_record(daemon, opts.config)
        log(masker, f"serving {config.source} on {place.socket} (idle exit after {opts.idle:g}s)")
        _ready(opts.ready_fd)
        await daemon.serve(sock)
        log(masker, f"stopping every server ({daemon.reason})")
    log(masker, "stopped")
    return 0


def _log_call(masker: Masker, place: Place, outcome: Any) -> None:
    """The call's line, then a new log if this one has grown to its limit (the old one is kept as .log.1)."""
    log(masker, _call_line(outcome))
    sys.stderr.flush()
    if place.rotate_log(into=(sys.stdout.fileno(), sys.stderr.fileno())):
        log(masker, f"the log grew past {LOG_LIMIT // 2**20} MB: the earlier lines are in {place.old_log}")


def _call_line(outcome: Any) -> str:
    """A call in the log: which tool, how it ended, how long it took (never its arguments or result)."""
    ended = "ok" if outcome.ok else f"{outcome.error_kind or 'error'}"
    return f"call {outcome.server_name}/{outcome.tool_name}: {ended} ({outcome.duration_ms:.0f} ms)"


def _write_record(daemon: Daemon, config_name: str | None) -> None:
    record = {
        "pid": os.getpid(),
        "key": daemon.place.key,
        "origin": daemon.origin,
        "config": config_name,
        "source": daemon.gateway.manager.config.source,
        "cwd": os.getcwd(),
        "socket": str(daemon.place.socket),
        "started": daemon.started,
    }
    previous = os.umask(0o177)
    try:
        temporary = daemon.place.record.with_suffix(".tmp")
        temporary.write_text(escaping.dumps(record))
        temporary.replace(daemon.place.record)
    finally:
        os.umask(previous)


def _ready(fd: int | None) -> None:
    """Tell the command that started this daemon that it listens (then the pipe closes)."""
    if fd is None:
        return
    try:
        os.write(fd, READY)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_own(place: Place, inode: int) -> None:
    """Remove the socket and record, unless a newer daemon of the same key has already replaced them."""
    try:
        if place.socket.stat().st_ino != inode:
            return
    except OSError:
        return
    place.socket.unlink(missing_ok=True)
    if place.read_record().get("pid") == os.getpid():
        place.record.unlink(missing_ok=True)
