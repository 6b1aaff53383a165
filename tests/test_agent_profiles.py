"""MiroFlow's and MiroThinker's Hydra agent files as profiles: each agent's servers, its blacklist, --agent.

The upstream files in tests/fixtures/upstream are unchanged copies (see its README); servers are started only
from copies of their layout whose tool/ files run the fixture server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from miroctl.base.errors import ConfigError
from miroctl.cli.app import app
from miroctl.config.loader import load
from tests.conftest import ROOT, fixture_yaml

UPSTREAM = Path(__file__).parent / "fixtures" / "upstream"
MIROFLOW = UPSTREAM / "miroflow" / "config"
MIROTHINKER = UPSTREAM / "mirothinker" / "conf" / "agent"
GAIA = MIROFLOW / "agent_gaia-validation_claude37sonnet.yaml"
WORKER_TOOLS = ["tool-searching", "tool-image-video", "tool-reading", "tool-code", "tool-audio"]


@pytest.fixture(autouse=True)
def _no_agent_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIROCTL_AGENT", raising=False)


def test_miroflows_agent_file_selects_the_main_agents_servers_from_the_tool_folder_beside_it(monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    config = load(str(MIROFLOW / "agent_quickstart_single_agent.yaml"))
    assert config.agent == "main_agent"
    assert config.default_names == ("tool-reading", "tool-searching")
    reading, searching = config.select()
    assert reading.error is None and reading.args == ("-m", "src.tool.mcp_servers.reading_mcp_server")
    assert searching.error is not None and "SERPER_API_KEY" in searching.error  # that server's error only


def test_the_agents_own_unset_llm_keys_are_not_needed_to_read_its_servers(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load(str(GAIA)).default_names == ("tool-reasoning",)


@pytest.mark.parametrize("name", ["agent-worker", "worker"])
def test_agent_picks_a_sub_agents_servers_by_its_name_or_without_the_agent_prefix(name):
    config = load(str(GAIA), agent=name)
    assert config.agent == "agent-worker"
    assert list(config.default_names) == WORKER_TOOLS


def test_mirothinkers_defaults_compose_the_same_groups_file_and_its_own_keys_win():
    config = load(str(MIROTHINKER / "demo.yaml"))
    assert config.default_names == ("search_and_scrape_webpage", "jina_scrape_llm_summary", "tool-python")
    assert config.profile.blacklist == {
        ("search_and_scrape_webpage", "sogou_search"),
        ("tool-python", "download_file_from_sandbox_to_local"),
    }
    with pytest.raises(ConfigError) as raised:  # demo.yaml's `sub_agents:` (null) replaces default.yaml's
        load(str(MIROTHINKER / "demo.yaml"), agent="browsing")
    assert "no agent named 'browsing' (its agents: main_agent)" in raised.value.message


def test_mirothinkers_code_defined_server_names_resolve_to_the_bundled_mirothinker_profiles_servers():
    config = load(str(MIROTHINKER / "multi_agent.yaml"), agent="agent-browsing")
    specs = config.select()
    assert [s.name for s in specs] == ["tool-google-search", "tool-vqa", "tool-reader", "tool-python"]
    bundled = ROOT / "config" / "mirothinker"
    for spec in specs:
        assert spec.error is None, spec.error
        assert spec.source == str(bundled / f"{spec.name}.yaml") and spec.env["GROUP_NAME"] == spec.name


def test_a_server_file_beside_the_agent_wins_over_the_bundled_server_of_that_name(tmp_path: Path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "tool").mkdir()
    shutil.copy(MIROTHINKER / "multi_agent.yaml", tmp_path / "agent" / "multi_agent.yaml")
    shutil.copy(MIROTHINKER / "default.yaml", tmp_path / "agent" / "default.yaml")
    own = fixture_yaml("tool-vqa", "--tools", "echo")
    (tmp_path / "tool" / "tool-vqa.yaml").write_text(yaml.safe_dump(own))
    config = load(str(tmp_path / "agent" / "multi_agent.yaml"), agent="browsing")
    assert config.get("tool-vqa").source == str(tmp_path / "tool" / "tool-vqa.yaml")
    assert config.get("tool-reader").source == str(ROOT / "config" / "mirothinker" / "tool-reader.yaml")


def test_a_name_mirothinker_does_not_define_still_needs_a_file(tmp_path: Path):
    path = tmp_path / "agent.yaml"
    path.write_text("main_agent:\n  tools: [tool-python, tool-nosuch]\n")
    config = load(str(path))
    assert config.get("tool-python").error is None
    assert config.get("tool-nosuch").error == f"no server file for 'tool-nosuch' in {tmp_path / 'tool'}"


def _miroflow_copy(tmp_path: Path) -> Path:
    """MiroFlow's gaia agent file beside a tool/ folder whose servers run the fixture server."""
    (tmp_path / "tool").mkdir()
    shutil.copy(GAIA, tmp_path / "agent.yaml")
    servers = {"tool-reasoning": "add,echo", "tool-searching": "echo", "tool-reading": "add"}
    for name, tools in servers.items():
        body = fixture_yaml(name, "--tools", tools, startup_timeout=30)
        (tmp_path / "tool" / f"{name}.yaml").write_text(yaml.safe_dump(body))
    return tmp_path / "agent.yaml"


def test_list_shows_the_main_agents_servers_less_its_blacklisted_tools(tmp_path: Path):
    path = _miroflow_copy(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["main_agent"]["tool_blacklist"] = [["tool-reasoning", "echo"]]
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["list", "-c", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    servers = json.loads(result.stdout)["servers"]
    assert [(s["name"], [t["name"] for t in s["tools"]]) for s in servers] == [("tool-reasoning", ["add"])]


def test_check_with_miroctl_agent_in_the_environment_checks_that_sub_agents_servers(tmp_path: Path, monkeypatch):
    path = _miroflow_copy(tmp_path)
    monkeypatch.setenv("MIROCTL_AGENT", "agent-worker")
    result = CliRunner().invoke(app, ["check", "-c", str(path), "--json"])
    assert result.exit_code == 1, result.stderr  # three of the worker's five servers have no file here
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert list(servers) == WORKER_TOOLS
    assert servers["tool-searching"]["ok"] and servers["tool-reading"]["ok"]
    assert f"no server file for 'tool-code' in {tmp_path / 'tool'}" in json.dumps(servers["tool-code"])


def test_an_unknown_agent_is_a_config_error_naming_the_files_agents(tmp_path: Path):
    result = CliRunner().invoke(app, ["list", "-c", str(_miroflow_copy(tmp_path)), "--agent", "wroker"])
    assert result.exit_code == 2
    assert "no agent named 'wroker' (its agents: main_agent, agent-worker)" in result.stderr


def test_agent_with_a_plain_profile_is_a_config_error(write_config):
    path = write_config({"solo": fixture_yaml("solo")})
    result = CliRunner().invoke(app, ["list", "-c", str(path), "--agent", "worker"])
    assert result.exit_code == 2
    assert f"--agent worker: {path} is no agent file" in result.stderr


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"tool_config": ["tool-reading"]}, "tool_config at the top level of an agent file is read by no agent"),
        ({"main_agent": {"tool_configs": ["tool-reading"]}}, "main_agent.tool_configs: unknown key"),
        ({"main_agent": {"tool_config": "tool-reading"}}, "main_agent: its servers must be a list of names"),
        ({"main_agent": {"tools": [], "tool_config": []}}, "main_agent has both tool_config and tools"),
        ({"main_agent": {"tool_blacklist": [["only-one"]]}}, "entries must be [server, tool] pairs"),
        ({"defaults": ["nosuch", "_self_"]}, "defaults names 'nosuch', but there is no"),
    ],
)
def test_a_key_miroctl_would_misread_is_refused_with_its_reason(tmp_path: Path, change: dict, reason: str):
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"main_agent": {"llm": {"model_name": "x"}}, "output_dir": "logs/", **change}))
    result = CliRunner().invoke(app, ["list", "-c", str(path)])
    assert result.exit_code == 2
    assert reason in result.stderr


def test_an_agent_without_servers_lists_none(tmp_path: Path):
    path = tmp_path / "agent.yaml"
    path.write_text("main_agent:\n  tool_config:\n  max_turns: 20\nsub_agents: null\n")
    config = load(str(path))
    assert config.default_names == () and config.select() == []


def test_a_call_to_a_tool_the_picked_agent_blacklists_is_denied_without_starting_its_server(tmp_path: Path):
    path = _miroflow_copy(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["sub_agents"]["agent-worker"]["tool_blacklist"] = [["tool-searching", "echo"]]
    path.write_text(yaml.safe_dump(data))
    denied = CliRunner().invoke(app, ["call", "-c", str(path), "--agent", "worker", "tool-searching", "echo"])
    assert denied.exit_code == 5, denied.stderr
    allowed = CliRunner().invoke(app, ["call", "-c", str(path), "tool-searching", "echo", "text=hi", "--json"])
    assert allowed.exit_code == 0, allowed.stderr  # the main agent blacklists nothing
    assert json.loads(allowed.stdout)["server_name"] == "tool-searching"


def test_defaults_that_name_each_other_are_refused_not_followed_forever(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("defaults: [b]\nmain_agent: {tool_config: []}\n")
    (tmp_path / "b.yaml").write_text("defaults: [a]\n")
    result = CliRunner().invoke(app, ["list", "-c", str(tmp_path / "a.yaml")])
    assert result.exit_code == 2
    assert "defaults nest more than 8 files deep (a cycle?)" in result.stderr
