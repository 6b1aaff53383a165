"""The policy on the command line: --mode, --yes, allowlists and reasons in `list` and `call`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import parse_json
from tests.policy_support import calls, webtools_yaml


def listed(path, *args: str) -> set[str]:
    result = CliRunner().invoke(app, ["list", "-c", str(path), "--json", *args])
    assert result.exit_code == 0, result.stderr
    return {t["name"] for s in parse_json(result.stdout)["servers"] for t in s["tools"]}


def call(path, *args: str):
    return CliRunner().invoke(app, ["call", "-c", str(path), "--json", *args])


@pytest.fixture
def web(write_config, tmp_path):
    """A profile with the webtools server; `wipe` marked risk: high; returns (profile path, record file)."""
    record = tmp_path / "record.txt"

    def make(**profile):
        server = webtools_yaml("web", "--record", str(record), tools={"note": {"risk": "high"}})
        return write_config({"web": server}, **profile), record

    return make


def test_read_only_mode_lists_only_read_only_tools_and_refuses_the_rest_with_exit_5(web):
    path, record = web()
    assert listed(path, "--mode", "read_only") == {"fetch", "visit", "peek"}
    result = call(path, "--mode", "read_only", "web", "wipe")
    assert result.exit_code == 5
    envelope = parse_json(result.stdout)
    assert envelope["decision"]["reason"] == "mode_read_only"
    assert envelope["hint"] == "reason: mode_read_only"
    assert calls(record) == []


def test_ask_mode_without_a_terminal_or_yes_denies_destructive_tools_and_nothing_is_called(web):
    path, record = web(policy={"mode": "ask"})
    assert {"wipe", "note", "plain"} <= listed(path)  # tools that need a yes stay visible
    result = call(path, "web", "wipe")
    assert result.exit_code == 5
    envelope = parse_json(result.stdout)
    assert envelope["decision"]["reason"] == "mode_ask"
    assert "--yes" in envelope["hint"]
    assert calls(record) == []


def test_ask_mode_with_yes_runs_the_tool_and_says_who_confirmed(web):
    path, record = web()
    result = call(path, "--mode", "ask", "--yes", "web", "wipe")
    assert result.exit_code == 0, result.stderr
    assert calls(record) == ["call wipe {}"]


def test_ask_mode_lets_non_destructive_tools_run_without_a_question(web):
    path, _ = web(policy={"mode": "ask"})
    assert call(path, "web", "peek").exit_code == 0


def test_an_unknown_mode_on_the_command_line_is_a_usage_error():
    result = CliRunner().invoke(app, ["call", "--mode", "yolo", "x", "y"])
    assert result.exit_code == 2
    assert "yolo" in result.stderr


def test_a_denial_in_human_mode_is_one_line_with_the_reason(web):
    path, _ = web()
    result = CliRunner().invoke(app, ["call", "-c", str(path), "--mode", "read_only", "web", "wipe"])
    assert result.exit_code == 5
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("miroctl: denied: web.wipe is not read-only")
    assert "reason: mode_read_only" in lines[1]
