"""Resources and prompts: what a server offers besides tools, listed and fetched on the manager's sessions.

`list --resources --prompts` adds a server's resources, resource templates and prompts to its entry;
`read SERVER URI` and `prompt SERVER NAME` fetch one, returning a `Fetched` envelope instead of raising,
with the same error kinds and exit codes as a tool call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

__all__ = ["Fetched", "Sessions", "get_prompt", "offered", "offered_by", "plain", "read_resource"]

from miroctl.base.errors import ErrorKindName
from miroctl.base.fetched import Fetched
from miroctl.base.models import Failure, Phase, ServerSpec, Step
from miroctl.base.text import counted, suggest, unknown_server_hint
from miroctl.config.loader import Config
from miroctl.sessions.exchange import PagingError, TimedOut, every_page, within
from miroctl.sessions.failures import died_during
from miroctl.sessions.frames import unparsable
from miroctl.sessions.pool import ServerHandle, Unavailable, closed
from miroctl.sessions.sdk_session import translated
from miroctl.sessions.session import METHOD_NOT_FOUND, RpcError

if TYPE_CHECKING:
    from mcp import Client
    from pydantic import BaseModel

RESOURCE_NOT_FOUND, INVALID_PARAMS = -32002, -32602
METHODS = {"resources": "resources/list", "resource_templates": "resources/templates/list", "prompts": "prompts/list"}


class Sessions(Protocol):
    """What fetching needs of the manager: the config, and the one session handle per server."""

    config: Config

    def handle(self, spec: ServerSpec) -> ServerHandle: ...


# ---------------------------------------------------------------------------------------------- listing


SECTIONS = {"resources": ("resources", "resource_templates"), "prompts": ("prompts",)}
_LISTERS = {"resources": "list_resources", "resource_templates": "list_resource_templates", "prompts": "list_prompts"}


async def offered(client: Client, extras: frozenset[str]) -> dict[str, tuple[dict[str, object], ...]]:
    """The resources, resource templates and prompts a server lists (every page), as JSON-ready dicts."""
    return {key: await listed(client, key) for extra in sorted(extras) for key in SECTIONS[extra]}


async def listed(client: Client, key: str) -> tuple[dict[str, object], ...]:
    """One section (resources, resource_templates, prompts): a server that does not declare the capability
    offers none; it is not asked."""
    capabilities = client.server_capabilities
    capability = "prompts" if key == "prompts" else "resources"
    if capabilities is None or getattr(capabilities, capability) is None:
        return ()
    return await _every_page(getattr(client, _LISTERS[key]), key)


async def offered_by(
    handle: ServerHandle, extras: frozenset[str]
) -> tuple[dict[str, tuple[dict[str, object], ...]], dict[str, Failure]]:
    """`offered` on a handle's session, each section on its own under one startup timeout: what was listed,
    and why each section that failed did (its tools and the other sections are still the server's)."""
    found: dict[str, tuple[dict[str, object], ...]] = {}
    failures: dict[str, Failure] = {}
    if not extras:
        return found, failures
    connection = await handle.connect()
    deadline = time.monotonic() + handle.startup_timeout
    last: Failure | None = None
    for key in (key for extra in sorted(extras) for key in SECTIONS[extra]):
        if last is not None and (not handle.connected or time.monotonic() >= deadline):
            failures[key] = last  # the server is gone, or the time is up: the same reason, not a new request
            continue
        try:
            left = max(0.0, deadline - time.monotonic())
            found[key] = await handle.ask(connection, METHODS[key], left, partial(listed, key=key))
        except Unavailable as exc:
            failures[key] = last = exc.failure
    return found, failures


async def _every_page(method: Callable[..., Awaitable[Any]], items: str) -> tuple[dict[str, object], ...]:
    """Every item of one listing; a server that answers "method not found" offers none (many servers that
    have resources do not implement resources/templates/list)."""
    try:
        async with translated():
            found, _ = await every_page(
                lambda cursor: method(cursor=cursor),
                lambda page: [plain(item) for item in getattr(page, items)],
                METHODS[items],
            )
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return ()
        raise
    return tuple(found)


def plain(model: BaseModel) -> dict[str, object]:
    """An SDK model as the JSON the server sent (camelCase keys, no empty fields)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# ---------------------------------------------------------------------------------------------- fetching


async def read_resource(manager: Sessions, server: str, uri: str, timeout: float | None = None) -> Fetched:
    """Read one resource of one server."""

    async def fetch(client: Client) -> Fetched:
        result = await client.read_resource(uri)
        return Fetched(server, "resource", uri, content=[plain(item) for item in result.contents])

    return await _fetch(manager, Fetched(server, "resource", uri), timeout, fetch)


async def get_prompt(
    manager: Sessions, server: str, name: str, arguments: Mapping[str, str], timeout: float | None = None
) -> Fetched:
    """Get one prompt of one server, filled in with `arguments`; its name and required arguments are
    checked against the server's prompts/list first, so a typo gets suggestions and nothing is sent."""

    async def fetch(client: Client) -> Fetched:
        listed = (await offered(client, frozenset({"prompts"})))["prompts"]
        prompt = next((p for p in listed if p.get("name") == name), None)
        if prompt is None:
            names = [str(p.get("name", "")) for p in listed]
            hint = suggest(name, names) or (
                f"it has {counted(len(names), 'prompt')}: miroctl list {server} --prompts"
                if names
                else "it lists no prompts"
            )
            return _failed(
                Fetched(server, "prompt", name), "not_found", f"server {server!r} has no prompt {name!r}", hint
            )
        declared = [a for a in _listed(prompt.get("arguments")) if isinstance(a, dict)]
        missing = [str(a["name"]) for a in declared if a.get("required") and a["name"] not in arguments]
        if missing:
            wanted = ", ".join(f"{a['name']}{'*' if a.get('required') else ''}" for a in declared)
            return _failed(
                Fetched(server, "prompt", name),
                "usage",
                f"{name}: missing required {'argument' if len(missing) == 1 else 'arguments'} {', '.join(missing)}",
                f"{name} takes {wanted} (* required)",
            )
        result = await client.get_prompt(name, dict(arguments))
        return Fetched(
            server, "prompt", name, content=[plain(m) for m in result.messages], description=result.description
        )

    return await _fetch(manager, Fetched(server, "prompt", name), timeout, fetch)


async def _fetch(
    manager: Sessions, asked: Fetched, timeout: float | None, fetch: Callable[[Client], Awaitable[Fetched]]
) -> Fetched:
    """Find the server, open its session and run `fetch` under the timeout; every failure becomes data."""
    started = time.perf_counter()
    spec = manager.config.get(asked.server_name or "")
    if spec is None:
        names = [s.name for s in manager.config.servers]
        outcome = _failed(
            asked,
            "not_found",
            f"no server named {asked.server_name!r}",
            unknown_server_hint(asked.server_name or "", names),
        )
    else:
        asked.server_name = spec.name
        outcome = await _on_session(
            manager, spec, asked, timeout or spec.timeout or manager.config.profile.timeout, fetch
        )
    outcome.duration_ms = (time.perf_counter() - started) * 1000
    return outcome


async def _on_session(
    manager: Sessions, spec: ServerSpec, asked: Fetched, timeout: float, fetch: Callable[[Client], Awaitable[Fetched]]
) -> Fetched:
    handle = manager.handle(spec)
    outcome = await _asked_on_session(handle, spec, asked, timeout, fetch)
    failure_kind = outcome.failure.kind if outcome.failure is not None else outcome.error_kind
    handle.stage("done" if outcome.ok else "failed", "" if outcome.ok else failure_kind or "error")
    return outcome


async def _asked_on_session(
    handle: ServerHandle,
    spec: ServerSpec,
    asked: Fetched,
    timeout: float,
    fetch: Callable[[Client], Awaitable[Fetched]],
) -> Fetched:
    try:
        connection = await handle.connect()
    except Unavailable as exc:
        outcome = _failed(asked, exc.failure.error_kind, exc.failure.message, exc.failure.hint)
        outcome.failure = exc.failure
        return outcome
    handle.stage("calling", "resources/read" if asked.what == "resource" else "prompts/get")

    async def fetched() -> Fetched:
        async with translated():
            return await fetch(connection.client)

    answer = await within(connection.wire, timeout, fetched)
    if isinstance(answer, BaseException):
        return await _request_failed(handle, asked, answer)
    if isinstance(answer, TimedOut):
        return _failed(
            asked,
            "timeout",
            f"{asked.what} {asked.name} did not arrive within {timeout:g}s",
            "raise --timeout if the server is just slow",
        )
    answer.server_name = spec.name
    return answer


async def _request_failed(handle: ServerHandle, asked: Fetched, exc: BaseException) -> Fetched:
    if closed(exc):
        wire = await handle.lost()
        phase: Phase = "prompts" if asked.what == "prompt" else "resources"
        failure = died_during(wire, Step(phase, f"the {asked.what} request")) if wire else None
        outcome = _failed(asked, "unavailable", failure.message if failure else "the session closed")
        outcome.failure = failure
        return outcome
    if isinstance(exc, PagingError):
        return _failed(asked, "failed", f"{asked.server_name}: {exc}", "the server's nextCursor never ends")
    if not isinstance(exc, RpcError):  # an answer the SDK could not take: the server's fault
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return _failed(asked, "failed", f"the answer to the {asked.what} request was not valid: {first}")
    code, message = exc.code, exc.message or str(exc)
    cause = unparsable(code, message)
    if cause is not None:
        return _failed(asked, "failed", f"the answer to the {asked.what} request could not be parsed: {cause}")
    if code == METHOD_NOT_FOUND:
        return _failed(
            asked,
            "not_found",
            f"server {asked.server_name!r} offers no {asked.what}s",
            f"miroctl list {asked.server_name} --{asked.what}s shows what it offers",
        )
    if code in (RESOURCE_NOT_FOUND, INVALID_PARAMS) and asked.what == "resource":
        return _failed(
            asked,
            "not_found",
            f"{asked.server_name}: {message}",
            f"miroctl list {asked.server_name} --resources shows what it offers",
        )
    return _failed(asked, "failed", f"server answered with error {code}: {message}")


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _failed(asked: Fetched, kind: ErrorKindName, message: str, hint: str | None = None) -> Fetched:
    return Fetched(asked.server_name, asked.what, asked.name, error=message, error_kind=kind, hint=hint)
