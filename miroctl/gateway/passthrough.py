"""What serve passes through besides tools: resources, resource templates and prompts, under the same policy.

Resource URIs are namespaced so they route back: `fixture://notes` of server alpha is exposed as
`miroctl://alpha/fixture://notes`, and a template `fixture://items/{item}` as
`miroctl://alpha/fixture://items/{item}`; whatever a host expands it to, the gateway strips the prefix
and asks alpha for the rest, verbatim. Prompts are named like tools (alpha__review, or review with
--plain-names). Reading a resource or getting a prompt changes nothing, so they count as read-only: the
blacklist and the server's own `[server, "*"]` rules hide them, read_only mode does not.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any
from urllib.parse import quote, unquote

from miroctl.base.fetched import Fetched
from miroctl.base.masking import Masker
from miroctl.base.models import ServerSpec, ServerTools, ToolInfo
from miroctl.core import catalog
from miroctl.core.manager import Manager
from miroctl.gateway import toolmap
from miroctl.sessions.pool import Unavailable

SCHEME = "miroctl://"
RESOURCE_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR, REQUEST_TIMEOUT = -32002, -32602, -32603, -32001
EXTRAS = frozenset({"resources", "prompts"})
READ_ONLY = {"readOnlyHint": True}


class ItemError(Exception):
    """A resource or prompt request the gateway answers with a JSON-RPC error (code, one-line message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def wrap(prefix: str, uri: str) -> str:
    """The gateway's URI (or URI template) for an upstream one."""
    return f"{SCHEME}{quote(prefix, safe='')}/{uri}"


def unwrap(uri: str) -> tuple[str, str] | None:
    """(server prefix, upstream URI) of a gateway URI, or None when it is not one."""
    if not uri.startswith(SCHEME):
        return None
    prefix, slash, upstream = uri[len(SCHEME) :].partition("/")
    return (unquote(prefix), upstream) if slash and prefix and upstream else None


class Catalog:
    """The resources, templates and prompts of the served servers, named for hosts and routed back."""

    def __init__(
        self,
        manager: Manager,
        specs: Sequence[ServerSpec],
        masker: Masker,
        separator: str = toolmap.DEFAULT_SEPARATOR,
        plain: bool = False,
    ) -> None:
        self.manager, self.specs, self.masker = manager, list(specs), masker
        self.separator, self.plain = separator, plain
        self.prefix = toolmap.prefixes(spec.name for spec in self.specs)
        self.by_prefix = {prefix: name for name, prefix in self.prefix.items()}
        self.prompts = toolmap.Named({})

    async def entries(self) -> list[ServerTools]:
        """Each served server's resources, templates and prompts; a server that is down offers none."""
        listed = await self.manager.list_tools(self.specs, EXTRAS)
        return [entry for entry in listed if entry.ok]

    def allowed(self, spec: ServerSpec, *names: str) -> bool:
        """Whether the policy lets hosts see an item called any of `names` (read-only by nature)."""
        policy = self.manager.policy
        return all(
            policy.decide(spec, name, ToolInfo(spec.name, name, annotations=READ_ONLY)).allowed for name in names
        )

    def _spec(self, server: str) -> ServerSpec | None:
        return next((spec for spec in self.specs if spec.name == server), None)

    # ------------------------------------------------------------------------------------------ resources

    async def resources(self) -> list[dict[str, Any]]:
        found = []
        for entry, spec in self._with_specs(await self.entries()):
            for item in entry.resources or ():
                if self.allowed(spec, str(item.get("name", "")), str(item.get("uri", ""))):
                    found.append({**item, "uri": wrap(self.prefix[spec.name], str(item["uri"]))})
        return self.masker.data(found)

    async def templates(self) -> list[dict[str, Any]]:
        found = []
        for entry, spec in self._with_specs(await self.entries()):
            for item in entry.resource_templates or ():
                if self.allowed(spec, str(item.get("name", "")), str(item.get("uriTemplate", ""))):
                    found.append({**item, "uriTemplate": wrap(self.prefix[spec.name], str(item["uriTemplate"]))})
        return self.masker.data(found)

    def _with_specs(self, entries: Iterable[ServerTools]) -> list[tuple[ServerTools, ServerSpec]]:
        pairs = [(entry, self._spec(entry.server)) for entry in entries]
        return [(entry, spec) for entry, spec in pairs if spec is not None]

    def route(self, uri: str) -> tuple[ServerSpec, str]:
        """The served server and upstream URI behind a gateway URI; ItemError when there is none."""
        parts = unwrap(uri)
        spec = self._spec(self.by_prefix.get(parts[0], "")) if parts else None
        if parts is None or spec is None:
            names = ", ".join(self.by_prefix) or "(none)"
            raise ItemError(
                RESOURCE_NOT_FOUND,
                f"no resource {uri!r}: the gateway's URIs are {SCHEME}SERVER/URI (SERVER: {names})",
            )
        if not self.allowed(spec, parts[1]):
            raise ItemError(RESOURCE_NOT_FOUND, f"resource {uri!r} is denied by the policy")
        return spec, parts[1]

    async def read(self, uri: str, timeout: float | None = None) -> dict[str, Any]:
        """A resources/read result for a gateway URI: the upstream's contents, their URIs the gateway's."""
        spec, upstream = self.route(uri)
        fetched = await catalog.read_resource(self.manager, spec.name, upstream, timeout)
        answer(fetched)
        prefix = self.prefix[spec.name]
        contents = [{**item, "uri": wrap(prefix, str(item.get("uri", upstream)))} for item in fetched.content]
        return self.masker.data({"contents": contents})

    # ------------------------------------------------------------------------------------------ prompts

    async def prompt_list(self) -> list[dict[str, Any]]:
        listed: list[tuple[str, dict[str, Any]]] = []
        for entry, spec in self._with_specs(await self.entries()):
            listed += [(spec.name, p) for p in entry.prompts or () if self.allowed(spec, str(p.get("name", "")))]
        self.prompts = toolmap.name_items(
            [(server, str(p["name"])) for server, p in listed], self.separator, self.prefix, self.plain
        )
        exposed = {key: name for name, key in self.prompts.items.items()}
        found = [{**p, "name": exposed[(server, p["name"])]} for server, p in listed if (server, p["name"]) in exposed]
        return self.masker.data(found)

    async def prompt(self, name: str, arguments: Mapping[str, str], timeout: float | None = None) -> dict[str, Any]:
        """A prompts/get result for an exposed prompt name."""
        if name not in self.prompts.items:
            await self.prompt_list()
        if name not in self.prompts.items:
            raise ItemError(INVALID_PARAMS, f"the gateway has no prompt named {name!r}")
        server, upstream = self.prompts.items[name]
        fetched = await catalog.get_prompt(self.manager, server, upstream, arguments, timeout)
        answer(fetched)
        body: dict[str, Any] = {"messages": fetched.content}
        if fetched.description is not None:
            body["description"] = fetched.description
        return self.masker.data(body)

    async def complete(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A completion/complete result's `completion`, from the server behind the prompt or template."""
        ref, argument = dict(params["ref"]), dict(params["argument"])
        if ref.get("type") == "ref/prompt":
            if ref.get("name") not in self.prompts.items:
                await self.prompt_list()
            server, upstream = self.prompts.items.get(str(ref.get("name")), ("", ""))
            if not server:
                raise ItemError(INVALID_PARAMS, f"the gateway has no prompt named {ref.get('name')!r}")
            ref["name"] = upstream
        else:
            spec, upstream = self.route(str(ref.get("uri", "")))
            server, ref["uri"] = spec.name, upstream
        context = (params.get("context") or {}).get("arguments")
        if not _offers(self.manager, server, "completions"):
            return {"values": [], "hasMore": False}
        result = await _on_server(
            self.manager, server, "completion/complete", lambda client: _complete(client, ref, argument, context)
        )
        return self.masker.data(result.completion.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def set_level(self, level: str) -> None:
        """Pass logging/setLevel on to every served server that is running and declares logging."""
        for spec in self.specs:
            if _offers(self.manager, spec.name, "logging"):
                with suppress(ItemError):
                    await _on_server(self.manager, spec.name, "logging/setLevel", lambda c: _set_level(c, level))


async def _on_server(manager: Manager, server: str, phase: str, send: Callable[[Any], Awaitable[Any]]) -> Any:
    """`send(client)` on a served server's session; a server that is down or fails is an ItemError."""
    spec = manager.config.get(server)
    if spec is None:
        raise ItemError(INVALID_PARAMS, f"no server named {server!r}")
    handle = manager.handle(spec)
    try:
        connection = await handle.connect()
        return await handle.ask(connection, phase, spec.timeout or manager.config.profile.timeout, send)
    except Unavailable as exc:
        raise ItemError(INTERNAL_ERROR, f"{server}: {exc.failure.message}") from None


def answer(fetched: Fetched) -> None:
    """Raise the JSON-RPC error of a failed fetch: not found, bad arguments, timeout, or the server's failure."""
    if fetched.ok:
        return
    code = {
        "not_found": RESOURCE_NOT_FOUND if fetched.what == "resource" else INVALID_PARAMS,
        "usage": INVALID_PARAMS,
        "arguments": INVALID_PARAMS,
        "timeout": REQUEST_TIMEOUT,
    }.get(fetched.error_kind or "", INTERNAL_ERROR)
    hint = f" ({fetched.hint})" if fetched.hint else ""
    raise ItemError(code, f"{fetched.error}{hint}")


async def _complete(client: Any, ref: dict[str, Any], argument: dict[str, str], context: dict[str, str] | None) -> Any:
    import mcp_types as types

    model = types.PromptReference if ref.get("type") == "ref/prompt" else types.ResourceTemplateReference
    return await client.complete(model.model_validate(ref), argument, context)


async def _set_level(client: Any, level: str) -> Any:
    with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28; older servers still take it
        warnings.simplefilter("ignore")
        return await client.set_logging_level(level)


def _offers(manager: Manager, server: str, capability: str) -> bool:
    """Whether a served server with an open session declares `capability` (completions, logging)."""
    spec = manager.config.get(server)
    connection = manager.handle(spec).connection if spec is not None else None
    capabilities = connection.client.server_capabilities if connection is not None else None
    return capabilities is not None and getattr(capabilities, capability, None) is not None
