"""The planner server (task_planner) from config/tool/tool-planner.yaml: in-process, and over stdio where
processes matter (concurrent servers, TASK_ID reaching the server's environment through the CLI or a gateway)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.config import loader as config_
from miroctl.core.manager import Manager
from miroctl.gateway.server import Gateway, build_server, gateway_task_id
from miroctl.servers.planner import default_task, task_file_name
from tests.bundled.conftest import bundled_spec, cli_call, memory_spec, session


def planner(dirs: dict[str, str], task: str, **rename: str) -> ServerSpec:
    """The planner over stdio, on the test's state directory and a task."""
    return bundled_spec("planner", {"PLANNER_STATE_DIR": dirs["PLANNER_STATE_DIR"], "TASK_ID": task}, **rename)


def in_process(monkeypatch, dirs: dict[str, str], task: str) -> ServerSpec:
    """The planner in this process, on the test's state directory and a task."""
    monkeypatch.setenv("PLANNER_STATE_DIR", dirs["PLANNER_STATE_DIR"])
    monkeypatch.setenv("TASK_ID", task)
    return memory_spec("planner")


def test_todos_are_added_listed_and_completed_by_8_character_prefixes(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, "task-1")
    added = session(spec, ("add_todo", {"titles": ["Collect sources", "Draft summary", "Review"]}))
    ids = [t["id"] for t in added[0].structured_content["todos"]]
    got = session(spec, ("complete_todo", {"todo_ids": [ids[0][:8], ids[2]]}), ("list_todos", {}))
    assert added[0].result.startswith("Added 3 items.")
    assert f"- [ ] Collect sources (id: {ids[0][:8]})" in added[0].result
    assert got[0].ok, got[0].error
    assert "## Todo list (2 of 3 done)" in got[1].result
    assert f"- [x] Collect sources (id: {ids[0][:8]})" in got[1].result
    assert f"- [ ] Draft summary (id: {ids[1][:8]})" in got[1].result
    assert [t["done"] for t in got[1].structured_content["todos"]] == [True, False, True]


def test_lists_survive_a_restart_and_are_kept_apart_per_task(state_dirs, monkeypatch, tmp_path):
    # Written by one session, then the state directory moved where no session has been: what a fresh session
    # lists there came from disk.
    session(in_process(monkeypatch, state_dirs, "alpha"), ("add_todo", {"titles": "Only in alpha"}))
    moved = {"PLANNER_STATE_DIR": str(Path(state_dirs["PLANNER_STATE_DIR"]).rename(tmp_path / "moved"))}
    beta = session(in_process(monkeypatch, moved, "beta"), ("list_todos", {}))
    alpha = session(in_process(monkeypatch, moved, "alpha"), ("list_todos", {}))
    assert "Only in alpha" in alpha[0].result and alpha[0].structured_content["total"] == 1
    assert beta[0].structured_content["total"] == 0 and "Nothing planned yet" in beta[0].result


def test_without_a_task_id_the_first_call_works_on_the_working_directorys_default_list(
    state_dirs, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)
    got = session(in_process(monkeypatch, state_dirs, ""), ("add_todo", {"titles": ["x"]}), ("list_todos", {}))
    assert all(outcome.ok for outcome in got.outcomes), got.outcomes
    assert got.outcomes[1].structured_content["total"] == 1
    stored = Path(state_dirs["PLANNER_STATE_DIR"]) / f"todos_{default_task(str(tmp_path))}.json"
    assert json.loads(stored.read_text())["todos"][0]["title"] == "x"


def test_the_default_task_is_stable_per_directory_and_differs_between_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, again = default_task(str(tmp_path / "a")), default_task(str(tmp_path / "a" / ".." / "a"))
    assert first == again and first != default_task(str(tmp_path / "b"))
    assert task_file_name(first) == first  # a plain file name


def test_unknown_short_or_empty_inputs_change_nothing(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, "task-2")
    got = session(
        spec,
        ("add_todo", {"titles": ["First", "Second"]}),
        ("complete_todo", {"todo_ids": ["ffffffff"]}),
        ("complete_todo", {"todo_ids": ["ab"]}),
        ("add_todo", {"titles": ["ok", "   "]}),
        ("add_todo", {"titles": []}),
        ("list_todos", {}),
    )
    first = got[0].structured_content["todos"][0]["id"][:8]
    assert "no todo item has id 'ffffffff'; nothing was changed" in got[1].error and first in got[1].error
    assert "too short" in got[2].error
    assert "non-empty" in got[3].error and "non-empty" in got[4].error
    assert got[5].structured_content == {"total": 2, "done": 0, "todos": got[0].structured_content["todos"]}
    assert got.starts == 1


def test_delete_todo_removes_one_item_by_its_prefix_and_the_deletion_is_on_disk(state_dirs, monkeypatch):
    spec = in_process(monkeypatch, state_dirs, "task-del")
    added = session(spec, ("add_todo", {"titles": ["Keep", "Drop", "Also keep"]}))
    ids = [t["id"] for t in added[0].structured_content["todos"]]
    got = session(spec, ("delete_todo", {"todo_id": ids[1][:8].upper()}))
    assert got[0].ok, got[0].error
    assert got[0].result.startswith(f"Deleted Drop (id: {ids[1][:8]}).")
    assert [t["id"] for t in got[0].structured_content["todos"]] == [ids[0], ids[2]]
    again = session(in_process(monkeypatch, state_dirs, "task-del"), ("list_todos", {}))  # a fresh session
    assert [t["title"] for t in again[0].structured_content["todos"]] == ["Keep", "Also keep"]
    stored = Path(state_dirs["PLANNER_STATE_DIR"]) / "todos_task-del.json"
    assert [t["id"] for t in json.loads(stored.read_text())["todos"]] == [ids[0], ids[2]]


def test_delete_todo_with_an_unknown_ambiguous_or_empty_id_deletes_nothing_and_names_the_candidates(
    state_dirs, monkeypatch
):
    spec = in_process(monkeypatch, state_dirs, "task-del-bad")
    stored = Path(state_dirs["PLANNER_STATE_DIR"]) / "todos_task-del-bad.json"
    todos = [
        {"id": "abcd1111" + "0" * 24, "title": "One", "done": False},
        {"id": "abcd2222" + "0" * 24, "title": "Two", "done": True},
    ]
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_text(json.dumps({"version": 1, "todos": todos}))
    got = session(
        spec,
        ("delete_todo", {"todo_id": "ffffffff"}),
        ("delete_todo", {"todo_id": "abcd"}),
        ("delete_todo", {"todo_id": "  "}),
        ("list_todos", {}),
    )
    assert not got[0].ok and "no todo item has id 'ffffffff'" in got[0].error
    assert "abcd1111" in got[0].error and "abcd2222" in got[0].error
    assert not got[1].ok and "matches 2 items" in got[1].error
    assert todos[0]["id"] in got[1].error and todos[1]["id"] in got[1].error
    assert not got[2].ok and "todo_id" in got[2].error
    assert all("\n" not in outcome.error for outcome in got.outcomes[:3] if outcome.error)
    assert got[3].structured_content["todos"] == todos


@pytest.mark.process
def test_two_concurrent_planners_on_one_task_lose_no_update(state_dirs, monkeypatch):
    specs = [planner(state_dirs, "shared"), planner(state_dirs, "shared", rename="tool-planner-2")]
    calls = 30

    async def add_many(manager: Manager, spec: ServerSpec, tag: str) -> None:
        for i in range(calls):
            outcome = await manager.call(CallRequest(spec.name, "add_todo", {"titles": [f"{tag}{i}"]}))
            assert outcome.ok, outcome.error

    async def both() -> None:
        config = config_.Config(servers=tuple(specs), default_names=tuple(s.name for s in specs))
        async with Manager(config) as manager:
            await manager.list_tools(specs)  # both servers up before the race starts
            async with anyio.create_task_group() as tg:
                for spec, tag in zip(specs, "ab"):
                    tg.start_soon(add_many, manager, spec, tag)

    anyio.run(both)
    final = session(in_process(monkeypatch, state_dirs, "shared"), ("list_todos", {}))[0].structured_content
    assert final["total"] == 2 * calls
    assert sorted(t["title"] for t in final["todos"]) == sorted(f"{tag}{i}" for tag in "ab" for i in range(calls))


@pytest.mark.process
def test_miroctl_call_planner_without_task_id_uses_the_default_list_and_task_id_still_overrides(state_dirs):
    env = {"PLANNER_STATE_DIR": state_dirs["PLANNER_STATE_DIR"], "TASK_ID": ""}
    code, envelope = cli_call("planner", "add_todo", "titles=Write the report", env=env)
    assert code == 0, envelope
    assert envelope["structured_content"]["todos"][0]["title"] == "Write the report"
    assert "- [ ] Write the report (id: " in envelope["result"]
    stored = Path(state_dirs["PLANNER_STATE_DIR"]) / f"todos_{default_task()}.json"  # the server runs in our cwd
    assert [t["title"] for t in json.loads(stored.read_text())["todos"]] == ["Write the report"]
    code, other = cli_call("planner", "list_todos", env={**env, "TASK_ID": "another"})
    assert code == 0 and other["structured_content"]["total"] == 0, other


async def _through_a_gateway(
    state_dirs: dict[str, str], calls: list[tuple[str, dict[str, Any]]], task_id: str | None = None
) -> Any:
    """What `miroctl serve tool-planner [--task-id ID]` serves a host that starts it with no TASK_ID, in this
    process: the gateway's task id is ID, else its own; the planner is a process, which gets it as TASK_ID. The
    host's last answer."""
    spec = bundled_spec("planner", {"PLANNER_STATE_DIR": state_dirs["PLANNER_STATE_DIR"]})
    config = config_.Config(servers=(spec,), default_names=(spec.name,))
    async with Manager(config, task_id=task_id or gateway_task_id(), follow_changes=True) as manager:
        gateway = Gateway(manager, [spec])
        await gateway.refresh()
        async with Client(build_server(gateway)) as host:
            for name, arguments in calls:
                answer = await host.call_tool(f"planner__{name}", arguments)
                assert answer.is_error is False, answer
    return answer.structured_content


@pytest.mark.process
def test_each_gateway_without_a_task_id_has_a_list_of_its_own_and_task_id_still_shares_one(state_dirs, monkeypatch):
    monkeypatch.delenv("TASK_ID", raising=False)
    add = ("add_todo", {"titles": ["Collect sources"]})
    first = anyio.run(_through_a_gateway, state_dirs, [add, ("list_todos", {})])
    second = anyio.run(_through_a_gateway, state_dirs, [("list_todos", {})])
    assert (first["total"], second["total"]) == (1, 0)
    stored = [p.name for p in Path(state_dirs["PLANNER_STATE_DIR"]).glob("todos_*.json")]
    assert len(stored) == 1 and stored[0].startswith("todos_gateway-")
    anyio.run(_through_a_gateway, state_dirs, [add], "run-7")
    shared = anyio.run(_through_a_gateway, state_dirs, [("list_todos", {})], "run-7")
    assert shared["total"] == 1
