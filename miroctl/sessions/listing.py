"""Every page of tools/list, read tool by tool: a tool the protocol rejects is reported by name and never hides
the server's valid tools (the SDK's own listing rejects the whole page for one bad tool).

One pipeline for every session: each page is fetched raw (`Session.request`), its own fields checked as the
SDK checks them, then each tool alone against the negotiated protocol's wire types (sessions/toolcheck.py,
which tests/test_lean.py holds against the SDK's models). The valid tools are handed to the session as if
it had listed them (`Session.learn_tools`), so calls validate their results as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from miroctl.base.models import RejectedTool, ToolInfo
from miroctl.sessions.exchange import every_page
from miroctl.sessions.session import ListedTool, Session
from miroctl.sessions.toolcheck import annotations_of, page_problem, tool_problem

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


async def list_tools(server: str, session: Session) -> Listing:
    """Every page of tools/list (PagingError for an endless or looping listing, ListingError for a bad page)."""

    async def fetch(cursor: str | None) -> _Page:
        raw = await session.request(METHOD, {"cursor": cursor} if cursor is not None else None)
        return _read_page(server, session, raw, cursor)

    pages, count = await every_page(fetch, lambda page: [page], METHOD)
    tools = tuple(tool for page in pages for tool in page.tools)
    return Listing(tools, tuple(item for page in pages for item in page.rejected), count)


def _read_page(server: str, session: Session, raw: object, cursor: str | None) -> _Page:
    """One raw page: its own fields checked, then each tool alone; the valid ones learnt by the session."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("tools"), list):
        raise ListingError(f"the answer to {METHOD} is not a page of tools: {_shape(raw)}")
    version = session.protocol_version or "2025-11-25"
    page = {key: value for key, value in raw.items() if key != "tools"}
    if isinstance(page.get("ttlMs"), (int, float)) and page["ttlMs"] < 0:  # as the SDK: a negative TTL is 0
        page["ttlMs"] = 0
    problem = page_problem(page, version)
    if problem is not None:
        raise ListingError(f"the answer to {METHOD} does not fit the protocol: {problem}")
    next_cursor = page.get("nextCursor") or None
    valid: list[ListedTool] = []
    rejected: list[RejectedTool] = []
    for index, item in enumerate(raw["tools"]):
        problem = tool_problem(item, version)
        if problem is None:
            valid.append(cast("ListedTool", item))  # tool_problem checked its fields
        else:
            rejected.append(RejectedTool(_name(item, index), problem))
    kept = session.learn_tools(valid, complete=cursor is None and next_cursor is None)
    rejected += [
        RejectedTool(t["name"], "its x-mcp-header annotations are invalid") for t in valid if t["name"] not in kept
    ]
    return _Page([tool_info(server, tool) for tool in valid if tool["name"] in kept], rejected, next_cursor)


def tool_info(server: str, tool: ListedTool) -> ToolInfo:
    """A checked tools/list item as miroctl's ToolInfo (snake_case keys, JSON-ready), which keeps the item
    itself, every field as the server sent it, for what passes the tool on (serve)."""
    return ToolInfo(
        server=server,
        name=tool["name"],
        title=tool.get("title"),
        description=tool.get("description") or "",
        input_schema=tool.get("inputSchema") or {},
        output_schema=tool.get("outputSchema"),
        annotations=annotations_of(tool.get("annotations")),
        raw=dict(tool),
    )


def _name(item: object, index: int) -> str:
    """The rejected tool's name, or its place in the page when it has no usable one."""
    name = item.get("name") if isinstance(item, Mapping) else None
    return name if isinstance(name, str) and name.strip() else f"#{index + 1} (no name)"


def _shape(value: object) -> str:
    if isinstance(value, Mapping):
        tools = value.get("tools")
        return f"tools is {type(tools).__name__}" if "tools" in value else "it has no tools"
    return f"a {type(value).__name__}"
