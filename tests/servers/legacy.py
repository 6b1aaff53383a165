"""A small MCP server on the standard library alone, speaking only the initialize-era protocol.

    python tests/servers/legacy.py [--delay S] [--protocol V] [--pages N] [--die-on M] [--hang-on M]
                                   [--noise N] [--changed] [--upgradable]

It answers `server/discover` with "method not found", so clients fall back to `initialize`
(and `ping` still exists). It starts in milliseconds, which makes start-up latency something a
test or benchmark controls with --delay instead of the cost of importing an SDK.
"""

import argparse
import json
import os
import sys
import time

METHOD_NOT_FOUND = -32601
TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {"name": "fail", "description": "Always report a tool error.", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a"],
        },
    },
]

# The surface after an upgrade: `fail` removed, `echo` gained a required parameter, `add` a new description
# and a new optional parameter.
CHANGED = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
            "required": ["text", "times"],
        },
    },
    {
        "name": "add",
        "description": "Add two or three integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
            "required": ["a"],
        },
    },
]

UPGRADE = {
    "name": "upgrade",
    "description": "Switch to the changed tool surface and announce it.",
    "inputSchema": {"type": "object", "properties": {}},
}


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="legacy")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before reading stdin")
    parser.add_argument("--protocol", default="2025-06-18", help="the version to answer initialize with")
    parser.add_argument("--pages", type=int, default=1, help="split tools/list over this many pages")
    parser.add_argument("--die-on", default="", help="exit with code 5 when this method arrives")
    parser.add_argument("--hang-on", default="", help="never answer this method")
    parser.add_argument("--noise", type=int, default=0, help="print this many non-JSON lines to stdout first")
    parser.add_argument("--changed", action="store_true", help="list a changed tool surface (see CHANGED)")
    parser.add_argument(
        "--upgradable", action="store_true", help="list an `upgrade` tool that switches to CHANGED and announces it"
    )
    return parser.parse_args()


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result_for(method: str, params: dict, opts: argparse.Namespace) -> dict | None:
    if method == "initialize":
        return {
            "protocolVersion": opts.protocol,
            "capabilities": {"tools": {"listChanged": opts.upgradable}},
            "serverInfo": {"name": opts.name, "version": "1.2.3"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        tools = (CHANGED if opts.changed else TOOLS) + ([UPGRADE] if opts.upgradable else [])
        return tools_page(tools, params.get("cursor"), opts.pages)
    if method == "tools/call":
        return call(params.get("name"), params.get("arguments") or {})
    return None


def tools_page(tools: list, cursor: str | None, pages: int) -> dict:
    index = int(cursor or 0)
    size = -(-len(tools) // pages)
    page = {"tools": tools[index * size : (index + 1) * size]}
    if index + 1 < pages:
        page["nextCursor"] = str(index + 1)
    return page


def call(name: str, arguments: dict) -> dict:
    if name == "echo":
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}], "isError": False}
    if name == "add":
        return {"content": [{"type": "text", "text": str(arguments.get("a", 0) + arguments.get("b", 0))}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": "it broke"}], "isError": True}
    if name == "upgrade":
        return {"content": [{"type": "text", "text": "upgraded"}]}
    return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}


def serve(opts: argparse.Namespace) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method", ""), message.get("id")
        if method == opts.die_on:
            print(f"{opts.name}: dying on {method}", file=sys.stderr, flush=True)
            os._exit(5)
        if ident is None or method == opts.hang_on:
            continue
        if method == "tools/call" and (message.get("params") or {}).get("name") == "upgrade":
            opts.changed = True
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result = result_for(method, message.get("params") or {}, opts)
        if result is None:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": METHOD_NOT_FOUND, "message": f"no {method}"}})
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    opts = options()
    time.sleep(opts.delay)
    for i in range(opts.noise):
        print(f"{opts.name}: starting up, step {i}", flush=True)
    print(f"{opts.name}: ready", file=sys.stderr, flush=True)
    serve(opts)


if __name__ == "__main__":
    main()
