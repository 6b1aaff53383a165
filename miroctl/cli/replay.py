"""`miroctl replay FILE`: serve a recording (`--record`) as an MCP server, over stdio or HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from miroctl.base.errors import UsageError
from miroctl.cli import boundary
from miroctl.cli.common import run
from miroctl.cli.helptext import SERVING
from miroctl.gateway import replay as replaying
from miroctl.gateway.guard import HttpSettings, check_bind
from miroctl.gateway.http import address_of, bind


def replay(
    file: Annotated[str, typer.Argument(help="A recording written by --record.", show_default=False)],
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            metavar="NAME",
            rich_help_panel=SERVING,
            help="Which recorded server to answer as (when it records several).",
        ),
    ] = None,
    transport: Annotated[
        str, typer.Option("--transport", metavar="stdio|http", rich_help_panel=SERVING, help="stdio or http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", rich_help_panel=SERVING, help="Address to listen on (http).")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            metavar="PORT",
            rich_help_panel=SERVING,
            help="Port to listen on (http; 0: any free).",
        ),
    ] = 8766,
) -> None:
    """Answer as the recorded server: the same requests get the recorded answers, others a clear error."""
    out = boundary.output(False)
    if transport not in ("stdio", "http"):
        raise UsageError(f"unknown transport {transport!r}", hint="use stdio or http")
    recording = replaying.load(file, server)
    if transport == "stdio":
        run(lambda: replaying.serve_stdio(recording))
        return
    settings = HttpSettings(host=host, port=port)
    check_bind(settings)
    sock = bind(settings)
    try:
        out.note(
            f"replaying {recording.server} ({len(recording.exchanges)} exchanges) at {address_of(sock)}/mcp", "green"
        )
        run(lambda: replaying.serve_http(recording, settings, sock))
    finally:
        sock.close()
