"""What the MCP conformance suite's server scenarios need of serve (bench/conformance_serve.py measures them all):
servers that ask their client with requests of their own, reached on the handshake protocol; resource
subscriptions passed on and their updates relayed back. The conformance server is a real stdio server; the
others run in this process."""

from __future__ import annotations

import subprocess
import sys
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from miroctl.base.errors import ConfigError
from miroctl.base.masking import Masker
from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.config.servers import server_from_mapping
from miroctl.core.manager import Manager
from miroctl.gateway.passthrough import Catalog
from miroctl.gateway.server import Gateway, build_server
from miroctl.gateway.subscriptions import Subscriptions
from tests.conftest import ROOT
from tests.gateway_support import plain_pool_files, running, write_pool
from tests.servers.fixture import build

pytestmark = [
    pytest.mark.anyio,
    # resources/subscribe is deprecated as of 2026-07-28; hosts on 2025-11-25 (the suite's) still send it
    pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed"),
]
CONFORMANCE = str(ROOT / "bench" / "conformance_server.py")


def watched_server(modern: bool) -> MCPServer:
    """A server whose resource test://watched takes subscriptions; its tool `touch` announces that a resource
    changed: on a listen stream when `modern` (2026-07-28), or as a notification before."""
    server = MCPServer("watched", log_level="WARNING")
    subscribed: set[str] = set()

    @server.resource("test://watched")
    def watched() -> str:
        return "watched"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Announce that a resource changed."""
        if modern:
            await ctx.notify_resource_updated(uri)
        else:
            await ctx.session.send_resource_updated(uri)
        return "touched"

    @server.tool()
    def subscriptions() -> str:
        """The URIs subscribed to, comma-separated."""
        return ",".join(sorted(subscribed)) or "-"

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        subscribed.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    server._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    server._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    return server


def memory(name: str, target: Any, protocol: str = "legacy") -> ServerSpec:
    """A server in this process (the memory transport), reached on `protocol`."""
    return ServerSpec(name=name, transport="memory", target=target, protocol=protocol)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def served(spec: ServerSpec, plain: bool = False, **host: Any) -> AsyncIterator[Client]:
    """A gateway over `spec`, and a host on protocol 2025-11-25 (with `host`'s callbacks) connected to it."""
    async with gateway_and_host(spec, plain, **host) as (_, client):
        yield client


@asynccontextmanager
async def gateway_and_host(spec: ServerSpec, plain: bool = False, **host: Any) -> AsyncIterator[tuple[Gateway, Client]]:
    config = Config(servers=(spec,), profile=Profile(startup_timeout=60), default_names=(spec.name,))
    async with Manager(config) as manager:
        gateway = Gateway(manager, [spec], plain=plain)
        await gateway.refresh()
        async with Client(build_server(gateway), mode="legacy", **host) as client:
            yield gateway, client


def stdio(name: str, script: str, leak_tag: str, protocol: str = "legacy", *args: str) -> ServerSpec:
    env = {"MIROCTL_TEST_TAG": leak_tag}
    return ServerSpec(
        name=name, command=sys.executable, args=(script, *args), env=env, startup_timeout=60, protocol=protocol
    )


async def sampled(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="42"), model="m")


async def accepted(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"response": "yes"})


@pytest.mark.process
async def test_a_server_asking_its_client_with_requests_of_its_own_reaches_the_host_on_the_handshake_protocol(
    leak_tag,
):
    spec = stdio("conformance", CONFORMANCE, leak_tag, "legacy", "--transport", "stdio")
    async with served(spec, plain=True, sampling_callback=sampled, elicitation_callback=accepted) as host:
        sampling = await host.call_tool("test_sampling", {"prompt": "six times seven?"})
        elicited = await host.call_tool("test_elicitation", {"message": "Proceed?"})
    assert sampling.is_error is False
    assert sampling.content[0].text == "LLM response: 42"
    assert elicited.content[0].text == 'User response: action=accept, content={"response":"yes"}'


@pytest.mark.process
async def test_on_protocol_2026_07_28_such_a_server_cannot_ask_which_is_why_protocol_legacy_exists(leak_tag):
    spec = stdio("conformance", CONFORMANCE, leak_tag, "auto", "--transport", "stdio")
    async with served(spec, plain=True, sampling_callback=sampled) as host:
        sampling = await host.call_tool("test_sampling", {"prompt": "six times seven?"})
    assert "no back-channel for server-initiated requests" in sampling.content[0].text


def test_protocol_in_a_server_file_is_auto_or_legacy_and_anything_else_is_a_config_error():
    base = {"name": "s", "tool_command": "python"}
    assert server_from_mapping(base, where="s.yaml").protocol == "auto"
    assert server_from_mapping({**base, "protocol": "legacy"}, where="s.yaml").protocol == "legacy"
    with pytest.raises(ConfigError) as raised:
        server_from_mapping({**base, "protocol": "2025"}, where="s.yaml")
    assert raised.value.message == "s.yaml: protocol must be auto or legacy, got '2025'"


def updates_heard() -> tuple[list[str], anyio.Event, Any]:
    """The URIs of the resource updates a host hears, an event set at the first, and the host's handler."""
    updates: list[str] = []
    heard = anyio.Event()

    async def hear(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            updates.append(str(message.params.uri))
            heard.set()

    return updates, heard, hear


async def test_a_subscription_is_passed_on_once_and_the_servers_updates_reach_the_host_under_its_uri():
    updates, heard, hear = updates_heard()
    async with served(memory("watch", watched_server(modern=False)), message_handler=hear) as host:
        await host.subscribe_resource("miroctl://watch/test://watched")
        upstream = await host.call_tool("watch__subscriptions", {})
        await host.call_tool("watch__touch", {"uri": "test://watched"})
        with anyio.fail_after(30):
            await heard.wait()
        await host.unsubscribe_resource("miroctl://watch/test://watched")
        after = await host.call_tool("watch__subscriptions", {})
    assert upstream.content[0].text == "test://watched"
    assert updates == ["miroctl://watch/test://watched"]
    assert after.content[0].text == "-"


async def test_a_resource_of_a_2026_07_28_server_is_followed_on_a_listen_stream_while_a_host_is_subscribed():
    updates, heard, hear = updates_heard()
    spec = memory("watch", watched_server(modern=True), "auto")
    async with gateway_and_host(spec, plain=True, message_handler=hear) as (gateway, host):
        await host.subscribe_resource("test://watched")
        followed = set(gateway.relays.subscriptions.streams)
        await host.call_tool("touch", {"uri": "test://watched"})
        with anyio.fail_after(30):
            await heard.wait()
        await host.unsubscribe_resource("test://watched")
        after = set(gateway.relays.subscriptions.streams)
    assert followed == {("watch", "test://watched")}
    assert updates == ["test://watched"]
    assert after == set()


async def test_subscribing_to_a_resource_of_a_server_without_subscriptions_is_method_not_found():
    async with served(memory("alpha", build("alpha", None))) as host:
        with pytest.raises(MCPError) as raised:
            await host.subscribe_resource("miroctl://alpha/fixture://notes")
    assert raised.value.code == -32601
    assert raised.value.message == "alpha offers no resource subscriptions"


def test_with_plain_names_a_servers_own_uri_that_looks_like_a_gateway_uri_stays_namespaced():
    catalog = Catalog(None, [ServerSpec(name="alpha")], Masker(()), plain=True)  # type: ignore[arg-type]
    catalog.owners = {"notes://today": "alpha", "miroctl://beta/x": "alpha"}
    assert catalog.exposed("alpha", "notes://today") == "notes://today"
    assert catalog.exposed("alpha", "miroctl://beta/x") == "miroctl://alpha/miroctl://beta/x"


@pytest.mark.process  # the ready line of the command itself
def test_the_ready_line_of_serve_with_plain_names_says_tools_keep_their_names(tmp_path: Path, leak_tag):
    config = write_pool(tmp_path, {"alpha": plain_pool_files(tmp_path, leak_tag)["alpha"]})
    with running("--config", str(config), "--plain-names", stdin=subprocess.PIPE) as gateway:
        gateway.wait_for(r"miroctl serve: \d+ tools from 1 of 1 server as TOOL \(plain names\)")
        gateway.proc.stdin.close()  # type: ignore[union-attr]
        assert gateway.proc.wait(timeout=30) == 0


async def test_a_resource_whose_hosts_all_went_away_is_followed_once_and_dropped_at_its_next_update():
    subscriptions = Subscriptions()
    stream = anyio.CancelScope()
    subscriptions.streams[("watch", "test://watched")] = stream
    subscriptions.hosts[("watch", "test://watched")] = weakref.WeakKeyDictionary()  # its only host is gone
    await subscriptions.follow("watch", "test://watched", client=None)  # still followed: no second stream
    assert subscriptions.streams == {("watch", "test://watched"): stream}
    await subscriptions.updated("watch", "test://watched")
    assert stream.cancel_called
    assert subscriptions.streams == {} and subscriptions.hosts == {}
