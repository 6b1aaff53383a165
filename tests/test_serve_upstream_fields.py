"""What serve passes on from its servers untouched: each server's instructions, every field of its tools."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from miroctl.gateway.server import Gateway, build_server
from miroctl.sessions import connectors
from tests.conftest import HEALTHY_STARTUP, HOSTILE, ROOT, fixture_spec, fixture_yaml, hostile_yaml
from tests.gateway_support import write_pool
from tests.servers.fixture import build
from tests.servers.hostile import FULL_TOOL

pytestmark = pytest.mark.anyio

ALPHA_RULES = "Always call echo before add.\nNever pass negative numbers."
HOSTILE_RULES = "Sheets are 1-based; ask for described first."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def alpha(instructions: str | None = ALPHA_RULES) -> ServerSpec:
    """The fixture server in this process, with instructions for its clients."""
    target = build("alpha", {"echo", "add"}, instructions=instructions)
    return ServerSpec(name="tool-alpha", transport="memory", target=target)


def hostile(*args: str, **fields: Any) -> ServerSpec:
    """tests/servers/hostile.py over stdio: the initialize handshake, its tools as JSON written by hand."""
    return ServerSpec(
        name="hostile",
        command=sys.executable,
        args=(HOSTILE, "--name", "hostile", *args),
        startup_timeout=HEALTHY_STARTUP,
        **fields,
    )


@asynccontextmanager
async def host_of(*specs: ServerSpec, mode: str = "auto", **gateway: Any) -> AsyncIterator[Client]:
    """An SDK client (protocol `mode`) of a gateway serving `specs`, after the gateway listed them."""
    config = Config(servers=specs, profile=Profile(startup_timeout=30), default_names=tuple(s.name for s in specs))
    async with Manager(config) as manager:
        served = Gateway(manager, list(specs), **gateway)
        await served.refresh()
        async with Client(build_server(served), mode=mode) as client:
            yield client


def section(instructions: str, heading: str) -> str:
    """The text under `## heading` up to the next heading."""
    after = instructions.split(f"\n## {heading}\n", 1)[1]
    return after.split("\n## ", 1)[0].rstrip("\n")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_servers_instructions_reach_the_host_under_its_name_with_how_its_tools_are_named(mode):
    async with host_of(alpha(), hostile("--instructions", HOSTILE_RULES), mode=mode) as client:
        instructions = client.instructions
    assert instructions is not None
    assert instructions.startswith("miroctl gateway for these MCP servers: tool-alpha, hostile.\n")
    alpha_part, hostile_part = section(instructions, "tool-alpha"), section(instructions, "hostile")
    assert "alpha__NAME" in alpha_part and alpha_part.endswith(f"\n\n{ALPHA_RULES}")
    assert "hostile__NAME" in hostile_part and hostile_part.endswith(f"\n\n{HOSTILE_RULES}")


async def test_with_plain_names_the_instructions_say_the_tools_keep_their_names():
    async with host_of(alpha(), hostile("--instructions", HOSTILE_RULES), plain=True) as client:
        instructions = client.instructions or ""
    assert "keep their own names" in section(instructions, "tool-alpha")
    assert section(instructions, "tool-alpha").endswith(f"\n\n{ALPHA_RULES}")
    assert section(instructions, "hostile").endswith(f"\n\n{HOSTILE_RULES}")
    assert "__NAME" not in instructions


async def test_with_lazy_the_instructions_say_which_server_to_name_in_call_tool():
    async with host_of(alpha(), lazy=True) as client:
        instructions = client.instructions or ""
    assert 'call_tool, server "tool-alpha"' in section(instructions, "tool-alpha")
    assert instructions.endswith(ALPHA_RULES)


async def test_a_server_without_instructions_gets_no_heading_and_miroctls_own_line_stays():
    async with host_of(alpha(None), hostile()) as client:
        instructions = client.instructions
    assert instructions == "miroctl gateway for these MCP servers: tool-alpha, hostile."


async def test_a_secret_in_a_servers_instructions_is_masked():
    spec = hostile("--instructions", "the key is hunter2-instructions", secrets=frozenset({"hunter2-instructions"}))
    async with host_of(spec) as client:
        instructions = client.instructions or ""
    assert "hunter2-instructions" not in instructions
    assert "the key is ****" in instructions


@pytest.mark.parametrize("connector", [connectors.LEAN, connectors.SDK], ids=["lean", "sdk"])
@pytest.mark.parametrize("era", ["initialize", "discover"])
async def test_both_clients_keep_the_instructions_a_server_gives_in_its_handshake(connector, era):
    spec = (
        hostile("--instructions", HOSTILE_RULES)
        if era == "initialize"
        else fixture_spec("hostile", "--tools", "echo", "--instructions", HOSTILE_RULES)
    )
    async with Manager(Config(servers=(spec,)), connector=connector) as manager:
        [entry] = await manager.list_tools([spec])
    assert entry.ok, entry.failure
    assert entry.protocol_version == ("2025-11-25" if era == "initialize" else "2026-07-28")
    assert entry.instructions == HOSTILE_RULES
    assert "instructions" not in entry.to_dict()  # `list --json` stays as it was


async def test_the_listed_tool_keeps_its_whole_item_but_list_json_shows_the_same_fields_as_before():
    spec = hostile("--full-tool")
    async with Manager(Config(servers=(spec,))) as manager:
        [entry] = await manager.list_tools([spec])
    described = next(tool for tool in entry.tools if tool.name == "described")
    assert described.raw == FULL_TOOL
    assert set(described.to_dict()) == {"name", "title", "description", "input_schema", "output_schema", "annotations"}


def upstream_fields(*removed: str) -> dict[str, Any]:
    """The hostile server's `described` tool as it lists it, but for the fields named."""
    return {key: value for key, value in FULL_TOOL.items() if key not in ("name", *removed)}


def listed(tool: Any) -> dict[str, Any]:
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("plain", "exposed"), [(False, "hostile__described"), (True, "described")])
async def test_every_field_of_an_upstream_tool_reaches_a_host_on_2025_11_25_unchanged_but_its_name(plain, exposed):
    async with host_of(hostile("--full-tool"), mode="legacy", plain=plain) as client:
        assert client.protocol_version == "2025-11-25"
        tools = {tool.name: listed(tool) for tool in (await client.list_tools()).tools}
    tool = tools[exposed]
    assert tool.pop("name") == exposed
    assert tool == upstream_fields()


async def test_a_host_on_2026_07_28_gets_every_field_but_execution_which_that_protocol_removed():
    async with host_of(hostile("--full-tool")) as client:
        assert client.protocol_version == "2026-07-28"
        tools = {tool.name: listed(tool) for tool in (await client.list_tools()).tools}
    tool = tools["hostile__described"]
    assert tool.pop("name") == "hostile__described"
    assert tool == upstream_fields("execution")


async def test_an_output_schema_miroctl_may_break_by_cutting_results_is_still_withheld():
    async with host_of(hostile("--full-tool", tools={"described": {"max_result_chars": 10}}), mode="legacy") as client:
        tool = listed(next(t for t in (await client.list_tools()).tools if t.name == "hostile__described"))
    assert "outputSchema" not in tool
    assert tool["_meta"] == FULL_TOOL["_meta"] and tool["execution"] == FULL_TOOL["execution"]


@pytest.mark.process
async def test_serve_over_stdio_hands_an_sdk_host_the_servers_instructions_and_whole_tools(tmp_path: Path, leak_tag):
    servers = {
        "alpha": fixture_yaml(
            "alpha", "--tools", "echo", "--instructions", ALPHA_RULES, env={"MIROCTL_TEST_TAG": leak_tag}
        ),
        "hostile": hostile_yaml("hostile", "--full-tool", env={"MIROCTL_TEST_TAG": leak_tag}),
    }
    config = write_pool(tmp_path, servers)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "miroctl", "serve", "--config", str(config)], cwd=str(ROOT)
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            instructions = client.instructions or ""
            tools = {tool.name: listed(tool) for tool in (await client.list_tools()).tools}
    assert section(instructions, "alpha").endswith(f"\n\n{ALPHA_RULES}")
    assert "alpha__NAME" in section(instructions, "alpha")
    described = tools["hostile__described"]
    assert described.pop("name") == "hostile__described"
    assert described == upstream_fields()
