"""Shared helpers for miroctl's tests: fixture-server specs, config files on disk, leak checks."""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
import typer.testing
import yaml

from miroctl.base.models import ServerSpec

ROOT = Path(__file__).resolve().parent.parent

# The suite starts hundreds of Python processes (miroctl, its daemon, the servers). Where the environment forbids
# bytecode caches (PYTHONDONTWRITEBYTECODE, which some CI machines set), each of them would compile miroctl's
# sources again, ~0.14 s of CPU a process, and each xdist worker would rewrite every test module's asserts again.
# The caches are written beside the sources, as on a developer's machine.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
FIXTURE = str(ROOT / "tests" / "servers" / "fixture.py")
LEGACY = str(ROOT / "tests" / "servers" / "legacy.py")
HOSTILE = str(ROOT / "tests" / "servers" / "hostile.py")
WEBTOOLS = str(ROOT / "tests" / "servers" / "webtools.py")
HEALTHY_STARTUP = 30.0  # generous: a loaded 2-core machine must never flake a healthy server
HANG_GUARD = 40.0  # seconds: a hang guard, which only a defect runs out (pytest-timeout ends a test at 60)


def fixture_spec(name: str, *args: str, **fields: Any) -> ServerSpec:
    """A ServerSpec running tests/servers/fixture.py over stdio."""
    fields.setdefault("startup_timeout", HEALTHY_STARTUP)
    spec = ServerSpec(name=name, command=sys.executable, args=(FIXTURE, "--name", name, *args), **fields)
    return in_memory(spec) if _IN_MEMORY["on"] else spec


def fixture_yaml(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A server-file mapping (the seeds' shape) running the fixture server."""
    return {"name": name, "tool_command": "python", "args": [FIXTURE, "--name", name, *args], **fields}


def hostile_yaml(name: str, *broken: str, **fields: Any) -> dict[str, Any]:
    """A server file for tests/servers/hostile.py; each of `broken` is METHOD=MODE (or a flag such as --stubborn)."""
    args = [a if a.startswith("--") else f"--broken={a}" for a in broken]
    return {"name": name, "tool_command": "python", "args": [HOSTILE, "--name", name, *args], **fields}


def in_memory(spec: ServerSpec) -> ServerSpec:
    """A healthy fixture or webtools server's spec as the same server in this process (the memory transport);
    any other spec (another server, a mode that breaks the start, HTTP) unchanged, as a process."""
    if spec.error or spec.transport != "stdio" or spec.command != sys.executable:
        return spec
    if spec.args[:1] == (WEBTOOLS,):
        return _webtools_in_memory(spec)
    if spec.args[:1] != (FIXTURE,):
        return spec
    from tests.servers import fixture

    opts = fixture.options(list(spec.args[1:]))
    if opts.mode != "ok" or opts.http:
        return spec
    only = set(opts.tools.split(",")) if opts.tools else None
    target = fixture.build(
        opts.name, only, environ={**os.environ, **spec.env}, cwd=spec.cwd, instructions=opts.instructions
    )
    return replace(spec, transport="memory", target=target, command=None, args=())


def _webtools_in_memory(spec: ServerSpec) -> ServerSpec:
    """tests/servers/webtools.py in this process, with the environment its process would get; one whose
    starts fail on purpose (--fail-starts) stays a process."""
    from miroctl.sessions.processes import child_environment
    from tests.servers import webtools

    opts = webtools.options(list(spec.args[1:]))
    if opts.fail_starts:
        return spec
    target = webtools.build(opts.name, opts, environ=_Environment(lambda: child_environment(spec)))
    return replace(spec, transport="memory", target=target, command=None, args=())


class _Environment(Mapping[str, str]):
    """The environment a server process would be given, read when a tool asks (a run sets TASK_ID late)."""

    def __init__(self, make: Callable[[], dict[str, str]]) -> None:
        self._make = make

    def __getitem__(self, key: str) -> str:
        return self._make()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._make())

    def __len__(self) -> int:
        return len(self._make())


_IN_MEMORY = {"on": False}  # fixture_spec's servers run in this process (set per test by servers_in_memory)


@pytest.fixture(autouse=True, scope="session")
def stop_signals_as_in_a_terminal() -> None:
    """The tests send SIGINT and SIGHUP to the miroctl they start, and miroctl leaves a signal it finds ignored
    ignored (nohup's SIGHUP, the SIGINT of a script's background job). A run started that way (`nohup pytest`,
    `pytest &` in a script) would hand every process it starts those signals ignored: each worker puts them
    back first, so the processes of the tests see them as a terminal's command would."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture(autouse=True, scope="session")
def typer_commands_built_once() -> Iterator[None]:
    """`CliRunner().invoke(app, ...)` builds the click command from every command's signature each time (~1,000
    times a run, about a tenth of the workers' CPU). An app's commands never change once it is made, so each
    app is built once; the console script still builds its own in each process."""
    original = typer.testing._get_command
    built: dict[int, tuple[typer.Typer, Any]] = {}  # the app itself is kept, so its id is never reused

    def once(app: typer.Typer) -> Any:
        kept = built.get(id(app))
        if kept is None:
            kept = built[id(app)] = (app, original(app))
        return kept[1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", once)
        yield


@pytest.fixture(autouse=True)
def servers_in_memory(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests run in memory by default: the healthy fixture servers of every config a test loads, and every
    `fixture_spec`, run in this process over the memory transport. The CLI, the core and the renderers are
    what most tests check, not a server's process; the tests marked `process` keep real ones."""
    from miroctl.config import loader, resolve

    if request.node.get_closest_marker("process"):
        yield
        return
    for module in (loader, resolve):
        original = module.server_from_mapping

        def converted(*args: Any, _original: Callable[..., ServerSpec] = original, **kwargs: Any) -> ServerSpec:
            return in_memory(_original(*args, **kwargs))

        monkeypatch.setattr(module, "server_from_mapping", converted)
    _IN_MEMORY["on"] = True
    try:
        yield
    finally:
        _IN_MEMORY["on"] = False


@pytest.fixture(autouse=True)
def tool_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `list` and `check` keep tool names for completion: a directory of the test's own, never ~/.cache."""
    directory = tmp_path_factory.mktemp("tool-cache")
    monkeypatch.setenv("MIROCTL_CACHE_DIR", str(directory))
    return directory


@pytest.fixture(scope="session")
def run_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache home for the whole run, shared by the xdist workers: the bundled servers' snapshots made by
    one test serve the next, as on a user's machine, and nothing is written to the real ~/.cache."""
    base = tmp_path_factory.getbasetemp()
    directory = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cache-home"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


@pytest.fixture(autouse=True)
def cache_home(run_cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$XDG_CACHE_HOME for every test: the run's own (a test of where caches go sets its own)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(run_cache_home))
    monkeypatch.delenv("MIROCTL_SERVER_CACHE", raising=False)
    return run_cache_home


@pytest.fixture(autouse=True)
def own_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tool_command: python` is this interpreter, whatever virtualenv or MIROCTL_PYTHON the shell running the
    tests has (a test that wants one sets it)."""
    monkeypatch.delenv("MIROCTL_PYTHON", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME with nothing in it, and an empty project directory as the current one: where the MCP
    clients' configs are looked for (config sources, import, install)."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "MIROCTL_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)
    return home


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a profile and its tool/*.yaml files; returns the profile's path."""

    def write(servers: dict[str, dict[str, Any] | str], **profile: Any) -> Path:
        tool_dir = tmp_path / "tool"
        tool_dir.mkdir(exist_ok=True)
        for file_name, body in servers.items():
            text = body if isinstance(body, str) else yaml.safe_dump(body)
            (tool_dir / f"{file_name}.yaml").write_text(text)
        profile.setdefault("startup_timeout", HEALTHY_STARTUP)
        path = tmp_path / "miroctl.yaml"
        path.write_text(yaml.safe_dump(profile))
        return path

    return write


@pytest.fixture
def leak_tag() -> Iterator[str]:
    """A unique value to put in servers' env as MIROCTL_TEST_TAG; after the test none may be alive."""
    tag = uuid.uuid4().hex
    yield tag
    survivors = wait_for_no_tagged(tag)
    assert not survivors, f"processes outlived the test: {survivors}"


def tagged_processes(tag: str) -> list[int]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("MIROCTL_TEST_TAG") == tag and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def wait_for_no_tagged(tag: str, timeout: float = HANG_GUARD) -> list[int]:
    """The tag's processes still alive once every one of them has exited or `timeout` has run out. Called
    after miroctl has exited, when a process it stopped is already gone: the timeout is a hang guard for one
    it missed (which lives on), never a budget a loaded machine could overrun."""
    deadline = time.monotonic() + timeout
    while (alive := tagged_processes(tag)) and time.monotonic() < deadline:
        # the kernel says when these exit; then look again (one of them may have started another)
        wait_exited(alive, deadline - time.monotonic())
    return alive


def wait_exited(pids: list[int] | list[psutil.Process], timeout: float) -> bool:
    """Whether every one of these processes exits (a zombie has exited) within `timeout`: a pidfd of each
    becomes readable when it does, so nothing is polled. A pid no longer found, or reused by a process other
    than the psutil.Process given, has exited."""
    fds = []
    try:
        for given in pids:
            pid = given.pid if isinstance(given, psutil.Process) else given
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            if isinstance(given, psutil.Process) and not given.is_running():  # the pid now names another process
                os.close(fd)
                continue
            fds.append(fd)
        deadline = time.monotonic() + timeout
        pending = fds
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(pending, [], [], left)
            pending = [fd for fd in pending if fd not in ready]
        return True
    finally:
        for fd in fds:
            os.close(fd)


def free_port() -> int:
    """A port of 127.0.0.1 free now, for a server the test starts on it (for a port that must stay dead, see
    refused_port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


_REFUSING: list[socket.socket] = []


def refused_port() -> int:
    """A port of 127.0.0.1 that refuses every connection for the rest of the run: this process holds it bound
    and never listens on it, so no other process can take it. (A port that free_port() found free may be
    another worker's server by the time a test dials it.)"""
    if not _REFUSING:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        atexit.register(sock.close)
        _REFUSING.append(sock)
    port: int = _REFUSING[0].getsockname()[1]
    return port


def _listens(pid: int, port: int) -> bool:
    """Whether process `pid` (or one of its children) listens on `port`."""
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                    return True
    except psutil.Error:
        return False
    return False


def serve_on_a_free_port(
    argv: Callable[[int], list[str]], timeout: float = HEALTHY_STARTUP, **popen: Any
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server process on a free port of 127.0.0.1 and wait until it is that process that listens there.
    Another process may take the port between its choice and the server's bind (the xdist workers start
    servers too, some on port 0): the server then cannot bind and exits, and it is started on another port."""
    exits = []
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(argv(port), **popen)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            if _listens(proc.pid, port):
                return proc, port
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise TimeoutError(f"{argv(port)[:3]} did not listen on 127.0.0.1:{port} within {timeout}s")
            time.sleep(0.05)
        exits.append(proc.returncode)
    raise RuntimeError(f"{argv(0)[:3]} exited before it listened, five times (exit codes {exits})")


def wait_for_port(port: int, timeout: float = HEALTHY_STARTUP) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


@pytest.fixture
def http_fixture() -> Iterator[Callable[..., str]]:
    """Start fixture servers over streamable HTTP on 127.0.0.1; returns their /mcp URLs."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str = "web", *args: str) -> str:
        proc, port = serve_on_a_free_port(
            lambda port: [sys.executable, FIXTURE, "--name", name, "--http", str(port), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        processes.append(proc)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in processes:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_miroctl(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    input: str | None = None,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """miroctl as a real subprocess (for signals, process trees and import costs)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "miroctl.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        input=input,
        cwd=cwd or ROOT,
    )


def parse_json(text: str) -> Any:
    """The one JSON document a --json command printed."""
    return json.loads(text)
