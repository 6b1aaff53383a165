"""The library's ToolManager with real server processes: task ids, per-call sessions, and no orphans."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import anyio
import pytest
from mcp import StdioServerParameters

from miroctl import ToolManager
from tests.conftest import FIXTURE, tagged_processes, wait_for_no_tagged
from tests.test_lean import PLAIN, received, until_in

pytestmark = pytest.mark.process


def seeds_configs(tag: str, **extra: str) -> list[dict[str, object]]:
    env = {"MIROCTL_TEST_TAG": tag, **extra}
    params = StdioServerParameters(command=sys.executable, args=[FIXTURE, "--name", "fx"], env=env)
    return [{"name": "fx", "params": params}]


def test_two_tasks_at_once_each_reach_a_server_started_with_their_own_task_id(leak_tag: str):
    tm = ToolManager(seeds_configs(leak_tag))

    async def work() -> list[dict[str, object]]:
        calls = [tm.execute_tool_call("fx", "env", {"name": "TASK_ID"}, task_id=t) for t in ("a", "b")]
        answers = await asyncio.gather(*calls)
        await tm.close()
        return answers

    assert [a["result"] for a in asyncio.run(work())] == ["a", "b"]


def test_a_kept_session_is_reused_and_a_per_call_server_starts_afresh(leak_tag: str, tmp_path):
    kept = ToolManager(seeds_configs(leak_tag))
    counts = asyncio.run(_counts(kept))
    assert counts == ["1", "2"]
    server = tmp_path / "fx.yaml"
    server.write_text(
        f"name: fx\ntool_command: python\nargs: [{FIXTURE}, --name, fx]\nsession: per_call\n"
        f"env: {{MIROCTL_TEST_TAG: {leak_tag}}}\n"
    )
    fresh = ToolManager.from_config(server)
    assert asyncio.run(_counts(fresh)) == ["1", "1"]


async def _counts(tm: ToolManager) -> list[str]:
    results = [(await tm.execute_tool_call("fx", "counter", {}))["result"] for _ in range(2)]
    await tm.close()
    return results


def test_a_loop_torn_down_without_close_leaves_no_server_and_the_next_loop_reopens(leak_tag: str):
    tm = ToolManager(seeds_configs(leak_tag))
    first = asyncio.run(tm.execute_tool_call("fx", "echo", {"text": "one"}))
    assert first["result"] == "one"
    assert wait_for_no_tagged(leak_tag) == []
    second = asyncio.run(tm.execute_tool_call("fx", "echo", {"text": "two"}))
    assert second["result"] == "two"


def test_an_agent_that_exits_without_closing_leaves_no_server_behind(leak_tag: str):
    agent = textwrap.dedent(f"""
        import asyncio, sys
        from mcp import StdioServerParameters
        from miroctl import connect
        params = StdioServerParameters(command=sys.executable, args=[{FIXTURE!r}, "--name", "fx"],
                                       env={{"MIROCTL_TEST_TAG": {leak_tag!r}}})
        tm = connect([{{"name": "fx", "params": params}}])
        print(tm.execute_tool_call("fx", "spawn_child", {{"detach": True}})["result"], flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", agent], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().isdigit()
    assert tagged_processes(leak_tag) == [] or wait_for_no_tagged(leak_tag) == []


def test_server_python_replaces_the_agents_own_interpreter(leak_tag: str, tmp_path):
    python = tmp_path / "python"  # another environment's interpreter: it says so in its servers' env
    python.write_text(f'#!/bin/sh\nOTHER_PYTHON=yes exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    tm = ToolManager(seeds_configs(leak_tag), server_python=str(python))
    answer = asyncio.run(tm.execute_tool_call("fx", "env", {"name": "OTHER_PYTHON"}))
    assert answer["result"] == "yes"


def test_an_agent_stopped_by_sigterm_leaves_no_server_behind(leak_tag: str):
    agent = textwrap.dedent(f"""
        import asyncio, sys
        from mcp import StdioServerParameters
        from miroctl import ToolManager
        params = StdioServerParameters(command=sys.executable, args=[{FIXTURE!r}, "--name", "fx"],
                                       env={{"MIROCTL_TEST_TAG": {leak_tag!r}}})
        tm = ToolManager([{{"name": "fx", "params": params}}])
        async def main():
            print(await tm.execute_tool_call("fx", "echo", {{"text": "up"}}), flush=True)
            await asyncio.Event().wait()
        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", agent], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and "'up'" in proc.stdout.readline()
    assert tagged_processes(leak_tag)
    proc.terminate()
    assert proc.wait(timeout=60) == -15
    assert wait_for_no_tagged(leak_tag) == []


def test_a_url_in_the_seeds_params_is_called_over_streamable_http(http_fixture):
    url = http_fixture("web")
    tm = ToolManager([{"name": "web", "params": url}])
    assert tm.config.servers[0].transport == "streamable_http"
    answer = asyncio.run(tm.execute_tool_call("web", "echo", {"text": "over http"}))
    assert answer == {"server_name": "web", "tool_name": "echo", "result": "over http"}


def test_a_server_that_dies_on_start_says_why_with_the_last_line_of_its_stderr():
    dying = (
        "import sys; print('starting', file=sys.stderr); sys.exit(\"ModuleNotFoundError: No module named 'fastmcp'\")"
    )
    params = StdioServerParameters(command=sys.executable, args=["-c", dying])
    tm = ToolManager([{"name": "dies", "params": params}])

    async def work() -> tuple[list[dict[str, object]], dict[str, object]]:
        listed = await tm.get_all_tool_definitions()
        called = await tm.execute_tool_call("dies", "anything", {})
        await tm.close()
        return listed, called

    listed, called = asyncio.run(work())
    (entry,) = listed[0]["tools"]  # type: ignore[misc]
    reason = "(its stderr ends: ModuleNotFoundError: No module named 'fastmcp')"
    for error in (str(entry["error"]), str(called["error"])):
        assert error.startswith("server exited with code 1")
        assert error.count(reason) == 1 and "MIROCTL_PYTHON" in error  # then the hint: which interpreter to set
    assert called["server_name"] == "dies" and "result" not in called


def _names(definitions: list[dict[str, object]]) -> list[object]:
    return [tool["name"] for tool in definitions[0]["tools"]]  # type: ignore[index, attr-defined]


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_second_listing_asks_the_server_again_only_after_it_announced_a_change(tmp_path, era):
    log = tmp_path / "log"
    params = StdioServerParameters(command=sys.executable, args=[PLAIN, "--log", str(log), "--era", era, "--changes"])
    tm = ToolManager([{"name": "plain", "params": params}])

    async def work() -> tuple[list[dict[str, object]], ...]:
        with anyio.fail_after(60):
            first = await tm.get_all_tool_definitions()
            again = await tm.get_all_tool_definitions()
            assert [m.get("method") for m in received(log)].count("tools/list") == 1  # the second was the cache
            if era == "modern":
                await until_in(log, "subscriptions/listen")  # its acknowledgement precedes grow's answer
            grown = await tm.execute_tool_call("plain", "grow", {"tool_name": "fresh"})
            assert grown == {"server_name": "plain", "tool_name": "grow", "result": "grown"}
            after = await tm.get_all_tool_definitions()
            await tm.close()
        return first, again, after

    first, again, after = asyncio.run(work())
    assert again == first and "fresh" not in _names(first)
    assert _names(after) == [*_names(first), "fresh"]
    assert [m.get("method") for m in received(log)].count("tools/list") == 2


def test_a_tool_manager_lists_calls_and_follows_stdio_servers_without_importing_the_mcp_sdk(tmp_path):
    log = str(tmp_path / "log")
    agent = textwrap.dedent(f"""
        import asyncio, sys, types
        from miroctl import ToolManager
        params = types.SimpleNamespace(command=sys.executable, args=[{PLAIN!r}, "--log", {log!r}, "--era", "modern",
                                       "--changes"])
        async def main():
            tm = ToolManager([{{"name": "plain", "params": params}}])
            listed = await tm.get_all_tool_definitions()
            called = await tm.execute_tool_call("plain", "echo", {{"text": "hi"}})
            await tm.close()
            sdk = sorted({{name.split(".")[0] for name in sys.modules}} & {{"mcp", "mcp_types"}})
            print(len(listed[0]["tools"]), called["result"], sdk)
        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", agent], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6", "hi", "[]"]
    assert "subscriptions/listen" in [m.get("method") for m in received(tmp_path / "log")]
