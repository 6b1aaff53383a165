"""An MCP server (standard library only, initialize-era protocol) that breaks the protocol on request.

    python tests/servers/hostile.py [--name N] [--broken METHOD=MODE ...]

Every list method (tools/list, resources/list, resources/templates/list, prompts/list) answers
normally unless `--broken METHOD=MODE` says otherwise:

    error      a JSON-RPC error                missing    -32601 "method not found"
    die        the process exits (code 5)      garbage    a result that is not a list page
    endless    a new nextCursor on every page  loop       the same nextCursor again and again
    malformed  (tools/list) valid tools mixed with tools the protocol rejects
    relist     (tools/list) answers once; after the `break_listing` tool (which announces a change each
               time): malformed, error, garbage, malformed...

Some tools answer with lines a JSON parser rejects: `surrogate` (a lone UTF-16 surrogate, as
JavaScript writes a cut emoji), `deep` (arrays nested deeper than parsers allow), `truncated`
(a response cut in the middle); `hang` never answers; `flood` writes `count` ping requests before it
reads their answers (then says how many came back); `annotated` answers a text block with the annotations
it is given. With --instructions TEXT its initialize answer carries TEXT as its instructions. With --junk
TEXT the server writes TEXT to stdout (`\\n` for a newline) before it reads anything. With --stubborn the
server ignores SIGTERM and the end of its input, and leaves a detached grandchild running (in a session of
its own). With --full-tool the server also lists `described`, a tool declaring every optional field a tool
may have (title, outputSchema, annotations, icons, execution, _meta as FastMCP and MCP Apps write it). The
schema tools (`cyclic`, `dangling`, `remote`, `model`, `open`, `items`, `text`) declare the input schemas
their names say and echo their arguments. --http PORT serves streamable HTTP; --sse PORT serves the legacy
HTTP+SSE transport (GET /sse, POST /messages), each answer one `message` event.
"""

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import time

METHOD_NOT_FOUND = -32601


def schema(properties: dict, required: tuple = (), **extra) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


POINT = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
TOOLS = [
    {"name": "echo", "description": "Echo the text back.", "inputSchema": schema({"text": {"type": "string"}})},
    {"name": "break_listing", "description": "Make later tools/list requests fail.", "inputSchema": schema({})},
    {"name": "surrogate", "description": "Answer with a lone surrogate.", "inputSchema": schema({})},
    {"name": "deep", "description": "Answer with very deep nesting.", "inputSchema": schema({})},
    {"name": "truncated", "description": "Answer with a cut line.", "inputSchema": schema({})},
    {"name": "hang", "description": "Never answer.", "inputSchema": schema({})},
    {
        "name": "env",
        "description": "One variable of its environment.",
        "inputSchema": schema({"name": {"type": "string"}}),
    },
    {
        "name": "cyclic",
        "description": "A schema whose $ref points back at itself.",
        "inputSchema": schema(
            {"node": {"$ref": "#/$defs/Node"}},
            **{"$defs": {"Node": {"$ref": "#/$defs/Other"}, "Other": {"$ref": "#/$defs/Node"}}},
        ),
    },
    {
        "name": "dangling",
        "description": "A schema whose $ref points nowhere.",
        "inputSchema": schema({"p": {"$ref": "#/$defs/Missing"}}, ("p",)),
    },
    {
        "name": "remote",
        "description": "A schema whose $ref is on another host.",
        "inputSchema": schema({"p": {"$ref": "https://schemas.invalid/point.json"}}, ("p",)),
    },
    {
        "name": "model",
        "description": "A parameter that is a model, as pydantic writes it.",
        "inputSchema": schema({"p": {"$ref": "#/$defs/Point"}}, ("p",), **{"$defs": {"Point": POINT}}),
    },
    {
        "name": "open",
        "description": "Takes any extra keys.",
        "inputSchema": schema({"text": {"type": "string"}}, additionalProperties=True),
    },
    {
        "name": "items",
        "description": "A list of points.",
        "inputSchema": schema({"points": {"type": "array", "items": POINT}}, ("points",)),
    },
    {"name": "text", "description": "One string.", "inputSchema": schema({"text": {"type": "string"}}, ("text",))},
    {
        "name": "flood",
        "description": "Send `count` pings before reading any answer.",
        "inputSchema": schema({"count": {"type": "integer"}}),
    },
    {
        "name": "annotated",
        "description": "A text block with the annotations given (as JSON).",
        "inputSchema": schema({"annotations": {"type": "string"}}, ("annotations",)),
    },
]
FULL_TOOL = {
    "name": "described",
    "title": "Described tool",
    "description": "Declares every optional field a tool may have.",
    "inputSchema": schema({"text": {"type": "string"}}, ("text",)),
    "outputSchema": schema({"text": {"type": "string"}}, ("text",)),
    "annotations": {"title": "Described", "readOnlyHint": True, "openWorldHint": False},
    "icons": [{"src": "https://icons.invalid/described.png", "mimeType": "image/png", "sizes": ["48x48"]}],
    "execution": {"taskSupport": "optional"},
    "_meta": {"fastmcp": {"tags": ["demo", "hostile"]}, "ui": {"resourceUri": "ui://hostile/described.html"}},
}
MALFORMED = [
    {"description": "a tool without a name", "inputSchema": {"type": "object"}},
    {"name": "no_schema", "description": "no inputSchema"},
    {"name": "null_schema", "inputSchema": None},
    {"name": "string_schema", "inputSchema": "object"},
    {"name": "array_schema", "inputSchema": {"type": "array", "items": {"type": "string"}}},
]
RESOURCES = [{"uri": "hostile://notes", "name": "notes", "mimeType": "text/plain"}]
TEMPLATES = [{"uriTemplate": "hostile://items/{id}", "name": "item"}]
PROMPTS = [{"name": "greet", "description": "Say hello.", "arguments": [{"name": "who", "required": True}]}]
LISTS = {
    "tools/list": ("tools", TOOLS),
    "resources/list": ("resources", RESOURCES),
    "resources/templates/list": ("resourceTemplates", TEMPLATES),
    "prompts/list": ("prompts", PROMPTS),
}


def stdout_line(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Hostile:
    def __init__(self, opts: argparse.Namespace, send_line=stdout_line) -> None:
        self.name = opts.name
        self.broken = dict(item.split("=", 1) for item in opts.broken)
        self.instructions = opts.instructions
        self.listed = 0
        self.send_line = send_line

    def send(self, message: dict) -> None:
        self.send_line(json.dumps(message))

    def answer(self, ident, result=None, error=None) -> None:
        message = {"jsonrpc": "2.0", "id": ident}
        message.update({"error": error} if error is not None else {"result": result})
        self.send(message)

    def handle(self, message: dict) -> None:
        method, ident, params = message.get("method", ""), message.get("id"), message.get("params") or {}
        if ident is None:
            return
        if method == "initialize":
            capabilities = {"tools": {"listChanged": True}, "resources": {}, "prompts": {}}
            version = params.get("protocolVersion") or "2025-06-18"
            info = {"name": self.name, "version": "6.6.6"}
            result = {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info}
            if self.instructions is not None:
                result["instructions"] = self.instructions
            return self.answer(ident, result)
        if method == "ping":
            return self.answer(ident, {})
        if method in LISTS:
            return self.listing(ident, method, params.get("cursor"))
        if method == "tools/call":
            return self.call(ident, params.get("name"), params.get("arguments") or {})
        if method == "resources/read" and params.get("uri") == RESOURCES[0]["uri"]:
            return self.answer(ident, {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": "notes"}]})
        if method == "prompts/get" and params.get("name") == "greet":
            text = f"Hello, {(params.get('arguments') or {}).get('who')}!"
            return self.answer(ident, {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
        self.answer(ident, error={"code": METHOD_NOT_FOUND, "message": f"no {method}"})

    def listing(self, ident, method: str, cursor) -> None:
        key, items = LISTS[method]
        mode = self.broken.get(method, "")
        if method == "tools/list":
            self.listed += 1
            if mode == "relist" and self.listed > 1:
                mode = ("malformed", "error", "garbage")[(self.listed - 2) % 3]
            if mode == "malformed":
                items = [items[0], *MALFORMED, *items[1:]]
        if mode == "error":
            return self.answer(ident, error={"code": -32603, "message": f"{method} is broken today"})
        if mode == "missing":
            return self.answer(ident, error={"code": METHOD_NOT_FOUND, "message": f"no {method}"})
        if mode == "die":
            print(f"{self.name}: dying on {method}", file=sys.stderr, flush=True)
            os._exit(5)
        if mode == "garbage":
            return self.answer(ident, {key: "not a list", "nextCursor": 7})
        page = {key: items if cursor is None else []}
        if mode == "endless":
            page["nextCursor"] = str(int(cursor or 0) + 1)
        elif mode == "loop":
            page["nextCursor"] = "again"
        self.answer(ident, page)

    def flood(self, count: int) -> str:
        """Write every ping first, then read the answers: a client that answers inline blocks on a full pipe."""
        for index in range(count):
            self.send({"jsonrpc": "2.0", "id": f"ping-{index}", "method": "ping"})
        answered = 0
        while answered < count:
            line = sys.stdin.readline()
            if not line:
                break
            answered += json.loads(line).get("result") == {}
        return f"{answered} of {count} pings answered"

    def call(self, ident, name: str, arguments: dict) -> None:
        if os.environ.get("HOSTILE_CALL_LOG"):  # tests wait for a call to arrive
            with open(os.environ["HOSTILE_CALL_LOG"], "a") as log:
                log.write(name + "\n")
        if name == "hang":
            return None
        if name == "env":
            return self.answer(
                ident, {"content": [{"type": "text", "text": os.environ.get(arguments["name"], "<unset>")}]}
            )
        if name == "break_listing":
            self.broken["tools/list"] = "relist"
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return self.answer(ident, {"content": [{"type": "text", "text": "broken"}]})
        if name == "flood":
            return self.answer(ident, {"content": [{"type": "text", "text": self.flood(int(arguments["count"]))}]})
        if name == "annotated":
            block = {"type": "text", "text": "annotated", "annotations": json.loads(arguments["annotations"])}
            return self.answer(ident, {"content": [block]})
        if name == "described":
            text = str(arguments.get("text"))
            return self.answer(
                ident, {"content": [{"type": "text", "text": text}], "structuredContent": {"text": text}}
            )
        if name == "surrogate":  # json.dumps writes the lone surrogate as the escape \ud83d
            return self.answer(ident, {"content": [{"type": "text", "text": "cut emoji: \ud83d"}]})
        head = f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"content": ['
        if name == "deep":
            return self.send_line(head + '], "x": ' + "[" * 100_000 + "]" * 100_000 + "}}")
        if name == "truncated":
            return self.send_line(head + '{"type": "te')
        if name in {tool["name"] for tool in TOOLS}:
            text = arguments.get("text") if name == "echo" else json.dumps(arguments, sort_keys=True)
            return self.answer(ident, {"content": [{"type": "text", "text": str(text)}]})
        self.answer(ident, {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="hostile")
    parser.add_argument("--broken", action="append", default=[], help="METHOD=MODE (see the module docstring)")
    parser.add_argument("--stubborn", action="store_true", help="ignore SIGTERM and EOF; leave a grandchild")
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP (JSON answers) on this port")
    parser.add_argument("--sse", type=int, default=0, help="serve the legacy HTTP+SSE transport on this port")
    parser.add_argument("--junk", default="", help="write this to stdout first (\\n: a newline)")
    parser.add_argument("--instructions", default=None, help="what initialize tells clients about using it")
    parser.add_argument("--full-tool", action="store_true", help="also list `described`, every tool field set")
    opts = parser.parse_args()
    if opts.full_tool:
        TOOLS.append(FULL_TOOL)
    if opts.http:
        return serve_http(opts)
    if opts.sse:
        return serve_sse(opts)
    server = Hostile(opts)
    if opts.stubborn:
        stubborn()
    print(f"{server.name}: ready", file=sys.stderr, flush=True)
    if opts.junk:
        sys.stdout.write(opts.junk.replace("\\n", "\n"))
        sys.stdout.flush()
    for line in iter(sys.stdin.readline, ""):
        if line.strip():
            server.handle(json.loads(line))
    if opts.stubborn:
        time.sleep(3600)


def serve_http(opts: argparse.Namespace) -> None:
    """Streamable HTTP at /mcp, every answer a JSON body (the line the stdio server would write)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lines: list[str] = []
    server = Hostile(opts, send_line=lines.append)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            lines.clear()
            server.handle(message)
            body = lines[-1].encode() if lines and "id" in message else b""
            self.send_response(200 if body else 202)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self.send_error(405)

        do_DELETE = do_GET

        def log_message(self, *args) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", opts.http), Handler).serve_forever()


def serve_sse(opts: argparse.Namespace) -> None:
    """The legacy HTTP+SSE transport: GET /sse streams events, POST /messages?session=N delivers a request."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlparse

    sessions: dict[str, tuple[Hostile, queue.Queue]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if urlparse(self.path).path != "/sse":
                return self.send_error(404)
            session, lines = str(len(sessions) + 1), queue.Queue()
            sessions[session] = (Hostile(opts, send_line=lines.put), lines)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.event("endpoint", f"/messages?session={session}")
            try:
                while True:
                    try:
                        self.event("message", lines.get(timeout=1.0))
                    except queue.Empty:
                        self.wfile.write(b": keep-alive\n\n")
            except OSError:  # the client went away
                return

        def event(self, kind: str, data: str) -> None:
            self.wfile.write(f"event: {kind}\ndata: {data}\n\n".encode())
            self.wfile.flush()

        def do_POST(self) -> None:
            session = parse_qs(urlparse(self.path).query).get("session", [""])[0]
            if session not in sessions:
                return self.send_error(404)
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            sessions[session][0].handle(message)

        def log_message(self, *args) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", opts.sse), Handler).serve_forever()


def stubborn() -> None:
    """Ignore SIGTERM, and start a grandchild that left this process group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleeper = [sys.executable, "-c", "import time; time.sleep(3600)"]
    subprocess.Popen(sleeper, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
