"""serve: the pool as one MCP server, its tools named SERVER__TOOL (or two meta-tools with --lazy).

Built on the SDK's low-level Server, which lists and routes tools at request time; never on
MCPServer, whose constructor configures logging for the whole process. Every call goes through
`Manager.call`, so timeouts, the blacklist, auto-correction and policies apply as on the command line.
"""

from __future__ import annotations

import json
import math
import os
import uuid
import warnings
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, TypedDict

import anyio

from miroctl.base.masking import Masker
from miroctl.base.models import CallOutcome, CallRequest, ProgressFn, ServerSpec, ServerTools, ToolInfo
from miroctl.base.text import suggest
from miroctl.base.version import __version__
from miroctl.core.manager import Manager
from miroctl.gateway import toolmap
from miroctl.gateway.approval import HostApproval
from miroctl.gateway.passthrough import Catalog, ItemError
from miroctl.gateway.relay import HostCall, Relays
from miroctl.gateway.sdk_private import request_connection
from miroctl.gateway.stdio import StdoutWriter, claimed_stdout, stdin_lines
from miroctl.sessions.processes import sub_run_id

if TYPE_CHECKING:  # the SDK costs ~1 s to import: `serve` loads it when it starts
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.models import InitializationOptions
    from mcp.server.subscriptions import InMemorySubscriptionBus
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        CompleteRequestParams,
        CompleteResult,
        EmptyResult,
        GetPromptRequestParams,
        GetPromptResult,
        InputRequiredResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        PaginatedRequestParams,
        ReadResourceRequestParams,
        ReadResourceResult,
        SetLevelRequestParams,
        SubscribeRequestParams,
        UnsubscribeRequestParams,
    )

    from miroctl.gateway.sdk_private import Host

META_KEY = "miroctl/outcome"  # where each result's envelope metadata rides in `_meta`


class ServerHealth(TypedDict):
    """One upstream in the health document (schemas/health.json)."""

    name: str
    state: str
    tool_count: int
    starts: int
    crashes: int
    failure: dict[str, object] | None


class Health(TypedDict):
    """The document of /healthz (`miroctl.health/1`), which `serve` also reports from."""

    schema: str
    status: str
    lazy: bool
    tool_count: int
    servers: list[ServerHealth]
    collisions: list[dict[str, object]]


def gateway_task_id() -> str:
    """The task id of a gateway started without --task-id or $TASK_ID: its own, so that per-task state (the
    planner's todo list) is one per gateway, as an agent's run is one per gateway."""
    return f"gateway-{uuid.uuid4().hex[:12]}"


class Gateway:
    """The selected servers behind one MCP server: names, routing, results, health."""

    def __init__(
        self,
        manager: Manager,
        specs: Sequence[ServerSpec],
        *,
        separator: str = toolmap.DEFAULT_SEPARATOR,
        lazy: bool = False,
        masker: Masker | None = None,
        plain: bool = False,
    ) -> None:
        self.manager = manager
        self.specs = list(specs)
        self.separator = separator
        self.lazy = lazy
        self.masker = masker or Masker(manager.config.secrets())
        self.plain = plain  # tools under their own names (--plain-names)
        self.catalog = Catalog(manager, self.specs, self.masker, separator, plain)
        self.entries: list[ServerTools] = []
        self.map = toolmap.ToolMap()
        self.bus: InMemorySubscriptionBus | None = (
            None  # the SDK's subscription bus, once a server is built: hosts listen to it for changes
        )
        self._surface: str | None = None
        self._listers: weakref.WeakSet[Host] = weakref.WeakSet()  # connections of older-protocol hosts that listed
        self.observers: list[Callable[[CallOutcome], None]] = []  # hear every call's outcome (metrics)
        self.draining = False  # stopping: not ready, finishing the calls in flight
        self.relays = Relays()
        manager.relay = self.relays  # the servers' own requests go to the host whose call caused them
        if manager.confirm is None:  # mode ask's question goes to the host whose call it holds
            manager.confirm = HostApproval(self.relays, manager.policy.ask_timeout)

    async def refresh(self) -> toolmap.ToolMap:
        """List every server again: open sessions answer from cache, failed ones are retried when due."""
        self.entries = await self.manager.list_tools(self.specs)
        self.map = toolmap.build(self.entries, self.separator, [s.name for s in self.specs], self.plain)
        await self._announce_changes()
        return self.map

    def exposed(self) -> list[dict[str, object]]:
        """The tools as hosts see them: the two meta-tools with --lazy, else every mapped upstream tool."""
        if self.lazy:
            return meta_tools(self.specs)
        return [mcp_tool(name, info, self.may_rewrite(info)) for name, info in self.map.tools.items()]

    def may_rewrite(self, info: ToolInfo) -> bool:
        """Whether miroctl may answer for this tool with other than its own result: cut by a result limit, or
        a page converted by the scrape fallback. Its outputSchema cannot be promised then."""
        spec, policy = self.manager.config.get(info.server), self.manager.policy
        limited = spec is not None and policy.result_limit(spec, info.name) is not None
        return limited or (self.manager.fallback.enabled and policy.is_scrape(info.name))

    async def _announce_changes(self) -> None:
        """Tell hosts when the exposed tools differ from the last listing: those listening on 2026-07-28
        through the bus, those on older protocols that listed tools on their connection."""
        surface = json.dumps(self.exposed(), sort_keys=True, default=str)
        previous, self._surface = self._surface, surface
        if previous is None or surface == previous:
            return
        if self.bus is not None:
            from mcp.server.subscriptions import ToolsListChanged

            await self.bus.publish(ToolsListChanged())
        for session in list(self._listers):  # hosts before 2026-07-28 are told unsolicited
            with suppress(Exception):  # a host that went away is simply not told
                await session.send_tool_list_changed()

    async def watch(self, interval: float) -> None:
        """List again when a server announces new tools and, every `interval` seconds (0: never), when a server
        that is down may be started again (the pool's backoff): hosts hear of tools that came or went."""
        while True:
            changed = await self.manager.next_change(interval if interval > 0 else math.inf)
            if changed or any(self.manager.handle(spec).restart_due for spec in self.specs):
                await self.refresh()

    def instructions(self) -> str:
        """What the gateway's InitializeResult tells hosts: miroctl's own line, then each listed server's own
        instructions under a heading of its name, saying how its tools are named here (masked)."""
        names = ", ".join(spec.name for spec in self.specs)
        sections = [f"miroctl gateway for these MCP servers: {names}."]
        listed = {entry.server: entry for entry in self.entries if entry.ok}
        prefix = toolmap.prefixes(spec.name for spec in self.specs)
        for spec in self.specs:
            entry = listed.get(spec.name)
            text = (entry.instructions or "").strip() if entry is not None else ""
            if text:
                sections.append(f"## {spec.name}\n{self._naming(spec.name, prefix[spec.name])}\n\n{text}")
        return self.masker.text("\n\n".join(sections))

    def _naming(self, server: str, prefix: str) -> str:
        """How a server's tools are reached through the gateway, for the model reading its instructions."""
        if self.lazy:
            return f'(Its tools are called with call_tool, server "{server}"; the tool names below are its own.)'
        if self.plain:
            return "(Its tools keep their own names here.)"
        return f"(Its tools are exposed as {prefix}{self.separator}NAME; the tool names below are its own.)"

    def spec(self, name: str) -> ServerSpec | None:
        """A selected server by name (`reading` finds `tool-reading`); others are not served."""
        found = self.manager.config.get(name)
        return found if found is not None and found.name in {spec.name for spec in self.specs} else None

    async def call(self, request: CallRequest, task_id: str | None = None) -> CallOutcome:
        """One call on the served sessions; with a task id other than the one they were started with, on
        servers started for this call alone with that TASK_ID, as a direct `call --task-id` starts them."""
        if task_id is None or task_id == (self.manager.task_id or os.environ.get("TASK_ID")):
            outcome = await self.manager.call(request)
        else:
            served = self.manager
            manager = Manager(
                served.config,
                policy=served.policy,
                confirm=served.confirm,
                log_path=served.log_path,
                task_id=task_id,
                run_id=sub_run_id("task"),
            )
            async with manager:
                outcome = await manager.call(request)
        host = self.relays.current()
        if host is None or not host.requests:  # a call put on hold to ask its host is heard when it is retried
            for observe in self.observers:
                observe(outcome)
        return outcome

    @property
    def ready(self) -> bool:
        """Every served server started and listed its tools, and the gateway is not stopping (/readyz)."""
        listed = {entry.server for entry in self.entries if entry.ok}
        return not self.draining and all(spec.name in listed for spec in self.specs)

    def input_schema(self, name: str) -> Mapping[str, object] | None:
        """The listed input schema of an exposed tool (the SDK checks Mcp-Param headers with it)."""
        if self.lazy:
            schema = next((t["inputSchema"] for t in meta_tools(self.specs) if t["name"] == name), None)
            return schema if isinstance(schema, Mapping) else None
        info = self.map.get(name)
        return info.input_schema if info is not None else None

    # ------------------------------------------------------------------------------------------ MCP

    async def on_list_tools(
        self, ctx: ServerRequestContext[dict[str, object]], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        import mcp_types as types
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        # Changes go out on the connection behind the request's session (see sdk_private).
        connection = request_connection(ctx.session)
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and connection is not None:
            with suppress(TypeError):
                self._listers.add(connection)

        if not self.lazy:
            await self.refresh()
        return types.ListToolsResult.model_validate({"tools": self.exposed()})

    async def on_call_tool(
        self, ctx: ServerRequestContext[dict[str, object]], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        import mcp_types as types
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        arguments = dict(params.arguments or {})
        relay = ctx.session.report_progress
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

        def hosting(server: str) -> AbstractContextManager[HostCall]:
            return self.relays.calling(server, ctx.session, ctx.request_id, modern, params.input_responses)

        if self.lazy:
            spec = self.spec(str(arguments.get("server"))) if params.name == "call_tool" else None
            with hosting(spec.name if spec else "") as host:
                outcome = await self.meta_call(params.name, arguments, relay)
        else:
            info = self.map.get(params.name) or (await self.refresh()).get(params.name)
            if info is None:
                return self.result(self._unknown(params.name))
            with hosting(info.server) as host:
                outcome = await self.call(CallRequest(info.server, info.name, arguments, progress=relay))
        if host.requests:  # mode ask's question, for a 2026-07-28 host to answer in its retry
            return types.InputRequiredResult(input_requests=host.requests)
        return self.result(outcome)

    def _unknown(self, name: str) -> CallOutcome:
        return CallOutcome(
            None,
            name,
            error=f"the gateway has no tool named {name!r}",
            error_kind="not_found",
            hint=suggest(name, self.map.tools) or "list the tools again",
        )

    def result(self, outcome: CallOutcome) -> CallToolResult:
        """An envelope as an MCP CallToolResult, masked; the envelope's metadata rides in `_meta`."""
        import mcp_types as types

        return types.CallToolResult.model_validate(self.masker.data(result_body(outcome)))

    # ------------------------------------------------------------------------------------------ resources, prompts

    async def on_list_resources(
        self, ctx: ServerRequestContext[dict[str, object]], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        import mcp_types as types

        return types.ListResourcesResult.model_validate({"resources": await self.catalog.resources()})

    async def on_list_resource_templates(
        self, ctx: ServerRequestContext[dict[str, object]], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        import mcp_types as types

        return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": await self.catalog.templates()})

    async def on_read_resource(
        self, ctx: ServerRequestContext[dict[str, object]], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        import mcp_types as types

        return types.ReadResourceResult.model_validate(await self._item(self.catalog.read(params.uri)))

    async def on_subscribe_resource(
        self, ctx: ServerRequestContext[dict[str, object]], params: SubscribeRequestParams
    ) -> EmptyResult:
        """resources/subscribe: passed on to the resource's server; its updates come back to this host."""
        import mcp_types as types

        host = request_connection(ctx.session) or ctx.session  # the session lives as long as the request only
        await self._item(self._done(self.catalog.subscribe(params.uri, host, self.relays.subscriptions)))
        return types.EmptyResult()

    async def on_unsubscribe_resource(
        self, ctx: ServerRequestContext[dict[str, object]], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        import mcp_types as types

        host = request_connection(ctx.session) or ctx.session
        await self._item(self._done(self.catalog.unsubscribe(params.uri, host, self.relays.subscriptions)))
        return types.EmptyResult()

    @staticmethod
    async def _done(work: Awaitable[None]) -> dict[str, object]:
        await work
        return {}

    async def on_list_prompts(
        self, ctx: ServerRequestContext[dict[str, object]], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        import mcp_types as types

        return types.ListPromptsResult.model_validate({"prompts": await self.catalog.prompt_list()})

    async def on_get_prompt(
        self, ctx: ServerRequestContext[dict[str, object]], params: GetPromptRequestParams
    ) -> GetPromptResult:
        import mcp_types as types

        document = await self._item(self.catalog.prompt(params.name, dict(params.arguments or {})))
        return types.GetPromptResult.model_validate(document)

    async def on_completion(
        self, ctx: ServerRequestContext[dict[str, object]], params: CompleteRequestParams
    ) -> CompleteResult:
        """completion/complete for a prompt's or a resource template's argument, asked of its server."""
        import mcp_types as types

        completion = await self._item(self.catalog.complete(params.model_dump(mode="json", by_alias=True)))
        return types.CompleteResult.model_validate({"completion": completion})

    async def on_set_logging_level(
        self, ctx: ServerRequestContext[dict[str, object]], params: SetLevelRequestParams
    ) -> EmptyResult:
        """logging/setLevel, passed on to every served server that logs (their sessions are shared)."""
        import mcp_types as types

        await self.catalog.set_level(params.level)
        return types.EmptyResult()

    async def _item(self, work: Awaitable[dict[str, object]]) -> dict[str, object]:
        """A resource's or prompt's document; a failure as the JSON-RPC error a host expects, masked."""
        from mcp.shared.exceptions import MCPError

        try:
            return await work
        except ItemError as exc:
            raise MCPError(exc.code, self.masker.text(exc.message)) from None

    # ------------------------------------------------------------------------------------------ lazy

    async def meta_call(self, name: str, arguments: Mapping[str, object], relay: ProgressFn | None) -> CallOutcome:
        """The two meta-tools of --lazy: list_tools([server]) and call_tool(server, tool, arguments)."""
        if name == "list_tools":
            return await self._meta_list(arguments.get("server"))
        if name != "call_tool":
            return self._unknown(name)
        server, tool, values = arguments.get("server"), arguments.get("tool"), arguments.get("arguments") or {}
        if not isinstance(server, str) or not isinstance(tool, str) or not isinstance(values, dict):
            return CallOutcome(
                None,
                "call_tool",
                error_kind="arguments",
                error="call_tool needs server and tool (strings) and arguments (an object)",
            )
        # An unknown server is corrected as on the command line: the one served server that has the tool.
        return await self.call(CallRequest(server, tool, values, progress=relay))

    def _no_server(self, server: str, tool: str) -> CallOutcome:
        names = [s.name for s in self.specs]
        return CallOutcome(
            server,
            tool,
            error=f"the gateway serves no server named {server!r}",
            error_kind="not_found",
            hint=suggest(server, names) or f"its servers: {', '.join(names)}",
        )

    async def _meta_list(self, server: object) -> CallOutcome:
        spec = self.spec(server) if isinstance(server, str) else None
        if server is None:
            await self.refresh()
            document = {"servers": [summary(entry) for entry in self.entries]}
        elif spec is None:
            return self._no_server(str(server), "list_tools")
        else:
            entries = await self.manager.list_tools([spec])
            document = {"servers": [detail(entry) for entry in entries]}
        text = json.dumps(document, ensure_ascii=False)
        return CallOutcome(
            None, "list_tools", result=text, structured_content=document, content=[{"type": "text", "text": text}]
        )

    # ------------------------------------------------------------------------------------------ health

    def health(self) -> Health:
        """Each upstream's state, for /healthz and the start-up report."""
        listed = {entry.server: entry for entry in self.entries}
        servers = [self._server_health(spec, listed.get(spec.name)) for spec in self.specs]
        document: Health = {
            "schema": "miroctl.health/1",
            "status": "ok" if all(s["state"] == "connected" for s in servers) else "degraded",
            "lazy": self.lazy,
            "tool_count": len(self.map.tools),
            "servers": servers,
            "collisions": [c.to_dict() for c in self.map.collisions],
        }
        return self.masker.data(document)

    def ready_document(self, transport: str, url: str | None) -> dict[str, object]:
        """What `serve --json` prints once it serves: where, the exposed tool names, each server's state."""
        health = self.health()
        document: dict[str, object] = {
            "schema": "miroctl.serve/1",
            "transport": transport,
            "url": url,
            "separator": self.separator,
            "lazy": self.lazy,
            "task_id": self.manager.task_id,
            "tools": [tool["name"] for tool in self.exposed()],
            "servers": health["servers"],
            "collisions": health["collisions"],
        }
        return self.masker.data(document)

    def _server_health(self, spec: ServerSpec, entry: ServerTools | None) -> ServerHealth:
        handle = self.manager.handle(spec)
        failure = handle.failure or (entry.failure if entry else None) or handle.last_failure
        return {
            "name": spec.name,
            "state": handle.state,
            "tool_count": len(entry.tools) if entry is not None and entry.ok else 0,
            "starts": handle.starts,
            "crashes": handle.crashes,
            "failure": failure.to_dict() if failure is not None and handle.state != "connected" else None,
        }


# ---------------------------------------------------------------------------------------------- shapes


def mcp_tool(name: str, info: ToolInfo, may_rewrite: bool = False) -> dict[str, object]:
    """An upstream tool as the gateway lists it: every field the server listed (`_meta`, `icons`, `execution`,
    annotations, schemas...) passed through unchanged under the exposed name, but no outputSchema where miroctl
    may rewrite the result (a standard client would reject the result)."""
    tool: dict[str, object] = dict(info.raw) if info.raw else _fields(info)
    tool["name"] = name
    if not tool.get("inputSchema"):
        tool["inputSchema"] = {"type": "object"}
    if may_rewrite:
        tool.pop("outputSchema", None)
    return tool


def _fields(info: ToolInfo) -> dict[str, object]:
    """A tool known without its listing (no raw item): the fields miroctl keeps."""
    tool: dict[str, object] = {
        "name": info.name,
        "description": info.description,
        "inputSchema": dict(info.input_schema),
    }
    if info.title:
        tool["title"] = info.title
    if info.output_schema is not None:
        tool["outputSchema"] = dict(info.output_schema)
    if info.annotations:
        tool["annotations"] = dict(info.annotations)
    return tool


def result_body(outcome: CallOutcome) -> dict[str, object]:
    """The CallToolResult fields for an envelope: the tool's own answer, or miroctl's reason."""
    if outcome.ok or outcome.error_kind == "tool_error":
        # The model must see it was answered by another server: the note first, as in the result's text.
        note: list[dict[str, object]] = [{"type": "text", "text": outcome.correction}] if outcome.correction else []
        content = [*note, *outcome.content] if outcome.content else []
        if not content and outcome.result:  # its text starts with the note already
            content = [{"type": "text", "text": outcome.result}]
        elif not content:
            content = note
        body: dict[str, object] = {"content": content, "isError": outcome.is_error}
        if outcome.structured_content is not None:
            body["structuredContent"] = outcome.structured_content
    else:
        text = f"{outcome.error_kind}: {outcome.error}" + (f"\nhint: {outcome.hint}" if outcome.hint else "")
        body = {"content": [{"type": "text", "text": text}], "isError": True}
    meta: dict[str, object] = {
        "server_name": outcome.server_name,
        "tool_name": outcome.tool_name,
        "error_kind": outcome.error_kind,
        "exit_code": int(outcome.exit_code),
        "corrected_from": outcome.corrected_from,
    }
    if outcome.notes:  # what miroctl changed or could not check on the way (an argument read as its type)
        meta["notes"] = list(outcome.notes)
    body["_meta"] = {META_KEY: meta}
    return body


def summary(entry: ServerTools) -> dict[str, object]:
    """A server in `list_tools()` of --lazy: tool names and one-line summaries, or why it is down."""
    if entry.failure is not None:
        return {"name": entry.server, "ok": False, "error": entry.failure.message}
    return {"name": entry.server, "ok": True, "tools": [{"name": t.name, "summary": t.summary} for t in entry.tools]}


def detail(entry: ServerTools) -> dict[str, object]:
    """A server in `list_tools(server)` of --lazy: every tool with its description and input schema."""
    if not entry.ok:
        return summary(entry)
    tools = [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)} for t in entry.tools]
    return {"name": entry.server, "ok": True, "tools": tools}


def meta_tools(specs: Sequence[ServerSpec]) -> list[dict[str, object]]:
    """The two tools of --lazy, naming the servers so a model knows what it can ask for."""
    names = ", ".join(spec.name for spec in specs) or "(none)"
    server = {"type": "string", "description": f"One of: {names}."}
    return [
        {
            "name": "list_tools",
            "annotations": {"readOnlyHint": True},
            "description": f"List the tools of the servers behind this gateway ({names}). Without `server`: every "
            "server's tool names and summaries. With `server`: that server's tools with full "
            "descriptions and input schemas. Call them with call_tool.",
            "inputSchema": {"type": "object", "properties": {"server": server}},
        },
        {
            "name": "call_tool",
            "description": "Call one tool of one server behind this gateway. Find its name and input schema "
            "with list_tools(server) first.",
            "inputSchema": {
                "type": "object",
                "required": ["server", "tool"],
                "properties": {
                    "server": server,
                    "tool": {"type": "string", "description": "The tool's name on that server."},
                    "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says."},
                },
            },
        },
    ]


# ---------------------------------------------------------------------------------------------- serving


def build_server(gateway: Gateway) -> Server[dict[str, object]]:
    """The low-level MCP server whose handlers are the gateway's."""
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.subscriptions import InMemorySubscriptionBus

    class GatewayServer(Server):
        @property
        def instructions(self) -> str | None:
            """Read at each handshake: the servers listed by then and their own instructions."""
            return gateway.instructions()

        @instructions.setter
        def instructions(self, value: str | None) -> None:
            """The SDK's constructor sets it; the gateway's own are made from its servers instead."""

        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,  # the SDK's own signature
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> InitializationOptions:
            """Hosts on older protocols are told that the tool list changes (2026-07-28 derives it itself)."""
            options = notification_options or NotificationOptions(tools_changed=True)
            return super().create_initialization_options(options, experimental_capabilities, extensions)

    bus = gateway.bus = gateway.bus or InMemorySubscriptionBus()
    with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28; hosts before it still set levels
        warnings.simplefilter("ignore")
        server = _server_with(GatewayServer, gateway, bus)
    server.middleware = []  # the default OpenTelemetry middleware costs every relayed call ~0.1 ms, for no exporter
    return server


def _server_with(
    kind: type[Server[dict[str, object]]], gateway: Gateway, bus: InMemorySubscriptionBus
) -> Server[dict[str, object]]:
    from mcp.server.subscriptions import ListenHandler

    @asynccontextmanager
    async def serving(_server: Server[dict[str, object]]) -> AsyncIterator[dict[str, object]]:
        """While the gateway serves: the task group where resources of 2026-07-28 servers are followed."""
        async with anyio.create_task_group() as group:
            gateway.relays.subscriptions.group = group
            try:
                yield {}
            finally:
                gateway.relays.subscriptions.group = None
                group.cancel_scope.cancel()

    return kind(
        "miroctl",
        lifespan=serving,
        version=__version__,
        on_list_tools=gateway.on_list_tools,
        on_call_tool=gateway.on_call_tool,
        on_list_resources=gateway.on_list_resources,
        on_list_resource_templates=gateway.on_list_resource_templates,
        on_read_resource=gateway.on_read_resource,
        on_subscribe_resource=gateway.on_subscribe_resource,
        on_unsubscribe_resource=gateway.on_unsubscribe_resource,
        on_list_prompts=gateway.on_list_prompts,
        on_get_prompt=gateway.on_get_prompt,
        on_completion=gateway.on_completion,
        on_set_logging_level=gateway.on_set_logging_level,
        get_tool_input_schema=gateway.input_schema,
        on_subscriptions_listen=ListenHandler(bus),
    )


async def serve_stdio(gateway: Gateway) -> None:
    """Serve MCP on stdin/stdout until stdin ends (or the caller is cancelled)."""
    from mcp.server.stdio import stdio_server

    server = build_server(gateway)
    with claimed_stdout() as fd:
        stdin, stdout = stdin_lines(), StdoutWriter(fd)
        wire = stdio_server(stdin=stdin, stdout=stdout)  # type: ignore[arg-type]  # AsyncFile in its types: lines in, text out
        async with wire as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
