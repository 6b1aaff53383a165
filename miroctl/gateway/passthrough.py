"""What serve passes through besides tools: resources, resource templates and prompts, under the same policy.

Resource URIs are namespaced so they route back: `fixture://notes` of server alpha is exposed as
`miroctl://alpha/fixture://notes`, and a template `fixture://items/{item}` as
`miroctl://alpha/fixture://items/{item}`; whatever a host expands it to, the gateway strips the prefix
and asks alpha for the rest, verbatim. With --plain-names, a URI or template only one server offers keeps
its own (hosts read `fixture://notes`, as from the server itself), routed back by who offers it; one that
several servers offer stays namespaced. Prompts are named like tools (alpha__review, or review with
--plain-names). Reading a resource or getting a prompt changes nothing, so they count as read-only: the
blacklist and the server's own `[server, "*"]` rules hide them, read_only mode does not.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote, unquote

from miroctl.base.fetched import Fetched
from miroctl.base.masking import Masker
from miroctl.base.models import ServerSpec, ServerTools, ToolInfo
from miroctl.core import catalog
from miroctl.core.manager import Manager
from miroctl.gateway import subscriptions as subscribing
from miroctl.gateway import toolmap
from miroctl.sessions.pool import Unavailable

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CompleteResult, EmptyResult, LoggingLevel

    from miroctl.gateway.sdk_private import Host

T = TypeVar("T")

SCHEME = "miroctl://"
RESOURCE_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR, REQUEST_TIMEOUT = -32002, -32602, -32603, -32001
EXTRAS = frozenset({"resources", "prompts"})
READ_ONLY = {"readOnlyHint": True}
_EXPRESSION = re.compile(r"\{[^}]*\}")  # an RFC 6570 expression in a URI template


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
        # --plain-names: a URI or template -> the one server offering it (None: several do)
        self.owners: dict[str, str | None] = {}

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

    async def resources(self) -> list[dict[str, object]]:
        return self.masker.data(self._listed(await self.entries(), "resources", "uri"))

    async def templates(self) -> list[dict[str, object]]:
        return self.masker.data(self._listed(await self.entries(), "resource_templates", "uriTemplate"))

    def _listed(self, entries: Iterable[ServerTools], kind: str, key: str) -> list[dict[str, object]]:
        """The allowed resources (or templates) of every server, each under the URI hosts see."""
        pairs = [
            (spec, item)
            for entry, spec in self._with_specs(entries)
            for item in getattr(entry, kind) or ()
            if self.allowed(spec, str(item.get("name", "")), str(item.get(key, "")))
        ]
        self._own([(spec.name, str(item.get(key, ""))) for spec, item in pairs])
        return [{**item, key: self.exposed(spec.name, str(item[key]))} for spec, item in pairs]

    def _own(self, offered: Sequence[tuple[str, str]]) -> None:
        """Remember which server offers each URI (or template) only it offers (--plain-names routes by it)."""
        servers: dict[str, set[str]] = {}
        for server, uri in offered:
            servers.setdefault(uri, set()).add(server)
        for uri, claimants in servers.items():
            self.owners[uri] = next(iter(claimants)) if len(claimants) == 1 else None

    def exposed(self, server: str, uri: str) -> str:
        """The URI hosts see for a server's own: itself with --plain-names when no other server offers it."""
        # a server's own URI that looks like a gateway URI would route elsewhere: it stays namespaced
        plain = self.plain and not uri.startswith(SCHEME) and self.owners.get(uri, server) == server
        return uri if plain else wrap(self.prefix[server], uri)

    def _with_specs(self, entries: Iterable[ServerTools]) -> list[tuple[ServerTools, ServerSpec]]:
        pairs = [(entry, self._spec(entry.server)) for entry in entries]
        return [(entry, spec) for entry, spec in pairs if spec is not None]

    async def route(self, uri: str) -> tuple[ServerSpec, str]:
        """The served server and upstream URI behind a gateway URI; ItemError when there is none."""
        parts = unwrap(uri)
        if parts is None and self.plain:
            parts = await self._plain_route(uri)
        spec = self._spec(self.by_prefix.get(parts[0], "")) if parts else None
        if parts is None or spec is None:
            names = ", ".join(self.by_prefix) or "(none)"
            plain = "a URI one server lists, or " if self.plain else ""
            raise ItemError(
                RESOURCE_NOT_FOUND,
                f"no resource {uri!r}: the gateway's URIs are {plain}{SCHEME}SERVER/URI (SERVER: {names})",
            )
        if not self.allowed(spec, parts[1]):
            raise ItemError(RESOURCE_NOT_FOUND, f"resource {uri!r} is denied by the policy")
        return spec, parts[1]

    async def _plain_route(self, uri: str) -> tuple[str, str] | None:
        """(prefix, URI) of the one server that offers a plain URI, or a template that it expands; with one
        server served, that one. None when no server, or several, could have meant it."""
        if uri not in self.owners:
            entries = await self.entries()
            self._listed(entries, "resources", "uri")
            self._listed(entries, "resource_templates", "uriTemplate")
        server = self.owners.get(uri)
        if server is None and uri not in self.owners:  # a URI two servers list is theirs, not a template's
            matching = {owner for template, owner in self.owners.items() if "{" in template and expands(template, uri)}
            matching = matching if None not in matching else set()
            server = next(iter(matching)) if len(matching) == 1 else None
        if server is None and len(self.specs) == 1:
            server = self.specs[0].name
        return (self.prefix[server], uri) if server is not None else None

    async def read(self, uri: str, timeout: float | None = None) -> dict[str, object]:
        """A resources/read result for a gateway URI: the upstream's contents, their URIs the gateway's."""
        spec, upstream = await self.route(uri)
        fetched = await catalog.read_resource(self.manager, spec.name, upstream, timeout)
        answer(fetched)
        namespaced = unwrap(uri) is not None  # a host that asked by a gateway URI gets gateway URIs back
        contents = [
            {**item, "uri": _within(self.prefix[spec.name], str(item.get("uri", upstream)), namespaced)}
            for item in fetched.content
        ]
        return self.masker.data({"contents": contents})

    async def subscribe(self, uri: str, host: Host, subscriptions: subscribing.Subscriptions) -> None:
        """resources/subscribe: the host hears when the resource changes; its server is subscribed for the first
        host (resources/subscribe before 2026-07-28, a subscriptions/listen stream on it)."""
        spec, upstream = await self.route(uri)
        client = await _subscribable(self.manager, spec.name)
        if not subscriptions.add(spec.name, upstream, host, uri):
            return
        try:
            if _modern(client):
                await subscriptions.follow(spec.name, upstream, client)
            else:
                send = lambda c: subscribing.subscribe(c, upstream)  # noqa: E731
                await _on_server(self.manager, spec.name, "resources/subscribe", send)
        except subscribing.NotFollowed as exc:
            subscriptions.remove(spec.name, upstream, host)
            raise ItemError(INTERNAL_ERROR, str(exc)) from None
        except ItemError:
            subscriptions.remove(spec.name, upstream, host)
            raise

    async def unsubscribe(self, uri: str, host: Host, subscriptions: subscribing.Subscriptions) -> None:
        """resources/unsubscribe: the server is unsubscribed when no host is left subscribed."""
        spec, upstream = await self.route(uri)
        if not subscriptions.remove(spec.name, upstream, host):
            return
        if (spec.name, upstream) in subscriptions.streams:
            subscriptions.unfollow(spec.name, upstream)
        else:
            send = lambda c: subscribing.unsubscribe(c, upstream)  # noqa: E731
            await _on_server(self.manager, spec.name, "resources/unsubscribe", send)

    # ------------------------------------------------------------------------------------------ prompts

    async def prompt_list(self) -> list[dict[str, object]]:
        listed: list[tuple[str, dict[str, object]]] = []
        for entry, spec in self._with_specs(await self.entries()):
            listed += [(spec.name, p) for p in entry.prompts or () if self.allowed(spec, str(p.get("name", "")))]
        self.prompts = toolmap.name_items(
            [(server, str(p["name"])) for server, p in listed], self.separator, self.prefix, self.plain
        )
        exposed = {key: name for name, key in self.prompts.items.items()}
        found = [
            {**p, "name": exposed[(server, str(p["name"]))]}
            for server, p in listed
            if (server, str(p["name"])) in exposed
        ]
        return self.masker.data(found)

    async def prompt(self, name: str, arguments: Mapping[str, str], timeout: float | None = None) -> dict[str, object]:
        """A prompts/get result for an exposed prompt name."""
        if name not in self.prompts.items:
            await self.prompt_list()
        if name not in self.prompts.items:
            raise ItemError(INVALID_PARAMS, f"the gateway has no prompt named {name!r}")
        server, upstream = self.prompts.items[name]
        fetched = await catalog.get_prompt(self.manager, server, upstream, arguments, timeout)
        answer(fetched)
        body: dict[str, object] = {"messages": fetched.content}
        if fetched.description is not None:
            body["description"] = fetched.description
        return self.masker.data(body)

    async def complete(self, params: Mapping[str, object]) -> dict[str, object]:
        """A completion/complete result's `completion`, from the server behind the prompt or template."""
        ref, argument = _object(params["ref"]), _texts(params["argument"])
        if ref.get("type") == "ref/prompt":
            if ref.get("name") not in self.prompts.items:
                await self.prompt_list()
            server, upstream = self.prompts.items.get(str(ref.get("name")), ("", ""))
            if not server:
                raise ItemError(INVALID_PARAMS, f"the gateway has no prompt named {ref.get('name')!r}")
            ref["name"] = upstream
        else:
            spec, upstream = await self.route(str(ref.get("uri", "")))
            server, ref["uri"] = spec.name, upstream
        given = _object(params.get("context")).get("arguments")
        context = _texts(given) if isinstance(given, Mapping) else None
        if not _offers(self.manager, server, "completions"):
            return {"values": [], "hasMore": False}
        result = await _on_server(
            self.manager, server, "completion/complete", lambda client: _complete(client, ref, argument, context)
        )
        return self.masker.data(result.completion.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def set_level(self, level: LoggingLevel) -> None:
        """Pass logging/setLevel on to every served server that is running and declares logging."""
        for spec in self.specs:
            if _offers(self.manager, spec.name, "logging"):
                with suppress(ItemError):
                    await _on_server(self.manager, spec.name, "logging/setLevel", lambda c: _set_level(c, level))


async def _on_server(manager: Manager, server: str, phase: str, send: Callable[[Client], Awaitable[T]]) -> T:
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


def _within(prefix: str, uri: str, namespaced: bool) -> str:
    return wrap(prefix, uri) if namespaced else uri


def expands(template: str, uri: str) -> bool:
    """Whether `uri` could be `template` (RFC 6570) with its expressions filled in: its literal parts, in order.
    No regular expression: a server's template must not make a read cost more than a scan of the URI."""
    first, *middle, last = _EXPRESSION.split(template)
    if not middle and template == first:
        return template == uri
    if len(first) + len(last) > len(uri) or not uri.startswith(first) or not uri.endswith(last):
        return False
    position, end = len(first), len(uri) - len(last)
    for literal in middle:  # each literal at its leftmost place leaves the most room for the rest
        found = uri.find(literal, position, end)
        if found < 0:
            return False
        position = found + len(literal)
    return True


async def _subscribable(manager: Manager, server: str) -> Client:
    """The session's client of a server that offers resource subscriptions; ItemError when it offers none."""
    spec = manager.config.get(server)
    if spec is None:
        raise ItemError(INVALID_PARAMS, f"no server named {server!r}")
    try:
        client = (await manager.handle(spec).connect()).client
    except Unavailable as exc:
        raise ItemError(INTERNAL_ERROR, f"{server}: {exc.failure.message}") from None
    resources = client.server_capabilities.resources if client.server_capabilities is not None else None
    if resources is None or not resources.subscribe:
        raise ItemError(subscribing.METHOD_NOT_FOUND, f"{server} offers no resource subscriptions")
    return client


def _modern(client: Client) -> bool:
    """Whether a session is on protocol 2026-07-28 or later (no resources/subscribe: subscriptions/listen)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


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


async def _complete(
    client: Client, ref: dict[str, object], argument: dict[str, str], context: dict[str, str] | None
) -> CompleteResult:
    import mcp_types as types

    model = types.PromptReference if ref.get("type") == "ref/prompt" else types.ResourceTemplateReference
    return await client.complete(model.model_validate(ref), argument, context)


def _object(value: object) -> dict[str, object]:
    """A JSON object of a host's request (the SDK validated its shape), as a dict; anything else as {}."""
    return {str(key): item for key, item in value.items()} if isinstance(value, Mapping) else {}


def _texts(value: object) -> dict[str, str]:
    """A JSON object of strings (a completion's argument or context), as the SDK validated it."""
    return {key: str(item) for key, item in _object(value).items()}


async def _set_level(client: Client, level: LoggingLevel) -> EmptyResult:
    with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28; older servers still take it
        warnings.simplefilter("ignore")
        return await client.set_logging_level(level)


def _offers(manager: Manager, server: str, capability: str) -> bool:
    """Whether a served server with an open session declares `capability` (completions, logging)."""
    spec = manager.config.get(server)
    connection = manager.handle(spec).connection if spec is not None else None
    capabilities = connection.client.server_capabilities if connection is not None else None
    return capabilities is not None and getattr(capabilities, capability, None) is not None
