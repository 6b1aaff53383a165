"""Helpers for tests of `miroctl serve`: pool configs, a gateway process over HTTP, the same gateway in the test's
own process (over HTTP, or over the memory transport for what stdio serves), raw HTTP requests."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import yaml
from anyio.from_thread import start_blocking_portal

from miroctl.config import loader
from miroctl.core.manager import Manager
from miroctl.gateway.guard import HttpSettings
from miroctl.gateway.http import address_of, bind, serve_http
from miroctl.gateway.server import Gateway, build_server, gateway_task_id
from miroctl.launch import entry
from tests.conftest import HEALTHY_STARTUP, ROOT, fixture_yaml, in_memory

READY = re.compile(r"on (http://\S+)/mcp")
PLAINRPC = str(ROOT / "tests" / "servers" / "plainrpc.py")
CRASHING = str(ROOT / "tests" / "servers" / "crashing.py")


def pool_files(tag: str | None = None, beta_tools: str = "echo,add", **extra: dict[str, Any]) -> dict[str, Any]:
    """Server files: alpha (every fixture tool) and beta (a few), tagged for leak checks."""
    env = {"MIROCTL_TEST_TAG": tag} if tag else {}
    servers: dict[str, Any] = {
        "alpha": fixture_yaml("alpha", env=env),
        "beta": fixture_yaml("beta", "--tools", beta_tools, env=env),
    }
    servers.update(extra)
    return servers


def plain_pool_files(directory: Path, tag: str) -> dict[str, Any]:
    """Server files: alpha and beta as tests/servers/plainrpc.py, an MCP server on the standard library alone
    (each costs a fraction of the fixture server's start), for tests of what serve does with its servers'
    processes; each logs what it receives to DIRECTORY/NAME.log, and is tagged for leak checks."""
    return {
        name: {
            "name": name,
            "tool_command": "python",
            "args": [PLAINRPC, "--log", str(directory / f"{name}.log")],
            "env": {"MIROCTL_TEST_TAG": tag},
        }
        for name in ("alpha", "beta")
    }


def write_pool(directory: Path, servers: dict[str, Any], **profile: Any) -> Path:
    """A profile and its tool/*.yaml in `directory` (like conftest's write_config, for any scope)."""
    tool_dir = directory / "tool"
    tool_dir.mkdir(parents=True, exist_ok=True)
    for name, body in servers.items():
        (tool_dir / f"{name}.yaml").write_text(yaml.safe_dump(body))
    profile.setdefault("startup_timeout", HEALTHY_STARTUP)
    profile.setdefault("tool_config", list(servers))
    path = directory / "miroctl.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


class GatewayProcess:
    """`miroctl serve` as a real process; stderr is collected, the ready line gives its URL."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, stdin: int = subprocess.DEVNULL) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "miroctl", "serve", *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=ROOT,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """The first stderr match of `pattern`, waiting for it (or for the process to end)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.stderr)
            if found:
                return found
            if self.proc.poll() is not None:
                self._reader.join(timeout=5)  # the last lines: the reader ends at the end of stderr
                raise AssertionError(f"gateway exited {self.proc.returncode}:\n{self.stderr}")
            time.sleep(0.02)
        raise AssertionError(f"no {pattern!r} on the gateway's stderr within {timeout}s:\n{self.stderr}")

    def url(self) -> str:
        return self.wait_for(READY.pattern).group(1)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"gateway did not stop within {timeout}s of {signal.Signals(sig).name}") from None
        finally:
            self._close_pipes()

    def _close_pipes(self) -> None:
        """Close our ends of the pipes now: left to the garbage collector, they warn in some later test."""
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._reader.join(timeout=5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@contextmanager
def running(*args: str, **kwargs: Any) -> Iterator[GatewayProcess]:
    """A gateway process for the length of a `with` block; stopped at the end if still running."""
    gateway = GatewayProcess(*args, **kwargs)
    try:
        yield gateway
    finally:
        if gateway.proc.poll() is None:
            gateway.stop()


def start_http_gateway(config: Path, *args: str, env: dict[str, str] | None = None) -> tuple[GatewayProcess, str]:
    gateway = GatewayProcess("--config", str(config), "--transport", "http", "--port", "0", *args, env=env)
    return gateway, gateway.url()


@asynccontextmanager
async def http_gateway_here(
    config: Path,
    *names: str,
    retry_every: float = 0.5,
    settings: HttpSettings | None = None,
    task_id: str | None = None,
    memory: bool = False,
) -> AsyncIterator[str]:
    """What `miroctl serve --config CONFIG NAMES --transport http --port 0 --retry-every N` serves, in this
    process: the pool following its servers' changes, the watch loop, the HTTP app on a real socket on
    127.0.0.1; its base URL. Stopped (drained) at the end of the block. `settings` are serve's HTTP options
    (a token, limits; port 0 always), `task_id` the one serve gives its servers, and with `memory` the healthy
    fixture servers run in this process whatever the test's marks."""
    loaded = loader.load(str(config))
    specs = [in_memory(spec) if memory else spec for spec in loaded.servers if not names or spec.name in names]
    served = replace(loaded, servers=tuple(specs), default_names=tuple(spec.name for spec in specs))
    settings = replace(settings or HttpSettings(), port=0)
    sock = bind(settings)
    stop = anyio.Event()
    async with Manager(served, follow_changes=True, task_id=task_id) as manager:
        gateway = Gateway(manager, specs)
        await gateway.refresh()
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                await serve_http(gateway, settings, sock, 1.0, stop)
                tg.cancel_scope.cancel()  # the watch loop too

            tg.start_soon(gateway.watch, retry_every)
            tg.start_soon(serve)
            try:
                yield address_of(sock)
            finally:
                stop.set()


@asynccontextmanager
async def host_of_gateway_here(
    config: Path, *names: str, retry_every: float = 0.5, **client: Any
) -> AsyncIterator[Any]:
    """What `miroctl serve --config CONFIG NAMES --retry-every N` serves over stdio, in this process: the pool
    following its servers' changes and the watch loop; and an MCP host (the SDK's Client with `client`'s
    options) connected to it over the memory transport, for what does not depend on serve's own process."""
    from mcp import Client

    loaded = loader.load(str(config))
    specs = [spec for spec in loaded.servers if not names or spec.name in names]
    served = replace(loaded, servers=tuple(specs), default_names=tuple(spec.name for spec in specs))
    async with Manager(served, follow_changes=True) as manager:
        gateway = Gateway(manager, specs)
        await gateway.refresh()
        async with anyio.create_task_group() as tg:
            tg.start_soon(gateway.watch, retry_every)
            async with Client(build_server(gateway), **client) as host:
                yield host
            tg.cancel_scope.cancel()


@contextmanager
def http_gateway_thread(
    config: Path,
    *names: str,
    token: str | None = None,
    memory: bool = True,
    task_id: str | None = None,
    retry_every: float = 0.5,
    **limits: Any,
) -> Iterator[str]:
    """What `miroctl serve --config CONFIG NAMES --transport http --port 0` serves, on a real socket on
    127.0.0.1, from a thread of this process with its own event loop: for synchronous tests (CliRunner, raw
    HTTP) and for one gateway shared by a module. `token` is --token-env's value, `limits` the other HTTP
    settings (max_body=, read_timeout=, max_sessions=, session_idle=, allow_origins=); the servers get the
    gateway's own task id, as serve gives them. With `memory` (the default) the healthy fixture servers run in
    this process; without, the servers are what the config loads: processes, as `miroctl serve` starts them,
    in a test marked `process` and in a fixture of module scope (set up before conftest's servers_in_memory)."""
    settings = HttpSettings(token=token, **limits)
    served = http_gateway_here(
        config,
        *names,
        retry_every=retry_every,
        settings=settings,
        task_id=task_id or gateway_task_id(),
        memory=memory,
    )
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(served) as url:
        yield url


def run_entry(words: list[str]) -> int:
    """The exit code of a command line run by the console entry (what the `miroctl` script runs) in this
    process, whose SIGTERM and SIGHUP handlers stay its own (a cold command takes them over, as it would in a
    process of its own)."""
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return entry.run(words)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def request(
    url: str, method: str, path: str, body: bytes | str | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request to the gateway: status, headers (lower-case names), body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        data = body.encode() if isinstance(body, str) else body
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def post_json(url: str, path: str, document: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    status, _, body = request(
        url, "POST", path, json.dumps(document), {"Content-Type": "application/json", **(headers or {})}
    )
    return status, json.loads(body) if body else None


_DURATION = re.compile(r"\b\d+(?:\.\d+)? ?ms\b")


def without_timing(document: Any) -> Any:
    """A JSON document (or a text) without its durations, which differ from run to run."""
    if isinstance(document, str):
        return _DURATION.sub("N ms", document)
    if isinstance(document, dict):
        return {k: without_timing(v) for k, v in document.items() if k != "duration_ms"}
    if isinstance(document, list):
        return [without_timing(v) for v in document]
    return document


def wait_until(condition: Callable[[], Any], timeout: float = 30, message: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{message} not met within {timeout}s")


class CountingRelay:
    """A TCP relay on 127.0.0.1 in front of a gateway: counts the connections clients open through it, and can
    close them all (as a gateway closes idle keep-alive connections)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted = 0
        self.clients: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.target)
            self.accepted += 1
            self.clients.append(client)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        """Close every connection made so far (the client sees the end of each at once, on loopback)."""
        for client in self.clients:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()
        self.drop()
