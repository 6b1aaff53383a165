"""An MCP server for load tests: it counts the calls it answers and the most it had in flight at once.

    python tests/servers/loadtest.py [--name N] [--http PORT]

With $LOADTEST_STATS set, every answered call rewrites that file as {"calls": n, "max_in_flight": m, "by_tool": {...}}.
Tools: `work` (sleeps `ms` milliseconds), `flaky` (fails every other call), `slow` (sleeps `seconds`).
"""

import argparse
import json
import os
import sys

STATE = {"calls": 0, "in_flight": 0, "max_in_flight": 0, "flaky": 0, "by_tool": {}}


def _enter(tool: str) -> None:
    STATE["in_flight"] += 1
    STATE["max_in_flight"] = max(STATE["max_in_flight"], STATE["in_flight"])
    STATE["by_tool"][tool] = STATE["by_tool"].get(tool, 0) + 1


def _leave() -> None:
    STATE["in_flight"] -= 1
    STATE["calls"] += 1
    path = os.environ.get("LOADTEST_STATS")
    if path:
        stats = {k: STATE[k] for k in ("calls", "max_in_flight", "by_tool")}
        with open(path + ".tmp", "w") as handle:
            json.dump(stats, handle)
        os.replace(path + ".tmp", path)


def build(name: str):
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, log_level="WARNING")

    @server.tool()
    async def work(ms: float = 20) -> str:
        """Sleep `ms` milliseconds, then answer."""
        _enter("work")
        try:
            await anyio.sleep(ms / 1000)
        finally:
            _leave()
        return "done"

    @server.tool()
    async def flaky() -> str:
        """Fail every other call (the 2nd, the 4th, ...)."""
        _enter("flaky")
        try:
            STATE["flaky"] += 1
            if STATE["flaky"] % 2 == 0:
                raise ToolError(f"call {STATE['flaky']} fails on purpose")
            return f"call {STATE['flaky']} is fine"
        finally:
            _leave()

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep `seconds`, then answer."""
        _enter("slow")
        try:
            await anyio.sleep(seconds)
        finally:
            _leave()
        return "late"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="load")
    parser.add_argument("--http", type=int, default=0)
    opts = parser.parse_args()
    server = build(opts.name)
    print(f"loadtest {opts.name}: ready", file=sys.stderr, flush=True)
    if opts.http:
        server.run("streamable-http", host="127.0.0.1", port=opts.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
