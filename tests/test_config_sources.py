"""Editor and client configs: discovery in a fake HOME and project, each client's interpolation, hostile
files, `--config CLIENT`, and `config import` round-tripping to miroctl server files."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.config import clients, loader
from tests.conftest import FIXTURE


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def server(name: str) -> dict[str, object]:
    return {"command": sys.executable, "args": [FIXTURE, "--name", name]}


def every_client(home: Path) -> None:
    project = Path.cwd()
    write(home / ".config/Claude/claude_desktop_config.json", {"mcpServers": {"desk": server("desk")}})
    write(
        home / ".claude.json",
        {"mcpServers": {"cc-user": server("u")}, "projects": {str(project): {"mcpServers": {"cc-local": server("l")}}}},
    )
    write(project / ".mcp.json", {"mcpServers": {"cc-project": server("p")}})
    write(home / ".cursor/mcp.json", {"mcpServers": {"cur-user": server("cu")}})
    write(project / ".cursor/mcp.json", {"mcpServers": {"cur-project": server("cp")}})
    write(project / ".vscode/mcp.json", {"servers": {"vs": {"type": "stdio", **server("vs")}}, "inputs": []})
    write(home / ".codex/config.toml", f'[mcp_servers.cx]\ncommand = "{sys.executable}"\nargs = ["{FIXTURE}"]\n')
    write(home / ".gemini/settings.json", {"theme": "x", "mcpServers": {"gem": {"httpUrl": "http://127.0.0.1:9/mcp"}}})
    write(home / ".codeium/windsurf/mcp_config.json", {"mcpServers": {"wind": {"serverUrl": "http://127.0.0.1:9/sse"}}})


def sources_json() -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["config", "sources", "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_config_sources_finds_every_client_file_with_its_scope_and_servers(home):
    every_client(home)
    code, document = sources_json()
    assert code == 0
    assert document["schema"] == "miroctl.sources/1"
    found = {(s["client"], s["scope"]): (s["path"], s["servers"]) for s in document["sources"]}
    assert found == {
        ("claude-desktop", "user"): ("~/.config/Claude/claude_desktop_config.json", ["desk"]),
        ("claude-code", "user"): ("~/.claude.json", ["cc-user"]),
        ("claude-code", "project"): (".mcp.json", ["cc-project"]),
        ("claude-code", "local"): ("~/.claude.json", ["cc-local"]),
        ("cursor", "user"): ("~/.cursor/mcp.json", ["cur-user"]),
        ("cursor", "project"): (".cursor/mcp.json", ["cur-project"]),
        ("vscode", "project"): (".vscode/mcp.json", ["vs"]),
        ("codex", "user"): ("~/.codex/config.toml", ["cx"]),
        ("gemini", "user"): ("~/.gemini/settings.json", ["gem"]),
        ("windsurf", "user"): ("~/.codeium/windsurf/mcp_config.json", ["wind"]),
    }


def test_a_settings_file_without_servers_is_not_a_source(home):
    write(home / ".gemini/settings.json", {"theme": "dark"})
    code, document = sources_json()
    assert code == 0
    assert document["sources"] == []


def specs(client: str) -> dict:
    found, _ = clients.client_specs(client)
    return {s.name: s for s in found}


def test_claude_code_expands_var_and_var_with_default_and_leaves_bare_dollar(home, monkeypatch):
    monkeypatch.setenv("CC_TOKEN", "tok-123456789")
    monkeypatch.delenv("CC_UNSET", raising=False)
    entry = {"command": "srv", "args": ["$HOME", "${CC_UNSET:-fallback}"], "env": {"TOKEN": "${CC_TOKEN}"}}
    write(Path(".mcp.json"), {"mcpServers": {"s": entry}})
    spec = specs("claude-code")["s"]
    assert spec.error is None
    assert spec.args == ("$HOME", "fallback")
    assert spec.env["TOKEN"] == "tok-123456789"
    assert "tok-123456789" in spec.secrets


def test_claude_desktop_keeps_dollar_braces_literal(home):
    write(
        home / ".config/Claude/claude_desktop_config.json", {"mcpServers": {"d": {"command": "x", "args": ["${HOME}"]}}}
    )
    assert specs("claude-desktop")["d"].args == ("${HOME}",)


def test_cursor_expands_env_workspace_folder_and_user_home(home, monkeypatch):
    monkeypatch.setenv("CUR_KEY", "k-abcdef")
    entry = {"command": "${userHome}/bin/srv", "args": ["${workspaceFolder}/data"], "env": {"K": "${env:CUR_KEY}"}}
    write(Path(".cursor/mcp.json"), {"mcpServers": {"c": entry}})
    spec = specs("cursor")["c"]
    assert (spec.command, spec.args, spec.env["K"]) == (f"{home}/bin/srv", (f"{Path.cwd()}/data",), "k-abcdef")


def test_vscode_input_is_a_needs_input_problem_until_its_variable_is_set(home, monkeypatch):
    monkeypatch.delenv("GH_TOKEN", raising=False)
    data = {
        "inputs": [{"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": True}],
        "servers": {
            "gh": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer ${input:gh-token}"},
            }
        },
    }
    write(Path(".vscode/mcp.json"), data)
    code, document = sources_json()
    assert code == 1
    assert document["sources"][0]["problems"] == ["gh: needs input gh-token (set $GH_TOKEN)"]
    monkeypatch.setenv("GH_TOKEN", "ghp_secretvalue123")
    spec = specs("vscode")["gh"]
    assert (spec.error, spec.transport, spec.headers["Authorization"]) == (
        None,
        "streamable_http",
        "Bearer ghp_secretvalue123",
    )
    assert "ghp_secretvalue123" in spec.secrets


def test_gemini_http_url_is_streamable_url_is_sse_and_dollar_var_expands(home, monkeypatch):
    monkeypatch.setenv("GEM_KEY", "gemkey-9999")
    data = {
        "mcpServers": {
            "h": {"httpUrl": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "$GEM_KEY"}, "timeout": 5000},
            "s": {"url": "http://127.0.0.1:9/events"},
        }
    }
    write(home / ".gemini/settings.json", data)
    found = specs("gemini")
    assert (found["h"].transport, found["h"].headers["X-Key"], found["h"].timeout) == (
        "streamable_http",
        "gemkey-9999",
        5.0,
    )
    assert found["s"].transport == "sse"


def test_codex_bearer_token_and_env_headers_come_from_named_variables(home, monkeypatch):
    monkeypatch.setenv("CODEX_TOK", "codex-token-1234")
    monkeypatch.setenv("CODEX_ORG", "org-42")
    toml = (
        '[mcp_servers.remote]\nurl = "http://127.0.0.1:9/mcp"\nbearer_token_env_var = "CODEX_TOK"\n'
        'env_http_headers = { "X-Org" = "CODEX_ORG" }\ntool_timeout_sec = 12\n'
        '[mcp_servers.off]\ncommand = "x"\nenabled = false\n'
    )
    write(home / ".codex/config.toml", toml)
    found = specs("codex")
    assert found["remote"].headers == {"Authorization": "Bearer codex-token-1234", "X-Org": "org-42"}
    assert found["remote"].timeout == 12
    assert found["off"].enabled is False


def test_windsurf_server_url_is_the_url(home):
    write(home / ".codeium/windsurf/mcp_config.json", {"mcpServers": {"w": {"serverUrl": "http://127.0.0.1:9/mcp"}}})
    assert specs("windsurf")["w"].url == "http://127.0.0.1:9/mcp"


def test_hostile_files_give_one_line_problems_and_the_other_sources_still_count(home, monkeypatch):
    monkeypatch.setattr("miroctl.config.ecosystem.MAX_FILE_BYTES", 64 * 1024)
    write(home / ".cursor/mcp.json", '{"mcpServers": {"a": ')
    write(Path(".cursor/mcp.json"), {"mcpServers": ["not", "an", "object"]})
    write(Path(".mcp.json"), "[" * 50_000)
    write(home / ".gemini/settings.json", {"mcpServers": {"g": {"command": 5, "args": "x"}}})
    write(home / ".codeium/windsurf/mcp_config.json", {"mcpServers": {"ok": {"command": "srv"}}})
    write(home / ".codex/config.toml", "[mcp_servers.x\n")
    write(home / ".claude.json", '{"mcpServers": {}, "pad": "' + "x" * 70 * 1024 + '"}')
    code, document = sources_json()
    assert code == 1
    problems = {(s["client"], s["scope"]): s["problems"] for s in document["sources"]}
    assert problems[("windsurf", "user")] == []
    for key, expected in {
        ("cursor", "user"): "bad JSON at",
        ("cursor", "project"): "mcpServers must be an object",
        ("claude-code", "project"): "nested too deeply",
        ("gemini", "user"): "must be",
        ("codex", "user"): "bad TOML",
        ("claude-code", "user"): "too large",
    }.items():
        assert len(problems[key]) == 1 and "\n" not in problems[key][0] and expected in problems[key][0], (
            key,
            problems[key],
        )


@pytest.mark.process
def test_config_client_name_uses_that_clients_servers_project_winning_a_name(home):
    write(home / ".cursor/mcp.json", {"mcpServers": {"fx": {**server("user"), "disabled": True}, "other": server("o")}})
    write(Path(".cursor/mcp.json"), {"mcpServers": {"fx": server("fx")}})
    loaded = loader.load("cursor")
    assert loaded.get("fx").args[-1] == "fx"
    result = CliRunner().invoke(app, ["list", "fx", "--config", "cursor", "--json"])
    assert result.exit_code == 0, result.output
    assert "echo" in [t["name"] for t in json.loads(result.stdout)["servers"][0]["tools"]]


def test_config_client_name_without_any_file_is_a_config_error_naming_where_it_looked(home):
    result = CliRunner().invoke(app, ["list", "--config", "windsurf"])
    assert result.exit_code == 2
    assert "no windsurf config with MCP servers found" in result.stderr
    assert "~/.codeium/windsurf/mcp_config.json" in result.stderr


def test_import_writes_yaml_that_lists_the_same_tools_and_keeps_env_references(home, monkeypatch):
    monkeypatch.setenv("FX_TOKEN", "fx-token-abcdef123")
    write(Path(".cursor/mcp.json"), {"mcpServers": {"fx": {**server("fx"), "env": {"TOKEN": "${env:FX_TOKEN}"}}}})
    result = CliRunner().invoke(app, ["config", "import", "cursor", "--into", "tool"])
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(Path("tool/fx.yaml").read_text())
    assert written["env"] == {"TOKEN": "${oc.env:FX_TOKEN}"}
    assert "fx-token-abcdef123" not in Path("tool/fx.yaml").read_text()
    direct = CliRunner().invoke(app, ["list", "--config", "cursor", "--json"])
    imported = CliRunner().invoke(app, ["list", "--config", "tool/fx.yaml", "--json"])
    assert (direct.exit_code, imported.exit_code) == (0, 0)
    tools = [[t["name"] for t in json.loads(r.stdout)["servers"][0]["tools"]] for r in (direct, imported)]
    assert tools[0] == tools[1] and "echo" in tools[0]


def test_import_never_overwrites_without_force(home):
    write(Path(".mcp.json"), {"mcpServers": {"fx": server("fx")}})
    write(Path("tool/fx.yaml"), "name: mine\n")
    result = CliRunner().invoke(app, ["config", "import", "claude-code", "--into", "tool"])
    assert result.exit_code == 2
    assert "would overwrite tool/fx.yaml" in result.stderr
    assert Path("tool/fx.yaml").read_text() == "name: mine\n"
    forced = CliRunner().invoke(app, ["config", "import", "claude-code", "--into", "tool", "--force"])
    assert forced.exit_code == 0
    assert yaml.safe_load(Path("tool/fx.yaml").read_text())["name"] == "fx"


def test_import_keeps_a_literal_secret_with_a_warning_in_a_private_file(home):
    write(
        home / ".cursor/mcp.json",
        {"mcpServers": {"lit": {"command": "srv", "env": {"API_KEY": "sk-literal-0123456789"}}}},
    )
    result = CliRunner().invoke(app, ["config", "import", "cursor", "--into", "tool"])
    assert result.exit_code == 0
    assert "env.API_KEY is a literal credential" in result.stderr
    assert "sk-literal-0123456789" not in result.output
    assert yaml.safe_load(Path("tool/lit.yaml").read_text())["env"]["API_KEY"] == "sk-literal-0123456789"
    assert stat.S_IMODE(os.stat("tool/lit.yaml").st_mode) == 0o600


def test_a_dollar_brace_in_a_literal_value_survives_import_unexpanded(home):
    write(
        home / ".config/Claude/claude_desktop_config.json",
        {"mcpServers": {"d": {"command": "srv", "args": ["${NOT_EXPANDED}"]}}},
    )
    assert CliRunner().invoke(app, ["config", "import", "claude-desktop", "--into", "tool"]).exit_code == 0
    assert loader.load("tool/d.yaml").get("d").args == ("${NOT_EXPANDED}",)


def test_vscode_env_file_fills_env_where_env_does_not_set_it(home):
    write(Path(".env.mcp"), "A=from-file\nB=from-file\n")
    entry = {"type": "stdio", "command": "srv", "env": {"B": "from-env"}, "envFile": "${workspaceFolder}/.env.mcp"}
    write(Path(".vscode/mcp.json"), {"servers": {"v": entry}})
    assert dict(specs("vscode")["v"].env) == {"A": "from-file", "B": "from-env"}


def test_a_client_variable_miroctl_cannot_know_is_that_servers_problem(home):
    write(
        home / ".codeium/windsurf/mcp_config.json",
        {"mcpServers": {"w": {"command": "srv", "args": ["${file:/etc/key}"]}, "ok": {"command": "srv"}}},
    )
    found = specs("windsurf")
    assert "windsurf variable ${file:/etc/key} is not supported" in found["w"].error
    assert found["ok"].error is None


def test_import_keeps_a_hostile_server_name_inside_the_target_directory(home):
    write(Path(".mcp.json"), {"mcpServers": {"../../escape/x": {"command": "srv"}}})
    result = CliRunner().invoke(app, ["config", "import", "claude-code", "--into", "tool"])
    assert result.exit_code == 0
    assert [p.name for p in Path("tool").iterdir()] == ["escape-x.yaml"]
    assert not Path("../escape").exists()


def test_import_with_force_replaces_a_symlink_in_the_target_directory_and_never_writes_through_it(home):
    write(Path(".mcp.json"), {"mcpServers": {"fx": server("fx")}})
    outside = Path("outside.txt").resolve()
    outside.write_text("someone else's file\n")
    Path("tool").mkdir()
    Path("tool/fx.yaml").symlink_to(outside)
    result = CliRunner().invoke(app, ["config", "import", "claude-code", "--into", "tool", "--force"])
    assert result.exit_code == 0, result.stderr
    assert outside.read_text() == "someone else's file\n"
    assert not Path("tool/fx.yaml").is_symlink()
    assert yaml.safe_load(Path("tool/fx.yaml").read_text())["name"] == "fx"
    assert [p.name for p in Path("tool").iterdir()] == ["fx.yaml"]


def test_import_without_force_counts_a_dangling_symlink_as_a_file_it_would_overwrite(home):
    write(Path(".mcp.json"), {"mcpServers": {"fx": server("fx")}})
    target = Path("created-elsewhere.txt").resolve()
    Path("tool").mkdir()
    Path("tool/fx.yaml").symlink_to(target)
    result = CliRunner().invoke(app, ["config", "import", "claude-code", "--into", "tool"])
    assert result.exit_code == 2
    assert "would overwrite tool/fx.yaml" in result.stderr
    assert not target.exists()
