"""`serve`: the ready line on stderr, each left-out server and each name collision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from miroctl.base.text import counted
from miroctl.render.output import Output


def serve_report(out: Output, health: Mapping[str, Any], where: str, separator: str) -> None:
    """What the gateway serves, on stderr: one ready line, then each left-out server and collision."""
    servers = health.get("servers", [])
    up = sum(1 for s in servers if s.get("state") == "connected")
    named = f"SERVER{separator}TOOL" if separator else "TOOL (plain names)"  # no separator: --plain-names
    shape = "two meta-tools (list_tools, call_tool)" if health.get("lazy") else named
    line = Text("miroctl serve: ", style="bold green")
    tools, total = health.get("tool_count", 0), len(servers)
    line.append(f"{counted(tools, 'tool')} from {up} of {counted(total, 'server')} as {shape}, on {where}")
    out.err.print(line, soft_wrap=True)
    for server in servers:
        if server.get("state") != "connected":
            failure = server.get("failure") or {}
            reason = f"{failure.get('kind')}: {failure.get('message')}" if failure else server.get("state")
            out.err.print(
                Text(
                    f"  left out for now (tried again later): {out.safe(server['name'])}: {out.safe(reason)}",
                    style="yellow",
                ),
                soft_wrap=True,
            )
    for collision in health.get("collisions", []):
        out.err.print(Text(f"  name collision: {out.safe(collision['message'])}", style="yellow"), soft_wrap=True)
