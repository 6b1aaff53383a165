"""The gateway as an MCP server, in-process: the SDK's own Client talks to it, upstreams are real MCPServers."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from miroctl.gateway.server import META_KEY, Gateway, build_server
from miroctl.sessions import pool
from tests.conftest import FIXTURE
from tests.servers.fixture import build

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def memory(name: str, tools: str | None = None, **fields: Any) -> ServerSpec:
    return ServerSpec(
        name=name, transport="memory", target=build(name, set(tools.split(",")) if tools else None), **fields
    )


@asynccontextmanager
async def gateway_client(
    *specs: ServerSpec, lazy: bool = False, separator: str = "__", blacklist: frozenset[tuple[str, str]] = frozenset()
) -> AsyncIterator[tuple[Gateway, Any]]:
    config = Config(
        servers=specs,
        profile=Profile(blacklist=blacklist, startup_timeout=30),
        default_names=tuple(s.name for s in specs),
    )
    async with Manager(config) as manager:
        gateway = Gateway(manager, list(specs), lazy=lazy, separator=separator)
        await gateway.refresh()
        async with Client(build_server(gateway)) as client:
            yield gateway, client


def outcome_meta(result: Any) -> dict[str, Any]:
    return result.meta[META_KEY]


async def test_gateway_lists_every_tool_as_server__tool_with_description_schema_and_annotations():
    async with gateway_client(memory("alpha", "echo,add"), memory("tool-beta", "echo")) as (_, client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"alpha__echo", "alpha__add", "beta__echo"}
    assert tools["alpha__echo"].description.startswith("Echo the text back.")
    assert tools["alpha__add"].input_schema["required"] == ["a"]
    assert tools["alpha__echo"].annotations.read_only_hint is True


async def test_gateway_call_answers_with_the_upstream_result_and_its_structured_content():
    async with gateway_client(memory("alpha", "add")) as (_, client):
        result = await client.call_tool("alpha__add", {"a": 2, "b": 40})
    assert result.is_error is False
    assert result.content[0].text == "42"
    assert result.structured_content == {"result": 42}
    assert outcome_meta(result)["exit_code"] == 0


async def test_gateway_relays_upstream_progress_to_the_caller():
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with gateway_client(memory("alpha", "progress")) as (_, client):
        result = await client.call_tool("alpha__progress", {"steps": 3}, progress_callback=progress)
    assert result.content[0].text == "did 3 steps"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_tool_error_of_an_upstream_reaches_the_caller_as_is_error():
    async with gateway_client(memory("alpha", "fail")) as (_, client):
        result = await client.call_tool("alpha__fail", {"message": "disk on fire"})
    assert result.is_error is True
    assert "disk on fire" in result.content[0].text
    assert outcome_meta(result)["error_kind"] == "tool_error"


async def test_arguments_that_break_the_schema_fail_with_exit_2_and_reach_no_server():
    async with gateway_client(memory("alpha", "add")) as (_, client):
        result = await client.call_tool("alpha__add", {"a": "not a number"})
    assert result.is_error is True
    assert outcome_meta(result)["exit_code"] == 2


async def test_blacklisted_tool_is_not_listed_and_a_call_to_it_is_denied_with_exit_5():
    blacklist = frozenset({("alpha", "add")})
    async with gateway_client(memory("alpha", "echo,add"), lazy=False, blacklist=blacklist) as (_, client):
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == {"alpha__echo"}
    async with gateway_client(memory("alpha", "echo,add"), lazy=True, blacklist=blacklist) as (_, client):
        result = await client.call_tool("call_tool", {"server": "alpha", "tool": "add", "arguments": {"a": 1}})
    assert result.is_error is True
    assert outcome_meta(result)["exit_code"] == 5
    assert "blacklisted" in result.content[0].text


async def test_unknown_gateway_tool_is_not_found_with_exit_6():
    async with gateway_client(memory("alpha", "echo")) as (_, client):
        result = await client.call_tool("alpha__ech", {"text": "x"})
    assert result.is_error is True
    assert outcome_meta(result)["exit_code"] == 6
    assert "alpha__echo" in result.content[0].text


async def test_colliding_names_expose_neither_tool_and_are_reported():
    specs = (memory("a", "config_echo,add"), memory("a_config", "echo"))
    async with gateway_client(*specs, separator="_") as (gateway, client):
        names = {tool.name for tool in (await client.list_tools()).tools}
        health = gateway.health()
    assert names == {"a_add"}
    assert health["collisions"][0]["owners"] == ["a.config_echo", "a_config.echo"]
    assert "a_config_echo" in health["collisions"][0]["message"]


async def test_lazy_mode_exposes_only_list_tools_and_call_tool():
    async with gateway_client(memory("alpha"), memory("beta", "echo"), lazy=True) as (_, client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"list_tools", "call_tool"}
    assert "alpha, beta" in tools["list_tools"].description
    assert tools["call_tool"].input_schema["required"] == ["server", "tool"]


async def test_lazy_list_tools_gives_summaries_for_all_and_schemas_for_one_server():
    async with gateway_client(memory("alpha", "add"), memory("beta", "echo"), lazy=True) as (_, client):
        everything = json.loads((await client.call_tool("list_tools", {})).content[0].text)
        one = json.loads((await client.call_tool("list_tools", {"server": "beta"})).content[0].text)
    assert everything["servers"][0] == {
        "name": "alpha",
        "ok": True,
        "tools": [{"name": "add", "summary": "Add two integers."}],
    }
    assert one["servers"][0]["tools"][0]["input_schema"]["required"] == ["text"]


async def test_lazy_call_tool_routes_through_the_manager_and_autocorrects_the_server():
    async with gateway_client(memory("alpha", "add"), memory("beta", "echo"), lazy=True) as (_, client):
        result = await client.call_tool("call_tool", {"server": "alpha", "tool": "echo", "arguments": {"text": "hi"}})
    assert result.content[-1].text == "hi"
    assert outcome_meta(result)["server_name"] == "beta"
    assert outcome_meta(result)["corrected_from"] == "alpha"


async def test_lazy_call_tool_with_an_unknown_server_and_tool_is_not_found():
    async with gateway_client(memory("alpha", "add"), lazy=True) as (_, client):
        result = await client.call_tool("call_tool", {"server": "alpa", "tool": "nope", "arguments": {"a": 1}})
    assert result.is_error is True
    assert outcome_meta(result)["exit_code"] == 6
    assert "alpa" in result.content[0].text


async def test_lazy_call_tool_without_a_tool_name_is_an_argument_error():
    async with gateway_client(memory("alpha", "add"), lazy=True) as (_, client):
        result = await client.call_tool("call_tool", {"server": "alpha", "tool": 3})
    assert outcome_meta(result)["exit_code"] == 2


async def test_secret_values_from_the_config_are_masked_in_gateway_results(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_SECRET", "hunter2-very-secret")
    spec = memory("alpha", "env", secrets=frozenset({"hunter2-very-secret"}))
    async with gateway_client(spec) as (_, client):
        result = await client.call_tool("alpha__env", {"name": "GATEWAY_TEST_SECRET"})
    assert result.content[0].text == "****"


async def test_server_that_fails_at_start_is_left_out_then_served_once_it_can_start(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "RETRY_AFTER", 0.0)
    script = tmp_path / "late.py"
    late = ServerSpec(
        name="late", command=sys.executable, args=(str(script), "--name", "late", "--tools", "echo"), startup_timeout=30
    )
    async with gateway_client(memory("alpha", "add"), late) as (gateway, client):
        before = {tool.name for tool in (await client.list_tools()).tools}
        state = gateway.health()["servers"][1]
        script.write_text(Path(FIXTURE).read_text())
        after = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("late__echo", {"text": "finally"})
    assert before == {"alpha__add"}
    assert state["state"] == "failed" and state["failure"]["kind"] == "exited"
    assert after == {"alpha__add", "late__echo"}
    assert result.content[0].text == "finally"


async def test_gateway_reads_numeric_strings_as_integers_and_says_so_in_the_outcome_meta():
    async with gateway_client(memory("alpha", "add")) as (_, client):
        result = await client.call_tool("alpha__add", {"a": "2", "b": "40"})
    assert result.is_error is False
    assert result.content[0].text == "42"
    assert outcome_meta(result)["exit_code"] == 0
    assert outcome_meta(result)["notes"] == [
        'argument a: "2" sent as 2, as the server would read it',
        'argument b: "40" sent as 40, as the server would read it',
    ]


async def test_gateway_refuses_a_fractional_string_for_an_integer_with_exit_2_and_sends_only_an_exact_one(tmp_path):
    log = tmp_path / "calls.log"
    spec = ServerSpec(name="alpha", transport="memory", target=build("alpha", {"add"}, {"FIXTURE_CALL_LOG": str(log)}))
    async with gateway_client(spec) as (_, client):
        refused = await client.call_tool("alpha__add", {"a": "2.5"})
        read = await client.call_tool("alpha__add", {"a": "2"})
    assert refused.is_error is True
    assert outcome_meta(refused)["exit_code"] == 2
    assert "\"2.5\" is not of type 'integer'" in refused.content[0].text
    assert (read.is_error, read.content[0].text) == (False, "2")
    assert log.read_text().splitlines() == ["add"]
