"""One Manager, entered and exited by one long-lived task of its own, so that any task may use or close it.

The SDK's clients (and so a Manager) must be left in the task that entered them. An Owner runs that task
beside the agent's (detached from any task group of theirs, on whichever loop is running), hands its Manager
to callers once it is open, and leaves it when told to stop, when idle for `idle` seconds (the Managers of
per-task servers), or when its loop is torn down (asyncio.run cancels it: the Manager's exit still stops
every server). Callers talk to it through anyio events only.
"""

from __future__ import annotations

import asyncio
import importlib
import math
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.lowlevel import EventLoopToken, current_token

from miroctl.core.manager import Manager


class Owner:
    """The task that owns one Manager; `use()` lends the open Manager to a caller."""

    def __init__(self, make: Callable[[], Manager], run_id: str, idle: float | None = None) -> None:
        self.run_id = run_id
        self.token: EventLoopToken = current_token()
        self._make = make
        self._idle = idle
        self._busy = 0
        self._last = anyio.current_time()
        self._manager: Manager | None = None
        self._error: BaseException | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        _spawn(self._run, self._tasks)

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    async def _run(self) -> None:
        try:
            async with self._make() as manager:
                self._manager = manager
                self._ready.set()
                await self._wait_for_end()
        except Exception as exc:  # noqa: BLE001 - handed to the callers waiting for the Manager, never lost
            self._error = exc
        finally:
            self._manager = None
            self._ready.set()
            self._done.set()

    async def _wait_for_end(self) -> None:
        while not self._stop.is_set():
            with anyio.move_on_after(self._idle if self._idle is not None else math.inf):
                await self._stop.wait()
            if self._idle is not None and self._busy == 0 and anyio.current_time() - self._last >= self._idle:
                return

    @asynccontextmanager
    async def use(self) -> AsyncIterator[Manager]:
        """The open Manager, kept from being reaped while the caller uses it."""
        self._busy += 1
        try:
            await self._ready.wait()
            if self._manager is None:
                raise RuntimeError(f"the servers' manager could not be opened: {self._error!r}")
            yield self._manager
        finally:
            self._busy -= 1
            self._last = anyio.current_time()

    def signal_stop(self) -> None:
        self._stop.set()

    async def stop(self) -> None:
        self._stop.set()
        await self._done.wait()


def _spawn(run: Callable[[], Coroutine[Any, Any, None]], keep: set[asyncio.Task[None]]) -> None:
    """Start `run` as a task of the running loop that belongs to no caller's task group."""
    loop = current_token().native_token
    if isinstance(loop, asyncio.AbstractEventLoop):
        task = loop.create_task(run())
        keep.add(task)  # asyncio keeps only weak references to its tasks
        task.add_done_callback(keep.discard)
        return
    trio = importlib.import_module("trio")  # the agent runs on trio: a system task lives as long as its run
    trio.lowlevel.spawn_system_task(run)
