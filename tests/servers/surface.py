"""An MCP server on the standard library alone whose tools and results a test writes down exactly.

    python tests/servers/surface.py --spec FILE [--name N] [--record FILE]

FILE is JSON: {"tools": [{"name": ..., "inputSchema": ..., "outputSchema": ..., "result": {...}}],
"resources": [{"uri": ..., "name": ...}]} (resources optional).
Each tool is listed as written (without "result"), and a call answers its "result" (a CallToolResult);
a tool with "echo": "KEY" answers the call's argument KEY as text instead. With --record, each call's
tool name is appended to that file. It speaks the initialize-era protocol and starts in milliseconds
(no SDK to import).
"""

import argparse
import json
import sys

METHOD_NOT_FOUND = -32601


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(method: str, params: dict, spec: dict, name: str) -> dict | None:
    tools = spec.get("tools", [])
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}, **({"resources": {}} if "resources" in spec else {})},
            "serverInfo": {"name": name, "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [{k: v for k, v in tool.items() if k not in ("result", "echo")} for tool in tools]}
    if method == "resources/list" and "resources" in spec:
        return {"resources": spec["resources"]}
    if method == "tools/call":
        tool = next((t for t in tools if t["name"] == params.get("name")), None)
        if tool is None:
            return {"content": [{"type": "text", "text": f"Unknown tool: {params.get('name')}"}], "isError": True}
        if tool.get("echo"):
            return {"content": [{"type": "text", "text": str((params.get("arguments") or {}).get(tool["echo"]))}]}
        return tool.get("result") or {"content": []}
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--name", default="surface")
    parser.add_argument("--record", default=None)
    opts = parser.parse_args()
    with open(opts.spec, encoding="utf-8") as handle:
        spec = json.load(handle)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method", ""), message.get("id")
        if ident is None:
            continue
        if method == "tools/call" and opts.record:
            with open(opts.record, "a", encoding="utf-8") as record:
                record.write(f"call {(message.get('params') or {}).get('name')}\n")
        result = answer(method, message.get("params") or {}, spec, opts.name)
        if result is None:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": METHOD_NOT_FOUND, "message": f"no {method}"}})
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
