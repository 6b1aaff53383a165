"""The bundled research profile: chosen by name, its servers healthy with truthful metadata, and a server whose
key is missing reported as a config failure naming the variable while the others work."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.config import loader as config_
from tests.bundled.test_bundled_config import HINTS
from tests.conftest import ROOT

RESEARCH = ("tool-search", "tool-wiki", "tool-wayback", "tool-scrape")
ALSO = ("tool-reading", "tool-python", "tool-planner")


def test_the_research_profile_selects_the_research_servers_and_those_a_research_agent_uses():
    config = config_.load("research", cwd=ROOT / "tests")
    assert config.source == str(ROOT / "config" / "research.yaml")
    assert config.default_names[: len(RESEARCH) + len(ALSO)] == RESEARCH + ALSO
    for name in config.default_names:
        assert config.get(name).error is None, f"{name}: {config.get(name).error}"


def test_miroctl_list_with_the_research_profile_shows_every_server_with_truthful_metadata(
    monkeypatch, tmp_path, bundled_servers_in_memory
):
    for key in ("SERPER_API_KEY", "JINA_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["-c", "research", "list", "--json"])
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    unhealthy = [s for s in servers.values() if not s["ok"]]
    assert result.exit_code == (1 if unhealthy else 0), result.stderr
    for entry in unhealthy:  # a server that cannot run here (no key, no browser) is reported, never fatal
        assert entry["name"] not in RESEARCH + ALSO and entry["failure"]["message"].strip()
        if entry["failure"]["kind"] == "config":
            assert "missing environment variable" in entry["failure"]["message"]
    config = config_.load("research")
    for name in RESEARCH + ALSO:
        assert servers[name]["ok"], servers[name]["failure"]
    for name in RESEARCH:
        spec = config.get(name)
        assert {t["name"] for t in servers[name]["tools"]} == set(spec.tools), name
        for tool in servers[name]["tools"]:
            for key, hint in HINTS.items():
                assert tool["annotations"][hint] is spec.tools[tool["name"]][key], f"{name}.{tool['name']}: {key}"
            assert tool["annotations"]["readOnlyHint"] and tool["annotations"]["openWorldHint"]
            assert len(tool["description"]) > 200, f"{name}.{tool['name']} needs a description a model can act on"


def test_in_the_research_profile_a_server_without_its_key_is_a_config_failure_and_the_others_work(
    tmp_path, monkeypatch, bundled_servers_in_memory
):
    shutil.copytree(ROOT / "config", tmp_path / "config")
    keyed = tmp_path / "config" / "tool" / "tool-keyed.yaml"
    keyed.write_text(
        "name: tool-keyed\ntool_command: python\nargs: ['-P', '-m', 'miroctl.servers.wiki']\n"
        "env:\n  SOME_API_KEY: '${oc.env:MIROCTL_TEST_RESEARCH_KEY}'\n"
    )
    profile = tmp_path / "config" / "research.yaml"
    settings = yaml.safe_load(profile.read_text())
    profile.write_text(yaml.safe_dump({**settings, "tool_config": ["tool-keyed", "tool-wiki"]}))
    monkeypatch.delenv("MIROCTL_TEST_RESEARCH_KEY", raising=False)
    result = CliRunner().invoke(app, ["check", "-c", str(profile), "--json"])
    assert result.exit_code == 1, result.stderr
    report = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert set(report) == {"tool-keyed", "tool-wiki"}
    assert report["tool-keyed"]["failure"]["kind"] == "config"
    assert report["tool-keyed"]["failure"]["message"].endswith("missing environment variable MIROCTL_TEST_RESEARCH_KEY")
    assert report["tool-wiki"]["ok"] is True
    assert Path(report["tool-keyed"]["source"]) == keyed


MODEL_SERVERS = ("tool-reasoning", "tool-vision", "tool-audio")
MODEL_KEYS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    *(f"{prefix}_OPENAI_{part}" for prefix in ("REASONING", "VISION", "AUDIO") for part in ("API_KEY", "BASE_URL")),
)


def test_a_model_server_with_no_model_configured_is_a_config_failure_naming_what_to_set(
    tmp_path, monkeypatch, bundled_servers_in_memory
):
    for key in MODEL_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["-c", "research", "check", *MODEL_SERVERS, "tool-planner", "--json"])
    assert result.exit_code == 1, result.stderr
    report = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert report["tool-planner"]["ok"] is True
    for name in MODEL_SERVERS:
        failure = report[name]["failure"]
        assert (failure["kind"], failure["phase"]) == ("config", "config"), name
        assert "missing environment variable: set one of " in failure["message"]
        assert "OPENAI_API_KEY" in failure["message"] and f"{name[5:].upper()}_OPENAI_BASE_URL" in failure["message"]


def test_one_of_a_model_servers_alternatives_is_enough_and_an_empty_value_is_not(monkeypatch):
    for key in MODEL_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "")
    config = config_.load("research")
    assert all(config.get(name).config_error(os.environ) for name in MODEL_SERVERS)
    monkeypatch.setenv("AUDIO_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # a local Whisper server needs no key
    config = config_.load("research")
    assert config.get("tool-audio").config_error(os.environ) is None
    assert config.get("tool-reasoning").config_error(os.environ) and config.get("tool-vision").config_error(os.environ)
