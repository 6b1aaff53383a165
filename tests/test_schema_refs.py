"""Input schemas with `$ref`: pydantic models coerced through `$defs`; cycles, dangling and remote refs never
crash a call (it goes out unchecked, with a note) and a remote schema is never fetched."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import pytest
from pydantic import BaseModel

from miroctl.base.models import CallRequest, ServerSpec, ToolInfo
from miroctl.config.loader import Config
from miroctl.core import arguments as args
from miroctl.core import schemas
from miroctl.core.manager import Manager
from tests.fakes.base import POLL


class Point(BaseModel):
    x: int
    y: int = 0


def run(spec: ServerSpec, request: CallRequest):
    config = Config(servers=(spec,), default_names=(spec.name,))

    async def main():
        async with Manager(config) as manager:
            return await manager.call(request)

    return anyio.run(main)


def test_a_pydantic_model_parameter_given_as_key_equals_json_works_as_with_raw_json():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("shapes", log_level="WARNING")

    @server.tool()
    def place(p: Point, label: str = "") -> str:
        """Place a point."""
        return f"{label}({p.x}, {p.y})"

    spec = ServerSpec(name="shapes", transport="memory", target=server)
    coerced = run(spec, CallRequest("shapes", "place", pairs=['p={"x": 3, "y": 4}', "label=P"]))
    assert coerced.ok, coerced.error
    assert coerced.result == "P(3, 4)"
    raw = run(spec, CallRequest("shapes", "place", pairs=['p:={"x": 3, "y": 4}', "label=P"]))
    assert raw.result == coerced.result


class Hits(BaseHTTPRequestHandler):
    count = 0

    def do_GET(self) -> None:
        Hits.count += 1
        body = json.dumps({"type": "object", "properties": {"x": {"type": "integer"}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def schema_host():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hits)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": POLL}, daemon=True).start()
    Hits.count = 0
    yield f"http://127.0.0.1:{httpd.server_address[1]}/point.json"
    httpd.shutdown()


def odd_schemas(remote: str) -> dict[str, dict]:
    def one(prop: dict, **extra) -> dict:
        return {"type": "object", "properties": {"p": prop}, "required": ["p"], **extra}

    return {
        "cyclic": one({"$ref": "#/$defs/A"}, **{"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}),
        "dangling": one({"$ref": "#/$defs/Missing"}),
        "remote": one({"$ref": remote}),
    }


def odd_server(remote: str):
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    tools = [Tool(name=name, input_schema=schema) for name, schema in odd_schemas(remote).items()]

    async def on_list_tools(ctx, params):
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx, params):
        text = json.dumps(params.arguments, sort_keys=True)
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return Server("odd", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


@pytest.mark.parametrize("tool", ["cyclic", "dangling", "remote"])
def test_a_schema_whose_ref_cannot_be_followed_sends_the_call_unchecked_with_a_note(schema_host, tool):
    spec = ServerSpec(name="odd", transport="memory", target=odd_server(schema_host))
    outcome = run(spec, CallRequest("odd", tool, pairs=['p={"x": 1}']))
    assert outcome.ok, outcome.error
    assert json.loads(outcome.result) == {"p": '{"x": 1}'}  # a type the schema never reached: kept as text
    assert outcome.notes == [
        f"{tool}'s input schema cannot be used ({reason(tool, schema_host)}): arguments sent unchecked"
    ]
    assert Hits.count == 0, "a remote $ref was fetched"


def reason(tool: str, remote: str) -> str:
    return {
        "cyclic": "its $refs go round in a circle",
        "dangling": "$ref '/$defs/Missing' does not resolve",
        "remote": f"$ref {remote!r} does not resolve",
    }[tool]


def test_signatures_and_labels_follow_refs_and_survive_cycles():
    for name, schema in odd_schemas("https://schemas.invalid/x.json").items():
        assert args.signature(ToolInfo("s", name, input_schema=schema)) == f"{name}(p: any)"
    model = {
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "$defs": {"P": {"type": "array", "items": {"$ref": "#/$defs/Q"}}, "Q": {"type": "integer"}},
    }
    assert schemas.type_label(model["properties"]["p"], model) == "integer[]"
    assert schemas.types({"$ref": "#/$defs/P/items"}, model) == {"integer"}
