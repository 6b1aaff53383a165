"""The private attributes of the SDK and anyio that miroctl relies on are still where it reads them.

Each lives in one small module (miroctl/gateway/sdk_private.py, miroctl/sessions/anyio_private.py);
these tests fail loudly when a new release moves them, instead of the feature going quiet.
"""

import sys

import anyio
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.types import ListToolsResult

from miroctl.gateway.sdk_private import request_connection
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
