"""Ad-hoc servers as MCP hosts run them (the PATH's python, --env), readable names, and the shortcuts that one
server allows; dotted server names; a typo answered by the one server it was meant for."""

import json
import sys

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.config import loader
from miroctl.config.servers import adhoc_servers
from tests.conftest import HOSTILE, hostile_yaml, parse_json

SERVER = f"{sys.executable} {HOSTILE}"


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env)


@pytest.fixture
def path_python(tmp_path, monkeypatch):
    """A `python` first on PATH that only says who it is."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python"
    fake.write_text("#!/bin/sh\necho 'the python on PATH' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    return fake


def test_python_in_stdio_and_mcp_servers_json_is_the_paths_but_in_server_files_miroctls_own(
    path_python, tmp_path, write_config
):
    adhoc = invoke("list", "--json", "--stdio", "python server.py")
    (server,) = parse_json(adhoc.stdout)["servers"]
    assert server["failure"]["stderr_tail"] == ["the python on PATH"]
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"x": {"command": "python", "args": ["server.py"]}}}))
    assert loader.load(str(config)).get("x").command == "python"
    yaml_file = write_config({"y": {"name": "y", "tool_command": "python", "args": ["server.py"]}})
    assert loader.load(str(yaml_file)).get("y").command == sys.executable


def test_stdio_servers_get_env_pairs_over_the_small_inherited_environment(monkeypatch):
    monkeypatch.setenv("MIROCTL_NOT_INHERITED", "x")
    given = invoke("call", "--stdio", SERVER, "--env", "GREETING=hi there", "env", "name=GREETING", "--json")
    assert given.exit_code == 0, given.stderr
    assert parse_json(given.stdout)["result"] == "hi there"
    inherited = invoke("call", "--stdio", SERVER, "-e", "A=1", "env", "name=MIROCTL_NOT_INHERITED", "--json")
    assert parse_json(inherited.stdout)["result"] == "<unset>"
    alone = invoke("call", "--env", "A=1", "echo", "text=x")
    assert alone.exit_code == 2
    assert "--env sets the environment of --stdio servers" in alone.stderr
    malformed = invoke("list", "--stdio", SERVER, "--env", "NOVALUE")
    assert malformed.exit_code == 2 and "--env 'NOVALUE': expected NAME=value" in malformed.stderr


def test_read_and_prompt_with_one_server_need_no_server_name():
    read = invoke("read", "--stdio", SERVER, "hostile://notes")
    assert read.exit_code == 0, read.stderr
    assert read.stdout == "notes\n"
    prompt = invoke("prompt", "--stdio", SERVER, "greet", "who=you", "--json")
    assert prompt.exit_code == 0, prompt.stderr
    assert parse_json(prompt.stdout)["messages"][0]["content"]["text"] == "Hello, you!"
    named = invoke("prompt", "--stdio", SERVER, "hostile", "greet", "who=me", "--json")
    assert parse_json(named.stdout)["messages"][0]["content"]["text"] == "Hello, me!"
    two = invoke("read", "--stdio", SERVER, "--stdio", SERVER, "hostile://notes")
    assert two.exit_code == 2
    assert "read needs a server name: there are 2 servers" in two.stderr


def test_adhoc_servers_are_named_after_their_package_not_their_entry_file():
    specs = adhoc_servers(
        [
            "node /opt/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            "node /opt/node_modules/@acme/weather-mcp/build/index.js",
            "npx -y @modelcontextprotocol/server-filesystem /tmp",
            "uvx mcp-server-fetch",
            "python tests/servers/fixture.py",
            "python -m miroctl.servers.reading",
            "node ./dist/index.js",
        ],
        [],
    )
    assert [spec.name for spec in specs] == [
        "server-everything",
        "weather-mcp",
        "server-filesystem",
        "mcp-server-fetch",
        "fixture",
        "reading",
        "index",
    ]


def test_a_dotted_server_name_works_in_server_dot_tool(write_config):
    path = write_config({"api": hostile_yaml("api.v2")})
    result = invoke("call", "--config", str(path), "api.v2.echo", "text=dotted", "--json")
    assert result.exit_code == 0, result.stderr
    assert (parse_json(result.stdout)["server_name"], parse_json(result.stdout)["result"]) == ("api.v2", "dotted")


@pytest.mark.parametrize("autocorrect", [True, False], ids=["autocorrect", "no-autocorrect"])
def test_a_tool_typo_on_a_named_server_gets_the_near_miss_and_only_autocorrect_asks_the_others(
    write_config, tmp_path, autocorrect
):
    # Auto-correction first asks the other servers for a tool of exactly that name (one that has it wins over
    # the near miss); --no-autocorrect answers from the named server alone, starting nothing else.
    marker = tmp_path / "started"
    tripwire = {"name": "tripwire", "tool_command": "python", "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    path = write_config({"h": hostile_yaml("h"), "tripwire": tripwire})
    flags = [] if autocorrect else ["--no-autocorrect"]
    result = invoke("call", "--config", str(path), "h", "ecko", "text=x", *flags)
    assert result.exit_code == 6
    assert result.stderr.splitlines() == [
        "miroctl: not_found: server 'h' has no tool 'ecko'",
        "  hint: did you mean 'echo'?",
    ]
    assert marker.exists() is autocorrect
