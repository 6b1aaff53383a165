"""No server, and nothing a server started, outlives miroctl: crashes, timeouts, Ctrl-C, SIGTERM."""

import io
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from typer.testing import CliRunner

from miroctl.cli import program
from miroctl.cli.app import app
from miroctl.launch.handoff import Launch
from tests.conftest import (
    FIXTURE,
    HANG_GUARD,
    ROOT,
    fixture_yaml,
    hostile_yaml,
    run_miroctl,
    tagged_processes,
    wait_for_no_tagged,
)
from tests.entry_support import console_entry


@pytest.fixture
def pool(write_config, leak_tag, tmp_path):
    log = tmp_path / "calls.log"
    env = {"MIROCTL_TEST_TAG": leak_tag, "FIXTURE_CALL_LOG": str(log)}
    path = write_config(
        {
            "alpha": fixture_yaml("alpha", env=env),
            "stubborn": fixture_yaml("stubborn", "--mode", "ignore-term", env=env, startup_timeout=2),
        }
    )
    return path, log


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def invoke(*args: str, env: dict[str, str] | None = None):
    """miroctl in this process; its servers are real processes (the tests that use it are marked `process`)."""
    return CliRunner().invoke(app, list(args), env=env)


@pytest.mark.process
def test_a_server_crashing_mid_call_exits_3_with_its_stderr_and_leaves_nothing(pool, leak_tag):
    path, _ = pool
    result = invoke("call", "--config", str(path), "alpha", "crash", "--json")
    assert result.exit_code == 3, result.stderr
    envelope = json.loads(result.stdout)
    assert envelope["failure"]["kind"] == "crashed"
    assert "exited with code 7 during the call to crash" in envelope["error"]
    assert "fixture: crashing on purpose" in envelope["failure"]["stderr_tail"]
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.process
def test_a_call_outliving_its_timeout_exits_4_soon_after_and_leaves_nothing(pool, leak_tag):
    path, log = pool
    result = invoke("call", "--config", str(path), "alpha", "sleep", "seconds=600", "--timeout", "1.5", "--json")
    assert result.exit_code == 4, result.stderr
    assert json.loads(result.stdout)["error"] == "sleep did not answer within 1.5s"
    assert log.read_text().split() == ["sleep"]
    # miroctl answered without waiting for the server's 600 s (the per-test timeout would have failed it), and
    # stopped the server it left mid-call.
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.process
@pytest.mark.parametrize("detach", ["false", "true"])
def test_grandchildren_of_a_server_are_killed_when_miroctl_exits_even_in_a_session_of_their_own(pool, leak_tag, detach):
    path, _ = pool
    result = run_miroctl("call", "--config", str(path), "alpha", "spawn_child", f"detach={detach}", "--json")
    assert result.returncode == 0, result.stderr
    grandchild = int(json.loads(result.stdout)["result"])
    wait_for(
        lambda: not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE,
        timeout=5,
    )


@pytest.mark.process
def test_a_server_ignoring_sigterm_and_eof_is_killed(pool, leak_tag):
    path, _ = pool
    result = invoke("list", "stubborn", "--config", str(path), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["servers"][0]["failure"]["kind"] == "timeout"
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.process
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_call_stops_every_server_and_exits_with_its_code(pool, leak_tag, signum, code):
    path, log = pool
    proc = subprocess.Popen(
        [sys.executable, "-m", "miroctl", "call", "--config", str(path), "alpha", "sleep", "seconds=600"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: log.exists() and "sleep" in log.read_text())
        assert tagged_processes(leak_tag)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=HANG_GUARD)
    finally:
        proc.kill()
    assert proc.returncode == code
    assert f"interrupted by {signal.Signals(signum).name}; every server was stopped" in stderr
    assert not wait_for_no_tagged(leak_tag)


def _listed(record: Path, server: str) -> bool:
    """Whether miroctl has received `server`'s answer to tools/list (its --record file says so)."""
    if not record.exists():
        return False
    for line in record.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        if (
            entry.get("server") == server
            and entry.get("direction") != "to_server"
            and "tools" in (message.get("result") or {})
        ):
            return True
    return False


@pytest.mark.process
@pytest.mark.parametrize("json_mode", [False, True], ids=["table", "json"])
def test_ctrl_c_during_list_shows_the_servers_that_answered_then_the_interruption(
    write_config, leak_tag, tmp_path, json_mode
):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    path = write_config(
        {
            "quick": hostile_yaml("quick", env=env),
            "stuck": fixture_yaml("stuck", "--mode", "hang", env=env),
        },
        startup_timeout=600,  # the stuck server is still starting when Ctrl-C comes
    )
    record = tmp_path / "traffic.ndjson"
    command = [sys.executable, "-m", "miroctl", "list", "--config", str(path), "--record", str(record)]
    proc = subprocess.Popen(
        [*command, *(["--json"] if json_mode else [])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: _listed(record, "quick"))
        assert tagged_processes(leak_tag)  # the stuck server is running
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "miroctl: interrupted: interrupted by SIGINT; every server was stopped"
    if json_mode:
        servers = json.loads(stdout)["servers"]
        assert [server["name"] for server in servers] == ["quick"]
        assert "echo" in [tool["name"] for tool in servers[0]["tools"]]
    else:
        assert "quick" in stdout and "echo" in stdout and "stuck" not in stdout
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.process
def test_help_and_version_import_neither_mcp_nor_markitdown_nor_omegaconf():
    probe = (
        "import sys; from typer.testing import CliRunner; from miroctl.cli.app import app;"
        "r1 = CliRunner().invoke(app, ['--help']); r2 = CliRunner().invoke(app, ['--version']);"
        "r3 = CliRunner().invoke(app, ['call', '--help']);"
        "assert r1.exit_code == r2.exit_code == r3.exit_code == 0;"
        "print(sorted(m for m in ('mcp', 'markitdown', 'omegaconf', 'httpx2') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], check=False, capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.process
def test_version_prints_the_package_version():
    from miroctl import __version__

    result = run_miroctl("--version")
    assert result.returncode == 0
    assert result.stdout == f"miroctl {__version__}\n"


@pytest.mark.process
def test_stderr_temp_files_are_removed_after_the_run(pool, tmp_path, monkeypatch):
    path, _ = pool
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # found again from $TMPDIR
    made: list[Path] = []
    mkstemp = tempfile.mkstemp

    def recorded(*args: Any, **kwargs: Any) -> tuple[int, str]:
        fd, name = mkstemp(*args, **kwargs)
        made.append(Path(name))
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", recorded)
    result = invoke("call", "--config", str(path), "alpha", "add", "a=1")
    assert result.exit_code == 0, result.stderr
    assert [p.parent for p in made if p.suffix == ".stderr"] == [tmp_path]  # the server's, where $TMPDIR says
    assert not list(Path(tmp_path).glob("miroctl-*.stderr"))


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("no-such-command-miroctl", "command not found: no-such-command-miroctl"),
        (__file__, f"command is not executable: {__file__}"),
    ],
)
def test_a_server_that_cannot_start_is_named_and_leaves_no_stderr_file(monkeypatch, tmp_path, command, reason):
    import anyio

    from miroctl.base.models import ServerSpec
    from miroctl.sessions.processes import SpawnError, spawn

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(SpawnError) as caught:
        anyio.run(spawn, ServerSpec(name="ghost", command=command))
    assert str(caught.value) == reason
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--startup-timeout", "soon"], "miroctl: usage: Invalid value for '--startup-timeout'"),
        (["lsit"], "miroctl: usage: No such command 'lsit'."),
        (["call", "--no-such-option"], "miroctl: usage: No such option: --no-such-option"),
    ],
)
def test_command_line_mistakes_are_one_line_with_a_hint_and_exit_2(capfd, args, message):
    result = console_entry(capfd, *args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(message)
    assert lines[1].startswith("  hint: see: miroctl")
    assert len(lines) == 2


class WatchedStdout(io.StringIO):
    """stdout that notes, when the answer's first text is written, whether the tagged server still runs."""

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag
        self.server_running: bool | None = None

    def write(self, text: str) -> int:
        if self.server_running is None and text.strip():
            self.server_running = bool(tagged_processes(self.tag))
        return super().write(text)


@pytest.mark.process
@pytest.mark.parametrize(
    ("words", "shown"),
    [
        (["call", "plain", "echo", "text=hi"], "hi"),
        (["list", "plain", "--brief"], "echo("),
        (["read", "sdk", "fixture://notes"], "notes of fixture"),
        (["prompt", "sdk", "review", "code=x=1"], "x=1"),
    ],
)
def test_the_answer_is_printed_while_the_server_still_runs_and_stopped_after(
    tmp_path, words, shown, leak_tag, monkeypatch
):
    if words[1] == "plain":  # read and prompt need resources and prompts: the SDK's server
        server = [str(ROOT / "tests" / "servers" / "plainrpc.py"), "--log", str(tmp_path / "log")]
    else:
        server = [FIXTURE]
    spec = {"command": sys.executable, "args": server, "env": {"MIROCTL_TEST_TAG": leak_tag}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {words[1]: spec}}))
    stdout = WatchedStdout(leak_tag)
    monkeypatch.setattr(sys, "stdout", stdout)
    code = program.run(Launch([*words, "--config", str(config)]))
    assert code == 0
    assert shown in stdout.getvalue()
    assert stdout.server_running, "the answer was written only once the server had been stopped"
    assert not tagged_processes(leak_tag)  # and stopped before the command returned


STDOUT_LINES = [
    ["call", "plain", "echo", "text=hi"],
    ["call", "plain", "echo", "text=hi", "--json"],
    ["list", "plain"],
    ["list", "plain", "--json"],
    ["check", "plain"],
]


@pytest.mark.process
@pytest.mark.parametrize("words", STDOUT_LINES, ids=" ".join)
def test_a_reader_that_left_ends_the_command_quietly_with_exit_1_and_no_server_left(tmp_path, words, leak_tag):
    server = [str(ROOT / "tests" / "servers" / "plainrpc.py"), "--log", str(tmp_path / "log")]
    config = tmp_path / "mcp.json"
    plain = {"command": sys.executable, "args": server, "env": {"MIROCTL_TEST_TAG": leak_tag}}
    config.write_text(json.dumps({"mcpServers": {"plain": plain}}))
    argv = [sys.executable, "-m", "miroctl", *words, "--config", str(config)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # `miroctl ... | true`: the reader is gone before anything is written
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr
    assert stderr == ""
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.process
@pytest.mark.parametrize("words", STDOUT_LINES, ids=" ".join)
def test_a_full_disk_under_stdout_is_one_line_and_exit_1(tmp_path, words):
    server = [str(ROOT / "tests" / "servers" / "plainrpc.py"), "--log", str(tmp_path / "log")]
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"plain": {"command": sys.executable, "args": server}}}))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "miroctl", *words, "--config", str(config)],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == ["miroctl: failed: cannot write the output: No space left on device"]
