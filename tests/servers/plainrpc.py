"""A stdio MCP server in plain JSON-RPC (no SDK), whose negotiation and answers the test chooses, and which
writes every message it receives to --log: the lean client's wire behaviour is read from that log.

    python plainrpc.py --log FILE [--era legacy|modern|retry] [--bad-structured] [--changes [--honour FILTER]]

Tools: echo(text) with an output schema; slow() never answers; progress(steps) sends progress first;
asks() sends the client a ping, a sampling request and a roots request, and answers with what came back.
With --changes it declares tools.listChanged, acknowledges each subscriptions/listen with FILTER (JSON, by default
the tool changes it was asked for) and keeps the stream open, and offers grow(tool_name), which adds a tool and
announces it before answering (on every open stream at 2026-07-28, unsolicited before), and end_streams(), which
cancels the open streams' requests (a server ending its streams).
"""

from __future__ import annotations

import argparse
import json
import sys

SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"

TOOLS = [
    {
        "name": "echo",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {"name": "slow", "inputSchema": {"type": "object"}},
    {"name": "progress", "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}}}},
    {"name": "asks", "inputSchema": {"type": "object"}},
]


def done(text: str, modern: bool) -> dict[str, object]:
    """A call's plain text result (with the resultType that 2026-07-28 requires)."""
    return {"content": [{"type": "text", "text": text}], **({"resultType": "complete"} if modern else {})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--era", default="legacy")
    parser.add_argument("--bad-structured", action="store_true")
    parser.add_argument("--changes", action="store_true")
    parser.add_argument("--honour", default='{"toolsListChanged": true}')
    opts = parser.parse_args()
    tools = list(TOOLS)
    if opts.changes:
        tools += [
            {"name": "grow", "inputSchema": {"type": "object"}},
            {"name": "end_streams", "inputSchema": {"type": "object"}},
        ]
    capabilities = {"tools": {"listChanged": True}} if opts.changes else {"tools": {}}
    streams: list[object] = []  # the ids of the open subscriptions/listen requests
    log = open(opts.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process's life
    out = sys.stdout
    asked: dict[int, str] = {}
    waiting_call: list[object] = []
    answers: list[str] = []
    discovered = modern = False

    def send(message: dict[str, object]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for line in sys.stdin:
        message = json.loads(line)
        log.write(json.dumps(message) + "\n")
        log.flush()
        method, ident = message.get("method"), message.get("id")
        if method is None:  # the client's answer to one of our requests
            answers.append(f"{asked.pop(message['id'])}={json.dumps(message.get('result', message.get('error')))}")
            if not asked and waiting_call:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": waiting_call.pop(),
                        "result": {"content": [{"type": "text", "text": "; ".join(answers)}]},
                    }
                )
            continue
        if ident is None:
            if method == "notifications/cancelled" and message["params"]["requestId"] in streams:
                streams.remove(message["params"]["requestId"])
            continue  # notifications: logged
        if method == "server/discover":
            version = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
            if opts.era == "modern" or (opts.era == "retry" and discovered):
                modern = True
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": ident,
                        "result": {
                            "supportedVersions": ["2026-07-28"],
                            "capabilities": capabilities,
                            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "plain", "version": "2"}},
                        },
                    }
                )
            elif opts.era == "retry":
                discovered = True
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": ident,
                        "error": {
                            "code": -32022,
                            "message": f"unsupported {version}",
                            "data": {"supported": ["2026-07-28", "2025-11-25"]},
                        },
                    }
                )
            else:
                send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})
        elif method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": capabilities,
                        "serverInfo": {"name": "plain", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            page = {"cacheScope": "private", "resultType": "complete", "ttlMs": 0} if modern else {}
            send({"jsonrpc": "2.0", "id": ident, "result": {**page, "tools": tools}})
        elif method == "subscriptions/listen" and opts.changes:
            streams.append(ident)
            honoured = json.loads(opts.honour)
            ack = {"_meta": {SUBSCRIPTION: ident}, "notifications": honoured}
            send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})
        elif method == "tools/call":
            name, args = message["params"]["name"], message["params"].get("arguments") or {}
            if name == "echo":
                structured = {"text": 5} if opts.bad_structured else {"text": args.get("text")}
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": ident,
                        "result": {
                            "content": [{"type": "text", "text": str(args.get("text"))}],
                            "structuredContent": structured,
                            **({"resultType": "complete"} if modern else {}),  # required from 2026-07-28 on
                        },
                    }
                )
            elif name == "grow" and opts.changes:
                tools.append({"name": args["tool_name"], "inputSchema": {"type": "object"}})
                for stream in streams if modern else [None]:
                    changed: dict[str, object] = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                    if stream is not None:
                        changed["params"] = {"_meta": {SUBSCRIPTION: stream}}
                    send(changed)
                send({"jsonrpc": "2.0", "id": ident, "result": done("grown", modern)})
            elif name == "end_streams" and opts.changes:
                for stream in streams:
                    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": stream}})
                streams.clear()
                send({"jsonrpc": "2.0", "id": ident, "result": done("ended", modern)})
            elif name == "progress":
                token = message["params"]["_meta"]["progressToken"]
                for step in range(int(args.get("steps", 2))):
                    send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {
                                "progressToken": token,
                                "progress": step + 1,
                                "total": 2,
                                "message": f"step {step + 1}",
                            },
                        }
                    )
                send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "done"}]}})
            elif name == "asks":
                waiting_call.append(ident)
                for number, request in enumerate(("ping", "sampling/createMessage", "roots/list"), start=100):
                    asked[number] = request
                    send({"jsonrpc": "2.0", "id": number, "method": request, "params": {}})
            # slow: never answered
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
