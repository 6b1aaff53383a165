"""Which interpreter `tool_command: python` runs: a server file's `python:`, the profile's, $MIROCTL_PYTHON, an
active virtualenv, miroctl's own; list and check name any other, and a missing module gets a hint."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from typer.testing import CliRunner

from miroctl import ToolManager
from miroctl.cli.app import app
from miroctl.config import loader
from tests.conftest import fixture_yaml, parse_json
from tests.json_contract import one_document

PREFIX_SERVER = """\
import json
import sys

TOOL = {
    "name": "prefix",
    "description": "The environment this server runs in.",
    "inputSchema": {"type": "object", "properties": {}},
}
ANSWERS = {
    "initialize": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "where", "version": "1.0.0"},
    },
    "tools/list": {"tools": [TOOL]},
    "tools/call": {"content": [{"type": "text", "text": sys.prefix}]},
    "ping": {},
}

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    answer = {"jsonrpc": "2.0", "id": message["id"]}
    if message["method"] in ANSWERS:
        answer["result"] = ANSWERS[message["method"]]
    else:
        answer["error"] = {"code": -32601, "message": "Method not found"}
    print(json.dumps(answer), flush=True)
"""


def make_venv(path: Path) -> Path:
    """A virtualenv without pip (quick to make), with none of miroctl's packages; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    return path / "bin" / "python"


def prefix_yaml(name: str, script: Path, **fields: object) -> dict[str, object]:
    return {"name": name, "tool_command": "python", "args": [str(script)], **fields}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """A stdio MCP server of the standard library alone (a Python needs nothing installed to run it) whose one
    tool, prefix, answers the environment it runs in."""
    path = tmp_path / "where.py"
    path.write_text(PREFIX_SERVER)
    return path


def call_prefix(path: Path, server: str) -> str:
    result = CliRunner().invoke(app, ["call", "--config", str(path), server, "prefix", "--json"])
    assert result.exit_code == 0, result.output
    return str(parse_json(result.stdout)["result"])


@pytest.mark.process
def test_a_server_files_python_runs_the_server_in_that_environment_and_list_names_it(write_config, tmp_path, script):
    python = make_venv(tmp_path / "other")
    path = write_config(
        {"where": prefix_yaml("where", script, python="../other/bin/python"), "own": prefix_yaml("own", script)}
    )
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 0, result.output
    servers = {s["name"]: s for s in one_document(result.stdout)["servers"]}
    assert servers["where"]["python"] == str(python)  # relative to the server file
    assert "python" not in servers["own"]
    assert Path(call_prefix(path, "where")) == (tmp_path / "other").resolve()
    human = CliRunner().invoke(app, ["list", "--config", str(path)], env={"COLUMNS": "200"})
    assert human.exit_code == 0
    assert "where  stdio · 1 tool · where 1.0.0 · " in human.stdout and f" · python {python}\n" in human.stdout
    assert "python" not in next(line for line in human.stdout.splitlines() if line.startswith("own  "))


@pytest.mark.process
def test_a_server_whose_python_lacks_a_module_gets_a_hint_naming_where_to_set_the_interpreter(write_config, tmp_path):
    python = make_venv(tmp_path / "bare")  # no mcp there: the fixture server cannot import it
    path = write_config({"fx": fixture_yaml("fx")}, python=str(python))
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 1
    server = one_document(result.stdout)["servers"][0]
    assert server["python"] == str(python)
    assert server["failure"]["kind"] == "exited"
    assert "No module named 'mcp'" in server["failure"]["stderr_tail"][-1]
    hint = server["failure"]["hint"]
    assert "lacks a module" in hint and "`python:`" in hint and "profile" in hint and "MIROCTL_PYTHON" in hint
    human = CliRunner().invoke(app, ["list", "--config", str(path)], env={"COLUMNS": "300"})
    assert human.exit_code == 1
    assert f"✗ fx  python {python} · exited: server exited" in human.stdout
    assert "hint: the server's Python lacks a module" in human.stdout


@pytest.mark.process
def test_an_active_virtualenv_runs_the_profiles_servers_unless_it_is_miroctls_own(
    write_config, tmp_path, script, monkeypatch
):
    venv = tmp_path / "active"
    python = make_venv(venv)
    path = write_config({"where": prefix_yaml("where", script)})
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    assert Path(call_prefix(path, "where")) == venv.resolve()
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 0
    assert one_document(result.stdout)["servers"][0]["python"] == str(python)
    # The server files shipped with miroctl run its bundled servers: they keep miroctl's own interpreter.
    bundled = loader.load("default").servers
    assert sys.executable in {spec.command for spec in bundled} and str(python) not in {s.command for s in bundled}
    assert not any(spec.python for spec in bundled)
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)  # miroctl's own environment: nothing changes, nothing is said
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 0
    assert "python" not in one_document(result.stdout)["servers"][0]
    assert Path(call_prefix(path, "where")) == Path(sys.prefix).resolve()


@pytest.mark.process
def test_a_server_files_python_beats_the_profiles_which_beats_miroctl_python_which_beats_the_virtualenv(
    write_config, tmp_path, script, monkeypatch
):
    envs = {name: tmp_path / name for name in ("file", "profile", "variable", "active")}
    for venv in envs.values():
        make_venv(venv)
    monkeypatch.setenv("VIRTUAL_ENV", str(envs["active"]))
    monkeypatch.setenv("MIROCTL_PYTHON", str(envs["variable"] / "bin" / "python"))
    servers = {"own": prefix_yaml("own", script, python="../file/bin/python"), "plain": prefix_yaml("plain", script)}
    with_profile = write_config(servers, python="profile/bin/python")  # relative to the profile
    assert Path(call_prefix(with_profile, "own")) == envs["file"].resolve()
    assert Path(call_prefix(with_profile, "plain")) == envs["profile"].resolve()
    without = write_config(servers)
    assert Path(call_prefix(without, "plain")) == envs["variable"].resolve()
    monkeypatch.delenv("MIROCTL_PYTHON")
    assert Path(call_prefix(without, "plain")) == envs["active"].resolve()


@pytest.mark.process
def test_check_names_the_interpreter_that_ran_a_server(write_config, tmp_path, script):
    python = make_venv(tmp_path / "other")
    path = write_config({"where": prefix_yaml("where", script, python=str(python)), "own": prefix_yaml("own", script)})
    result = CliRunner().invoke(app, ["check", "--json", "--config", str(path)])
    assert result.exit_code == 0, result.output
    servers = {s["name"]: s for s in one_document(result.stdout)["servers"]}
    assert servers["where"]["python"] == str(python)
    assert "python" not in servers["own"]
    human = CliRunner().invoke(app, ["check", "--config", str(path)], env={"COLUMNS": "200"})
    assert human.exit_code == 0
    assert f"\nwhere  python {python}\n" in human.stdout
    assert "own  python" not in human.stdout


def test_a_python_that_is_missing_or_not_executable_is_a_config_error_naming_the_file_and_key(
    write_config, tmp_path, monkeypatch
):
    (tmp_path / "plain.txt").write_text("not a program")
    path = write_config({"fx": fixture_yaml("fx")}, python="nowhere/bin/python")
    result = CliRunner().invoke(app, ["list", "--config", str(path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"miroctl: config: {path}: python: nowhere/bin/python does not exist"

    path = write_config({"fx": fixture_yaml("fx", python="../plain.txt")})
    result = CliRunner().invoke(app, ["call", "--config", str(path), "fx", "echo", "text=hi"])
    assert result.exit_code == 2
    server_file = tmp_path / "tool" / "fx.yaml"
    assert result.output.strip() == f"miroctl: config: {server_file}: python: ../plain.txt is not an executable file"

    monkeypatch.setenv("MIROCTL_PYTHON", str(tmp_path))
    result = CliRunner().invoke(app, ["call", "--config", str(path), "fx", "echo", "text=hi"])
    assert result.exit_code == 2  # the server file's python comes first, and is still the one named
    assert "fx.yaml: python: ../plain.txt" in result.output
    path = write_config({"fx": fixture_yaml("fx")})
    result = CliRunner().invoke(app, ["call", "--config", str(path), "fx", "echo", "text=hi"])
    assert result.exit_code == 2
    assert result.output.strip() == f"miroctl: config: $MIROCTL_PYTHON: {tmp_path} is not an executable file"


@pytest.mark.process
def test_the_librarys_server_python_is_checked_the_same_way_and_runs_the_seeds_servers(tmp_path, script):
    seeds = [{"name": "where", "params": StdioServerParameters(command=sys.executable, args=[str(script)])}]
    missing = ToolManager(seeds, server_python=tmp_path / "nowhere")
    assert missing.config.servers[0].error == f"server_python: {tmp_path / 'nowhere'} does not exist"
    python = make_venv(tmp_path / "other")
    tm = ToolManager(seeds, server_python=python)

    async def call() -> dict[str, object]:
        try:
            return await tm.execute_tool_call("where", "prefix", {})
        finally:
            await tm.close()

    answer = asyncio.run(call())
    assert Path(str(answer["result"])) == (tmp_path / "other").resolve()
    assert tm.config.servers[0].python == str(python)
