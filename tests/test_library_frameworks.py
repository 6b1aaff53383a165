"""Agent frameworks' own MCP clients against `miroctl serve`, over stdio and streamable HTTP on 127.0.0.1.

The OpenAI Agents SDK and pydantic-ai share miroctl's environment (the `frameworks` extra, part of `test`).
LangChain's adapter needs mcp 1.x, so it runs docs/library.md's own langchain_client.py in the interpreter
named by MIROCTL_LANGCHAIN_PYTHON, and is skipped (saying how to make one) without it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests import docs_support as docs
from tests.conftest import ROOT, fixture_yaml
from tests.gateway_support import http_gateway_here, write_pool

FRAMEWORKS = "pip install 'miroctl[frameworks]'"

LANGCHAIN_PYTHON = os.environ.get("MIROCTL_LANGCHAIN_PYTHON", "")
LANGCHAIN_SETUP = (
    "set MIROCTL_LANGCHAIN_PYTHON to a python with langchain-mcp-adapters (it needs mcp 1.x, so not this venv): "
    "python3 -m venv /tmp/lc && /tmp/lc/bin/pip install langchain-mcp-adapters"
)
GUARD = 120  # seconds: a hang guard only; the servers start on a loaded machine


def pool(tmp_path: Path) -> Path:
    """alpha (echo and add) with add blacklisted for a check that the gateway's policy reaches the client."""
    files = {"alpha": fixture_yaml("alpha", "--tools", "echo,add,fail")}
    return write_pool(tmp_path, files, tool_blacklist=[["alpha", "add"]])


def serve_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "miroctl", "serve", "--config", str(config)]


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    async def guarded() -> Any:
        with anyio.fail_after(GUARD):
            return await body()

    return asyncio.run(guarded())


# ---------------------------------------------------------------------------------------- OpenAI Agents SDK


async def openai_agents_session(server: Any) -> tuple[list[str], str, bool]:
    async with server:
        names = sorted(tool.name for tool in await server.list_tools())
        echoed = await server.call_tool("alpha__echo", {"text": "hi there"})
        failed = await server.call_tool("alpha__fail", {})
        return names, echoed.content[0].text, failed.is_error


@pytest.mark.process
def test_openai_agents_sdk_lists_and_calls_tools_through_serve_over_stdio(tmp_path: Path) -> None:
    agents_mcp = pytest.importorskip("agents.mcp", reason=FRAMEWORKS)
    command, *args = serve_command(pool(tmp_path))
    server = agents_mcp.MCPServerStdio(
        params={"command": command, "args": args, "cwd": str(ROOT)}, client_session_timeout_seconds=GUARD
    )
    names, echoed, failed = run(lambda: openai_agents_session(server))
    assert names == ["alpha__echo", "alpha__fail"]  # the blacklisted add is not served
    assert echoed == "hi there"
    assert failed is True


def test_openai_agents_sdk_lists_and_calls_tools_through_serve_over_http(tmp_path: Path) -> None:
    agents_mcp = pytest.importorskip("agents.mcp", reason=FRAMEWORKS)
    config = pool(tmp_path)

    async def body() -> tuple[list[str], str, bool]:
        async with http_gateway_here(config) as base:
            params = {"url": f"{base}/mcp", "timeout": GUARD}
            server = agents_mcp.MCPServerStreamableHttp(params=params, client_session_timeout_seconds=GUARD)
            return await openai_agents_session(server)

    names, echoed, failed = run(body)
    assert names == ["alpha__echo", "alpha__fail"]
    assert echoed == "hi there"
    assert failed is True


# ---------------------------------------------------------------------------------------- pydantic-ai


async def pydantic_ai_session(toolset: Any) -> tuple[list[str], Any, str]:
    async with toolset:
        names = sorted(tool.name for tool in await toolset.list_tools())
        added = await toolset.direct_call_tool("alpha__echo", {"text": "hi there"})
        try:
            await toolset.direct_call_tool("alpha__fail", {})
        except Exception as exc:  # noqa: BLE001 - the framework's own error type is what an agent sees
            return names, added, str(exc)
        return names, added, "no error"


@pytest.mark.process
def test_pydantic_ai_lists_and_calls_tools_through_serve_over_stdio(tmp_path: Path) -> None:
    pydantic_ai_mcp = pytest.importorskip("pydantic_ai.mcp", reason=FRAMEWORKS)
    transports = pytest.importorskip("fastmcp.client.transports", reason=FRAMEWORKS)
    command, *args = serve_command(pool(tmp_path))
    transport = transports.StdioTransport(command, args, cwd=str(ROOT))
    toolset = pydantic_ai_mcp.MCPToolset(transport, init_timeout=GUARD)
    names, echoed, failure = run(lambda: pydantic_ai_session(toolset))
    assert names == ["alpha__echo", "alpha__fail"]
    assert echoed == "hi there"
    assert "it broke" in failure


def test_pydantic_ai_lists_and_calls_tools_through_serve_over_http(tmp_path: Path) -> None:
    pydantic_ai_mcp = pytest.importorskip("pydantic_ai.mcp", reason=FRAMEWORKS)
    config = pool(tmp_path)

    async def body() -> tuple[list[str], Any, str]:
        async with http_gateway_here(config) as base:
            return await pydantic_ai_session(pydantic_ai_mcp.MCPToolset(f"{base}/mcp", init_timeout=GUARD))

    names, echoed, failure = run(body)
    assert names == ["alpha__echo", "alpha__fail"]
    assert echoed == "hi there"
    assert "it broke" in failure


# ---------------------------------------------------------------------------------------- LangChain


def page_file(name: str) -> str:
    """A file= block of docs/library.md, as the page shows it."""
    for block in docs.parse((ROOT / "docs" / "library.md").read_text()):
        if block.file == name:
            return "\n".join(block.body) + "\n"
    raise AssertionError(f"docs/library.md has no file={name} block")


def langchain_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """docs/library.md's langchain_client.py in the LangChain environment, `miroctl` on its PATH being ours."""
    if not LANGCHAIN_PYTHON:
        pytest.skip(LANGCHAIN_SETUP)
    (tmp_path / "langchain_client.py").write_text(page_file("langchain_client.py"))
    (tmp_path / "greeter.py").write_text(page_file("greeter.py"))
    (tmp_path / "config" / "tool").mkdir(parents=True)
    (tmp_path / "config" / "tool" / "greeter.yaml").write_text(page_file("config/tool/greeter.yaml"))
    (tmp_path / "config" / "miroctl.yaml").write_text(page_file("config/miroctl.yaml"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "miroctl").write_text(f'#!/bin/sh\nexec {sys.executable} -m miroctl "$@"\n')
    (bin_dir / "miroctl").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    command = [LANGCHAIN_PYTHON, "langchain_client.py", *args]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=GUARD)


@pytest.mark.process
def test_langchain_adapter_lists_and_calls_a_tool_through_serve_over_stdio(tmp_path: Path) -> None:
    done = langchain_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['greeter__greet']", "Hello, Ada!"]


@pytest.mark.process
def test_langchain_adapter_lists_and_calls_a_tool_through_serve_over_http(tmp_path: Path) -> None:
    if not LANGCHAIN_PYTHON:
        pytest.skip(LANGCHAIN_SETUP)
    config = tmp_path / "served"
    config.mkdir()
    (config / "greeter.py").write_text(page_file("greeter.py"))
    greeter = {"name": "greeter", "tool_command": "python", "args": [str(config / "greeter.py")]}
    profile = write_pool(config, {"greeter": greeter})

    async def body() -> subprocess.CompletedProcess[str]:
        async with http_gateway_here(profile) as base:
            return await anyio.to_thread.run_sync(langchain_run, tmp_path / "client", f"{base}/mcp")

    (tmp_path / "client").mkdir()
    done = run(body)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['greeter__greet']", "Hello, Ada!"]
