"""planner (task_planner): a todo list per task, kept on disk, shown as a Markdown checklist.

Settings (environment): TASK_ID picks the list (without it, the default list of the server's working
directory, which is miroctl's unless the server file sets `cwd`: one list per project, shared by the calls and
gateways started there); PLANNER_STATE_DIR is where lists live
(default $XDG_STATE_HOME/miroctl/planner or ~/.local/state/miroctl/planner). Writers take a lock and
replace the file atomically, so concurrent servers on one task lose no update.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from miroctl.base.version import __version__

from .helpers.common import result, setting, state_dir

mcp = MCPServer("planner", version=__version__, log_level="WARNING")

SHORT_ID = 8
MIN_PREFIX = 4
MAX_TITLE = 500
_SAFE_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
)
def add_todo(titles: list[str] | str) -> CallToolResult:
    """Add one or more items to this task's todo list and return the whole list.

    Before starting multi-step work, add the complete plan at once, one title per step, in the
    order you intend to do them. `titles` is a list of short imperative titles (a single string
    adds one item). Each item gets an id; its first 8 characters are shown and are enough for
    complete_todo. Returns the list as a Markdown checklist ("- [ ] title (id: 1a2b3c4d)").
    """
    wanted = _titles(titles)
    with TodoStore.for_task().editing() as todos:
        for title in wanted:
            todos.append({"id": uuid.uuid4().hex, "title": title, "done": False, "created_at": _now()})
    return _checklist(todos, f"Added {len(wanted)} item{'s' if len(wanted) != 1 else ''}.")


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
)
def list_todos() -> CallToolResult:
    """Show this task's todo list: every item, done or not, as a Markdown checklist with ids.

    Use it to see what is left before choosing the next step. Changes nothing.
    """
    return _checklist(TodoStore.for_task().read())


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
)
def complete_todo(todo_ids: list[str] | str) -> CallToolResult:
    """Mark items of this task's todo list as done and return the whole list.

    `todo_ids` are ids from add_todo or list_todos: the full id or its first 8 characters (a single
    string marks one item). All ids are checked first: if any is unknown or ambiguous nothing is
    changed and the error says which. Marking a done item again is harmless.
    """
    wanted = _ids(todo_ids)
    with TodoStore.for_task().editing() as todos:
        matched = [resolve_id(todo_id, todos) for todo_id in wanted]
        for todo in matched:
            if not todo["done"]:
                todo["done"], todo["completed_at"] = True, _now()
    return _checklist(todos, f"Marked {len(matched)} item{'s' if len(matched) != 1 else ''} done.")


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
    )
)
def delete_todo(todo_id: str) -> CallToolResult:
    """Delete one item from this task's todo list and return the whole list.

    Use it for a step that is no longer wanted (a finished step is marked with complete_todo
    instead). `todo_id` is an id from add_todo or list_todos: the full id or its first 8
    characters. An unknown or ambiguous id deletes nothing and the error names the candidates.
    """
    wanted = str(todo_id).strip().lower()
    if not wanted:
        raise ToolError("todo_id must be an id from list_todos")
    with TodoStore.for_task().editing() as todos:
        todo = resolve_id(wanted, todos)
        todos.remove(todo)
    return _checklist(todos, f"Deleted {todo['title']} (id: {todo['id'][:SHORT_ID]}).")


# ---------------------------------------------------------------------------------------------- inputs


def _titles(titles: list[str] | str) -> list[str]:
    items = [titles] if isinstance(titles, str) else list(titles)
    cleaned = [" ".join(str(t).split()) for t in items]
    if not cleaned or any(not t for t in cleaned):
        raise ToolError("titles must be one or more non-empty strings")
    too_long = next((t for t in cleaned if len(t) > MAX_TITLE), None)
    if too_long is not None:
        raise ToolError(f"a title is {len(too_long)} characters long; keep titles under {MAX_TITLE}")
    return cleaned


def _ids(todo_ids: list[str] | str) -> list[str]:
    items = [todo_ids] if isinstance(todo_ids, str) else list(todo_ids)
    cleaned = [str(i).strip().lower() for i in items]
    if not cleaned or any(not i for i in cleaned):
        raise ToolError("todo_ids must be one or more ids from list_todos")
    return cleaned


def resolve_id(todo_id: str, todos: list[dict[str, Any]]) -> dict[str, Any]:
    """The one item whose id is `todo_id` or starts with it."""
    if len(todo_id) < MIN_PREFIX:
        raise ToolError(f"todo id {todo_id!r} is too short: give at least {MIN_PREFIX} characters (8 are shown)")
    found = [t for t in todos if t["id"].startswith(todo_id)]
    if not found:
        known = ", ".join(t["id"][:SHORT_ID] for t in todos) or "(the list is empty)"
        raise ToolError(f"no todo item has id {todo_id!r}; nothing was changed. Known ids: {known}")
    if len(found) > 1:
        raise ToolError(
            f"todo id {todo_id!r} matches {len(found)} items; give more characters: "
            + ", ".join(t["id"] for t in found)
        )
    return found[0]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---------------------------------------------------------------------------------------------- output


def _checklist(todos: list[dict[str, Any]], note: str | None = None) -> CallToolResult:
    done = sum(1 for t in todos if t["done"])
    if todos:
        lines = [f"## Todo list ({done} of {len(todos)} done)", ""]
        lines += [f"- [{'x' if t['done'] else ' '}] {t['title']} (id: {t['id'][:SHORT_ID]})" for t in todos]
    else:
        lines = ["## Todo list (empty)", "", "Nothing planned yet: add the steps with add_todo."]
    if note:
        lines = [note, "", *lines]
    data = {
        "total": len(todos),
        "done": done,
        "todos": [{"id": t["id"], "title": t["title"], "done": t["done"]} for t in todos],
    }
    return result("\n".join(lines), data)


# ---------------------------------------------------------------------------------------------- storage


class TodoStore:
    """One task's todo list: a JSON file, changed under an exclusive lock and replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_suffix(".lock")

    @classmethod
    def for_task(cls) -> TodoStore:
        task = setting("TASK_ID") or default_task()
        directory = state_dir("PLANNER_STATE_DIR", "planner")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"cannot create the planner's state directory: {exc.strerror or exc}") from None
        return cls(directory / f"todos_{task_file_name(task)}.json")

    def read(self) -> list[dict[str, Any]]:
        with self._locked():
            return self._load()

    @contextmanager
    def editing(self) -> Iterator[list[dict[str, Any]]]:
        """The list to change in place; written back atomically when the block ends without error."""
        with self._locked():
            todos = self._load()
            yield todos
            self._save(todos)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _load(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ToolError(f"the todo list file {self.path.name} cannot be read: {exc}") from None
        todos = data.get("todos") if isinstance(data, dict) else None
        if not isinstance(todos, list):
            raise ToolError(f"the todo list file {self.path.name} is not a planner file")
        return todos

    def _save(self, todos: list[dict[str, Any]]) -> None:
        body = json.dumps({"version": 1, "todos": todos}, ensure_ascii=False, indent=1)
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.stem}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def default_task(cwd: str | None = None) -> str:
    """The task of a server started without TASK_ID: one per working directory, stable across runs."""
    where = os.path.realpath(cwd or os.getcwd())
    return "dir-" + hashlib.sha256(where.encode()).hexdigest()[:16]


def task_file_name(task: str) -> str:
    """A file-name-safe form of a task id: itself when plain, else a stable hash."""
    if _SAFE_TASK.fullmatch(task):
        return task
    return "task-" + hashlib.sha256(task.encode()).hexdigest()[:16]


if __name__ == "__main__":
    mcp.run("stdio")
