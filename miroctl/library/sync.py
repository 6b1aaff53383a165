"""The synchronous facade for scripts and notebooks: a ToolManager on an event loop of its own thread.

Every method blocks the calling thread until the loop thread has the answer, so it works the same from plain
code and from inside a running event loop (Jupyter), which it never touches.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from miroctl.base.models import CallOutcome, ServerTools
from miroctl.library.toolmanager import ToolManager

T = TypeVar("T")


class SyncToolManager:
    """ToolManager's methods, synchronous; its thread starts on first use and ends with `close()`."""

    def __init__(self, manager: ToolManager) -> None:
        self.manager = manager
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._started()).result()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="miroctl-tools", daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop

    def get_all_tool_definitions(self) -> list[dict[str, Any]]:
        return self._run(self.manager.get_all_tool_definitions())

    def execute_tool_call(
        self,
        server_name: str,
        tool_name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        return self._run(self.manager.execute_tool_call(server_name, tool_name, arguments, task_id=task_id))

    def list_tools(self, servers: Sequence[str] = ()) -> list[ServerTools]:
        return self._run(self.manager.list_tools(servers))

    def call(
        self, server: str | None, tool: str, arguments: Mapping[str, Any] | None = None, **options: Any
    ) -> CallOutcome:
        return self._run(self.manager.call(server, tool, arguments, **options))

    def close(self) -> None:
        """Stop every server and the loop thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.manager.close(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def connect(server_configs: Any = None, tool_blacklist: Any = None, **options: Any) -> SyncToolManager:
    """A synchronous ToolManager: of the seeds' server configs, or of a profile (a name, a path, a Config, or
    None for the config the CLI would find)."""
    if server_configs is None or isinstance(server_configs, (str, bytes)) or hasattr(server_configs, "__fspath__"):
        return SyncToolManager(ToolManager.from_config(server_configs, **options))
    return SyncToolManager(ToolManager(server_configs, tool_blacklist, **options))
