"""The private attributes of the SDK, anyio and uvicorn that miroctl relies on are still where it reads them.

Each lives in one small module (miroctl/gateway/sdk_private.py, miroctl/sessions/sdk_private.py,
miroctl/sessions/anyio_private.py, miroctl/gateway/uvicorn_private.py, miroctl/cli/typer_private.py);
these tests fail loudly when a new release moves them, instead of the feature going quiet.
"""

import sys

import anyio
import pytest
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.types import ListToolsResult

from miroctl.gateway.sdk_private import request_connection
from miroctl.sessions import sdk_private
from miroctl.sessions.anyio_private import close_transport, subprocess_transport


def test_a_request_handler_can_reach_the_connection_behind_its_session():
    seen: list[object] = []

    async def on_list_tools(ctx, params):
        seen.append(request_connection(ctx.session))
        return ListToolsResult(tools=[])

    async def main() -> None:
        server = Server("probe", on_list_tools=on_list_tools)
        async with Client(server, mode="legacy") as client:
            await client.list_tools()

    anyio.run(main)
    assert len(seen) == 1
    assert seen[0] is not None, "mcp moved ServerSession._connection: update miroctl/gateway/sdk_private.py"


def test_an_anyio_process_exposes_its_subprocess_transport_and_closing_it_is_safe():
    async def main() -> object:
        process = await anyio.open_process([sys.executable, "-c", "pass"])
        async with process:
            await process.wait()
            transport = subprocess_transport(process)
            close_transport(process)
            close_transport(process)  # twice is harmless
        return transport

    transport = anyio.run(main)
    assert transport is not None, "anyio moved Process._process._transport: update miroctl/sessions/anyio_private.py"
    assert transport.is_closing()


@pytest.mark.parametrize(
    ("parser", "attributes", "methods"),
    [
        ("h11", ("conn", "loop", "transport", "scope"), ("handle_events", "on_response_complete")),
        ("httptools", ("loop", "transport", "scope", "cycle"), ("on_message_begin", "on_headers_complete")),
    ],
)
def test_uvicorns_protocols_still_have_what_the_header_deadline_extends(parser, attributes, methods):
    import asyncio

    from uvicorn.config import Config
    from uvicorn.server import ServerState

    from miroctl.gateway.uvicorn_private import header_timed_protocol

    async def make() -> object:
        config = Config(app=lambda scope, receive, send: None, log_config=None)
        config.load()
        return header_timed_protocol(1.0, parser)(config=config, server_state=ServerState(), app_state={})

    protocol = asyncio.run(make())
    for name in attributes:
        assert hasattr(protocol, name), f"uvicorn moved its {parser} protocol's {name}: update uvicorn_private.py"
    for method in ("connection_made", "data_received", "connection_lost", *methods):
        assert callable(getattr(protocol, method))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_session_can_send_a_raw_request_and_absorb_a_listing_it_did_not_make(mode):
    from mcp.types import CallToolResult, TextContent, Tool

    tool = Tool(name="t", input_schema={"type": "object"}, output_schema={"type": "object"})

    async def on_list_tools(ctx, params):
        return ListToolsResult(tools=[tool])

    async def on_call_tool(ctx, params):
        return CallToolResult(content=[TextContent(type="text", text="{}")], structured_content={})

    async def main() -> None:
        server = Server("probe", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        async with Client(server, mode=mode) as client:
            assert sdk_private.can_send_raw(client), "mcp moved ClientSession._stamp/_dispatcher"
            raw = await sdk_private.raw_request(client, "tools/list", None)
            assert raw["tools"][0]["name"] == "t"
            sdk_private.absorb_tools(client, ListToolsResult(tools=[tool]), complete=True)
            assert "t" in client.session._tool_output_schemas, "mcp moved ClientSession._absorb_tool_listing"
            assert (await client.call_tool("t", {})).structured_content == {}

    anyio.run(main)


def test_the_sdks_oauth_provider_still_loads_its_storage_in_the_method_miroctl_extends():
    """miroctl/sessions/oauth.py extends OAuthClientProvider._initialize to restore a stored login's expiry
    and metadata; if the SDK renames it, a new process would stop refreshing and ask for a login instead."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthToken

    from miroctl.sessions.oauth import client_metadata, stored_provider_class
    from miroctl.sessions.tokens import Record, ServerTokens, TokenStore

    assert callable(getattr(OAuthClientProvider, "_initialize", None)), "mcp moved OAuthClientProvider._initialize"
    assert OAuthClientProvider._initialize is not stored_provider_class()._initialize

    class Memory(TokenStore):
        def __init__(self) -> None:
            super().__init__(kind="file")

        def load(self, url: str) -> Record | None:
            return Record(
                url=url,
                tokens={"access_token": "a", "token_type": "Bearer", "refresh_token": "r"},
                expires_at=1000.0,
                oauth_metadata={
                    "issuer": "http://127.0.0.1:9",
                    "authorization_endpoint": "http://127.0.0.1:9/authorize",
                    "token_endpoint": "http://127.0.0.1:9/elsewhere/token",
                },
            )

    from miroctl.base.models import ServerSpec

    spec = ServerSpec(name="s", transport="streamable_http", url="http://127.0.0.1:9/mcp")
    storage = ServerTokens(Memory(), spec.url or "")
    provider = stored_provider_class()(spec.url or "", client_metadata(spec, "http://127.0.0.1/callback"), storage)

    anyio.run(provider._initialize)
    context = provider.context
    assert isinstance(context.current_tokens, OAuthToken) and context.current_tokens.access_token == "a"
    assert context.token_expiry_time is not None and context.token_expiry_time < 1000.0
    assert str(context.oauth_metadata.token_endpoint) == "http://127.0.0.1:9/elsewhere/token"
    assert not context.is_token_valid() and not context.can_refresh_token()  # expired; no client: no refresh


def test_the_streamable_http_session_manager_still_counts_its_sessions_where_metrics_read_them():
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from miroctl.gateway.sdk_private import open_sessions

    manager = StreamableHTTPSessionManager(app=Server("probe"))
    assert isinstance(getattr(manager, "_server_instances", None), dict), (
        "mcp moved StreamableHTTPSessionManager._server_instances: update miroctl/gateway/sdk_private.py"
    )
    assert open_sessions(manager) == 0


def test_typer_still_keeps_its_bash_completion_script_where_miroctl_replaces_it():
    from typer import _completion_classes, _completion_shared

    import miroctl.cli.completion  # noqa: F401 - replaces the script on import
    from miroctl.cli.typer_private import BASH_SCRIPT

    assert _completion_shared._completion_scripts["bash"] is BASH_SCRIPT
    assert _completion_classes.BashComplete.source_template is BASH_SCRIPT
