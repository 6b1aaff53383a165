"""`miroctl call`: one tool, one envelope, one exit code for every way it can go."""

import base64
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import fixture_yaml, parse_json

ENVELOPE_KEYS = {
    "schema",
    "server_name",
    "tool_name",
    "is_error",
    "content",
    "structured_content",
    "corrected_from",
    "fallback",
    "truncated",
    "duration_ms",
    "exit_code",
}


@pytest.fixture
def pool(write_config, tmp_path):
    """A profile with two fixture servers that log every call they receive."""
    log = tmp_path / "calls.log"
    env = {"FIXTURE_CALL_LOG": str(log)}
    path = write_config(
        {"alpha": fixture_yaml("alpha", env=env), "beta": fixture_yaml("beta", "--tools", "add", env=env)},
        tool_blacklist=[["alpha", "crash"]],
    )
    return path, log


def invoke(path: Path, *words: str, stdin: str | None = None):
    return CliRunner().invoke(app, ["call", "--config", str(path), *words], input=stdin)


def test_call_prints_the_envelope_with_exactly_one_of_result_or_error(pool):
    path, _ = pool
    result = invoke(path, "alpha", "add", "a=2", "b=3", "--json")
    assert result.exit_code == 0
    envelope = parse_json(result.stdout)
    assert set(envelope) >= ENVELOPE_KEYS and "error" not in envelope
    assert envelope["schema"] == "miroctl.call/1"
    assert (envelope["server_name"], envelope["tool_name"], envelope["result"]) == ("alpha", "add", "5")
    assert envelope["structured_content"] == {"result": 5}


def test_server_dot_tool_target_and_json_base_with_pair_override(pool):
    path, _ = pool
    result = invoke(path, "alpha.add", "--args", '{"a": 1, "b": 1}', "b=10", "--json")
    assert result.exit_code == 0
    assert parse_json(result.stdout)["result"] == "11"


def test_arguments_can_come_from_stdin(pool):
    path, _ = pool
    result = invoke(path, "alpha", "echo", "--args", "-", "--json", stdin='{"text": "from stdin"}')
    assert result.exit_code == 0
    assert parse_json(result.stdout)["result"] == "from stdin"


def test_a_tool_error_exits_1_with_the_tools_message(pool):
    path, _ = pool
    result = invoke(path, "alpha", "fail", "message=disk on fire", "--json")
    assert result.exit_code == 1
    envelope = parse_json(result.stdout)
    assert envelope["is_error"] is True and envelope["error_kind"] == "tool_error"
    assert "disk on fire" in envelope["error"] and "result" not in envelope


def test_human_mode_prints_the_result_and_reports_errors_on_stderr(pool):
    path, _ = pool
    ok = invoke(path, "alpha", "echo", "text=hello there")
    assert ok.exit_code == 0
    assert ok.stdout == "hello there\n"
    failed = invoke(path, "alpha", "fail")
    assert failed.exit_code == 1
    assert failed.stdout == "" and "miroctl: tool_error:" in failed.stderr and "it broke" in failed.stderr


def test_structured_results_are_pretty_printed_for_humans(pool):
    path, _ = pool
    result = invoke(path, "alpha", "config_echo", 'options={"k": 1}', "tags=x", "tags=y", "flag=true")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"options": {"k": 1}, "tags": ["x", "y"], "flag": True, "ratio": 1.0}
    assert result.stdout.startswith("{\n  ")


def test_images_are_saved_to_files_and_their_paths_printed(pool, tmp_path):
    path, _ = pool
    result = invoke(path, "alpha", "image", "--save-dir", str(tmp_path / "out"))
    assert result.exit_code == 0
    assert "a pixel" in result.stdout
    saved = tmp_path / "out" / "image-1.png"
    assert f"saved: {saved}" in result.stderr
    assert saved.read_bytes().startswith(base64.b64decode("iVBORw0KGgo="))


def test_server_text_reaches_the_terminal_literally(pool):
    path, _ = pool
    result = invoke(path, "alpha", "escape")
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b[31mred\\x1b[0m [bold]not bold[/bold]" in result.stdout


def test_unknown_server_without_autocorrect_exits_6_with_a_suggestion(pool):
    path, _log = pool
    result = invoke(path, "alpah", "echo", "text=x", "--no-autocorrect")
    assert result.exit_code == 6
    assert "no server named 'alpah'" in result.stderr and "did you mean 'alpha'" in result.stderr


def test_misspelled_tool_exits_6_with_did_you_mean_and_is_never_replaced(pool):
    path, log = pool
    result = invoke(path, "alpha", "ech", "text=x", "--json")
    assert result.exit_code == 6
    envelope = parse_json(result.stdout)
    assert envelope["error"] == "server 'alpha' has no tool 'ech'" and "'echo'" in envelope["hint"]
    assert not log.exists()


def test_blacklisted_tool_exits_5_without_starting_the_server(write_config):
    path = write_config(
        {"ghost": {"name": "ghost", "tool_command": "miroctl-not-installed"}}, tool_blacklist=[["ghost", "anything"]]
    )
    result = invoke(path, "ghost", "anything", "--json")
    assert result.exit_code == 5
    envelope = parse_json(result.stdout)
    assert envelope["error_kind"] == "denied" and "blacklisted" in envelope["error"]


def test_blacklisted_tool_is_refused_even_by_short_name(pool):
    path, log = pool
    result = invoke(path, "alpha", "crash")
    assert result.exit_code == 5
    assert not log.exists()


def test_invalid_json_arguments_exit_2_before_anything_starts(pool):
    path, log = pool
    result = invoke(path, "alpha", "add", "--args", "{a: 1}")
    assert result.exit_code == 2
    assert "--args: invalid JSON at line 1 column 2" in result.stderr
    assert not log.exists()


def test_schema_violating_arguments_exit_2_and_nothing_is_sent(pool):
    path, log = pool
    result = invoke(path, "alpha", "add", "a=1", 'b:="two"', "--json")
    assert result.exit_code == 2
    envelope = parse_json(result.stdout)
    assert envelope["error"] == "add: b: \"two\" is not of type 'integer'"
    assert not log.exists()


def test_missing_required_argument_shows_the_tools_signature(pool):
    path, _log = pool
    result = invoke(path, "alpha", "add", "b=1")
    assert result.exit_code == 2
    assert "add: missing required argument a" in result.stderr
    assert "usage: add(a: integer, b?: integer = 0)" in result.stderr


def test_a_server_with_bad_yaml_exits_2_naming_the_file_and_line(write_config):
    path = write_config({"bad": "name: bad\nargs: [x\n", "good": fixture_yaml("good", "--tools", "add")})
    result = invoke(path, "bad", "anything")
    assert result.exit_code == 2
    assert "bad yaml at " in result.stderr and "bad.yaml:" in result.stderr


def test_a_server_missing_its_env_var_exits_2_naming_the_variable(write_config, monkeypatch):
    monkeypatch.delenv("MIROCTL_NOT_SET", raising=False)
    path = write_config({"s": fixture_yaml("s", env={"K": "${oc.env:MIROCTL_NOT_SET}"})})
    result = invoke(path, "s", "add", "a=1")
    assert result.exit_code == 2
    assert "missing environment variable MIROCTL_NOT_SET" in result.stderr


def test_a_server_of_a_profile_missing_its_env_var_says_how_to_set_it_in_call_and_list(write_config, monkeypatch):
    monkeypatch.delenv("MIROCTL_NOT_SET", raising=False)
    broken = fixture_yaml("s", env={"K": "${oc.env:MIROCTL_NOT_SET}"})
    path = write_config({"s": broken, "good": fixture_yaml("good", "--tools", "add")})
    called = invoke(path, "s", "add", "a=1")
    assert called.exit_code == 2
    assert called.stderr.splitlines()[-1].strip() == "hint: export it or put it in ./.env"
    listed = CliRunner().invoke(app, ["--config", str(path), "list", "--json"])
    assert listed.exit_code == 1
    (failed,) = [server for server in json.loads(listed.stdout)["servers"] if not server["ok"]]
    assert failed["failure"]["hint"] == "export it or put it in ./.env"


def test_a_command_not_on_path_exits_3(write_config):
    path = write_config({"s": {"name": "s", "tool_command": "miroctl-not-installed"}})
    result = invoke(path, "s", "tool", "--json")
    assert result.exit_code == 3
    assert parse_json(result.stdout)["failure"]["kind"] == "not_found"


def test_a_call_without_a_tool_is_a_usage_error():
    result = CliRunner().invoke(app, ["call", "a=1"])
    assert result.exit_code == 2
    assert "expected a tool name before the arguments" in result.stderr


def test_a_malformed_pair_is_a_usage_error_before_anything_starts(pool):
    path, _log = pool
    result = invoke(path, "alpha", "add", "a=1", "=2")
    assert result.exit_code == 2
    assert "'=2' is not key=value" in result.stderr


def test_one_adhoc_stdio_server_needs_no_server_name(tmp_path):
    from tests.conftest import FIXTURE

    server = f"{sys.executable} {FIXTURE} --tools add"
    result = CliRunner().invoke(app, ["call", "--stdio", server, "add", "a=4", "--json"])
    assert result.exit_code == 0
    assert parse_json(result.stdout)["result"] == "4"


def test_an_mcp_servers_json_config_works_end_to_end(tmp_path):
    from tests.conftest import FIXTURE

    path = tmp_path / ".mcp.json"
    calc = {"command": sys.executable, "args": [FIXTURE, "--tools", "add"]}
    path.write_text(json.dumps({"mcpServers": {"calc": calc}}))
    result = CliRunner().invoke(app, ["call", "--config", str(path), "calc.add", "a=20", "b=22", "--json"])
    assert result.exit_code == 0, result.stderr
    assert parse_json(result.stdout)["result"] == "42"


@pytest.mark.process
def test_a_server_runs_in_its_cwd_relative_to_its_file_with_its_env_over_a_small_inherited_one(
    write_config, tmp_path, monkeypatch
):
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("MIROCTL_NOT_INHERITED", "x")
    path = write_config({"s": fixture_yaml("s", "--tools", "cwd,env", cwd="../work", env={"ONLY_MINE": "yes"})})
    where = invoke(path, "s", "cwd", "--json")
    assert where.exit_code == 0, where.stderr
    assert parse_json(where.stdout)["result"] == str((tmp_path / "work").resolve())
    mine = invoke(path, "s", "env", "name=ONLY_MINE", "--json")
    assert parse_json(mine.stdout)["result"] == "yes"
    inherited = invoke(path, "s", "env", "name=MIROCTL_NOT_INHERITED", "--json")
    assert parse_json(inherited.stdout)["result"] == "<unset>"


def test_numeric_strings_in_json_arguments_are_sent_as_integers_with_a_note(pool):
    path, log = pool
    result = invoke(path, "alpha", "add", "--args", '{"a": "2", "b": "40"}', "--json")
    assert result.exit_code == 0, result.stderr
    envelope = parse_json(result.stdout)
    assert envelope["result"] == "42"
    assert envelope["notes"] == [
        'argument a: "2" sent as 2, as the server would read it',
        'argument b: "40" sent as 40, as the server would read it',
    ]
    assert log.exists()


def test_human_mode_says_on_stderr_which_argument_was_read_as_its_type(pool):
    path, _ = pool
    result = invoke(path, "alpha", "add", "--args", '{"a": "2", "b": 40}')
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "42"
    assert 'argument a: "2" sent as 2, as the server would read it' in result.stderr


def test_a_fractional_string_for_an_integer_stays_refused_and_is_never_sent_where_an_exact_one_is(pool):
    path, log = pool
    result = invoke(path, "alpha", "add", "--args", '{"a": "2.5"}', "--json")
    assert result.exit_code == 2
    assert parse_json(result.stdout)["error"] == "add: a: \"2.5\" is not of type 'integer'"
    assert not log.exists()
    result = invoke(path, "alpha", "add", "--args", '{"a": "2.0"}', "--json")
    assert result.exit_code == 0, result.stderr
    assert parse_json(result.stdout)["result"] == "2"
    assert log.read_text().splitlines() == ["add"]


def test_json_strings_and_boolean_words_are_read_but_a_number_for_a_string_stays_refused(pool):
    path, log = pool
    given = {"options": '{"a": 1}', "tags": '["x", "y"]', "flag": "Yes", "ratio": "2.5"}
    result = invoke(path, "alpha", "config_echo", "--args", json.dumps(given), "--json")
    assert result.exit_code == 0, result.stderr
    envelope = parse_json(result.stdout)
    assert json.loads(envelope["result"]) == {"options": {"a": 1}, "tags": ["x", "y"], "flag": True, "ratio": 2.5}
    assert len(envelope["notes"]) == 4
    result = invoke(path, "alpha", "echo", "--args", '{"text": 2024}', "--json")
    assert result.exit_code == 2
    assert parse_json(result.stdout)["error"] == "echo: text: 2024 is not of type 'string'"
    assert log.read_text().splitlines() == ["config_echo"]
