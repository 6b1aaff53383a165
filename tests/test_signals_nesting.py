"""Stopping under pressure: a second signal while miroctl stops its servers, miroctl inside miroctl, and a
config that would start miroctl on itself forever."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from miroctl.base.errors import ConfigError
from miroctl.base.models import ServerSpec
from miroctl.cli import check, common, direct, program, root
from miroctl.cli.app import app
from miroctl.config import nesting
from miroctl.launch.handoff import Launch
from tests.conftest import HANG_GUARD, ROOT, fixture_yaml, hostile_yaml, tagged_processes, wait_for_no_tagged
from tests.entry_support import console_entry


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.mark.parametrize(("second", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")])
def test_a_second_signal_while_stopping_is_absorbed_and_every_server_still_stops(
    write_config, leak_tag, tmp_path, second, name
):
    log = tmp_path / "calls.log"
    env = {"MIROCTL_TEST_TAG": leak_tag, "HOSTILE_CALL_LOG": str(log)}
    path = write_config({"stubborn": hostile_yaml("stubborn", "--stubborn", env=env)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "miroctl", "call", "--config", str(path), "stubborn", "hang"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: log.exists() and "hang" in log.read_text())
        assert len(tagged_processes(leak_tag)) == 2  # the server and its detached grandchild
        (server,) = [pid for pid in tagged_processes(leak_tag) if psutil.Process(pid).ppid() == proc.pid]
        proc.send_signal(signal.SIGINT)
        # miroctl's stop begins by closing the server's stdin; the stubborn server then holds it for 3 s (its
        # grace after the end of input, then after SIGTERM): the second signal lands inside that stop.
        wait_for(lambda: stdin_closed(server, proc.pid))
        proc.send_signal(second)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert stderr.splitlines() == ["miroctl: interrupted: interrupted by SIGINT; every server was stopped"], name
    assert not wait_for_no_tagged(leak_tag)


def stdin_closed(server: int, writer: int) -> bool:
    """Whether process `writer` no longer holds the pipe that is process `server`'s stdin (Linux's /proc)."""
    try:
        pipe = os.readlink(f"/proc/{server}/fd/0")
        held = {os.readlink(f"/proc/{writer}/fd/{fd}") for fd in os.listdir(f"/proc/{writer}/fd")}
    except FileNotFoundError:  # a descriptor closed while it was read: look again
        return False
    return pipe not in held


def test_a_gateway_of_gateways_leaves_nothing_behind_when_the_outer_miroctl_stops(tmp_path, leak_tag):
    tag = {"MIROCTL_TEST_TAG": leak_tag}
    inner_dir, outer_dir = tmp_path / "inner", tmp_path / "outer"
    inner = write_profile(inner_dir, {"stubborn": hostile_yaml("stubborn", "--stubborn", env=tag)})
    gateway = {"name": "inner", "tool_command": "python", "args": ["-m", "miroctl", "serve", "-c", str(inner)]}
    outer = write_profile(outer_dir, {"inner": {**gateway, "env": tag}})
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(outer)])
    assert result.exit_code == 0, result.stderr
    (server,) = json.loads(result.stdout)["servers"]
    assert "stubborn__echo" in [tool["name"] for tool in server["tools"]]
    assert not wait_for_no_tagged(leak_tag)


def write_profile(directory, servers):
    import yaml

    (directory / "tool").mkdir(parents=True)
    for name, body in servers.items():
        (directory / "tool" / f"{name}.yaml").write_text(yaml.safe_dump(body))
    path = directory / "miroctl.yaml"
    path.write_text(yaml.safe_dump({"startup_timeout": 60}))
    return path


def test_a_config_whose_server_starts_miroctl_on_that_config_is_refused_one_level_down(tmp_path):
    path = tmp_path / "miroctl.yaml"
    me = {"name": "me", "tool_command": "python", "args": ["-m", "miroctl", "serve", "-c", str(path)]}
    write = write_profile(tmp_path, {"me": me})
    assert write == path
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 1
    (server,) = json.loads(result.stdout)["servers"]
    assert server["failure"]["kind"] == "exited"
    assert "exited with code 2" in server["failure"]["message"]
    assert any("starts miroctl on itself" in line for line in server["failure"]["stderr_tail"])


def test_nesting_is_refused_for_the_same_config_and_beyond_the_depth_limit(monkeypatch, tmp_path):
    config = tmp_path / "miroctl.yaml"
    config.write_text("{}")
    monkeypatch.setenv(nesting.NESTING_ENV, json.dumps(["/elsewhere.yaml", str(config)]))
    with pytest.raises(ConfigError, match="starts miroctl on itself: a miroctl 1 level"):
        nesting.check(str(config), [])
    nesting.check(str(tmp_path / "other.yaml"), [])  # a gateway of gateways on other configs is fine
    adhoc = [ServerSpec("x", command="npx", args=("server",), source="--stdio")]
    assert json.loads(nesting.for_servers(str(config), adhoc))[-1] == "ad hoc: npx server"
    monkeypatch.setenv(nesting.NESTING_ENV, json.dumps([f"/c{i}.yaml" for i in range(nesting.MAX_DEPTH)]))
    with pytest.raises(ConfigError, match="nested 5 levels deep"):
        nesting.check(str(config), [])


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_signal_right_after_the_early_start_spawned_a_server_stops_it_and_says_so_in_one_line(
    write_config, leak_tag, signum, code
):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    path = write_config({"stubborn": hostile_yaml("stubborn", "--stubborn", env=env)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "miroctl", "call", "--config", str(path), "stubborn", "hang"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: len(tagged_processes(leak_tag)) == 2)  # started early, while miroctl still loads
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, stderr
    name = signal.Signals(signum).name
    assert stderr.splitlines() == [f"miroctl: interrupted: interrupted by {name}; every server was stopped"]
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.parametrize(
    "words", [["list", "--resources", "--config", "missing.yaml"], ["check", "--config", "missing.yaml"]]
)
def test_a_ctrl_c_while_typer_reads_the_command_line_says_so_instead_of_a_silent_130(monkeypatch, capfd, words):
    # Typer turns a KeyboardInterrupt while it makes the command's context into exit 130 with nothing said.
    make_context = root._Guarded.make_context

    def interrupted_while_reading(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # handled here, at the next instruction
        return make_context(self, *args, **kwargs)

    monkeypatch.setattr(root._Guarded, "make_context", interrupted_while_reading)
    before = signal.getsignal(signal.SIGINT)
    code = program.run(Launch(words))
    assert code == 130
    assert capfd.readouterr().err.splitlines() == [
        "miroctl: interrupted: interrupted by SIGINT; every server was stopped"
    ]
    assert signal.getsignal(signal.SIGINT) is before  # Ctrl-C is the caller's again afterwards


def test_a_ctrl_c_while_the_direct_path_reads_the_command_line_says_so_in_one_line(monkeypatch, capfd):
    keywords = direct.keywords

    def interrupted_while_reading(found):
        os.kill(os.getpid(), signal.SIGINT)  # handled here, at the next instruction
        return keywords(found)

    monkeypatch.setattr(direct, "keywords", interrupted_while_reading)
    before = signal.getsignal(signal.SIGINT)
    code = program.run(Launch(["list", "--config", "missing.yaml"]))
    assert code == 130
    assert capfd.readouterr().err.splitlines() == [
        "miroctl: interrupted: interrupted by SIGINT; every server was stopped"
    ]
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_after_the_core_has_run_each_stop_signal_has_the_handler_it_had_before(ending):
    # The console entry's handler turns a SIGTERM into one line and exit 143 until miroctl exits; the core's
    # signal receiver left the default action behind, which killed miroctl without a word once its run ended.
    def handler(signum, frame):  # pragma: no cover - only compared, never called
        raise AssertionError(signum)

    async def work() -> int:
        if ending == "raises":
            raise ConfigError("broken")
        return 7

    before = {signum: signal.getsignal(signum) for signum in common.STOP_SIGNALS}
    try:
        for signum in common.STOP_SIGNALS:
            signal.signal(signum, handler)
        if ending == "raises":
            with pytest.raises(ConfigError):
                common.run(work)
        else:
            assert common.run(work) == 7
        assert {signum: signal.getsignal(signum) for signum in common.STOP_SIGNALS} == dict.fromkeys(
            common.STOP_SIGNALS, handler
        )
    finally:
        for signum, kept in before.items():
            signal.signal(signum, kept)


def test_a_sigterm_while_check_shows_its_result_ends_it_with_the_interruptions_line(write_config, monkeypatch, capfd):
    # Only a cold call or list used to catch stop signals outside the core's run: `check`, which shows its
    # table once the servers are stopped, was killed halfway through it, without a word.
    path = write_config({"alpha": fixture_yaml("alpha")})
    shown = check.check_table

    def signalled_while_showing(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # handled here, at the next instruction
        return shown(*args, **kwargs)

    monkeypatch.setattr(check, "check_table", signalled_while_showing)
    heard: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))  # never this worker's end
    try:
        done = console_entry(capfd, "check", "--config", str(path))
    finally:
        signal.signal(signal.SIGTERM, before)
    assert done.returncode == 143, done.stderr
    assert heard == []
    assert done.stderr.splitlines()[-1].startswith("miroctl: interrupted: interrupted by SIGTERM")


# miroctl with one signal ignored before it starts, as `nohup` (SIGHUP) or a script's `&` (SIGINT) leave it.
IGNORING = (
    "import os, signal, sys; signal.signal(int(sys.argv[1]), signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, '-m', 'miroctl', *sys.argv[2:]])"
)


def signal_masks(pid: int) -> dict[str, int]:
    """A process's ignored and caught signals, as the kernel keeps them (bit N-1 for signal N)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {name: int(fields[name].strip(), 16) for name in ("SigIgn", "SigCgt")}


@pytest.mark.process
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
def test_a_signal_ignored_when_miroctl_starts_stays_ignored_and_the_call_completes(
    write_config, leak_tag, tmp_path, signum
):
    log, release = tmp_path / "calls.log", tmp_path / "release"
    env = {"MIROCTL_TEST_TAG": leak_tag, "FIXTURE_CALL_LOG": str(log)}
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "hold", env=env)})
    words = ["call", "--config", str(path), "alpha", "hold", f"path={release}"]
    proc = subprocess.Popen(
        [sys.executable, "-c", IGNORING, str(int(signum)), *words],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: log.exists() and "hold" in log.read_text())  # the call is in flight: the core runs
        masks = signal_masks(proc.pid)
        proc.send_signal(signum)  # discarded by the kernel, as an ignored signal is
        release.touch()
        stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    finally:
        proc.kill()
    bit = 1 << (int(signum) - 1)
    assert (masks["SigIgn"] & bit, masks["SigCgt"] & bit) == (bit, 0)
    assert proc.returncode == 0, stderr
    assert stdout.strip() == "released"
    assert not wait_for_no_tagged(leak_tag)


def test_the_launch_leaves_an_ignored_interrupt_ignored_while_it_holds_signals_and_after():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        launch = Launch(["call", "alpha", "echo"])
        launch.catch_interrupts()
        with launch.holding_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        launch.release_interrupts()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
