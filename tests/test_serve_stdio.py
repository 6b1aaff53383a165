"""`miroctl serve` over stdio, driven by the SDK's own client as an MCP host would: as a real process where the
process is the point (the wire, stdin's end, signals, the servers it leaves behind), and what it serves in this
process, over the memory transport, for the rest."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from miroctl.gateway.server import META_KEY
from miroctl.sessions import pool
from tests.conftest import ROOT, fixture_yaml, hostile_yaml, tagged_processes
from tests.gateway_support import (
    CRASHING,
    host_of_gateway_here,
    plain_pool_files,
    pool_files,
    running,
    wait_until,
    write_pool,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def stdio_gateway(config: Path, *args: str, **client_options: Any) -> AsyncIterator[Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "miroctl", "serve", "--config", str(config), *args], cwd=str(ROOT)
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), **client_options) as client:
            yield client


@pytest.mark.process
async def test_sdk_client_lists_namespaced_tools_and_calls_them_over_stdio(tmp_path, leak_tag):
    config = write_pool(tmp_path, pool_files(leak_tag))
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async with stdio_gateway(config) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        added = await client.call_tool("alpha__add", {"a": 20, "b": 22})
        echoed = await client.call_tool("beta__echo", {"text": "from beta"})
        stepped = await client.call_tool("alpha__progress", {"steps": 4}, progress_callback=progress)
    assert {"alpha__add", "alpha__progress", "beta__echo", "beta__add"} <= names
    assert "beta__progress" not in names
    assert added.content[0].text == "42"
    assert echoed.content[0].text == "from beta"
    assert stepped.content[0].text == "did 4 steps"
    assert seen == [1, 2, 3, 4]  # progress notifications cross the wire too


async def test_progress_of_an_upstream_call_is_relayed_to_the_host(tmp_path):
    config = write_pool(tmp_path, pool_files())
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async with host_of_gateway_here(config, "alpha") as client:
        result = await client.call_tool("alpha__progress", {"steps": 4}, progress_callback=progress)
    assert result.content[0].text == "did 4 steps"
    assert seen == [1, 2, 3, 4]


@pytest.mark.process  # the crash is a server process's end
async def test_upstream_crash_fails_that_call_and_the_next_call_reconnects(tmp_path, leak_tag):
    alpha = {"name": "alpha", "tool_command": "python", "args": [CRASHING], "env": {"MIROCTL_TEST_TAG": leak_tag}}
    config = write_pool(tmp_path, {"alpha": alpha})
    async with host_of_gateway_here(config) as client:
        crashed = await client.call_tool("alpha__crash", {"code": 9})
        after = await client.call_tool("alpha__echo", {"text": "back again"})
    assert crashed.is_error is True
    assert crashed.meta[META_KEY]["exit_code"] == 3
    assert "exited with code 9" in crashed.content[0].text
    assert after.is_error is False
    assert after.content[0].text == "back again"


@pytest.mark.process  # the cancellation crosses to a server process
async def test_cancelling_a_call_at_the_gateway_cancels_it_upstream(tmp_path, leak_tag):
    config = write_pool(tmp_path, pool_files(leak_tag))
    marker = tmp_path / "marker"
    async with host_of_gateway_here(config, "alpha") as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "alpha__wait_cancel", {"seconds": 120, "marker": str(marker)})
            await _wait_for_text(marker, "started")
            tg.cancel_scope.cancel()
        await _wait_for_text(marker, "cancelled")
        still_works = await client.call_tool("alpha__echo", {"text": "ok"})
    assert still_works.content[0].text == "ok"


async def test_a_host_listening_for_changes_hears_when_a_left_out_server_comes_back(tmp_path, leak_tag, monkeypatch):
    monkeypatch.setattr(pool, "RETRY_AFTER", 0.0)  # the pool's wait before it starts a failed server again
    ready = tmp_path / "ready"
    late = fixture_yaml(
        "late",
        "--mode",
        "late",
        "--tools",
        "echo",
        env={"FIXTURE_READY_FILE": str(ready), "MIROCTL_TEST_TAG": leak_tag},
    )
    config = write_pool(tmp_path, pool_files(leak_tag, late=late))
    async with host_of_gateway_here(config, "alpha", "late", retry_every=0.05) as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as changes:
            ready.touch()
            with anyio.fail_after(30):
                event = await changes.__anext__()
        after = {tool.name for tool in (await client.list_tools()).tools}
    assert type(event).__name__ == "ToolsListChanged"
    assert "late__echo" not in before and "alpha__echo" in before
    assert after == before | {"late__echo"}


async def test_a_host_listening_for_changes_hears_when_an_upstream_announces_new_tools(tmp_path):
    config = write_pool(tmp_path, pool_files())
    async with host_of_gateway_here(config, "alpha") as client:
        async with client.listen(tools_list_changed=True) as changes:
            grown = await client.call_tool("alpha__grow", {"tool_name": "fresh"})
            with anyio.fail_after(30):
                await changes.__anext__()
        names = {tool.name for tool in (await client.list_tools()).tools}
        fresh = await client.call_tool("alpha__fresh", {"text": "new here"})
    assert grown.content[0].text == "added fresh"
    assert "alpha__fresh" in names
    assert fresh.is_error is False and fresh.content[0].text == "new here"


async def test_a_host_on_an_older_protocol_is_told_unsolicited_when_the_tools_change(tmp_path):
    config = write_pool(tmp_path, pool_files())
    told = anyio.Event()

    async def messages(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            told.set()

    async with host_of_gateway_here(config, "alpha", mode="legacy", message_handler=messages) as client:
        assert client.protocol_version < "2026-07-28"
        assert client.server_capabilities.tools.list_changed is True
        await client.list_tools()
        await client.call_tool("alpha__grow", {"tool_name": "fresh"})
        with anyio.fail_after(30):
            await told.wait()
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "alpha__fresh" in names


async def _wait_for_text(path: Path, text: str, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not (path.exists() and path.read_text() == text):
            await anyio.sleep(0.02)


@pytest.mark.process
def test_gateway_exits_0_and_stops_its_servers_when_stdin_closes_and_a_pipe_hears_nothing_of_waiting(
    tmp_path, leak_tag
):
    config = write_pool(tmp_path, plain_pool_files(tmp_path, leak_tag))
    with running("--config", str(config), stdin=subprocess.PIPE) as gateway:
        gateway.wait_for(r"miroctl serve: \d+ tools from 2 of 2 servers")
        gateway.proc.stdin.close()  # type: ignore[union-attr]
        assert gateway.proc.wait(timeout=30) == 0
        assert gateway.proc.stdout.read() == ""  # type: ignore[union-attr]
    assert "waiting for an MCP host" not in gateway.stderr  # said on a terminal only


@pytest.mark.process
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_stdio_gateway_and_leaves_no_server_behind(tmp_path, leak_tag, sig, code):
    config = write_pool(tmp_path, plain_pool_files(tmp_path, leak_tag))
    with running("--config", str(config), stdin=subprocess.PIPE) as gateway:
        gateway.wait_for("miroctl serve:")
        wait_until(lambda: len(tagged_processes(leak_tag)) == 2, message="both servers running")
        assert gateway.stop(sig) == code
        assert f"interrupted by {sig.name}" in gateway.stderr


@pytest.mark.process
def test_a_host_that_closes_stdin_and_signals_at_once_is_not_reported_as_an_interruption(tmp_path, leak_tag):
    config = write_pool(tmp_path, plain_pool_files(tmp_path, leak_tag))
    with running("--config", str(config), stdin=subprocess.PIPE) as gateway:
        gateway.wait_for(r"miroctl serve: \d+ tools from 2 of 2 servers")
        gateway.proc.stdin.close()  # type: ignore[union-attr]
        gateway.proc.send_signal(signal.SIGTERM)  # as a host that does not wait for serve to leave by itself
        assert gateway.proc.wait(timeout=30) == 0
    assert "interrupted" not in gateway.stderr
    assert wait_until(lambda: tagged_processes(leak_tag) == [], message="every server stopped")


# Runs `miroctl serve` and writes its exit status to a file: the SDK host stops its server's whole process group,
# so this sits in that group and outlives serve (the host's SIGTERM is for serve; a Python handler does not pass
# to the child, whose SIGTERM stays miroctl's own). -15 or 143: the host had to signal serve; 0: it left by itself.
EXIT_RECORDER = """
import signal, subprocess, sys
signal.signal(signal.SIGTERM, lambda *_: None)
code = subprocess.Popen(sys.argv[2:]).wait()
open(sys.argv[1], "w").write(str(code))
"""


@asynccontextmanager
async def recorded_stdio_gateway(config: Path, status: Path) -> AsyncIterator[Any]:
    """serve under an SDK host (mcp.client.stdio), its exit status in `status` once the host has left."""
    serve = [sys.executable, "-m", "miroctl", "serve", "--config", str(config)]
    params = StdioServerParameters(
        command=sys.executable, args=["-c", EXIT_RECORDER, str(status), *serve], cwd=str(ROOT)
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            yield client
        errlog.seek(0)
        assert "interrupted" not in errlog.read()


@pytest.mark.process
async def test_an_sdk_host_that_leaves_never_has_to_signal_serve_and_no_server_outlives_it(tmp_path, leak_tag):
    config = write_pool(tmp_path, plain_pool_files(tmp_path, leak_tag))
    status = tmp_path / "status"
    async with recorded_stdio_gateway(config, status) as client:
        assert len((await client.list_tools()).tools) > 2
        assert len(tagged_processes(leak_tag)) == 2
    assert status.read_text() == "0"
    assert tagged_processes(leak_tag) == []


@pytest.mark.process
async def test_a_server_that_ignores_the_end_of_its_input_is_stopped_before_the_host_would_signal_serve(
    tmp_path, leak_tag
):
    stubborn = hostile_yaml("stubborn", "--stubborn", env={"MIROCTL_TEST_TAG": leak_tag})
    config = write_pool(tmp_path, {"stubborn": stubborn})
    status = tmp_path / "status"
    async with recorded_stdio_gateway(config, status) as client:
        assert "stubborn__echo" in {tool.name for tool in (await client.list_tools()).tools}
        assert len(tagged_processes(leak_tag)) == 2  # the server and the grandchild it detached
    assert status.read_text() == "0"
    assert tagged_processes(leak_tag) == []


@pytest.mark.process
def test_stdio_serve_on_a_terminal_says_it_waits_for_a_host(tmp_path, leak_tag):
    config = write_pool(tmp_path, plain_pool_files(tmp_path, leak_tag))
    master, terminal = pty.openpty()
    try:
        with running("--config", str(config), stdin=terminal) as gateway:
            gateway.wait_for("waiting for an MCP host on stdin: a host's config starts this")
    finally:
        os.close(master)
        os.close(terminal)
