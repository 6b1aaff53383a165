"""The pool of servers: list tools concurrently with isolated failures, execute calls into envelopes.

`Manager` never raises to its caller for a server's or a call's failure: `list_tools` gives a
ServerTools per server, `call` gives a CallOutcome. Use it as an async context manager; leaving it
closes every session concurrently and kills whatever the servers left running.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup

from miroctl.base.errors import MiroctlError, NotFound, kind_name
from miroctl.base.masking import Masker
from miroctl.base.models import CallOutcome, CallRequest, Failure, Fallback, ServerSpec, ServerTools, Step, ToolInfo
from miroctl.config.loader import Config
from miroctl.core import arguments as arguments_
from miroctl.core import catalog, envelopes, truncation
from miroctl.core.calllog import CallLog
from miroctl.core.children import child_spec
from miroctl.core.fallbacks import TRIGGER_KINDS, FallbackError, MarkItDownFallback, url_argument
from miroctl.core.routing import Denied, Route, Router
from miroctl.policy.decisions import Decision, Policy, ToolMeta
from miroctl.sessions.connectors import SDK, Connector
from miroctl.sessions.exchange import TimedOut, within
from miroctl.sessions.failures import died_during
from miroctl.sessions.frames import unparsable
from miroctl.sessions.pool import ServerHandle, Unavailable, closed
from miroctl.sessions.processes import RUN_ID, sweep_orphans
from miroctl.sessions.recording import Recorder
from miroctl.sessions.session import REQUEST_TIMEOUT, InvalidResult, RpcError
from miroctl.sessions.stages import StageClock, StageFn
from miroctl.sessions.tokens import stored_secrets
from miroctl.sessions.transports import Relay

EventFn = Callable[[str, Mapping[str, object]], None]


@dataclass(frozen=True)
class Confirmation:
    """A question for whoever can say yes: may this tool run with these (masked) arguments?"""

    server: str
    tool: str
    arguments: Mapping[str, object]
    decision: Decision


@dataclass(frozen=True)
class Answer:
    """A confirm callback's answer that says who said yes, or why the answer is no."""

    yes: bool
    by: str = "prompt"  # the envelope's confirmed_by
    why: str = "the answer was no"  # how the refusal's message ends


# True or False, an Answer, or None when no one could be asked (as if there were no callback).
ConfirmFn = Callable[[Confirmation], Awaitable[bool | Answer | None]]


class Manager:
    """Sessions to the configured servers, shared by every list and call made through it."""

    def __init__(
        self,
        config: Config,
        *,
        policy: Policy | None = None,
        concurrency: int | None = None,
        on_event: EventFn | None = None,
        confirm: ConfirmFn | None = None,
        log_path: str | None = None,
        task_id: str | None = None,
        run_id: str | None = None,
        follow_changes: bool = False,
        record_path: str | None = None,
        stages: StageFn | None = None,
        connector: Connector = SDK,
        masker: Masker | None = None,
        stop_grace: float | None = None,
    ) -> None:
        """`stages` hears each server's progress (starting, initialising, listing, calling, done, failed);
        `confirm` answers mode ask's questions, `log_path` gets the call log, `task_id` goes to servers;
        with `follow_changes`, sessions follow their servers' tool-list changes (see `next_change`);
        `record_path` gets every server's JSON-RPC traffic (--record); `connector` opens every session: the SDK's
        client (`connectors.SDK`), or the lean one wherever it serves (`connectors.LEAN`: a cold list or call
        that needs no more of a session never imports the SDK); `masker` masks what the call log, the record,
        kept outputs and mode ask's questions get (the command line's, which masks its stdout): by default the
        config's secrets and the OAuth tokens stored for its servers. `stop_grace` is how long each stdio server may
        take to exit once its stdin is closed, before it is signalled (None: transports.EOF_GRACE)."""
        # `run_id` (processes.sub_run_id) marks this Manager's stdio servers apart from others in the process,
        # so its sweep at exit leaves theirs alone (a gateway's check must not stop the served sessions).
        # Without `confirm`, ask mode means denied unless the policy assumes yes (a gateway with no one to ask).
        # Without `log_path`, the profile's `log` is used; without `task_id`, the config's or miroctl's TASK_ID.
        self.config = config
        self.policy = policy or Policy.from_profile(config.profile)
        self._limiter = anyio.CapacityLimiter(concurrency or config.profile.concurrency)
        self._handles: dict[str, ServerHandle] = {}
        self._tg: TaskGroup | None = None
        self._exit = AsyncExitStack()
        self._on_event = on_event
        self.router = Router(config, self.policy, self.tools_of, self.find_tool)
        self.masker = masker or Masker(config.secrets() | stored_secrets(s.url for s in config.servers if s.url))
        self.fallback = MarkItDownFallback.from_section(config.profile.sections.markitdown)
        self.task_id = task_id
        self.confirm = confirm  # a gateway puts its own here: its hosts are asked (gateway/approval.py)
        self._log_path = log_path or config.profile.sections.log
        self._log: CallLog | None = None
        self._exclusive_locks: dict[str, anyio.Lock] = {}
        self.run_id = run_id
        self.follow_changes = follow_changes
        self._changed: anyio.Event | None = None
        self.relay: Relay | None = None  # a gateway's: servers' own requests go to its hosts (set before listing)
        self._record_path = record_path
        self._recorder: Recorder | None = None
        self.stages = StageClock(stages)
        self.connector = connector
        self.stop_grace = stop_grace

    @property
    def log_path(self) -> str | None:
        return self._log_path

    async def __aenter__(self) -> Self:
        # Leaving runs these in reverse: tell every session to close, wait for their tasks, sweep what the
        # servers left running (even when cancelled), close the log.
        async with AsyncExitStack() as stack:
            if self._log_path:
                self._log = CallLog(self._log_path, self.masker, task_id=self.task_id or os.environ.get("TASK_ID"))
                stack.callback(self._log.close)
            if self._record_path:
                self._recorder = Recorder(self._record_path, self.masker)
                stack.callback(self._recorder.close)
            stack.push_async_callback(self._cleanup)
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._close_sessions)
            self._changed = anyio.Event()
            self._exit = stack.pop_all()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._exit.__aexit__(kind, exc, tb)

    def _close_sessions(self) -> None:
        for handle in self._handles.values():
            handle.signal_close()

    async def _cleanup(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._sweep()

    async def _sweep(self) -> None:
        started_stdio = any(h.starts and h.spec.transport == "stdio" for h in self._handles.values())
        for handle in self._handles.values():
            handle.discard_logs()
        if started_stdio:
            await anyio.to_thread.run_sync(sweep_orphans, self.run_id or RUN_ID)

    def handle(self, spec: ServerSpec) -> ServerHandle:
        if spec.name not in self._handles:
            assert self._tg is not None, "use the Manager as an async context manager"
            following = self._tools_changed if self.follow_changes else None
            self._handles[spec.name] = ServerHandle(
                self._child_spec(spec),
                self._tg,
                self.config.profile.startup_timeout,
                on_event=self.emit,
                on_tools_changed=following,
                relay=self.relay,
                recorder=self._recorder,
                stages=self.stages,
                connector=self.connector,
                stop_grace=self.stop_grace,
            )
        return self._handles[spec.name]

    def _tools_changed(self, server: str) -> None:
        self.emit("tools_changed", server=server)
        if self._changed is not None:
            self._changed.set()

    async def next_change(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a followed server to announce a new tool list; True if one did
        since the last wait. Its cached tools are gone already: the next listing asks it again."""
        assert self._changed is not None, "use the Manager as an async context manager"
        with anyio.move_on_after(timeout):
            await self._changed.wait()
        if not self._changed.is_set():
            return False
        self._changed = anyio.Event()
        return True

    def _child_spec(self, spec: ServerSpec) -> ServerSpec:
        return child_spec(spec, self.config, self.policy, task_id=self.task_id, run_id=self.run_id)

    def emit(self, event: str, **fields: object) -> None:
        if self._log is not None:
            self._log.write(event, fields)
        if self._on_event is not None:
            self._on_event(event, fields)

    # ------------------------------------------------------------------------------------------ listing

    async def list_tools(
        self,
        specs: Sequence[ServerSpec] | None = None,
        extras: frozenset[str] = frozenset(),
        on_entry: Callable[[ServerTools], None] | None = None,
    ) -> list[ServerTools]:
        """Every selected server's visible tools, concurrently (bounded); failures become entries.
        `extras` ("resources", "prompts") adds what the servers offer besides tools; `on_entry` hears each
        server's entry as soon as it is there (what an interrupted listing can still show)."""
        specs = list(specs) if specs is not None else self.config.select()
        results: list[ServerTools | None] = [None] * len(specs)

        async def one(index: int, spec: ServerSpec) -> None:
            results[index] = entry = await self.server_tools(spec, extras)
            if on_entry is not None:
                on_entry(entry)

        async with anyio.create_task_group() as tg:
            for index, spec in enumerate(specs):
                tg.start_soon(one, index, spec)
        return [r for r in results if r is not None]

    async def server_tools(self, spec: ServerSpec, extras: frozenset[str] = frozenset()) -> ServerTools:
        started = time.perf_counter()
        handle = self.handle(spec)
        # A server its config keeps from starting fails at once: it needs no start slot to wait for.
        slot = self._limiter if spec.config_error(os.environ) is None else nullcontext()
        try:
            async with slot:
                tools = await self.tools_of(spec)
                offered, unlisted = await catalog.offered_by(handle, extras)
        except Unavailable as exc:
            self.emit("server_failed", server=spec.name, failure=exc.failure.to_dict())
            handle.stage("failed", exc.failure.kind)
            return ServerTools(
                spec.name, spec.transport, failure=exc.failure, duration_ms=_ms(started), python=spec.python
            )
        handle.stage("done")
        connection = handle.connection
        return ServerTools(
            spec.name,
            spec.transport,
            tools=tuple(t for t in tools if self.policy.visible(spec, t)),
            duration_ms=_ms(started),
            protocol_version=connection.protocol_version if connection else None,
            server_version=connection.server_version if connection else None,
            instructions=connection.instructions if connection else None,
            resources=offered.get("resources"),
            resource_templates=offered.get("resource_templates"),
            prompts=offered.get("prompts"),
            rejected=handle.rejected,
            list_failures=unlisted,
            python=spec.python,
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
        self.emit("call_start", server=request.server, tool=request.tool, arguments=envelopes.raw_arguments(request))
        try:
            outcome = await self._call(request)
        except MiroctlError as exc:
            outcome = CallOutcome(
                request.server,
                request.tool,
                error=exc.message,
                error_kind=kind_name(exc.kind),
                hint=exc.hint,
                candidates=list(exc.candidates) if isinstance(exc, NotFound) else [],
            )
            if isinstance(exc, Denied):  # denied before the server was asked for its tools
                outcome.decision = envelopes.decision_record(exc.decision)
                self.emit("decision", server=request.server, tool=request.tool, **outcome.decision.to_dict())
        except Unavailable as exc:
            outcome = envelopes.unavailable(request.server, request.tool, exc)
        outcome.duration_ms = _ms(started)
        self._call_finished(outcome)
        if self._log is not None or self._on_event is not None:  # building these costs a copy of the result
            event, fields = envelopes.log_summary(outcome)
            self.emit(event, **fields)
            self.emit("call_end", outcome=outcome.to_dict())
        return outcome

    def _call_finished(self, outcome: CallOutcome) -> None:
        """The called server's last stage: done, or failed with the class of what went wrong."""
        server = outcome.server_name
        if server is None or not self.stages.started(server):
            return
        failure_kind = outcome.failure.kind if outcome.failure is not None else outcome.error_kind
        self.stages(server, "done" if outcome.ok else "failed", "" if outcome.ok else failure_kind or "error")

    async def _call(self, request: CallRequest) -> CallOutcome:
        early = self.policy.check_urls(envelopes.raw_arguments(request))
        if early is not None:  # before any server is started or asked
            self.emit("decision", server=request.server, tool=request.tool, **early.to_dict())
            return envelopes.denied(request.server, request.tool, early)
        arguments_.prepare()  # while a cold server still boots, not after it answers
        route = await self.router.resolve(request.server, request.tool, request.autocorrect)
        if route.corrected_from is not None or request.server is None:
            self.emit("autocorrect", given=request.server, server=route.spec.name, tool=route.tool.name)
        values = arguments_.build(route.tool.input_schema, request.arguments, request.pairs)
        values, notes = arguments_.lenient(route.tool, values)
        notes += arguments_.validate(route.tool, values)
        decision, unanswered = await self._decide(route, values)
        if not decision.allowed:
            outcome = envelopes.denied(route.spec.name, route.tool.name, decision, unanswered=unanswered)
            self._mark_correction(outcome, route)
            return outcome
        outcome = await self._execute(route, values, request)
        if decision.confirmed_by:  # the envelope says who said yes
            outcome.decision = envelopes.decision_record(decision)
        if request.autocorrect and envelopes.says_unknown_tool(outcome):
            rerouted = await self.router.reroute(route)
            if rerouted is not None:
                route = rerouted
                outcome = await self.invoke(rerouted, values, request)
        outcome = await self._fall_back(route, values, request, outcome)
        outcome.notes[:0] = notes
        self._mark_correction(outcome, route)
        return outcome

    def _mark_correction(self, outcome: CallOutcome, route: Route) -> None:
        given = route.corrected_from
        envelopes.mark_correction(outcome, route, given is not None and self.config.get(given) is not None)

    async def _decide(self, route: Route, values: Mapping[str, object]) -> tuple[Decision, bool]:
        """The policy's decision, with mode ask's question put to the confirm callback; and whether the
        question went unanswered for want of anyone to ask."""
        decision, unanswered = self.policy.decide(route.spec, route.tool.name, route.tool, values), False
        if decision.needs_confirmation:
            decision, unanswered = await self._confirmation(route, values, decision)
        self.emit(
            "decision", server=route.spec.name, tool=route.tool.name, arguments=dict(values), **decision.to_dict()
        )
        return decision, unanswered

    async def _confirmation(
        self, route: Route, values: Mapping[str, object], decision: Decision
    ) -> tuple[Decision, bool]:
        if self.policy.assume_yes:
            return decision.confirmed("yes"), False
        question = Confirmation(route.spec.name, route.tool.name, self.masker.data(dict(values)), decision)
        answer = await self.confirm(question) if self.confirm is not None else None
        if answer is None:
            return decision.refused(f"{decision.message}, and none was given"), True
        if not isinstance(answer, Answer):
            answer = Answer(answer)
        if answer.yes:
            return decision.confirmed(answer.by), False
        return decision.refused(f"{decision.message}, and {answer.why}"), False

    async def _execute(self, route: Route, values: Mapping[str, object], request: CallRequest) -> CallOutcome:
        """Invoke; after a lost connection, once more only if repeating cannot do harm."""
        meta = self.policy.meta(route.spec, route.tool.name, route.tool)
        async with self._exclusive(route.spec, meta):
            outcome = await self.invoke(route, values, request)
            if outcome.error_kind == "unavailable" and meta.retry_safe:
                self.emit("call_retry", server=route.spec.name, tool=route.tool.name, reason=outcome.error)
                outcome = await self.invoke(route, values, request)
        return outcome

    @asynccontextmanager
    async def _exclusive(self, spec: ServerSpec, meta: ToolMeta) -> AsyncIterator[None]:
        """Tools marked concurrency_safe: false run one at a time per server."""
        if meta.concurrency_safe:
            yield
            return
        async with self._exclusive_locks.setdefault(spec.name, anyio.Lock()):
            yield

    async def _fall_back(
        self, route: Route, values: Mapping[str, object], request: CallRequest, outcome: CallOutcome
    ) -> CallOutcome:
        """A failed scrape-type call answered by converting its URL locally with MarkItDown."""
        if outcome.ok or outcome.error_kind not in TRIGGER_KINDS or not self.fallback.enabled:
            return outcome
        url = url_argument(values) if self.policy.is_scrape(route.tool.name) else None
        if url is None:
            return outcome
        failed = Fallback("markitdown", url, outcome.error, outcome.error_kind, ok=False)
        try:
            text = await self.fallback.convert(url, self.policy.url_rules)
        except FallbackError as exc:
            outcome.fallback = replace(failed, error=str(exc))
            self.emit("fallback", server=route.spec.name, tool=route.tool.name, **outcome.fallback.to_dict())
            return outcome
        converted_ok = replace(failed, ok=True)
        record = {key: value for key, value in converted_ok.to_dict().items() if key != "ok"}
        self.emit("fallback", server=route.spec.name, tool=route.tool.name, ok=True, **record)
        converted = await self._outcome(route, envelopes.text_result(text), request)
        converted.fallback = converted_ok
        return converted

    async def invoke(self, route: Route, values: Mapping[str, object], request: CallRequest) -> CallOutcome:
        """Send one call on the route's session under its timeout and turn the answer into an envelope."""
        spec, tool = route.spec, route.tool.name
        handle = self.handle(spec)
        connection = await handle.connect()
        if connection.wire.stdout_eof:  # the server went away since the last call: nothing was sent yet
            await handle.lost()
            connection = await handle.connect()
        timeout = request.timeout or spec.timeout or self.config.profile.timeout
        handle.stage("calling", tool)
        answer = await within(
            connection.wire, timeout, lambda: handle.call_tool(connection, tool, dict(values), request.progress)
        )
        if isinstance(answer, TimedOut):
            return envelopes.timed_out(route, timeout)
        if isinstance(answer, BaseException):
            return await self._call_failed(route, handle, answer, timeout)
        return await self._outcome(route, answer, request)

    async def _outcome(self, route: Route, result: dict[str, object], request: CallRequest) -> CallOutcome:
        """The envelope of a CallToolResult (JSON): the whole text to --output first, then the max_result_chars cut."""
        output, notes = None, []
        if request.output and not result.get("isError"):
            try:
                output = await anyio.to_thread.run_sync(truncation.write_kept, request.output, result, self.masker)
            except OSError as exc:  # not even a temp file: the result is shown instead, as without --output
                notes.append(f"cannot write {request.output} nor a temp file ({exc.strerror or exc}): shown here")
        limit = self.policy.result_limit(route.spec, route.tool.name)
        if limit is not None and result.get("isError"):  # a reason is worth more room than a result
            limit = max(limit, truncation.ERROR_MIN_CHARS)
        truncated = truncation.limit_result(result, limit)
        outcome = envelopes.outcome_from_result(route.spec.name, route.tool.name, result)
        outcome.corrected_from = route.corrected_from
        outcome.truncated, outcome.output = truncated, output
        outcome.notes.extend(notes)
        handle = self.handle(route.spec)
        if route.spec.persistent and handle.restarted:
            handle.restarted = False
            outcome.notes.append(
                f"{route.spec.name} was restarted after its session was lost; its state started afresh"
            )
        return outcome

    async def _call_failed(self, route: Route, handle: ServerHandle, exc: BaseException, timeout: float) -> CallOutcome:
        if isinstance(exc, RpcError) and exc.code == REQUEST_TIMEOUT:
            return envelopes.timed_out(route, timeout)
        if closed(exc):
            wire = await handle.lost()
            step = Step("call", f"the call to {route.tool.name}")
            failure = died_during(wire, step) if wire else Failure("crashed", f"the session closed during {step}")
            outcome = envelopes.unavailable(route.spec.name, route.tool.name, Unavailable(failure))
        else:
            outcome = CallOutcome(route.spec.name, route.tool.name, error_kind="failed", error=_refused(route, exc))
        outcome.corrected_from = route.corrected_from
        return outcome


def _refused(route: Route, exc: BaseException) -> str:
    """Why a call got no usable answer, in one line: the server's error, or what is wrong with its answer."""
    tool = route.tool.name
    if isinstance(exc, RpcError):
        cause = unparsable(exc.code, exc.message)
        if cause is not None:
            return f"the answer to {tool} could not be parsed: {cause}"
        return f"server answered with error {exc.code}: {exc.message}"
    if isinstance(exc, InvalidResult):
        return f"the answer to {tool} was not a valid result: {exc}"
    first = (str(exc).strip().splitlines() or [""])[0]  # an answer the session could not take: the server's fault
    return f"the answer to {tool} was not a valid result: {type(exc).__name__}: {first}"


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
