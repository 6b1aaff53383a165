"""serve keeps results valid for standard clients: the SDK's Client never rejects what the gateway answers,
and a re-routed call tells the model so in the result text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.config.sections import Sections
from miroctl.core.manager import Manager
from miroctl.gateway.server import META_KEY, Gateway, build_server
from tests.policy_support import memory_spec, web_server
from tests.servers.fixture import build

pytestmark = pytest.mark.anyio
PAGE = "<html><body><h1>Quarterly report</h1><p>Revenue grew.</p></body></html>"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def memory(name: str, tools: str) -> ServerSpec:
    return ServerSpec(name=name, transport="memory", target=build(name, set(tools.split(","))))


@asynccontextmanager
async def client_of(*specs: ServerSpec, lazy: bool = False, **sections: Any) -> AsyncIterator[Any]:
    profile = Profile(startup_timeout=30, sections=Sections.parse(sections))
    config = Config(servers=specs, profile=profile, default_names=tuple(s.name for s in specs))
    async with Manager(config) as manager:
        gateway = Gateway(manager, list(specs), lazy=lazy)
        await gateway.refresh()
        async with Client(build_server(gateway)) as client:
            yield client


async def test_a_result_cut_by_the_limit_does_not_break_a_standard_clients_output_schema_check():
    async with client_of(memory("alpha", "big,add"), max_result_chars=50) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        cut = await client.call_tool("alpha__big", {"chars": 500})
        small = await client.call_tool("alpha__add", {"a": 2, "b": 40})
    assert tools["alpha__big"].output_schema is None
    assert cut.is_error is False and "truncated by miroctl: 50 of 500 characters" in cut.content[0].text
    assert small.structured_content == {"result": 42}  # it fits: kept


async def test_a_tool_no_rule_can_rewrite_keeps_its_output_schema():
    async with client_of(memory("alpha", "add")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("alpha__add", {"a": 1})
    assert tools["alpha__add"].output_schema["properties"]["result"]["type"] == "integer"
    assert result.structured_content == {"result": 1}


async def test_a_fallback_page_reaches_a_standard_client_as_a_valid_result():
    with web_server({"/r.html": (200, "text/html", PAGE)}) as base:
        async with client_of(memory_spec("web")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            result = await client.call_tool("web__scrape", {"url": f"{base}/r.html"})
    assert tools["web__scrape"].output_schema is None
    assert result.is_error is False and "# Quarterly report" in result.content[0].text


async def test_lazy_call_tool_corrects_an_unknown_server_and_says_so_in_the_result_text():
    async with client_of(memory("alpha", "add"), memory("beta", "echo"), lazy=True) as client:
        result = await client.call_tool("call_tool", {"server": "gamma", "tool": "echo", "arguments": {"text": "hi"}})
    assert result.is_error is False
    texts = [block.text for block in result.content]
    note = (
        "[Auto-corrected: Server 'gamma' not found, but tool 'echo' was found only in server 'beta', "
        "so automatically used 'beta' instead]"
    )
    assert texts == [note, "hi"]
    assert result.meta[META_KEY]["corrected_from"] == "gamma"


async def test_lazy_call_tool_sends_a_near_miss_to_the_exact_tool_elsewhere_and_the_text_starts_with_the_note():
    async with client_of(memory("tool-alpha", "echo,sleep"), memory("tool-beta", "sleepy"), lazy=True) as client:
        result = await client.call_tool("call_tool", {"server": "tool-alpha", "tool": "sleepy", "arguments": {}})
    assert result.is_error is False
    text = "".join(block.text for block in result.content)
    assert text.startswith(
        "[Auto-corrected: Server 'tool-alpha' has no tool 'sleepy', but tool 'sleepy' was found only in server "
        "'tool-beta', so automatically used 'tool-beta' instead]"
    )
    assert text.endswith("sleepy on tool-beta") and text.count("[Auto-corrected:") == 1
    assert result.meta[META_KEY]["corrected_from"] == "tool-alpha"
