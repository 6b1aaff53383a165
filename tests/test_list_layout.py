"""`list` shows what to type: names, types and URIs whole at any width, one tool in detail with an example
call that works when pasted, and results printed as the server sent them."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from miroctl.base.models import ToolInfo
from miroctl.cli.app import app
from miroctl.core import arguments
from miroctl.core.examples import example_call
from tests.conftest import ROOT, fixture_yaml, parse_json
from tests.surface_support import surface_yaml, text, tool

LONG_DESCRIPTION = (
    "Run Python code inside the sandbox and return its stdout, stderr and the files it wrote. "
    "The sandbox keeps its state between the calls of one task, so files written by one call are "
    "there for the next. Network access follows the sandbox's own rules."
)
SCHEMA = {
    "type": "object",
    "properties": {
        "sandbox_file_path": {"type": "string", "description": "Where the code is written inside the sandbox."},
        "code_to_execute_now": {"type": "string", "description": "The Python source."},
        "timeout_seconds": {"type": "integer", "default": 30, "description": "Seconds before it is stopped."},
        "interpreter_mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
        "retry_count": {"type": "integer", "minimum": 2},
        "options": {
            "type": "object",
            "description": "Advanced options.",
            "properties": {"env_vars": {"type": "object", "additionalProperties": {"type": "string"}}},
        },
    },
    "required": ["sandbox_file_path", "code_to_execute_now", "retry_count"],
}
OUTPUT_SCHEMA = {"type": "object", "properties": {"stdout_text": {"type": "string"}, "exit_code": {"type": "integer"}}}
LONG_URI = "file:///srv/projects/sandbox/notebooks/2026/experiments/results-final-v2.json"


def _sandbox(tmp_path, write_config):
    run = tool(
        "run_python_code",
        description=LONG_DESCRIPTION,
        inputSchema=SCHEMA,
        outputSchema=OUTPUT_SCHEMA,
        result={"content": [{"type": "text", "text": "ok"}], "structuredContent": {"stdout_text": "", "exit_code": 0}},
    )
    server = surface_yaml(tmp_path, [run], name="sandbox")
    spec_path = tmp_path / "sandbox-spec.json"
    spec = json.loads(spec_path.read_text())
    spec["resources"] = [{"uri": LONG_URI, "name": "results", "mimeType": "application/json"}]
    spec_path.write_text(json.dumps(spec))
    return write_config({"sandbox": server})


@pytest.mark.parametrize("columns", [200, 100, 80, 60])
def test_list_keeps_parameter_names_types_and_resource_uris_whole_at_narrow_widths(tmp_path, write_config, columns):
    path = _sandbox(tmp_path, write_config)
    result = CliRunner().invoke(app, ["list", "-c", str(path), "--resources"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if LONG_URI not in line]  # a URI is never broken
    assert max(len(line) for line in lines) <= columns
    for name, kind in [
        ("sandbox_file_path*", "string"),
        ("code_to_execute_now*", "string"),
        ("retry_count*", "integer"),
    ]:
        assert f"{name}: {kind}" in result.stdout or re.search(rf"{re.escape(name)}:\s*│\s*│?\s*{kind}", result.stdout)
    assert any(re.search(rf"\b{re.escape(n)}\b", result.stdout) for n in ["timeout_seconds", "interpreter_mode"])
    assert "…" not in "".join(re.findall(r"[a-z_]+\*?:", result.stdout))
    assert LONG_URI in result.stdout


@pytest.mark.parametrize(
    ("columns", "header"), [(200, ["parameters (* required)"]), (40, ["parameters", "(* required)"])]
)
def test_list_heads_the_parameters_as_the_detail_view_does_on_two_lines_when_narrow(write_config, columns, header):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,add")})
    result = CliRunner().invoke(app, ["list", "-c", str(path)], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0
    heads = [[cell.strip() for cell in line.split("┃")[1:-1]] for line in result.stdout.splitlines() if "┃" in line]
    assert [head[-1] for head in heads] == header
    assert "text*: string" in result.stdout and "parameters*" not in result.stdout


def test_list_on_an_80_column_terminal_shortens_a_long_description_instead_of_the_parameters(tmp_path, write_config):
    path = _sandbox(tmp_path, write_config)
    terminal = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}
    result = CliRunner().invoke(app, ["list", "-c", str(path)], env=terminal)
    assert result.exit_code == 0
    shown = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)  # a terminal gets bold and dim
    assert "sandbox_file_path*: string" in shown and "code_to_execute_now*: string" in shown
    assert "Network access follows" not in shown and "…" in shown


def test_list_into_a_file_or_pipe_keeps_the_whole_description_wrapped_and_never_cuts_it(tmp_path, write_config):
    path = _sandbox(tmp_path, write_config)
    result = CliRunner().invoke(app, ["list", "-c", str(path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.stdout
    cells = [line.split("│")[2].strip() for line in result.stdout.splitlines() if line.count("│") == 4]
    assert " ".join(cell for cell in cells if cell) == LONG_DESCRIPTION


def test_list_server_tool_shows_every_parameter_nested_and_output_schemas_and_an_example(tmp_path, write_config):
    path = _sandbox(tmp_path, write_config)
    result = CliRunner().invoke(app, ["list", "sandbox", "run_python_code", "-c", str(path)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Network access follows the sandbox's own rules." in out  # the whole description
    assert "parameters (* required)" in out
    assert "sandbox_file_path*  string\n" in out and "Where the code is written" in out
    assert "timeout_seconds  integer  default: 30" in out
    assert 'interpreter_mode  string  default: "safe"' in out and 'one of: "fast", "safe"' in out
    assert re.search(r"[├└]── env_vars  object\n", out)  # nested properties as a tree
    assert "any other key: string" in out
    assert "output (structured content)" in out and "stdout_text  string" in out
    assert '"properties"' not in out  # no raw JSON
    example = next(line.strip() for line in out.splitlines() if line.strip().startswith("miroctl call"))
    assert example == (
        f"miroctl call -c {path} sandbox run_python_code sandbox_file_path='<sandbox_file_path>' "
        "code_to_execute_now='<code_to_execute_now>' retry_count=3"
    )


def test_list_server_tool_names_the_tools_when_the_tool_is_unknown(tmp_path, write_config):
    path = _sandbox(tmp_path, write_config)
    result = CliRunner().invoke(app, ["list", "sandbox", "run_pyton_code", "-c", str(path)])
    assert result.exit_code == 6
    assert "server 'sandbox' has no tool 'run_pyton_code'" in result.stderr and "run_python_code" in result.stderr


def test_the_example_call_line_runs_as_pasted_into_a_shell(tmp_path, write_config):
    path = _sandbox(tmp_path, write_config)
    shown = CliRunner().invoke(app, ["list", "sandbox", "run_python_code", "-c", str(path)])
    example = next(line.strip() for line in shown.stdout.splitlines() if line.strip().startswith("miroctl call"))
    script = example.replace("miroctl", f"{shlex.quote(sys.executable)} -m miroctl", 1) + " --json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the line itself names the config (-c)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert parse_json(done.stdout)["structured_content"] == {"stdout_text": "", "exit_code": 0}


def test_example_values_parse_back_to_the_types_the_schema_asks_for():
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {
            "count": {"type": "integer", "exclusiveMinimum": 5},
            "ratio": {"type": "number", "minimum": 0.5},
            "flag": {"type": "boolean"},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "where": {"$ref": "#/$defs/Point"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "odd key": {"type": "string"},
            "quoted": {"type": "string", "default": 'it\'s "here"'},
            "choice": {"enum": [3, "three"]},
        },
        "required": ["count", "ratio", "flag", "ids", "where", "maybe", "odd key", "quoted", "choice"],
    }
    info = ToolInfo("s", "t", input_schema=schema)
    words = shlex.split(example_call("my server", info))
    assert words[:4] == ["miroctl", "call", "my server", "t"]
    values = arguments.build(schema, {}, words[4:])
    assert arguments.validate(info, values) == []
    assert values == {
        "count": 6,
        "ratio": 1.5,
        "flag": True,
        "ids": [1],
        "where": {"x": 1},
        "maybe": 1,
        "odd key": "<odd key>",
        "quoted": 'it\'s "here"',
        "choice": 3,
    }


def test_call_prints_result_text_exactly_as_the_server_sent_it(tmp_path, write_config):
    sent = {"compact": '{"a":1}', "escapes": '{"name": "caf\\u00e9", "tab": "a\\tb"}'}
    tools = [tool(name, text(value)) for name, value in sent.items()]
    path = write_config({"surface": surface_yaml(tmp_path, tools)})
    for name, value in sent.items():
        human = CliRunner().invoke(app, ["call", "surface", name, "-c", str(path)])
        assert human.exit_code == 0
        assert human.stdout == value + "\n"
        machine = CliRunner().invoke(app, ["call", "surface", name, "-c", str(path), "--json"])
        assert machine.exit_code == 0
        assert parse_json(machine.stdout)["result"] == value


def test_a_failure_shows_the_servers_last_stderr_line_once(write_config):
    path = write_config({"quitter": fixture_yaml("quitter", "--mode", "exit")})
    called = CliRunner().invoke(app, ["call", "quitter", "echo", "text=hi", "-c", str(path)])
    assert called.exit_code == 3
    assert called.stderr.count("fixture: giving up") == 1
    listed = CliRunner().invoke(app, ["list", "-c", str(path)], env={"COLUMNS": "120"})
    assert listed.exit_code == 1
    assert listed.stdout.count("fixture: giving up") == 1
