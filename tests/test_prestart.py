"""A cold call or list starts its stdio servers before miroctl has loaded, and adopts only what it would start."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import psutil
import pytest

from miroctl.base.models import ServerSpec
from miroctl.cli import prestart as cli_prestart
from miroctl.launch.handoff import Launch
from miroctl.sessions import prestart
from tests.conftest import HOSTILE, fixture_spec, tagged_processes, wait_for_no_tagged
from tests.entry_support import console_entry
from tests.test_lean import PLAIN

STARTS = """
import os, sys
with open(sys.argv[1], "a") as log:
    log.write(f"{os.getpid()}\\n")
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def counting_config(tmp_path: Path) -> tuple[Path, Path]:
    """An mcpServers file whose server writes its pid to a file each time it is started. The server is a plain
    JSON-RPC one (tests/servers/plainrpc.py, without the SDK's import): what is checked is when and how often
    it is started, and that the early process is the one that answers."""
    starts, wrapper = tmp_path / "starts", tmp_path / "counting.py"
    wrapper.write_text(STARTS)
    server = {"command": sys.executable, "args": [str(wrapper), str(starts), PLAIN, "--log", str(tmp_path / "rpc")]}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fx": server}}))
    return config, starts


def miroctl(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "miroctl", *argv], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_cold_call_starts_its_server_once_and_that_early_process_answers(tmp_path):
    config, starts = counting_config(tmp_path)
    done = miroctl("call", "--config", str(config), "fx", "echo", "text=hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n"
    (pid,) = starts.read_text().split()
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE


def test_a_cold_list_of_named_servers_starts_each_once(tmp_path):
    config, starts = counting_config(tmp_path)
    done = miroctl("list", "fx", "--config", str(config), "--json")
    assert done.returncode == 0, done.stderr
    assert "echo" in [tool["name"] for tool in json.loads(done.stdout)["servers"][0]["tools"]]
    assert len(starts.read_text().split()) == 1


@pytest.mark.process
def test_an_early_server_that_the_session_would_not_start_is_stopped_unused():
    spec = fixture_spec("early")
    servers = prestart.EarlyServers()
    assert servers.start(spec)
    assert not servers.start(spec)  # started already: one process per server
    (process,) = servers.processes()
    other = replace(spec, env=MappingProxyType({"DIFFERENT": "1"}))
    assert servers.take(other) is None  # another environment: not the same server
    servers.discard()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is not None
    assert len(servers) == 0


def test_command_lines_that_change_the_servers_start_nothing_early(tmp_path):
    config, starts = counting_config(tmp_path)
    for words in (
        ["call", "--config", str(config), "--task-id", "t1", "fx", "echo", "text=hi"],
        ["call", "--config", str(config), "--via", "http://127.0.0.1:9", "fx", "echo"],
        ["call", "--config", str(config), "echo", "text=hi"],  # a tool name alone: routed later, not guessed
        ["list", "--config", str(config), "--resources"],
        ["call", "--config", str(config), "--help"],
        ["call", "--config", str(config), "--args", "-", "fx", "echo"],  # stdin is the call's, not read early
        # refused before any server starts
        ["call", "--config", str(config), "fx", "echo", "text=https://huggingface.co/datasets/gaia-benchmark/GAIA"],
    ):
        launch = Launch(words)
        try:
            assert cli_prestart.begin(launch) == 0, words
            assert launch.early_servers is None or len(launch.early_servers) == 0
        finally:
            launch.close()
    assert not starts.exists()


@pytest.fixture
def early_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the servers the early start of a console entry run in this process starts. Run in this
    process, a refused command line ends within milliseconds: a server started by mistake could be stopped
    before its wrapper wrote to the starts file, so the start itself is what is counted too."""
    started: list[str] = []
    start = prestart.EarlyServers.start

    def counted(self: prestart.EarlyServers, spec: ServerSpec) -> bool:
        began = start(self, spec)
        if began:
            started.append(spec.name)
        return began

    monkeypatch.setattr(prestart.EarlyServers, "start", counted)
    return started


BAD_VALUES = [
    ["--timeout", "abc"],
    ["--timeout", "-5"],
    ["--timeout", "nan"],
    ["--startup-timeout", "0"],
    ["--mode", "bogus"],
    ["--output", "no/such/dir/out.txt"],
    ["--record", "no/such/dir/traffic.jsonl"],
]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda words: " ".join(words))
def test_a_call_with_a_value_the_command_refuses_starts_nothing_and_exits_2(tmp_path, capfd, early_starts, bad):
    config, starts = counting_config(tmp_path)
    done = console_entry(capfd, "call", "--config", str(config), "fx", "echo", "text=hi", *bad)
    assert done.returncode == 2, done.stderr
    assert early_starts == [] and not starts.exists()


def test_a_list_with_an_option_of_call_only_starts_nothing_and_exits_2(tmp_path, capfd, early_starts):
    config, starts = counting_config(tmp_path)
    done = console_entry(capfd, "list", "--config", str(config), "fx", "--timeout", "5")
    assert done.returncode == 2, done.stderr
    assert "--timeout" in done.stderr
    assert early_starts == [] and not starts.exists()


def test_the_configuration_read_for_the_early_start_is_taken_once_by_the_same_config_only(tmp_path):
    config, _ = counting_config(tmp_path)
    words = ["call", "--config", str(config), "fx", "echo", "text=hi"]
    first, second = Launch(words), Launch(words)
    try:
        assert cli_prestart.begin(first) == 1
        assert first.take_config("other.json") is None  # another config: read anew
        assert cli_prestart.begin(second) == 1  # each command line its own servers, handed over in its Launch
        taken = second.take_config(str(config))
        assert taken is not None and [spec.name for spec in taken.servers] == ["fx"]
        assert second.take_config(str(config)) is None
    finally:
        first.close()
        second.close()
    assert [len(launch.early_servers) for launch in (first, second)] == [0, 0]


def test_an_early_server_left_unused_is_stopped_with_the_helper_it_detached_at_start(leak_tag):
    spec = ServerSpec(
        name="stubborn",
        command=sys.executable,
        args=(HOSTILE, "--name", "stubborn", "--stubborn"),
        env=MappingProxyType({"MIROCTL_TEST_TAG": leak_tag}),
    )
    servers = prestart.EarlyServers()
    try:
        assert servers.start(spec)
        deadline = time.monotonic() + 60
        while len(tagged_processes(leak_tag)) < 2:  # the server and the helper it put in a session of its own
            assert time.monotonic() < deadline, "the server did not start its helper"
            time.sleep(0.05)
    finally:
        servers.discard()
    assert len(servers) == 0
    assert not wait_for_no_tagged(leak_tag)
