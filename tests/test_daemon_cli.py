"""`miroctl daemon status|stop|logs` when no daemon runs, and a record left by a dead one (in-process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from miroctl.cli import daemon as daemon_cli
from miroctl.cli.app import app
from tests.conftest import wait_exited
from tests.json_contract import one_document


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "run" / "miroctl"


def test_status_with_no_daemon_exits_0_and_says_so(runtime: Path) -> None:
    shown = CliRunner().invoke(app, ["daemon", "status"])
    assert shown.exit_code == 0
    assert "no daemon is running" in shown.stderr
    listed = CliRunner().invoke(app, ["daemon", "status", "--json"])
    assert listed.exit_code == 0
    assert one_document(listed.stdout) == {"schema": "miroctl.daemons/1", "daemons": []}


def test_stop_and_logs_with_no_daemon_exit_0_and_say_so(runtime: Path) -> None:
    stopped = CliRunner().invoke(app, ["daemon", "stop"])
    assert stopped.exit_code == 0
    assert "no daemon was running for this configuration here" in stopped.stderr
    logs = CliRunner().invoke(app, ["daemon", "logs", "--all"])
    assert logs.exit_code == 0
    assert "no daemon log" in logs.stderr


def test_a_dead_daemons_record_shows_dead_exits_1_and_stop_all_clears_it(runtime: Path) -> None:
    runtime.mkdir(parents=True, mode=0o700)
    record = {"pid": 999999, "config": None, "source": "/x/miroctl.yaml", "cwd": "/x", "socket": "s"}
    (runtime / "0123456789abcdef.json").write_text(json.dumps(record))
    shown = CliRunner().invoke(app, ["daemon", "status", "--json"])
    assert shown.exit_code == 1
    (daemon,) = one_document(shown.stdout)["daemons"]
    assert (daemon["state"], daemon["pid"], daemon["config"]) == ("dead", 999999, "/x/miroctl.yaml")
    assert CliRunner().invoke(app, ["daemon", "stop", "--all"]).exit_code == 0
    assert not list(runtime.glob("*.json"))


def test_daemon_logs_prints_the_last_lines_literally(runtime: Path) -> None:
    runtime.mkdir(parents=True, mode=0o700)
    lines = [f"line {i}" for i in range(60)] + ["\x1b[31mred\x1b[0m [bold]x[/bold]"]
    (runtime / "0123456789abcdef.log").write_text("\n".join(lines) + "\n")
    shown = CliRunner().invoke(app, ["daemon", "logs", "--all", "-n", "2"])
    assert shown.exit_code == 0
    assert shown.stdout.splitlines() == ["line 59", "\\x1b[31mred\\x1b[0m [bold]x[/bold]"]


def test_a_stopped_daemon_that_has_exited_but_is_not_yet_reaped_counts_as_gone() -> None:
    """A daemon is not the stopping command's child, so after it exits it stays a zombie until its parent
    reaps it; `daemon stop` takes that as stopped instead of waiting (here: a child's child that its parent
    never reaps, which would time out)."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; p = subprocess.Popen(['true']); print(p.pid, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        zombie = psutil.Process(pid)
        assert wait_exited([zombie], 60), "the child never exited"  # 60 s: a hang guard only
        assert zombie.status() == psutil.STATUS_ZOMBIE
        daemon_cli._wait_gone([pid], seconds=5)  # raises TimedOut if it waits for the reaping
    finally:
        parent.communicate("")


BROKEN_DAEMON = """
import signal, socket, sys
signal.signal(signal.SIGTERM, lambda *_: (print("SIGTERM", flush=True), sys.exit(0)))
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(sys.argv[1])
sock.listen(8)
print("listening", flush=True)
while True:
    conn, _ = sock.accept()
    try:
        if sys.argv[2] == "fails" and conn.recv(65536):
            conn.sendall(b"HTTP/1.1 500 Oops\\r\\nContent-Length: 4\\r\\nConnection: close\\r\\n\\r\\noops")
    except OSError:
        pass
    conn.close()
"""


@pytest.mark.process
@pytest.mark.parametrize("broken", ["hangs up", "fails"])
def test_stop_sends_sigterm_to_a_daemon_that_listens_but_does_not_take_the_request(runtime: Path, broken: str) -> None:
    runtime.mkdir(parents=True, mode=0o700)
    key = "0123456789abcdef"
    with subprocess.Popen(
        [sys.executable, "-c", BROKEN_DAEMON, str(runtime / f"{key}.sock"), broken], stdout=subprocess.PIPE, text=True
    ) as daemon:
        try:
            assert daemon.stdout is not None and daemon.stdout.readline() == "listening\n"
            record = {"pid": daemon.pid, "config": None, "source": "/x/miroctl.yaml", "cwd": "/x"}
            (runtime / f"{key}.json").write_text(json.dumps(record))
            stopped = CliRunner().invoke(app, ["daemon", "stop", "--all"])
            assert stopped.exit_code == 0, stopped.stderr
            assert "stopped the daemon of /x/miroctl.yaml and its servers" in stopped.stderr
            assert daemon.stdout.read() == "SIGTERM\n"  # never reported as not running while it still ran
        finally:
            daemon.kill()
