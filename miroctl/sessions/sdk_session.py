"""The mcp SDK's client as a `Session`: the only module that dumps the SDK's models or sees its errors.

Every answer leaves here as the server's JSON, every failure as `RpcError` (a JSON-RPC error or a lost
connection) or `InvalidResult` (one line: the first thing the protocol's types object to). What only the SDK
offers (resources, prompts, ping, completion, subscriptions) is reached through `client`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from miroctl.base.models import ProgressFn
from miroctl.sessions import sdk_private
from miroctl.sessions.session import (
    CONNECTION_CLOSED,
    InvalidResult,
    JSONObject,
    ListedTool,
    RpcError,
    ServerInfo,
    leaf,
)

if TYPE_CHECKING:
    from mcp import Client
    from pydantic import ValidationError


class SdkSession:
    """A `Session` over an entered `mcp.Client`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._closed = False

    @property
    def protocol_version(self) -> str | None:
        return self.client.protocol_version

    @property
    def server_info(self) -> ServerInfo | None:
        info = self.client.server_info
        return ServerInfo(info.name, info.version or "") if info is not None else None

    @property
    def instructions(self) -> str | None:
        text = self.client.instructions
        return text if isinstance(text, str) else None

    @property
    def capabilities(self) -> JSONObject:
        capabilities = self.client.server_capabilities
        return capabilities.model_dump(mode="json", by_alias=True, exclude_none=True) if capabilities else {}

    async def request(self, method: str, params: Mapping[str, object] | None = None) -> JSONObject:
        async with self._translated():
            if sdk_private.can_send_raw(self.client):
                answer: JSONObject = await sdk_private.raw_request(self.client, method, dict(params or {}))
                return answer
            if method != "tools/list":
                raise RpcError(-32601, f"{method}: this mcp SDK sends no raw requests")
            cursor = (params or {}).get("cursor")
            page = await self.client.list_tools(cursor=cursor if isinstance(cursor, str) else None)  # strict
            return page.model_dump(mode="json", by_alias=True, exclude_none=True)

    def learn_tools(self, tools: Sequence[ListedTool], complete: bool) -> frozenset[str]:
        from mcp.types import ListToolsResult, Tool
        from pydantic import ValidationError

        models = []
        for item in tools:
            try:
                models.append(Tool.model_validate(item, by_name=False))
            except ValidationError:
                continue  # checked already by sessions/toolcheck.py, which agrees with these models
        kept = sdk_private.absorb_tools(self.client, ListToolsResult(tools=models), complete).tools
        return frozenset(tool.name for tool in kept)

    async def call_tool(
        self, name: str, arguments: Mapping[str, object], progress: ProgressFn | None = None
    ) -> JSONObject:
        async with self._translated():
            answer = await self.client.call_tool(name, dict(arguments), progress_callback=progress)
        return answer.model_dump(by_alias=True, exclude_none=True)

    async def notify(self, method: str, params: Mapping[str, object] | None = None) -> None:
        async with self._translated():
            await sdk_private.raw_notify(self.client, method, dict(params) if params is not None else None)

    def announces_tool_changes(self) -> bool:
        capabilities = self.client.server_capabilities
        return bool(capabilities is not None and capabilities.tools is not None and capabilities.tools.list_changed)

    async def follow_tool_changes(self, changed: Callable[[], None]) -> None:
        async with self.client.listen(tools_list_changed=True) as events:
            async for _ in events:
                changed()

    def close(self) -> None:
        self._closed = True

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        if self._closed:
            raise RpcError(CONNECTION_CLOSED, "Connection closed")
        async with translated():
            yield


@asynccontextmanager
async def translated() -> AsyncIterator[None]:
    """The SDK's exceptions as miroctl's: MCPError as RpcError, a rejected answer as InvalidResult, a lost
    stream as RpcError -32000; anything else unchanged."""
    from mcp import MCPError
    from pydantic import ValidationError

    try:
        yield
    except Exception as exc:
        inner = leaf(exc)
        if isinstance(inner, MCPError):
            raise RpcError(inner.code, inner.message, inner.data) from exc
        if isinstance(inner, ValidationError):
            raise InvalidResult(validation_reason(inner)) from exc
        if isinstance(inner, (anyio.ClosedResourceError, anyio.BrokenResourceError)):
            raise RpcError(CONNECTION_CLOSED, "Connection closed") from exc
        raise


def validation_reason(exc: ValidationError) -> str:
    """The first thing the protocol's types object to, as `field: message` (one line). Of a union's members
    (TextContent, ImageContent... in a loc), the one whose tag matched speaks; the others only say so."""
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    mistagged = {_members(e["loc"]) for e in errors if e["loc"] and e["loc"][-1] in ("type", "resultType")}
    chosen = next((e for e in errors if _members(e["loc"]) not in mistagged), errors[0])
    same = [e for e in errors if _members(e["loc"]) == _members(chosen["loc"])]
    where = [str(part) for part in chosen["loc"] if part != "tools" and part not in _members(chosen["loc"])]
    extra = f" (and {len(same) - 1} more)" if len(same) > 1 else ""
    return f"{'.'.join(where) or 'the answer'}: {chosen.get('msg', 'invalid')}{extra}"


def _members(loc: tuple[int | str, ...]) -> tuple[str, ...]:
    """The union members a loc passes through: the names of models (TextContent), not of fields."""
    return tuple(part for part in loc if isinstance(part, str) and part[:1].isupper())
