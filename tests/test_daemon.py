"""The keep-alive daemon: two plain commands share a persistent server's state, one daemon per configuration,
a dead one replaced, idle exit, `daemon stop`, and only the user gets in (real processes: the daemon is the
point)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import FIXTURE, HEALTHY_STARTUP, parse_json, tagged_processes, wait_exited
from tests.entry_support import console_entry
from tests.json_contract import one_document

pytestmark = pytest.mark.process
NOTE = "a background daemon now keeps counter running between commands"
GUARD = 60.0  # a hang guard only: each wait below ends on a process's exit or a file's content
UNSET = ("MIROCTL_DAEMON", "MIROCTL_DAEMON_IDLE", "MIROCTL_URL")  # the test run's own choices, not the place's


class Here:
    """A directory with a profile and a persistent fixture server, and a short private runtime directory."""

    def __init__(self, root: Path, runtime: Path, tag: str) -> None:
        self.root, self.runtime, self.tag = root, runtime, tag
        self.write_server()
        (root / "miroctl.yaml").write_text(yaml.safe_dump({"startup_timeout": HEALTHY_STARTUP}))

    def write_server(self, **env: str) -> None:
        (self.root / "tool").mkdir(exist_ok=True)
        server = {
            "name": "counter",
            "tool_command": "python",
            "args": [FIXTURE, "--name", "counter"],
            "persistent": True,
            "env": {"MIROCTL_TEST_TAG": self.tag, **env},
        }
        (self.root / "tool" / "counter.yaml").write_text(yaml.safe_dump(server))

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        return {**env, "XDG_RUNTIME_DIR": str(self.runtime), "MIROCTL_TEST_TAG": self.tag, **extra}

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "miroctl", *args]

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), cwd=self.root, env=self.env(**extra), capture_output=True, text=True, timeout=120
        )

    def control(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """`miroctl daemon ARGS` in this process, from the place's directory and with its environment: status,
        logs and stop are clients of the daemon's socket and its files, which are what these tests look at."""
        env: dict[str, str | None] = {name: None for name in UNSET}
        env.update({"XDG_RUNTIME_DIR": str(self.runtime), "MIROCTL_TEST_TAG": self.tag, **extra})
        with contextlib.chdir(self.root):
            done = CliRunner().invoke(app, ["daemon", *args], env=env)
        return subprocess.CompletedProcess(["daemon", *args], done.exit_code, done.stdout, done.stderr)

    def entry(self, capfd: pytest.CaptureFixture[str], *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """`miroctl ARGS` through the console entry in this process (tests/entry_support.py), from the place's
        directory and with its environment: for a command that must not go to a daemon, the decision is the
        entry's and its servers are processes all the same."""
        with pytest.MonkeyPatch.context() as patch:
            for name in UNSET:
                patch.delenv(name, raising=False)
            for name, value in {"XDG_RUNTIME_DIR": str(self.runtime), "MIROCTL_TEST_TAG": self.tag, **extra}.items():
                patch.setenv(name, value)
            patch.chdir(self.root)
            return console_entry(capfd, *args)

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.runtime / "miroctl").glob("*.json"))]

    def daemon(self) -> psutil.Process:
        (record,) = self.records()
        return psutil.Process(record["pid"])


@pytest.fixture
def here(tmp_path: Path, leak_tag: str) -> Iterator[Here]:
    with daemon_place(tmp_path, leak_tag) as place:
        yield place


@contextmanager
def daemon_place(root: Path, leak_tag: str, prefix: str = "md-") -> Iterator[Here]:
    """A Here in `root` with a short runtime directory of its own; its daemons and their processes (all of
    them carry the test's tag) are killed at the end (before leak_tag's check), whatever a failed test left.
    How a daemon stops is what the tests of stop, idle exit and signals check, not this clean-up."""
    runtime = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # a socket's path has room for ~107 bytes
    place = Here(root, runtime, leak_tag)
    try:
        yield place
    finally:
        kill_recorded(place)
        kill_tagged(leak_tag)
        shutil.rmtree(runtime, ignore_errors=True)


def kill_recorded(place: Here) -> None:
    """SIGKILL the daemons the place's records name, tagged or not (a record's pid is checked to be that
    daemon's: a dead one's may have been given to another process since)."""
    for path in (place.runtime / "miroctl").glob("*.json"):
        with contextlib.suppress(psutil.Error, OSError, ValueError, KeyError):
            record = json.loads(path.read_text())
            daemon = psutil.Process(record["pid"])
            if "miroctl.daemon" in daemon.cmdline() and record["key"] in daemon.cmdline():
                daemon.kill()


def kill_tagged(tag: str) -> None:
    """SIGKILL every living process of the tag, again until none is left (a daemon may start a server while
    it is being killed); a hang guard only bounds it."""
    deadline = time.monotonic() + GUARD
    while (alive := tagged_processes(tag)) and time.monotonic() < deadline:
        for pid in alive:
            with contextlib.suppress(psutil.Error, OSError):
                psutil.Process(pid).kill()
        wait_exited(alive, deadline - time.monotonic())  # a killed process is gone (or a zombie) a moment later


def family(proc: psutil.Process) -> list[psutil.Process]:
    return [proc, *proc.children(recursive=True)]


def gone(procs: list[psutil.Process]) -> bool:
    """Whether every one of `procs` exits within GUARD. An exited daemon is not this process's child: it is a
    zombie until the machine's init reaps it, which may take a second, and exited all the same."""
    return wait_exited(procs, GUARD)


def living(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def content(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def wait_for(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + GUARD
    while not check():
        assert time.monotonic() < deadline, "the awaited state never came"
        time.sleep(0.05)


def test_two_plain_calls_of_a_persistent_server_share_its_state_through_one_daemon(here: Here) -> None:
    first = here.run("call", "counter", "counter")
    second = here.run("call", "counter", "counter", "--json")
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert first.stdout.strip() == "1"
    assert parse_json(second.stdout)["structured_content"] == {"result": 2}
    assert NOTE in first.stderr and "daemon stop" in first.stderr
    assert second.stderr == ""
    assert len(here.records()) == 1


LOADED = """
import sys
from miroctl.launch.entry import run
code = run(sys.argv[1:])
print(code, "omegaconf" in sys.modules, "typer" in sys.modules)
"""


def test_a_call_to_a_running_daemon_takes_the_short_way_without_reading_the_config_again(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    argv = [sys.executable, "-c", LOADED, "call", "counter", "counter"]
    done = subprocess.run(argv, cwd=here.root, env=here.env(), capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines() == ["2", "0 False False"], done.stderr


def test_a_call_through_the_daemon_prints_the_envelope_and_exit_code_of_an_in_process_call(here: Here, capfd) -> None:
    daemon = here.run("call", "counter", "fail", "message=broken", "--json")
    direct = here.entry(capfd, "call", "counter", "fail", "message=broken", "--json", "--no-daemon")
    assert (daemon.returncode, direct.returncode) == (1, 1)
    through, local = parse_json(daemon.stdout), parse_json(direct.stdout)
    through.pop("duration_ms"), local.pop("duration_ms")
    assert through == local
    missing = here.run("call", "counter", "no_such_tool_anywhere", "--no-autocorrect")
    assert missing.returncode == 6
    assert len(here.records()) == 1


def test_a_list_of_a_persistent_server_goes_through_the_daemon_and_shows_its_tools(here: Here, capfd) -> None:
    through = here.run("list", "counter", "--json")
    direct = here.entry(capfd, "list", "counter", "--json", "--no-daemon")
    assert (through.returncode, direct.returncode) == (0, 0), through.stderr
    names = [[t["name"] for t in parse_json(done.stdout)["servers"][0]["tools"]] for done in (through, direct)]
    assert names[0] == names[1] and "counter" in names[0]
    assert NOTE in through.stderr and len(here.records()) == 1


def test_read_and_prompt_of_a_persistent_server_go_through_the_same_daemon(here: Here) -> None:
    read = here.run("read", "counter", "fixture://notes", "--json")
    prompt = here.run("prompt", "counter", "review", "code=x=1", "--json")
    assert (read.returncode, prompt.returncode) == (0, 0), read.stderr + prompt.stderr
    assert one_document(read.stdout)["contents"][0]["text"]
    assert one_document(prompt.stdout)["schema"] == "miroctl.prompt/1"
    assert NOTE in read.stderr and len(here.records()) == 1
    assert here.run("call", "counter", "counter").stdout.strip() == "1"


def test_no_daemon_and_miroctl_daemon_never_run_the_call_in_process(here: Here, capfd) -> None:
    assert here.entry(capfd, "call", "counter", "counter", "--no-daemon").stdout.strip() == "1"
    assert here.entry(capfd, "call", "counter", "counter", MIROCTL_DAEMON="never").stdout.strip() == "1"
    assert not (here.runtime / "miroctl").exists() or here.records() == []


def test_two_first_calls_at_once_start_one_daemon(here: Here) -> None:
    opts: dict[str, Any] = {"cwd": here.root, "env": here.env(), "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    calls = [subprocess.Popen(here.argv("call", "counter", "counter"), text=True, **opts) for _ in range(2)]
    answers = [call.communicate(timeout=120) for call in calls]
    assert [call.returncode for call in calls] == [0, 0], answers
    assert sorted(out.strip() for out, _ in answers) == ["1", "2"]
    assert sum(NOTE in err for _, err in answers) == 1
    assert len(here.records()) == 1


def test_a_killed_daemon_is_replaced_and_the_next_call_says_the_state_was_lost(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    daemon = here.daemon()
    servers = family(daemon)
    daemon.kill()
    assert gone(servers)  # the server sees its stdin end with the daemon
    status = here.control("status", "--json")
    assert status.returncode == 1
    assert [d["state"] for d in one_document(status.stdout)["daemons"]] == ["dead"]
    again = here.run("call", "counter", "counter")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "1"
    assert "had died: their state (pages, files, lists) was lost" in again.stderr
    assert here.daemon().pid != daemon.pid


def test_a_changed_config_gets_a_new_daemon_and_the_old_one_exits_with_its_servers(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    old = family(here.daemon())
    here.write_server(COUNTER_FLAVOUR="new")
    changed = here.run("call", "counter", "counter")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == "1"
    assert gone(old)
    (record,) = here.records()
    assert record["pid"] != old[0].pid


def test_a_daemon_exits_after_its_idle_time_and_stops_every_server(here: Here) -> None:
    assert here.run("call", "counter", "counter", MIROCTL_DAEMON_IDLE="1").returncode == 0
    daemon = here.daemon()
    procs = family(daemon)
    assert len(procs) >= 2  # the daemon and its server
    assert gone(procs)
    assert here.records() == []
    assert not list((here.runtime / "miroctl").glob("*.sock"))


def test_daemon_stop_leaves_no_process_and_status_shows_none(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    status = here.control("status", "--json")
    assert status.returncode == 0
    (shown,) = one_document(status.stdout)["daemons"]
    assert shown["state"] == "running" and shown["servers"] == [{"name": "counter", "state": "connected", "starts": 1}]
    procs = family(here.daemon())
    stopped = here.run("daemon", "stop")  # the one run of `daemon stop` as the user's own process
    assert stopped.returncode == 0, stopped.stderr
    assert not [p for p in procs if living(p)]
    assert one_document(here.control("status", "--json").stdout)["daemons"] == []


def test_a_sigterm_to_the_daemon_stops_it_and_every_server(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    daemon = here.daemon()
    procs = family(daemon)
    daemon.send_signal(signal.SIGTERM)
    assert gone(procs)
    assert "SIGTERM: exiting" in here.control("logs", "--all").stdout


def test_ctrl_c_on_a_call_cancels_it_inside_the_daemon(here: Here, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    argv = here.argv("call", "counter", "wait_cancel", "seconds=120", f"marker={marker}")
    call = subprocess.Popen(argv, cwd=here.root, env=here.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: content(marker) == "started")
    call.send_signal(signal.SIGINT)
    assert call.wait(timeout=GUARD) == 130
    wait_for(lambda: content(marker) == "cancelled")
    assert here.run("call", "counter", "counter").stdout.strip() == "1"  # the session and daemon live on


def test_a_timeout_of_a_call_through_the_daemon_exits_4_and_cancels_it_there(here: Here, tmp_path: Path) -> None:
    assert here.run("call", "counter", "counter").returncode == 0  # the server is up: the timeout is the tool's
    marker = tmp_path / "marker"
    timed = here.run("call", "counter", "wait_cancel", "seconds=120", f"marker={marker}", "--timeout", "2")
    assert timed.returncode == 4, timed.stderr
    wait_for(lambda: content(marker) == "cancelled")


def test_the_socket_is_0600_in_a_0700_directory(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    directory = here.runtime / "miroctl"
    (sock,) = directory.glob("*.sock")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert not psutil.Process(here.daemon().pid).net_connections(kind="inet")  # no TCP port


CLIENT = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
sock.connect(sys.argv[1])
try:
    sock.sendall(b"POST /v1/daemon/status HTTP/1.1\\r\\nHost: localhost\\r\\nContent-Length: 0\\r\\n\\r\\n")
    print(sock.recv(100).decode() or "closed")
except (BrokenPipeError, ConnectionResetError):
    print("closed")
"""


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")  # this test run's may sit in a directory of root's


@pytest.mark.skipif(os.getuid() != 0, reason="needs root, to run a client as the user nobody")
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="needs /usr/bin/python3, which the user nobody can run")
def test_a_client_of_another_uid_is_refused_even_when_the_socket_is_open_to_it(here: Here) -> None:
    assert here.run("call", "counter", "counter").returncode == 0
    directory = here.runtime / "miroctl"
    (sock,) = directory.glob("*.sock")
    for path, mode in ((here.runtime, 0o755), (directory, 0o755), (sock, 0o777)):  # a careless chmod
        path.chmod(mode)
    nobody = pwd.getpwnam("nobody").pw_uid
    foreign = subprocess.run(
        [str(SYSTEM_PYTHON), "-I", "-c", CLIENT, str(sock)],
        user=nobody,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert foreign.returncode == 0, foreign.stderr
    assert foreign.stdout.strip() == "closed"  # before a byte was answered
    logs = here.control("logs")
    assert f"uid {nobody} (not this user)" in logs.stdout
    mine = subprocess.run([sys.executable, "-I", "-c", CLIENT, str(sock)], capture_output=True, text=True)
    assert "200 OK" in mine.stdout


def test_secrets_stay_masked_in_the_daemons_answers_log_and_command_line(here: Here) -> None:
    secret = "s3cr3t-daemon-token-4242"
    here.write_server(FIXTURE_SECRET="${oc.env:FIXTURE_SECRET}")
    done = here.run("call", "counter", "env", "name=FIXTURE_SECRET", "--json", FIXTURE_SECRET=secret)
    assert done.returncode == 0, done.stderr
    assert parse_json(done.stdout)["result"] == "****"
    daemon = here.daemon()
    logs = here.control("logs", "-n", "0", FIXTURE_SECRET=secret)
    status = here.control("status", "--json", FIXTURE_SECRET=secret)
    assert "call counter/env: ok" in logs.stdout
    for shown in (done.stdout, done.stderr, logs.stdout, status.stdout, " ".join(daemon.cmdline())):
        assert secret not in shown


def test_a_bad_miroctl_daemon_idle_is_a_usage_error_that_starts_nothing(here: Here) -> None:
    bad = here.run("call", "counter", "counter", MIROCTL_DAEMON_IDLE="soon")
    assert bad.returncode == 2
    assert "MIROCTL_DAEMON_IDLE: 'soon' is not a number of seconds" in bad.stderr
    assert not (here.runtime / "miroctl").exists() or here.records() == []
