"""The python sandbox server (local backend) from config/tool/tool-python.yaml: over stdio where the server
process matters (shutdown, signals), in-process for the behaviour of runs and the CLI's call."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.config import loader as config_
from miroctl.core.manager import Manager
from miroctl.servers.helpers.sandbox_run import Limits, run_limited
from tests.bundled.conftest import bundled_spec, cli_call, memory_spec, session, text_of
from tests.conftest import tagged_processes, wait_for_no_tagged


def sandbox_spec(dirs: dict[str, str], tag: str | None = None, **settings: str) -> ServerSpec:
    """The server over stdio with the test's directories and settings."""
    env = {**dirs, **settings}
    if tag:
        env["MIROCTL_TEST_TAG"] = tag
    return bundled_spec("python", env)


def in_process(monkeypatch, dirs: dict[str, str], tag: str | None = None, **settings: str) -> ServerSpec:
    """The server in this process, its settings set in this process's environment."""
    for key, value in {**dirs, **settings, **({"MIROCTL_TEST_TAG": tag} if tag else {})}.items():
        monkeypatch.setenv(key, value)
    return memory_spec("python")


def test_files_persist_between_calls_and_server_restarts_with_the_same_sandbox_id(
    state_dirs, monkeypatch, tmp_path: Path
):
    # Created and written by two sessions, then the sandboxes moved where no session has been: what a fresh
    # session finds there came from disk.
    spec = in_process(monkeypatch, state_dirs)
    first = session(spec, ("create_sandbox", {}))
    sandbox = first[0].structured_content["sandbox_id"]
    write = ("run_python_code", {"sandbox_id": sandbox, "code_block": "open('kept.txt', 'w').write('kept value')"})
    read = ("run_command", {"sandbox_id": sandbox, "command": "cat kept.txt; echo; pwd"})
    got = session(spec, write, read)
    moved = {**state_dirs, "SANDBOX_DIR": str(Path(state_dirs["SANDBOX_DIR"]).rename(tmp_path / "moved"))}
    again = session(
        in_process(monkeypatch, moved),
        ("run_python_code", {"sandbox_id": sandbox, "code_block": "print(open('kept.txt').read())"}),
    )
    assert first[0].result.startswith(f"sandbox_id: {sandbox}") and sandbox.startswith("sbx-")
    assert got[0].ok and got[1].ok, (got[0].error, got[1].error)
    assert "kept value" in got[1].result and sandbox in got[1].result
    assert again[0].structured_content["stdout"].strip() == "kept value"


def test_made_up_empty_and_unknown_ids_run_python_in_a_one_shot_sandbox(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs)
    code = "import os; open('x.txt', 'w').write('x'); print(len(os.listdir('.')))"
    ids = ["default", "sandbox", "0", "", "sbx-0000000000000000", "../../etc"]
    got = session(spec, *[("run_python_code", {"sandbox_id": i, "code_block": code}) for i in ids])
    for sandbox_id, outcome in zip(ids, got.outcomes):
        assert outcome.ok, outcome.error
        assert outcome.structured_content["one_shot"] is True
        assert outcome.structured_content["stdout"].strip() == "1"
        assert "one-shot sandbox" in outcome.result and "call create_sandbox" in outcome.result, sandbox_id
    assert not any(Path(state_dirs["SANDBOX_DIR"]).iterdir()), "a one-shot run left a sandbox behind"


def test_made_up_and_unknown_ids_are_clear_errors_for_commands_and_files(state_dirs, tmp_path: Path, monkeypatch):
    spec = in_process(monkeypatch, state_dirs)
    local = tmp_path / "input.txt"
    local.write_text("data")
    got = session(
        spec,
        ("run_command", {"sandbox_id": "default", "command": "ls"}),
        ("run_command", {"sandbox_id": "sbx-0123456789abcdef", "command": "ls"}),
        ("upload_file_from_local_to_sandbox", {"sandbox_id": "auto", "local_file_path": str(local)}),
        ("download_file_from_sandbox_to_local", {"sandbox_id": "sbx-../../x", "sandbox_file_path": "a"}),
        ("run_python_code", {"code_block": "print('still here')"}),
    )
    assert [o.error_kind for o in got.outcomes[:4]] == ["tool_error"] * 4
    assert "'default' is not a sandbox id: call create_sandbox first" in got[0].error
    assert "no sandbox has id 'sbx-0123456789abcdef'" in got[1].error
    assert "'auto' is not a sandbox id" in got[2].error
    assert "no sandbox has id" in got[3].error
    assert "still here" in got[4].result and got.starts == 1


def test_code_that_loops_forever_is_stopped_at_its_time_limit_with_its_children(state_dirs, leak_tag, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, leak_tag)
    loop = "import subprocess, sys\nsubprocess.Popen(['sleep', '300'])\nprint('looping', flush=True)\nwhile True: pass"
    got = session(
        spec,
        ("run_python_code", {"code_block": loop, "timeout_seconds": 1.5}),
        ("run_command", {"sandbox_id": "", "command": "true"}),
        ("run_python_code", {"code_block": "print(1)"}),
    )
    stopped = got[0]
    assert stopped.error_kind == "tool_error" and stopped.exit_code == 1
    assert "stopped: it ran past its 1.5 s time limit" in stopped.error
    assert "looping" in stopped.error
    assert stopped.structured_content["seconds"] >= 1.5  # it ran its whole limit (never a wall-clock budget)
    assert got[1].error_kind == "tool_error" and got[2].ok and got.starts == 1


def test_code_that_allocates_too_much_memory_fails_with_a_memory_error(state_dirs, leak_tag, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, leak_tag, SANDBOX_MEMORY_MB="256")
    got = session(
        spec,
        ("run_python_code", {"code_block": "block = bytearray(1024 ** 3)\nprint('allocated')"}),
        ("run_python_code", {"code_block": "print(sum(range(10)))"}),
    )
    assert got[0].error_kind == "tool_error"
    assert "MemoryError" in got[0].error and "the memory limit is 256 MB" in got[0].error
    assert "allocated" not in got[0].structured_content["stdout"]
    assert got[1].structured_content["stdout"].strip() == "45" and got.starts == 1


def test_an_output_flood_is_cut_in_the_middle_with_a_marker(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, SANDBOX_MAX_OUTPUT="3000")
    flood = "import sys\nprint('START')\nsys.stdout.write('x' * 5_000_000)\nprint()\nprint('END')"
    got = session(spec, ("run_python_code", {"code_block": flood}))
    stdout = got[0].structured_content["stdout"]
    assert got[0].ok
    assert stdout.startswith("START") and stdout.rstrip().endswith("END")
    assert "bytes of output cut" in stdout and len(stdout) < 4000
    assert got[0].structured_content["cut_bytes"] > 4_990_000


def test_a_file_over_the_size_limit_cannot_be_written(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, SANDBOX_FILE_MB="1")
    got = session(spec, ("run_python_code", {"code_block": "open('big.bin', 'wb').write(b'0' * 3_000_000)"}))
    assert got[0].error_kind == "tool_error"
    assert "File too large" in got[0].error and "the file-size limit is 1 MB" in got[0].error


def test_runs_see_a_scrubbed_environment_with_home_in_the_sandbox(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, SERVICE_TOKEN="tok-do-not-leak")
    code = "import os; print(sorted(os.environ)); print(os.environ['HOME'] == os.getcwd())"
    ran = session(spec, ("run_python_code", {"code_block": code}))
    stdout = ran[0].structured_content["stdout"]
    assert "SERVICE_TOKEN" not in stdout and "tok-do-not-leak" not in stdout
    assert "'PATH'" in stdout and stdout.strip().endswith("True")


def test_files_move_in_and_out_of_a_sandbox(state_dirs, tmp_path: Path, monkeypatch):
    spec = in_process(monkeypatch, state_dirs)
    local = tmp_path / "numbers.txt"
    local.write_text("1\n2\n3\n")
    sandbox = session(spec, ("create_sandbox", {}))[0].structured_content["sandbox_id"]
    code = "total = sum(int(x) for x in open('data/numbers.txt'))\nopen('out/total.txt', 'w').write(str(total))"
    got = session(
        spec,
        (
            "upload_file_from_local_to_sandbox",
            {"sandbox_id": sandbox, "local_file_path": str(local), "sandbox_file_path": "/home/user/data"},
        ),
        ("run_command", {"sandbox_id": sandbox, "command": "mkdir -p out"}),
        ("run_python_code", {"sandbox_id": sandbox, "code_block": code}),
        (
            "download_file_from_sandbox_to_local",
            {"sandbox_id": sandbox, "sandbox_file_path": "/home/user/out/total.txt", "local_filename": "result.txt"},
        ),
        ("download_file_from_sandbox_to_local", {"sandbox_id": sandbox, "sandbox_file_path": "../../../etc/passwd"}),
        (
            "download_file_from_sandbox_to_local",
            {"sandbox_id": sandbox, "sandbox_file_path": "out/total.txt", "local_filename": "../escape.txt"},
        ),
        ("upload_file_from_local_to_sandbox", {"sandbox_id": sandbox, "local_file_path": str(tmp_path / "none")}),
    )
    assert all(o.ok for o in got.outcomes[:4]), [o.error for o in got.outcomes[:4]]
    saved = Path(got[3].structured_content["local_path"])
    assert saved == Path(state_dirs["SANDBOX_DOWNLOAD_DIR"]) / "result.txt" and saved.read_text() == "6"
    assert "is outside the sandbox" in got[4].error
    assert "plain file name" in got[5].error
    assert "no such local file" in got[6].error


@pytest.mark.process
def test_a_run_abandoned_by_the_caller_is_killed_when_the_server_stops(state_dirs, leak_tag):
    spec = sandbox_spec(state_dirs, leak_tag)

    async def abandon() -> str | None:
        config = config_.Config(servers=(spec,), default_names=(spec.name,))
        async with Manager(config) as manager:
            created = await manager.call(CallRequest(spec.name, "create_sandbox", {}))
            arguments = {
                "sandbox_id": created.structured_content["sandbox_id"],
                "command": "sleep 300 & sleep 301",
                "timeout_seconds": 300,
            }
            return (await manager.call(CallRequest(spec.name, "run_command", arguments, timeout=1.0))).error_kind

    assert anyio.run(abandon) == "timeout"  # leak_tag then checks that no sleep survived


def test_an_e2b_key_without_the_e2b_client_is_a_clear_error(state_dirs, monkeypatch):
    monkeypatch.setitem(sys.modules, "e2b_code_interpreter", None)  # as if it were not installed
    spec = in_process(monkeypatch, state_dirs, E2B_API_KEY="e2b_test_key_not_real")
    got = session(spec, ("create_sandbox", {}), ("run_python_code", {"code_block": "print(1)"}))
    for outcome in got.outcomes:
        assert outcome.error_kind == "tool_error"
        assert "the E2B client is not installed: pip install 'miroctl[e2b]'" in outcome.error
    assert "e2b_test_key_not_real" not in got[0].error


def test_miroctl_call_python_runs_code_and_reports_the_exit_code(state_dirs, bundled_servers_in_memory):
    code, envelope = cli_call("python", "run_python_code", "code_block=print(6 * 7)", env=state_dirs)
    assert code == 0, envelope
    assert envelope["structured_content"]["stdout"].strip() == "42"
    assert envelope["structured_content"]["exit_code"] == 0


def test_a_command_in_a_made_up_sandbox_id_is_a_tool_error_that_exits_1(state_dirs, monkeypatch):
    got = session(in_process(monkeypatch, state_dirs), ("run_command", {"sandbox_id": "default", "command": "ls"}))
    assert got[0].exit_code == 1
    assert got[0].error_kind == "tool_error"
    assert "'default' is not a sandbox id" in got[0].error


def test_a_non_zero_exit_is_a_tool_error_that_starts_with_the_exit_code(state_dirs, monkeypatch):
    got = session(in_process(monkeypatch, state_dirs), ("run_python_code", {"code_block": "raise SystemExit(3)"}))
    assert got[0].exit_code == 1 and text_of(got[0]).startswith("exit code 3")


async def _kill_server_during_a_run(spec: ServerSpec, tag: str, command: str, signum: int) -> list[int]:
    """Start a long run, signal the server once the run is up, and return what of the run is still alive."""
    config = config_.Config(servers=(spec,), default_names=(spec.name,))
    async with Manager(config) as manager:
        created = await manager.call(CallRequest(spec.name, "create_sandbox", {}))
        arguments = {"sandbox_id": created.structured_content["sandbox_id"], "command": command}
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.call, CallRequest(spec.name, "run_command", arguments, timeout=60))
            server = manager.handle(spec).wire.pid
            await anyio.to_thread.run_sync(_wait_for_run, tag, server)
            os.kill(server, signum)
            survivors = await anyio.to_thread.run_sync(_wait_for_run_gone, tag, server)
        return survivors


def _wait_for_run(tag: str, server: int) -> None:
    deadline = time.monotonic() + 30
    while not [p for p in tagged_processes(tag) if p != server]:
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)


def _wait_for_run_gone(tag: str, server: int) -> list[int]:
    deadline = time.monotonic() + 10
    while (alive := [p for p in tagged_processes(tag) if p != server]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@pytest.mark.process
def test_a_run_dies_with_its_server_when_the_server_is_killed(state_dirs, leak_tag):
    spec = sandbox_spec(state_dirs, leak_tag)
    assert anyio.run(_kill_server_during_a_run, spec, leak_tag, "sleep 300", signal.SIGKILL) == []


@pytest.mark.process
def test_a_terminated_server_stops_its_runs_and_their_background_processes(state_dirs, leak_tag):
    spec = sandbox_spec(state_dirs, leak_tag)
    command = "sleep 300 & sleep 301"
    assert anyio.run(_kill_server_during_a_run, spec, leak_tag, command, signal.SIGTERM) == []


def test_background_processes_end_with_their_run(tmp_path: Path, leak_tag, monkeypatch):
    monkeypatch.setenv("MIROCTL_TEST_TAG", leak_tag)
    run = run_limited(["bash", "-c", "sleep 300 & echo started"], tmp_path, Limits(timeout=30))
    assert run.ok and run.stdout.strip() == "started"
    assert wait_for_no_tagged(leak_tag) == []


def _alive(pid: int, marker: str) -> bool:
    """Whether `pid` is still the process the run started (`marker` in its command line), not a reused pid."""
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and marker in " ".join(process.cmdline())
    except psutil.Error:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the run's keeper is a Linux child subreaper")
def test_a_background_process_in_a_new_session_with_an_empty_environment_ends_with_its_run(tmp_path: Path):
    """No process group and no marker follow it there: the run's keeper still finds it, as an orphan of its own."""
    seconds = f"{300 + os.getpid() % 1000}.5"  # a command line to tell this sleep from any other
    command = f"setsid env -i sleep {seconds} </dev/null >/dev/null 2>&1 & echo $!"
    run = run_limited(["bash", "-c", command], tmp_path, Limits(timeout=30))
    assert run.ok, run.stderr
    escaped = int(run.stdout.strip())
    try:
        assert not _alive(escaped, seconds)  # gone when the run returned: its keeper reaped it first
    finally:
        with contextlib.suppress(ProcessLookupError):
            if _alive(escaped, seconds):
                os.kill(escaped, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the run's keeper is a Linux child subreaper")
def test_a_run_stopped_at_its_time_limit_takes_its_escaped_processes_with_it(tmp_path: Path):
    seconds = f"{300 + os.getpid() % 1000}.25"
    command = f"setsid env -i sleep {seconds} </dev/null >/dev/null 2>&1 & echo $!; sleep 60"
    run = run_limited(["bash", "-c", command], tmp_path, Limits(timeout=1))
    assert run.killed == "it ran past its 1 s time limit"
    escaped = int(run.stdout.strip())
    try:
        assert not _alive(escaped, seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            if _alive(escaped, seconds):
                os.kill(escaped, signal.SIGKILL)


def test_a_run_ends_as_its_program_ended_exit_code_or_signal(tmp_path: Path):
    assert run_limited(["bash", "-c", "exit 7"], tmp_path, Limits(timeout=30)).exit_code == 7
    killed = run_limited(["bash", "-c", "kill -USR1 $$"], tmp_path, Limits(timeout=30))
    assert killed.exit_code == -signal.SIGUSR1 and killed.killed == "it was killed by SIGUSR1"
