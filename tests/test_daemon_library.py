"""ToolManager(daemon=...): a script's calls go through the daemon `miroctl call` uses for the same configuration,
so a script and a shell share a persistent server's state (real processes: the daemon is the point)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import psutil
import pytest
import yaml

from miroctl import ToolManager, UsageError, connect
from miroctl.config.loader import load
from miroctl.library.sync import SyncToolManager
from tests import forkserver
from tests.conftest import FIXTURE, HEALTHY_STARTUP, in_memory, parse_json
from tests.test_daemon import GUARD, Here, content, daemon_place, family, gone

LOST = "[miroctl: the daemon that kept these servers had died: their state (pages, files, lists) was lost] "


@pytest.fixture
def shell(tmp_path: Path, leak_tag: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Here]:
    """A directory with a persistent `counter` server, made this process's working directory and environment
    too, as a script run from that shell has them."""
    with daemon_place(tmp_path, leak_tag, prefix="ml-") as place:
        monkeypatch.chdir(tmp_path)
        for name, value in place.env().items():
            monkeypatch.setenv(name, value)
        for name in ("MIROCTL_DAEMON", "MIROCTL_DAEMON_IDLE", "MIROCTL_URL"):
            monkeypatch.delenv(name, raising=False)
        yield place


@pytest.fixture
def script(shell: Here) -> Iterator[SyncToolManager]:
    with connect(None, daemon="auto") as tools:
        yield tools


def count(tools: SyncToolManager) -> object:
    return tools.execute_tool_call("counter", "counter", {})


def in_this_process() -> SyncToolManager:
    """The same configuration without a daemon, its fixture servers in this process (the memory transport):
    what a script's calls through the daemon are compared with."""
    loaded = load(None)
    return connect(replace(loaded, servers=tuple(in_memory(spec) for spec in loaded.servers)))


def own_children() -> list[psutil.Process]:
    """This process's living children and theirs (a daemon of an earlier test may just have been reaped),
    without the docs test's fork server, which lives as long as this worker once a docs example has run here."""
    alive = []
    for child in psutil.Process().children():
        try:
            if forkserver.__name__ in child.cmdline():
                continue
            for proc in [child, *child.children(recursive=True)]:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


@pytest.mark.process
def test_a_script_and_miroctl_call_share_a_persistent_servers_state_through_one_daemon(
    shell: Here, script: SyncToolManager
) -> None:
    assert count(script) == {"server_name": "counter", "tool_name": "counter", "result": "1"}
    from_shell = shell.run("call", "counter", "counter", "--json")
    assert from_shell.returncode == 0, from_shell.stderr
    assert parse_json(from_shell.stdout)["structured_content"] == {"result": 2}
    assert from_shell.stderr == ""  # the script started the daemon: the shell's call reuses it
    assert count(script) == {"server_name": "counter", "tool_name": "counter", "result": "3"}
    assert len(shell.records()) == 1


@pytest.mark.process
def test_a_script_attaching_to_the_shells_running_daemon_starts_no_process_of_its_own(
    shell: Here, script: SyncToolManager
) -> None:
    first = shell.run("call", "counter", "counter")
    assert first.returncode == 0, first.stderr
    daemon = shell.daemon()
    outcome = script.call("counter", "counter")
    assert (outcome.ok, outcome.structured_content) == (True, {"result": 2})
    assert own_children() == []
    assert shell.daemon().pid == daemon.pid


@pytest.mark.process
def test_a_killed_daemon_is_replaced_and_the_scripts_next_result_says_the_state_was_lost(
    shell: Here, script: SyncToolManager
) -> None:
    assert count(script) == {"server_name": "counter", "tool_name": "counter", "result": "1"}
    daemon = shell.daemon()
    servers = family(daemon)
    daemon.kill()
    assert gone(servers)
    assert count(script) == {"server_name": "counter", "tool_name": "counter", "result": LOST + "1"}
    outcome = script.call("counter", "counter")
    assert (outcome.structured_content, outcome.notes) == ({"result": 2}, [])  # said once
    assert shell.daemon().pid != daemon.pid


@pytest.mark.process
def test_a_script_listing_through_the_daemon_gets_what_an_in_process_listing_gets(
    shell: Here, script: SyncToolManager
) -> None:
    with in_this_process() as here:
        assert script.get_all_tool_definitions() == here.get_all_tool_definitions()
    assert len(shell.records()) == 1


@pytest.mark.process
def test_results_errors_and_corrections_through_the_daemon_are_those_of_an_in_process_call(shell: Here) -> None:
    (shell.root / "tool" / "echo.yaml").write_text(
        yaml.safe_dump({"name": "echoes", "tool_command": "python", "args": [FIXTURE, "--name", "echoes"]})
    )
    profile = {"startup_timeout": HEALTHY_STARTUP, "tool_blacklist": [["counter", "escape"]]}
    (shell.root / "miroctl.yaml").write_text(yaml.safe_dump(profile))
    calls = [
        ("echoes", "echo", {"text": "hi"}),
        ("echo-server", "escape", {}),  # corrected to the one server with that tool
        ("echoes", "fail", {"message": "[bold]no[/bold]"}),
        ("echoes", "nosuch", {}),
        ("echoes", "add", {"a": "x"}),
    ]
    with connect(None, daemon=True) as kept, in_this_process() as here:
        for server, tool, arguments in calls:
            assert kept.execute_tool_call(server, tool, arguments) == here.execute_tool_call(server, tool, arguments)
    assert len(shell.records()) == 1


@pytest.mark.process
def test_miroctl_daemon_never_keeps_a_scripts_calls_in_process(shell: Here, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIROCTL_DAEMON", "never")
    with connect(None, daemon=True) as tools:
        assert count(tools)["result"] == "1"  # type: ignore[index]
        assert len(own_children()) == 1  # the server itself, no daemon
    assert shell.records() == []


@pytest.mark.process
def test_miroctl_daemon_always_sends_a_scripts_calls_of_any_server_to_the_daemon(
    shell: Here, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell.write_server()
    server = yaml.safe_load((shell.root / "tool" / "counter.yaml").read_text())
    (shell.root / "tool" / "counter.yaml").write_text(yaml.safe_dump({**server, "persistent": False}))
    monkeypatch.setenv("MIROCTL_DAEMON", "always")
    with connect(None, daemon="auto") as tools:
        assert count(tools)["result"] == "1"  # type: ignore[index]
    with connect(None, daemon="auto") as tools:
        assert count(tools)["result"] == "2"  # type: ignore[index]
    assert len(shell.records()) == 1


def test_daemon_with_the_seeds_server_list_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="reads its servers from a config file"):
        ToolManager([{"name": "x", "params": "http://127.0.0.1:9/mcp"}], daemon="auto")


def test_daemon_with_a_server_python_or_extra_blacklist_is_a_usage_error_naming_them() -> None:
    with pytest.raises(UsageError, match="server_python, tool_blacklist cannot be combined with daemon="):
        ToolManager.from_config("research", daemon=True, server_python="python3", tool_blacklist=[("a", "b")])


def test_a_daemon_choice_other_than_true_false_or_auto_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="daemon must be True, False or 'auto', got 'yes'"):
        ToolManager.from_config("research", daemon="yes")  # type: ignore[arg-type]


@pytest.mark.process
def test_a_config_changed_in_the_script_is_refused_by_the_daemon_and_the_call_says_why(shell: Here) -> None:
    config = load(None)
    changed = replace(config, servers=tuple(replace(s, env={**s.env, "EXTRA": "1"}) for s in config.servers))
    with SyncToolManager(ToolManager(changed, daemon=True)) as tools:
        outcome = tools.call("counter", "counter")
    assert outcome.error_kind == "unavailable"
    assert "is not the one this daemon was started for" in (outcome.error or "")
    assert shell.records() == []


@pytest.mark.process
def test_a_scripts_cancelled_call_is_cancelled_inside_the_daemon_and_the_session_lives_on(
    shell: Here, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"

    async def main() -> object:
        tm = ToolManager.from_config(None, daemon="auto")
        with anyio.fail_after(GUARD):  # a hang guard only
            async with anyio.create_task_group() as tg:
                tg.start_soon(tm.call, "counter", "wait_cancel", {"seconds": 120, "marker": str(marker)})
                await until(lambda: content(marker) == "started")
                tg.cancel_scope.cancel()
            await until(lambda: content(marker) == "cancelled")
            return (await tm.call("counter", "counter")).structured_content

    assert anyio.run(main) == {"result": 1}


async def until(check: Callable[[], bool]) -> None:
    while not check():
        await anyio.sleep(0.05)


@pytest.mark.process
def test_daemon_auto_keeps_a_call_of_a_server_that_is_not_persistent_in_process(shell: Here) -> None:
    server = yaml.safe_load((shell.root / "tool" / "counter.yaml").read_text())
    (shell.root / "tool" / "counter.yaml").write_text(yaml.safe_dump({**server, "persistent": False}))
    with connect(None, daemon="auto") as tools:
        assert count(tools)["result"] == "1"  # type: ignore[index]
        assert [p.environ().get("MIROCTL_TEST_TAG") for p in own_children()] == [shell.tag]  # the server
    assert shell.records() == []
