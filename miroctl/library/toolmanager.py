"""ToolManager: the seeds' tool layer (get_all_tool_definitions / execute_tool_call) on miroctl's Manager.

Built in plain synchronous code (nothing bound to an event loop is made in `__init__`) and used from whichever
loop then runs: sessions open on first use and are kept, so a call costs a request, not a process. A loop that
goes away (asyncio.run returning) stops its servers; the next loop opens them again.

Each task id gets a Manager of its own (its servers started with that TASK_ID), reaped when idle; calls without
one, every listing, and `persistent: true` servers go to the shared one; `session: per_call` servers get a
fresh process for each call, as in the seeds. Stdio servers are reached through the lean client, as the CLI's
cold list and call reach them (it follows tool-list changes as the SDK's client does, without importing it);
HTTP, SSE and in-process servers through the SDK's.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import replace
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.lowlevel import current_token

from miroctl.base.models import CallOutcome, CallRequest, Failure, ProgressFn, ServerSpec, ServerTools
from miroctl.config.loader import Config
from miroctl.core.manager import ConfirmFn, Manager
from miroctl.daemonclient.choice import LOST
from miroctl.library import guard, inputs, seeds
from miroctl.library.daemon import DaemonChoice, DaemonLink, checked_choice
from miroctl.library.owner import Owner
from miroctl.library.taskids import current_task_id
from miroctl.policy.decisions import Policy
from miroctl.sessions import connectors
from miroctl.sessions.processes import sweep_orphans

IDLE_TIMEOUT = 300.0  # seconds a task's servers are kept after its last call
SHARED: str | None = None  # the key of the Manager that lists, and calls without a task id


class ToolManager:
    """The servers of an agent, listed and called in-process over kept sessions; never raises for a server's
    or a call's failure (those are results)."""

    def __init__(
        self,
        server_configs: Iterable[Mapping[str, object]] | Config,
        tool_blacklist: Iterable[tuple[str, str]] | None = None,
        *,
        server_python: str | os.PathLike[str] | None = None,
        task_var: ContextVar[Any] | None = None,
        policy: Policy | None = None,
        confirm: ConfirmFn | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        daemon: DaemonChoice = False,
    ) -> None:
        """`server_configs` is the seeds' list of `{"name", "params"}` (or a Config); `tool_blacklist` a set of
        (server, tool) pairs. `server_python` (or $MIROCTL_PYTHON) replaces this interpreter in the servers'
        commands; `task_var` is a ContextVar holding the current task id; `policy` and `confirm` are the
        Manager's; a task's servers stop `idle_timeout` seconds after its last call. `daemon` sends calls to
        the background daemon `miroctl call` uses for the same configuration ("auto": the servers the CLI
        sends there, `persistent: true` ones; True: every server it can keep; see docs/daemon.md)."""
        changed = {"tool_blacklist": tool_blacklist, "server_python": server_python, "policy": policy}
        choice = checked_choice(daemon, server_configs, {**changed, "confirm": confirm})
        if isinstance(server_configs, Config):
            config = server_configs
            if tool_blacklist:
                pairs = config.profile.blacklist | frozenset((str(s), str(t)) for s, t in tool_blacklist)
                config = _with_blacklist(config, pairs)
        else:
            config = inputs.config_from_seeds(server_configs, tool_blacklist or ())
        self.config = inputs.with_python(config, server_python)
        self.policy = policy or Policy.from_profile(self.config.profile)
        self.task_var = task_var
        self.idle_timeout = idle_timeout
        self._confirm = confirm
        self._run_id = f"{guard.LIBRARY_RUN}/tm-{uuid.uuid4().hex[:8]}"
        self._owners: dict[str | None, Owner] = {}
        self._loop: object | None = None
        self._daemon = DaemonLink(self.config, self.config.source, choice) if choice is not False else None

    @classmethod
    def from_config(cls, source: str | os.PathLike[str] | Config | None = None, **options: Any) -> ToolManager:
        """The servers of a profile: a bundled profile's name ("research"), a path, a Config, or None for the
        config the CLI would find (--config's rules: $MIROCTL_CONFIG, ./miroctl.yaml, ..., the bundled default)."""
        manager = cls(inputs.config_from_source(source), **options)
        if manager._daemon is not None and not isinstance(source, Config):  # the name `miroctl --config` is given
            manager._daemon.name = os.fspath(source) if source is not None else None
        return manager

    @property
    def server_names(self) -> list[str]:
        return [spec.name for spec in self.config.select()]

    # ------------------------------------------------------------------------------------------ the seeds

    async def get_all_tool_definitions(self) -> list[dict[str, object]]:
        """Every server's tools as the seeds give them to a prompt; a server that fails has `{"error": ...}`."""
        return seeds.definitions(await self.list_tools())

    async def execute_tool_call(
        self,
        server_name: str,
        tool_name: str,
        arguments: Mapping[str, object] | None = None,
        *,
        task_id: str | None = None,
    ) -> dict[str, object]:
        """One call: `{"server_name", "tool_name", "result"}` or `{"server_name", "tool_name", "error"}`."""
        problem = seeds.bad_arguments(arguments)
        if problem is not None:
            return seeds.failed(server_name, tool_name, problem)
        outcome = await self.call(server_name, tool_name, arguments or {}, task_id=task_id)
        body = seeds.result_of(outcome, server_name, self.config)
        return seeds.noted(body, LOST) if LOST in outcome.notes else body

    # ------------------------------------------------------------------------------------------ native

    async def list_tools(self, servers: Sequence[str] = ()) -> list[ServerTools]:
        """The named servers' (or the default set's) tools, concurrently; a failure is that server's entry."""
        try:
            specs = self.config.select(servers)
        except Exception as exc:  # noqa: BLE001 - an unknown name is reported as data, like every failure
            return [ServerTools(name, "unknown", failure=_failure(exc)) for name in servers]
        link = self._daemon
        kept = [spec for spec in specs if link is not None and link.keeps(spec)]
        if link is None or not kept:
            return await self._list_here(specs)
        here = [spec for spec in specs if spec not in kept]
        found: dict[str, ServerTools] = {}

        async def listed(work: Awaitable[list[ServerTools]]) -> None:
            found.update((entry.server, entry) for entry in await work)

        async with anyio.create_task_group() as tg:
            tg.start_soon(listed, link.list_tools(kept))
            if here:
                tg.start_soon(listed, self._list_here(here))
        return [found[spec.name] for spec in specs if spec.name in found]

    async def _list_here(self, specs: Sequence[ServerSpec]) -> list[ServerTools]:
        async with self._manager(SHARED) as manager:
            return await manager.list_tools(specs)

    async def call(
        self,
        server: str | None,
        tool: str,
        arguments: Mapping[str, object] | None = None,
        *,
        timeout: float | None = None,
        task_id: str | None = None,
        autocorrect: bool = True,
        progress: ProgressFn | None = None,
        output: str | None = None,
    ) -> CallOutcome:
        """One call as miroctl's envelope (content blocks, structured content, timings, the failure's kind)."""
        request = CallRequest(
            server,
            tool,
            dict(arguments or {}),
            timeout=timeout,
            autocorrect=autocorrect,
            progress=progress,
            output=output,
        )
        spec = self.config.get(server) if server else None
        task = current_task_id(task_id, self.task_var)
        if self._daemon is not None and self._daemon.keeps(spec):
            return await self._call_kept(request, spec, task)
        if spec is not None and spec.session == "per_call":
            return await self._call_fresh(request, task)
        key = SHARED if spec is not None and spec.persistent else task
        try:
            async with self._manager(key) as manager:
                return await manager.call(request)
        except Exception as exc:  # noqa: BLE001 - never raised to the agent: the call's envelope says why
            return CallOutcome(server, tool, error=str(exc) or type(exc).__name__, error_kind="failed")

    async def _call_kept(self, request: CallRequest, spec: ServerSpec | None, task: str | None) -> CallOutcome:
        """A call through the daemon; a persistent server's calls share its session there, task id or not."""
        assert self._daemon is not None
        if request.output is not None:
            return CallOutcome(
                request.server,
                request.tool,
                error="output= writes the result on this side: call without it, or with daemon=False",
                error_kind="usage",
            )
        return await self._daemon.call(
            request.server,
            request.tool,
            request.arguments,
            timeout=request.timeout,
            autocorrect=request.autocorrect,
            task_id=None if spec is None or spec.persistent else task,
        )

    async def _call_fresh(self, request: CallRequest, task: str | None) -> CallOutcome:
        """A `session: per_call` server: its own process and session for this call alone, as in the seeds."""
        guard.arm()
        async with self._new_manager(task, f"{self._run_id}/call-{uuid.uuid4().hex[:8]}") as manager:
            return await manager.call(request)

    # ------------------------------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop every server; from any task. The ToolManager may be used again afterwards (it reopens)."""
        if await self._follow_loop():
            return
        owners = list(self._owners.values())
        self._owners.clear()
        for owner in owners:
            owner.signal_stop()
        with anyio.CancelScope(shield=True):
            for owner in owners:
                await owner.stop()

    @asynccontextmanager
    async def _manager(self, key: str | None) -> AsyncIterator[Manager]:
        """The open Manager of that key (a task id, or SHARED), held from being reaped while in use."""
        owner = await self._owner(key)
        async with owner.use() as manager:
            yield manager

    async def _owner(self, key: str | None) -> Owner:
        await self._follow_loop()
        owner = self._owners.get(key)
        if owner is None or owner.finished:
            guard.arm()
            run_id = f"{self._run_id}/{'shared' if key is None else 'task'}-{uuid.uuid4().hex[:8]}"
            idle = None if key is SHARED else self.idle_timeout
            owner = Owner(lambda: self._new_manager(key, run_id), run_id, idle=idle)
            self._owners[key] = owner
        return owner

    def _new_manager(self, task: str | None, run_id: str) -> Manager:
        return Manager(
            self.config,
            policy=self.policy,
            confirm=self._confirm,
            task_id=task,
            run_id=run_id,
            follow_changes=True,
            connector=connectors.LEAN,
        )

    async def _follow_loop(self) -> bool:
        """Forget the Managers of a loop that is gone (stopping whatever they left running); True if it was."""
        loop = current_token().native_token
        if self._loop is None or self._loop is loop:
            self._loop = loop
            return False
        self._loop = loop
        stale = [owner for owner in self._owners.values() if not owner.finished]
        self._owners.clear()
        for owner in stale:
            await _abandon(owner)
        return True


async def _abandon(owner: Owner) -> None:
    """An Owner of another loop: asked to stop on that loop if it still runs (in another thread), its servers
    swept otherwise (asyncio.run returned, or the loop was closed or left without cancelling its tasks)."""
    loop = owner.token.native_token
    if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running() and not loop.is_closed():
        loop.call_soon_threadsafe(owner.signal_stop)
        return
    await anyio.to_thread.run_sync(sweep_orphans, owner.run_id)


def _failure(exc: Exception) -> Failure:
    return Failure("not_found", getattr(exc, "message", str(exc)), hint=getattr(exc, "hint", None))


def _with_blacklist(config: Config, pairs: frozenset[tuple[str, str]]) -> Config:
    return replace(config, profile=replace(config.profile, blacklist=pairs))
