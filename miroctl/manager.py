"""The pool of servers: list tools concurrently with isolated failures, execute calls into envelopes.

`Manager` never raises to its caller for a server's or a call's failure: `list_tools` gives a
ServerTools per server, `call` gives a CallOutcome. Use it as an async context manager; leaving it
closes every session concurrently and kills whatever the servers left running.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup

from miroctl import args as arguments_
from miroctl.config import Config
from miroctl.errors import MiroctlError
from miroctl.failures import CONNECTION_CLOSED, REQUEST_TIMEOUT, died_during, leaf
from miroctl.models import CallOutcome, ServerSpec, ServerTools, ToolInfo
from miroctl.policy import Policy
from miroctl.pool import ServerHandle, Unavailable
from miroctl.routing import Route, Router
from miroctl.transports import sweep_orphans

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
EventFn = Callable[[str, Mapping[str, Any]], None]


@dataclass
class CallRequest:
    """One call as the user asked for it: names may be wrong, arguments still raw."""

    server: str | None
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    pairs: Sequence[str] = ()
    timeout: float | None = None
    autocorrect: bool = True
    progress: ProgressFn | None = None


class Manager:
    """Sessions to the configured servers, shared by every list and call made through it."""

    def __init__(self, config: Config, *, policy: Policy | None = None, concurrency: int | None = None,
                 on_event: EventFn | None = None) -> None:
        self.config = config
        self.policy = policy or Policy.from_profile(config.profile)
        self._limiter = anyio.CapacityLimiter(concurrency or config.profile.concurrency)
        self._handles: dict[str, ServerHandle] = {}
        self._tg: TaskGroup | None = None
        self._on_event = on_event
        self.router = Router(config, self.policy, self.tools_of, self.find_tool)

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        for handle in self._handles.values():
            handle.signal_close()
        try:
            return await self._tg.__aexit__(*exc_info)  # type: ignore[union-attr]
        finally:
            with anyio.CancelScope(shield=True):
                await self._cleanup()

    async def _cleanup(self) -> None:
        started_stdio = any(h.starts and h.spec.transport == "stdio" for h in self._handles.values())
        for handle in self._handles.values():
            handle.discard_logs()
        if started_stdio:
            await anyio.to_thread.run_sync(sweep_orphans)

    def handle(self, spec: ServerSpec) -> ServerHandle:
        if spec.name not in self._handles:
            assert self._tg is not None, "use the Manager as an async context manager"
            self._handles[spec.name] = ServerHandle(spec, self._tg, self.config.profile.startup_timeout)
        return self._handles[spec.name]

    def emit(self, event: str, **fields: Any) -> None:
        if self._on_event is not None:
            self._on_event(event, fields)

    # ------------------------------------------------------------------------------------------ listing

    async def list_tools(self, specs: Sequence[ServerSpec] | None = None) -> list[ServerTools]:
        """Every selected server's visible tools, concurrently (bounded); failures become entries."""
        specs = list(specs) if specs is not None else self.config.select()
        results: list[ServerTools | None] = [None] * len(specs)

        async def one(index: int, spec: ServerSpec) -> None:
            results[index] = await self.server_tools(spec)

        async with anyio.create_task_group() as tg:
            for index, spec in enumerate(specs):
                tg.start_soon(one, index, spec)
        return [r for r in results if r is not None]

    async def server_tools(self, spec: ServerSpec) -> ServerTools:
        started = time.perf_counter()
        handle = self.handle(spec)
        try:
            async with self._limiter:
                tools = await self.tools_of(spec)
        except Unavailable as exc:
            self.emit("server_failed", server=spec.name, failure=exc.failure.to_dict())
            return ServerTools(spec.name, spec.transport, failure=exc.failure, duration_ms=_ms(started))
        connection = await handle.connect()
        return ServerTools(
            spec.name, spec.transport, tools=tuple(t for t in tools if self.policy.visible(spec, t)),
            duration_ms=_ms(started), protocol_version=connection.protocol_version,
            server_version=connection.server_version,
        )

    async def tools_of(self, spec: ServerSpec) -> tuple[ToolInfo, ...]:
        return await self.handle(spec).tools()

    async def find_tool(self, tool: str, exclude: Sequence[str] = ()) -> list[ToolInfo]:
        """The visible tools named `tool` on the default servers (unavailable servers are skipped)."""
        specs = [s for s in self.config.select() if s.name not in exclude]
        listed = await self.list_tools(specs)
        return [t for entry in listed for t in entry.tools if t.name == tool]

    # ------------------------------------------------------------------------------------------ calling

    async def call(self, request: CallRequest) -> CallOutcome:
        """Route, validate, decide, execute: always an envelope, never an exception."""
        started = time.perf_counter()
        self.emit("call_start", server=request.server, tool=request.tool)
        try:
            outcome = await self._call(request)
        except MiroctlError as exc:
            outcome = CallOutcome(request.server, request.tool, error=exc.message, error_kind=exc.kind,
                                  hint=exc.hint, candidates=list(getattr(exc, "candidates", [])))
        except Unavailable as exc:
            outcome = _unavailable(request.server, request.tool, exc)
        outcome.duration_ms = _ms(started)
        self.emit("call_end", outcome=outcome.to_dict())
        return outcome

    async def _call(self, request: CallRequest) -> CallOutcome:
        route = await self.router.resolve(request.server, request.tool, request.autocorrect)
        if route.corrected_from is not None or request.server is None:
            self.emit("autocorrect", given=request.server, server=route.spec.name, tool=route.tool.name)
        values = arguments_.build(route.tool.input_schema, request.arguments, request.pairs)
        arguments_.validate(route.tool, values)
        decision = self.policy.decide(route.spec, route.tool.name, route.tool, values)
        self.emit("decision", server=route.spec.name, tool=route.tool.name, decision=decision.to_dict())
        if not decision.allowed:
            return CallOutcome(route.spec.name, route.tool.name, error=decision.message, error_kind="denied",
                               hint=f"reason: {decision.reason}", decision=decision.to_dict())
        outcome = await self.invoke(route, values, request)
        if request.autocorrect and _says_unknown_tool(outcome):
            rerouted = await self.router.reroute(route)
            if rerouted is not None:
                outcome = await self.invoke(rerouted, values, request)
        return outcome

    async def invoke(self, route: Route, values: Mapping[str, Any], request: CallRequest) -> CallOutcome:
        """Send one call on the route's session under its timeout and turn the answer into an envelope."""
        spec, tool = route.spec, route.tool.name
        handle = self.handle(spec)
        connection = await handle.connect()
        timeout = request.timeout or spec.timeout or self.config.profile.timeout
        with anyio.move_on_after(timeout) as waited:
            try:
                result = await connection.client.call_tool(tool, dict(values), progress_callback=request.progress)
            except Exception as exc:  # noqa: BLE001 - every session failure is sorted into an envelope below
                return await self._call_failed(route, handle, leaf(exc), timeout)
        if waited.cancelled_caught:
            connection.wire.hurry = True
            return _timed_out(route, timeout)
        outcome = outcome_from_result(spec.name, tool, result)
        outcome.corrected_from = route.corrected_from
        return outcome

    async def _call_failed(self, route: Route, handle: ServerHandle, exc: BaseException,
                           timeout: float) -> CallOutcome:
        code = getattr(exc, "code", None)
        if code == REQUEST_TIMEOUT:
            return _timed_out(route, timeout)
        if code == CONNECTION_CLOSED or isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError)):
            wire = await handle.lost()
            failure = died_during(wire, f"the call to {route.tool.name}") if wire else None
            outcome = _unavailable(route.spec.name, route.tool.name, Unavailable(failure))  # type: ignore[arg-type]
        elif code is not None:
            outcome = CallOutcome(route.spec.name, route.tool.name, error_kind="failed",
                                  error=f"server answered with error {code}: {getattr(exc, 'message', exc)}")
        else:
            raise exc
        outcome.corrected_from = route.corrected_from
        return outcome


def outcome_from_result(server: str, tool: str, result: Any) -> CallOutcome:
    """An SDK CallToolResult as the envelope: text joined, blocks and structured content kept."""
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content or []]
    texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    texts += [b["resource"]["text"] for b in blocks
              if b.get("type") == "resource" and isinstance(b.get("resource", {}).get("text"), str)]
    structured = result.structured_content
    text = "\n".join(texts)
    if not texts and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    outcome = CallOutcome(server, tool, content=blocks, structured_content=structured, is_error=bool(result.is_error))
    if result.is_error:
        outcome.error, outcome.error_kind = text or "the tool reported an error without a message", "tool_error"
    else:
        outcome.result = text
    return outcome


def _says_unknown_tool(outcome: CallOutcome) -> bool:
    return outcome.is_error and "Unknown tool:" in (outcome.error or "")


def _timed_out(route: Route, timeout: float) -> CallOutcome:
    return CallOutcome(route.spec.name, route.tool.name, error_kind="timeout", corrected_from=route.corrected_from,
                       error=f"{route.tool.name} did not answer within {timeout:g}s",
                       hint="raise it with --timeout, or the server's timeout setting")


def _unavailable(server: str | None, tool: str, exc: Unavailable) -> CallOutcome:
    failure = exc.failure
    return CallOutcome(server, tool, error=failure.message, error_kind="unavailable", hint=failure.hint,
                       failure=failure)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
