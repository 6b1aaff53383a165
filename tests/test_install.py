"""`miroctl install CLIENT`: the entry that starts `miroctl serve`, written into each client's documented
config, read back by `config sources` and `config import`, merged with what is there, backed up, removed;
and a client's entry started for real."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.config import clients
from tests.conftest import FIXTURE, HEALTHY_STARTUP

MIROCTL = str(Path(sys.executable).parent / "miroctl")

# Each client's file, relative to HOME (user scope) or the project (project scope), on Linux.
FILES = {
    ("claude-desktop", "user"): "~/.config/Claude/claude_desktop_config.json",
    ("claude-code", "user"): "~/.claude.json",
    ("claude-code", "project"): ".mcp.json",
    ("claude-code", "local"): "~/.claude.json",
    ("cursor", "user"): "~/.cursor/mcp.json",
    ("cursor", "project"): ".cursor/mcp.json",
    ("vscode", "user"): "~/.config/Code/User/mcp.json",
    ("vscode", "project"): ".vscode/mcp.json",
    ("codex", "user"): "~/.codex/config.toml",
    ("codex", "project"): ".codex/config.toml",
    ("gemini", "user"): "~/.gemini/settings.json",
    ("gemini", "project"): ".gemini/settings.json",
    ("windsurf", "user"): "~/.codeium/windsurf/mcp_config.json",
}


def where(home: Path, relative: str) -> Path:
    return home / relative[2:] if relative.startswith("~/") else Path.cwd() / relative


def invoke(*words: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(words))
    return result.exit_code, result.stdout, result.stderr


def sources(client: str) -> dict[str, list[str]]:
    result = CliRunner().invoke(app, ["config", "sources", "--client", client, "--json"])
    assert result.exit_code == 0, result.stderr
    return {s["scope"]: s["servers"] for s in json.loads(result.stdout)["sources"]}


@pytest.mark.parametrize(("client", "scope"), sorted(FILES))
def test_install_writes_an_entry_that_config_sources_reads_as_this_miroctls_serve(home, client, scope):
    code, stdout, _ = invoke("install", client, "--scope", scope)
    assert code == 0
    assert stdout.splitlines()[0] == f"added miroctl to {FILES[client, scope]} ({client}, {scope} scope)"
    assert sources(client) == {scope: ["miroctl"]}
    source = next(s for s in clients.discover(client=client) if s.location.scope == scope)
    (spec,) = source.specs()
    assert (spec.error, spec.transport, spec.command, spec.args) == (None, "stdio", MIROCTL, ("serve",))


@pytest.mark.parametrize("client", clients.CLIENTS)
def test_config_import_of_an_installed_client_writes_the_server_file_of_miroctl_serve(home, client):
    assert invoke("install", client, "--profile", "research")[0] == 0
    code, stdout, _ = invoke("config", "import", client, "--into", "tools")
    assert code == 0
    assert stdout.strip() == "miroctl-research -> tools/miroctl-research.yaml"
    document = yaml.safe_load(Path("tools/miroctl-research.yaml").read_text())
    assert (document["command"], document["args"]) == (MIROCTL, ["serve", "--config", "research"])


def test_each_client_gets_its_documented_shape(home):
    for client in ("claude-desktop", "claude-code", "vscode", "codex"):
        assert invoke("install", client)[0] == 0
    desktop = json.loads(where(home, FILES["claude-desktop", "user"]).read_text())
    assert desktop == {"mcpServers": {"miroctl": {"command": MIROCTL, "args": ["serve"]}}}
    code = json.loads((home / ".claude.json").read_text())
    assert code["mcpServers"]["miroctl"] == {"type": "stdio", "command": MIROCTL, "args": ["serve"]}
    vscode = json.loads(where(home, FILES["vscode", "user"]).read_text())
    assert vscode == {"servers": {"miroctl": {"type": "stdio", "command": MIROCTL, "args": ["serve"]}}}
    toml = tomllib.loads((home / ".codex/config.toml").read_text())
    assert toml == {"mcp_servers": {"miroctl": {"command": MIROCTL, "args": ["serve"]}}}


def test_install_keeps_every_other_key_and_server_and_backs_up_the_file_as_it_was(home):
    path = home / ".gemini/settings.json"
    path.parent.mkdir()
    before = json.dumps({"theme": "dark", "mcpServers": {"other": {"command": "other-server"}}})
    path.write_text(before)
    os.chmod(path, 0o600)
    code, stdout, _ = invoke("install", "gemini")
    assert code == 0
    assert "  backup: ~/.gemini/settings.json.bak" in stdout.splitlines()
    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    assert data["mcpServers"] == {
        "other": {"command": "other-server"},
        "miroctl": {"command": MIROCTL, "args": ["serve"]},
    }
    assert (home / ".gemini/settings.json.bak").read_text() == before
    assert path.stat().st_mode & 0o777 == 0o600


def test_install_keeps_the_comments_and_tables_of_codex_config_toml(home):
    path = home / ".codex/config.toml"
    path.parent.mkdir()
    path.write_text('# my model\nmodel = "o4"\n\n[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\n')
    assert invoke("install", "codex")[0] == 0
    text = path.read_text()
    assert text.startswith('# my model\nmodel = "o4"\n\n[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\n')
    assert tomllib.loads(text)["mcp_servers"]["miroctl"] == {"command": MIROCTL, "args": ["serve"]}


def test_a_new_file_is_private_in_home_and_readable_by_the_team_in_the_project(home):
    assert invoke("install", "cursor")[0] == 0
    assert invoke("install", "cursor", "--scope", "project")[0] == 0
    assert (home / ".cursor/mcp.json").stat().st_mode & 0o777 == 0o600
    assert (Path.cwd() / ".cursor/mcp.json").stat().st_mode & 0o777 == 0o644


def test_installing_again_changes_nothing_and_writes_no_backup(home):
    assert invoke("install", "cursor")[0] == 0
    code, stdout, _ = invoke("install", "cursor")
    assert code == 0
    assert stdout.splitlines()[0] == "miroctl is already in ~/.cursor/mcp.json (cursor, user scope); nothing changed"
    assert not (home / ".cursor/mcp.json.bak").exists()


def test_a_server_of_that_name_set_up_differently_is_replaced_only_with_force(home):
    path = home / ".cursor/mcp.json"
    path.parent.mkdir()
    before = json.dumps({"mcpServers": {"miroctl": {"command": "miroctl", "args": ["serve", "-c", "mine.yaml"]}}})
    path.write_text(before)
    code, _, stderr = invoke("install", "cursor")
    assert code == 2
    assert "already has a server named miroctl that is set up differently" in stderr
    assert "hint: add --force to replace it, or --name" in stderr
    assert path.read_text() == before
    code, stdout, _ = invoke("install", "cursor", "--force")
    assert code == 0
    assert stdout.startswith("replaced miroctl in ~/.cursor/mcp.json")
    assert json.loads(path.read_text())["mcpServers"]["miroctl"]["args"] == ["serve"]


def test_remove_takes_out_only_miroctls_entry_and_a_second_remove_exits_6(home):
    path = home / ".cursor/mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {"other": {"command": "other-server"}}}))
    assert invoke("install", "cursor", "--name", "tools")[0] == 0
    code, stdout, _ = invoke("install", "cursor", "--name", "tools", "--remove")
    assert code == 0
    assert stdout.splitlines()[0] == "removed tools from ~/.cursor/mcp.json (cursor, user scope)"
    assert json.loads(path.read_text()) == {"mcpServers": {"other": {"command": "other-server"}}}
    code, _, stderr = invoke("install", "cursor", "--name", "tools", "--remove")
    assert code == 6
    assert f"no server named tools in {path}" in stderr


def test_print_shows_the_entry_in_the_clients_format_and_writes_nothing(home):
    code, stdout, _ = invoke("install", "claude-code", "--scope", "local", "--print")
    assert code == 0
    entry = {"type": "stdio", "command": MIROCTL, "args": ["serve"]}
    assert json.loads(stdout) == {"projects": {str(Path.cwd()): {"mcpServers": {"miroctl": entry}}}}
    code, stdout, _ = invoke("install", "codex", "--print", "--profile", "research")
    assert code == 0
    expected = {"command": MIROCTL, "args": ["serve", "--config", "research"]}
    assert tomllib.loads(stdout) == {"mcp_servers": {"miroctl-research": expected}}
    assert list(home.iterdir()) == []
    assert list(Path.cwd().iterdir()) == []


def test_a_config_behind_a_symlink_is_never_written_through(home, tmp_path):
    elsewhere = tmp_path / "dotfiles" / "mcp.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text('{"mcpServers": {}}')
    (home / ".cursor").mkdir()
    (home / ".cursor/mcp.json").symlink_to(elsewhere)
    code, _, stderr = invoke("install", "cursor")
    assert code == 2
    assert "is a symbolic link: miroctl does not write through it" in stderr
    assert elsewhere.read_text() == '{"mcpServers": {}}'
    assert (home / ".cursor/mcp.json").is_symlink()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {', "bad JSON at"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"mcpServers": []}', "mcpServers must be an object, got list"),
    ],
)
def test_a_file_the_client_could_not_read_either_is_a_config_error_and_stays_as_it_was(home, text, message):
    path = home / ".cursor/mcp.json"
    path.parent.mkdir()
    path.write_text(text)
    code, _, stderr = invoke("install", "cursor")
    assert code == 2
    assert message in stderr
    assert path.read_text() == text


def test_bad_toml_is_a_config_error_and_stays_as_it_was(home):
    path = home / ".codex/config.toml"
    path.parent.mkdir()
    path.write_text("[mcp_servers\n")
    code, _, stderr = invoke("install", "codex")
    assert code == 2
    assert "bad TOML in" in stderr
    assert path.read_text() == "[mcp_servers\n"


@pytest.mark.parametrize(
    ("words", "message", "hint"),
    [
        (["notepad"], "unknown client 'notepad'", "hint: one of claude-desktop, claude-code"),
        (["windsurf", "--scope", "project"], "windsurf has no project scope", "hint: --scope user"),
        (["cursor", "--profile", "reserch"], "no such profile or file: reserch", "did you mean --profile research?"),
        (["cursor", "--print", "--remove"], "--print and --remove do not go together", "hint: --print shows"),
    ],
)
def test_a_bad_install_command_line_exits_2_with_its_reason_and_next_step(home, words, message, hint):
    code, stdout, stderr = invoke("install", *words)
    assert code == 2
    assert stdout == ""
    assert message in stderr
    assert hint in stderr
    assert list(home.iterdir()) == []


def test_a_profile_file_is_written_as_its_absolute_path_and_names_the_server(home):
    Path("team.yaml").write_text("tool_config: []\n")
    code, _, _ = invoke("install", "cursor", "--profile", "team.yaml")
    assert code == 0
    entry = json.loads((home / ".cursor/mcp.json").read_text())["mcpServers"]["miroctl-team"]
    assert entry["args"] == ["serve", "--config", str(Path.cwd() / "team.yaml")]


@pytest.mark.process
def test_the_installed_entry_starts_miroctl_serve_and_a_call_reaches_the_profiles_server(home, write_config):
    profile = write_config(
        {"fx": {"name": "fx", "tool_command": "python", "args": [FIXTURE, "--name", "fx"]}},
        tool_config=["fx"],
        startup_timeout=HEALTHY_STARTUP,
    )
    assert invoke("install", "cursor", "--profile", str(profile), "--name", "pool")[0] == 0
    code, stdout, stderr = invoke("call", "--config", "cursor", "pool", "fx__echo", "text=through the editor's entry")
    assert code == 0, stderr
    assert stdout.strip() == "through the editor's entry"
