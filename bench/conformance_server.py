"""An MCP server offering what the official conformance suite's server scenarios ask for
(`@modelcontextprotocol/conformance`), on the mcp SDK this project runs on.

The scenarios call tools, read resources and get prompts by fixed names (test_simple_text,
test://static-text, test_prompt_with_arguments, ...); this server answers each the way the suite checks,
after the "everything server" the SDKs keep for the suite. It runs over streamable HTTP (to be measured
directly) or over stdio (as an upstream of `miroctl serve`, which is then measured):

    python bench/conformance_server.py --transport http --port 3001     # http://127.0.0.1:3001/mcp
    python bench/conformance_server.py --transport stdio
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import warnings
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    JSONRPCMessage,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
SILENT_WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
STEP = 0.05  # seconds between a tool's log messages or progress steps

server = MCPServer(name="conformance-server", version="1.0.0")
subscribed: set[str] = set()


class Events(EventStore):
    """Every SSE event kept in memory, so a client that reconnects with Last-Event-ID gets the rest."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        self.events.append((stream_id, str(len(self.events) + 1), message))
        return self.events[-1][1]

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = next((stream for stream, event, _ in self.events if event == last_event_id), None)
        if stream is None:
            return None
        for other, event, message in self.events:
            if other == stream and int(event) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event))
        return stream


# ---------------------------------------------------------------------------------------------- tools


@server.tool()
def test_simple_text() -> str:
    """Answers with one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[ImageContent]:
    """Answers with a PNG image."""
    return [ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list[AudioContent]:
    """Answers with a WAV sound."""
    return [AudioContent(type="audio", data=SILENT_WAV, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list[EmbeddedResource]:
    """Answers with an embedded text resource."""
    text = TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return [EmbeddedResource(type="resource", resource=text)]


@server.tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Answers with text, an image and an embedded resource."""
    document = TextResourceContents(
        uri="test://mixed-content-resource", mime_type="application/json", text='{"test": "data", "value": 123}'
    )
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png"),
        EmbeddedResource(type="resource", resource=document),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(message)
        await asyncio.sleep(STEP)
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100; answers with the caller's progress token."""
    for done in (0, 50, 100):
        await ctx.report_progress(progress=done, total=100, message=f"Completed step {done} of 100")
        await asyncio.sleep(STEP)
    meta = ctx.request_context.meta if ctx.request_context else None
    return str(meta.get("progress_token") if meta else 0)


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model to complete `prompt`."""
    try:
        with warnings.catch_warnings():  # sampling is deprecated as of 2026-07-28; the scenario uses it
            warnings.simplefilter("ignore")
            result = await ctx.session.create_message(
                messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
    except Exception as exc:  # noqa: BLE001 - the answer says why sampling failed
        return f"Sampling not supported or error: {exc}"
    text = result.content.text if result.content.type == "text" else "No response"
    return f"LLM response: {text}"


class Answer(BaseModel):
    response: str = Field(description="User's response")


class Defaults(BaseModel):
    """A form with a default for every primitive type (SEP-1034)."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


def _titled(*options: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in options]


class Enums(BaseModel):
    """A form with each way of writing an enum (SEP-1330)."""

    untitledSingle: str = Field(
        description="Simple enum without titles", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": _titled(("low", "Low Priority"), ("medium", "Medium Priority"), ("high", "High Priority"))
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {"anyOf": _titled(("feature", "New Feature"), ("bug", "Bug Fix"), ("docs", "Documentation"))}
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


async def _elicit(ctx: Context, message: str, schema: type[BaseModel], said: str) -> str:
    try:
        result = await ctx.elicit(message=message, schema=schema)
    except Exception as exc:  # noqa: BLE001 - the answer says why elicitation failed
        return f"Elicitation not supported or error: {exc}"
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return f"{said}: action={result.action}, content={content}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for one answer."""
    return await _elicit(ctx, message, Answer, "User response")


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks the user a form whose fields all have defaults."""
    return await _elicit(ctx, "Please provide user information", Defaults, "Elicitation result")


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks the user a form of enums, titled and untitled, single and multiple."""
    message = "Please select values using different enum schema types"
    return await _elicit(ctx, message, Enums, "Elicitation completed")


@server.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream in the middle of the call, so the client must reconnect (SEP-1699)."""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(name="json_schema_2020_12_tool")
def json_schema_2020_12_tool() -> str:
    """Lists an input schema using JSON Schema 2020-12 keywords ($defs, $anchor, if/then/else, ...)."""
    return "json_schema_2020_12_tool"


# MCPServer derives a tool's schema from its signature; this one's schema is the point, so it is set as is.
server._tool_manager._tools["json_schema_2020_12_tool"].parameters = SCHEMA_2020_12


# ---------------------------------------------------------------------------------------------- resources


@server.resource("test://static-text")
def static_text() -> str:
    """A text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary")
def static_binary() -> bytes:
    """A binary resource (a PNG image)."""
    return base64.b64decode(PIXEL_PNG)


@server.resource("test://template/{id}/data")
def template_data(id: str) -> str:
    """A resource template: one JSON document per id."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource")
def watched() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# ---------------------------------------------------------------------------------------------- prompts


@server.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments."""
    return [UserMessage(content=TextContent(type="text", text="This is a simple prompt for testing."))]


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    """A prompt with two required arguments."""
    text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    return [UserMessage(content=TextContent(type="text", text=text))]


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    """A prompt embedding a resource at the given URI."""
    embedded = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        UserMessage(content=EmbeddedResource(type="resource", resource=embedded)),
        UserMessage(content=TextContent(type="text", text="Please process the embedded resource above.")),
    ]


@server.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt with an image."""
    return [
        UserMessage(content=ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")),
        UserMessage(content=TextContent(type="text", text="Please analyze the image above.")),
    ]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument, context: CompletionContext | None
) -> Completion:
    """No suggestions (the scenario checks the shape of the answer)."""
    return Completion(values=[], total=0, has_more=False)


# ---------------------------------------------------------------------------------------------- other requests


async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


async def subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    subscribed.add(str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
    subscribed.discard(str(params.uri))
    return EmptyResult()


# MCPServer has no public hook for these three yet; its low-level server takes them as request handlers.
lowlevel = server._lowlevel_server
with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28; the scenarios still set levels
    warnings.simplefilter("ignore")
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["http", "stdio"], default="http")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    options = parser.parse_args()
    if options.transport == "stdio":
        server.run("stdio")
        return
    local = [f"{options.host}:*", "localhost:*", "127.0.0.1:*"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=local,
        allowed_origins=[f"http://{host}" for host in local],
    )
    server.run(
        "streamable-http",
        host=options.host,
        port=options.port,
        event_store=Events(),
        retry_interval=100,  # milliseconds a client waits before reconnecting a closed stream
        transport_security=security,
    )


if __name__ == "__main__":
    main()
