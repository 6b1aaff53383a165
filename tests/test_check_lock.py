"""The tool-surface lock: a stable file, and changes sorted into breaking and drift."""

import json

import pytest

from miroctl.base.errors import ConfigError
from miroctl.base.models import ToolInfo
from miroctl.check import lockfile
from miroctl.check.report import ProbeReport

NUMBER = {"type": "integer"}
TEXT = {"type": "string"}


def schema(required=(), **properties):
    return {"type": "object", "properties": properties, "required": list(required)}


def changes(old, new):
    return lockfile.schema_changes(old, new)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (schema(["a"], a=NUMBER), schema(["a"]), [("breaking", "parameter 'a' removed")]),
        (schema(["a"], a=NUMBER), schema(["a", "b"], a=NUMBER, b=NUMBER), [("breaking", "new required parameter 'b'")]),
        (schema(["a"], a=NUMBER), schema(["a"], a=NUMBER, b=NUMBER), [("drift", "new optional parameter 'b'")]),
        (schema([], a=NUMBER), schema(["a"], a=NUMBER), [("breaking", "parameter 'a' is now required")]),
        (schema(["a"], a=NUMBER), schema([], a=NUMBER), [("drift", "parameter 'a' is now optional")]),
        (
            schema(["a"], a=NUMBER),
            schema(["a"], a=TEXT),
            [("breaking", "parameter 'a' type changed: integer -> string")],
        ),
        (schema([], a=NUMBER), schema([], a=TEXT), [("drift", "parameter 'a' type changed: integer -> string")]),
        (schema([], a=NUMBER), schema([], a={**NUMBER, "minimum": 0}), [("drift", "parameter 'a' schema changed")]),
        (
            schema([], a=NUMBER),
            {**schema([], a=NUMBER), "additionalProperties": False},
            [("drift", "input schema changed outside its parameters")],
        ),
        (schema(["a"], a=NUMBER), schema(["a"], a=NUMBER), []),
    ],
)
def test_schema_changes_are_breaking_only_where_an_existing_caller_would_break(old, new, expected):
    assert changes(old, new) == expected


def test_a_changed_description_is_drift_and_shows_before_and_after():
    found = lockfile.tool_changes(
        {"description": "Add two numbers.", "input_schema": {}}, {"description": "Add numbers.", "input_schema": {}}
    )
    assert found == [("drift", 'description changed: "Add two numbers." -> "Add numbers."')]


def test_compare_reports_removed_and_added_tools_and_servers_missing_from_the_lock():
    locked = {
        "schema": lockfile.SCHEMA,
        "servers": {
            "a": {
                "tools": {
                    "keep": {"description": "", "input_schema": {}},
                    "gone": {"description": "", "input_schema": {}},
                }
            },
            "down": {"tools": {}},
        },
    }
    current = {
        "a": {"keep": {"description": "", "input_schema": {}}, "new": {"description": "", "input_schema": {}}},
        "b": {"x": {"description": "", "input_schema": {}}},
    }
    check = lockfile.compare(locked, current)
    assert [(c.server, c.tool, c.kind, c.severity) for c in check.changes] == [
        ("a", "gone", "removed", "breaking"),
        ("a", "new", "added", "drift"),
        ("b", None, "added", "drift"),
    ]
    assert check.changes[2].detail == "server is not in the lock file (1 tool)"
    assert check.unchecked == ["down"]
    assert (len(check.breaking), len(check.drift)) == (1, 2)


def healthy(server, *tools):
    report = ProbeReport(server, "stdio", "cmd")
    report.tools = tuple(ToolInfo(server, name, f"{name} it.", {"type": "object"}) for name in tools)
    return report


def test_the_lock_document_is_sorted_and_keeps_servers_this_run_did_not_see_healthy():
    surface = lockfile.surface([healthy("zeta", "b", "a"), healthy("alpha", "c")])
    previous = {"schema": lockfile.SCHEMA, "servers": {"old": {"tools": {}}, "zeta": {"tools": {"gone": {}}}}}
    text = lockfile.dumps(lockfile.document(surface, previous))
    document = json.loads(text)
    assert list(document["servers"]) == ["alpha", "old", "zeta"]
    assert list(document["servers"]["zeta"]["tools"]) == ["a", "b"]
    assert document["servers"]["zeta"]["tools"]["a"] == {"description": "a it.", "input_schema": {"type": "object"}}
    assert text == lockfile.dumps(json.loads(text)), "writing what was read gives the same bytes"


def test_unhealthy_servers_are_not_written_to_the_lock():
    broken = healthy("broken", "a")
    broken.failure = object()
    assert lockfile.surface([broken, healthy("fine", "x")]) == {
        "fine": {"x": {"description": "x it.", "input_schema": {"type": "object"}}}
    }


def test_secrets_are_masked_before_they_reach_the_lock():
    report = healthy("s", "a")
    surface = lockfile.surface([report], mask=lambda tools: json.loads(json.dumps(tools).replace("it.", "****")))
    assert surface["s"]["a"]["description"] == "a ****"


def test_reading_a_lock_file_that_is_not_one_says_why_in_one_line(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"schema": "something/1", "servers": {}}')
    with pytest.raises(ConfigError, match="is not a miroctl lock file"):
        lockfile.read(path)
    path.write_text('{"schema": "miroctl.lock/1", "servers": {"a": {"tools": []}}}')
    with pytest.raises(ConfigError, match="server 'a' has no tools mapping"):
        lockfile.read(path)
    with pytest.raises(ConfigError, match="lock file not found"):
        lockfile.read(tmp_path / "missing.json")


def test_writing_replaces_the_file_whole(tmp_path):
    path = tmp_path / "tools.lock.json"
    path.write_text("old")
    lockfile.write(path, lockfile.document({"a": {}}))
    assert json.loads(path.read_text()) == {"schema": "miroctl.lock/1", "servers": {"a": {"tools": {}}}}
    assert [p.name for p in tmp_path.iterdir()] == ["tools.lock.json"]
