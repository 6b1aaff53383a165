"""The one place the sessions reach into the mcp SDK's private attributes (tests/test_private_apis.py watches it).

The SDK (2.3) validates a whole tools/list page at once: one malformed tool and the page, with every valid
tool on it, is an exception. miroctl reads the page raw and validates tool by tool, which needs the
session's request stamp (`_stamp`: protocol headers and `_meta`) and its `_dispatcher`, as
`ClientSession.send_request` uses them; then it hands the valid tools to `_absorb_tool_listing`, so that
the session knows their output schemas (and, on 2026-07-28, their header maps) as if it had listed them.
If a new SDK moves these, the test fails loudly and miroctl falls back to the SDK's strict listing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import ListToolsResult


def can_send_raw(client: Client) -> bool:
    """Whether raw requests are possible on this SDK (else the strict listing is used)."""
    session = client.session
    return callable(getattr(session, "_stamp", None)) and hasattr(session, "_dispatcher")


async def raw_request(client: Client, method: str, params: dict[str, object] | None) -> dict[str, object]:
    """One request stamped as the SDK stamps it; the result as the server sent it (not validated)."""
    session: Any = client.session  # its private attributes, which the SDK does not type
    data: dict[str, object] = {"method": method}
    if params:
        data["params"] = dict(params)
    options: dict[str, object] = {}
    session._stamp(data, options)
    answer: dict[str, object] = await session._dispatcher.send_raw_request(method, data.get("params"), options)
    return answer


def absorb_tools(client: Client, result: ListToolsResult, complete: bool) -> ListToolsResult:
    """Let the session learn a listing it did not make itself (it may drop tools, as the protocol says)."""
    absorb = getattr(client.session, "_absorb_tool_listing", None)
    return absorb(result, complete=complete) if callable(absorb) else result


async def raw_notify(client: Client, method: str, params: dict[str, object] | None) -> None:
    """One notification stamped as the SDK stamps its own (fire and forget)."""
    session: Any = client.session  # its private attributes, which the SDK does not type
    data: dict[str, object] = {"method": method}
    if params is not None:
        data["params"] = params
    options: dict[str, object] = {}
    session._stamp(data, options)
    await session._dispatcher.notify(method, data.get("params"), options)
