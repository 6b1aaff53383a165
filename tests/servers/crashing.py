"""A stdio MCP server on the standard library alone (the initialize-era protocol), for tests of what miroctl does
with a server's process: it starts in a fraction of the SDK fixture server's time.

    python tests/servers/crashing.py

Tools: echo(text) answers the text; crash(code=7) exits the process with `code` in the middle of the call.
"""

import json
import os
import sys

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "crash",
        "description": "Exit the server process mid-call.",
        "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}}},
    },
]


def answer(message: dict) -> dict:
    """The result of one request (an error for a method it does not know)."""
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "crashing", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text"))
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "tools/call" and params.get("name") == "crash":
        print("crashing: exiting on purpose", file=sys.stderr, flush=True)
        os._exit(int((params.get("arguments") or {}).get("code", 7)))
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or an answer to a request this server never sends
        result = answer(message)
        reply = {"jsonrpc": "2.0", "id": message["id"]}
        reply.update(result if "error" in result else {"result": result})
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
