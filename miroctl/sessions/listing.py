"""Every page of tools/list, read tool by tool: a tool the protocol rejects is reported by name and never hides
the server's valid tools (the SDK's own listing rejects the whole page for one bad tool).

Each page is fetched raw (sessions/sdk_private), its own fields checked as the SDK checks them, then each
tool validated alone against the negotiated protocol's wire types and the SDK's Tool model. The valid tools
are handed to the session as if it had listed them, so calls validate their results as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from miroctl.base.models import RejectedTool, ToolInfo
from miroctl.sessions import sdk_private
from miroctl.sessions.exchange import every_page
from miroctl.sessions.lean import LeanClient
from miroctl.sessions.toolcheck import annotations_of, page_problem, tool_problem

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import Tool
    from pydantic import ValidationError

METHOD = "tools/list"


class ListingError(Exception):
    """A tools/list page that cannot be read at all (not a page, or page fields the protocol rejects)."""


@dataclass(frozen=True)
class Listing:
    """A server's tools: the valid ones, the rejected ones with their reasons, and the pages read."""

    tools: tuple[ToolInfo, ...]
    rejected: tuple[RejectedTool, ...] = ()
    pages: int = 1


@dataclass(frozen=True)
class _Page:
    tools: list[ToolInfo]
    rejected: list[RejectedTool]
    next_cursor: str | None


async def list_tools(server: str, client: Client | LeanClient) -> Listing:
    """Every page of tools/list (PagingError for an endless or looping listing, ListingError for a bad page)."""
    if isinstance(client, LeanClient):
        return await _lean_listing(server, client)
    raw = sdk_private.can_send_raw(client)

    async def fetch(cursor: str | None) -> _Page:
        if raw:
            return _read_page(server, client, await sdk_private.raw_request(client, METHOD, _params(cursor)), cursor)
        page = await client.list_tools(cursor=cursor)  # an SDK without raw requests: its strict listing
        return _Page([tool_info(server, tool) for tool in page.tools], [], page.next_cursor)

    pages, count = await every_page(fetch, lambda page: [page], METHOD)
    tools = tuple(tool for page in pages for tool in page.tools)
    rejected = tuple(item for page in pages for item in page.rejected)
    return Listing(tools, rejected, count)


async def _lean_listing(server: str, client: LeanClient) -> Listing:
    """list_tools on the lean client: each page checked as the SDK path checks it (sessions/toolcheck.py)."""

    async def fetch(cursor: str | None) -> _Page:
        return _read_lean_page(server, client, await client.request(METHOD, _params(cursor)))

    pages, count = await every_page(fetch, lambda page: [page], METHOD)
    tools = tuple(tool for page in pages for tool in page.tools)
    return Listing(tools, tuple(item for page in pages for item in page.rejected), count)


def _read_lean_page(server: str, client: LeanClient, raw: Any) -> _Page:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("tools"), list):
        raise ListingError(f"the answer to {METHOD} is not a page of tools: {_shape(raw)}")
    version = client.protocol_version or "2025-11-25"
    page = {key: value for key, value in raw.items() if key != "tools"}
    if isinstance(page.get("ttlMs"), (int, float)) and page["ttlMs"] < 0:  # as the SDK: a negative TTL is 0
        page["ttlMs"] = 0
    problem = page_problem(page, version)
    if problem is not None:
        raise ListingError(f"the answer to {METHOD} does not fit the protocol: {problem}")
    next_cursor = page.get("nextCursor")
    valid: list[dict[str, Any]] = []
    rejected: list[RejectedTool] = []
    for index, item in enumerate(raw["tools"]):
        problem = tool_problem(item, version)
        if problem is None:
            valid.append(item)
        else:
            rejected.append(RejectedTool(_name(item, index), problem))
    client.learn_tools({tool["name"]: tool.get("outputSchema") for tool in valid}, complete=False)
    return _Page([_plain_tool_info(server, tool) for tool in valid], rejected, next_cursor or None)


def _plain_tool_info(server: str, tool: dict[str, Any]) -> ToolInfo:
    """A tools/list item (checked) as miroctl's ToolInfo, as tool_info makes it of the SDK's Tool."""
    return ToolInfo(
        server=server,
        name=tool["name"],
        title=tool.get("title"),
        description=tool.get("description") or "",
        input_schema=tool.get("inputSchema") or {},
        output_schema=tool.get("outputSchema"),
        annotations=annotations_of(tool.get("annotations")),
    )


def _params(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


def _read_page(server: str, client: Client, raw: Any, cursor: str | None) -> _Page:
    """One raw page: its own fields checked, then each tool alone; the valid ones absorbed by the session."""
    from mcp.types import ListToolsResult

    version = client.protocol_version or "2025-11-25"
    page, next_cursor = _page_fields(raw, version)
    valid, rejected = _tools(raw["tools"], page, version)
    complete = cursor is None and next_cursor is None
    kept = sdk_private.absorb_tools(client, ListToolsResult(tools=valid, next_cursor=next_cursor), complete).tools
    names = {tool.name for tool in kept}
    rejected += [RejectedTool(t.name, "its x-mcp-header annotations are invalid") for t in valid if t.name not in names]
    return _Page([tool_info(server, tool) for tool in kept], rejected, next_cursor)


def _page_fields(raw: Any, version: str) -> tuple[dict[str, Any], str | None]:
    """The page's own fields (all but its tools), checked as the SDK checks them, and its next cursor."""
    from mcp.types import ListToolsResult
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    if not isinstance(raw, Mapping) or not isinstance(raw.get("tools"), list):
        raise ListingError(f"the answer to {METHOD} is not a page of tools: {_shape(raw)}")
    page = {key: value for key, value in raw.items() if key != "tools"}
    if isinstance(page.get("ttlMs"), (int, float)) and page["ttlMs"] < 0:  # as the SDK: a negative TTL is 0
        page["ttlMs"] = 0
    try:
        validate_server_result(METHOD, version, {**page, "tools": []})
        return page, ListToolsResult.model_validate({**page, "tools": []}, by_name=False).next_cursor
    except (ValidationError, KeyError, ValueError) as exc:
        raise ListingError(f"the answer to {METHOD} does not fit the protocol: {_reason(exc)}") from None


def _tools(items: list[Any], page: dict[str, Any], version: str) -> tuple[list[Tool], list[RejectedTool]]:
    """Each tool checked alone, on the page it came with: the valid ones, and the rejected with their reasons."""
    from mcp.types import Tool
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    valid: list[Tool] = []
    rejected: list[RejectedTool] = []
    for index, item in enumerate(items):
        try:
            validate_server_result(METHOD, version, {**page, "tools": [item]})
            valid.append(Tool.model_validate(item, by_name=False))
        except ValidationError as exc:
            rejected.append(RejectedTool(_name(item, index), _reason(exc)))
    return valid, rejected


def _name(item: Any, index: int) -> str:
    """The rejected tool's name, or its place in the page when it has no usable one."""
    name = item.get("name") if isinstance(item, Mapping) else None
    return name if isinstance(name, str) and name.strip() else f"#{index + 1} (no name)"


def _reason(exc: ValidationError | Exception) -> str:
    """The first thing the protocol's types object to, as `field: message`."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    first = errors()[0]
    where = [str(part) for part in first.get("loc", ()) if not isinstance(part, int) and part != "tools"]
    extra = f" (and {len(errors()) - 1} more)" if len(errors()) > 1 else ""
    return f"{'.'.join(where) or 'the tool'}: {first.get('msg', 'invalid')}{extra}"


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        tools = value.get("tools")
        return f"tools is {type(tools).__name__}" if "tools" in value else "it has no tools"
    return f"a {type(value).__name__}"


def tool_info(server: str, tool: Any) -> ToolInfo:
    """An SDK Tool as miroctl's ToolInfo (snake_case keys, JSON-ready)."""
    annotations = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) if tool.annotations else {}
    return ToolInfo(
        server=server,
        name=tool.name,
        title=tool.title,
        description=tool.description or "",
        input_schema=tool.input_schema or {},
        output_schema=tool.output_schema,
        annotations=annotations,
    )
