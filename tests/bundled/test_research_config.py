"""The research servers' files: each tool listed by its server has yaml metadata that matches its annotations,
a description a model can act on, and every key comes from the environment, so no server file holds one."""

from __future__ import annotations

import sys

import pytest
import yaml

from tests.bundled.conftest import bundled_config, bundled_spec, listed_tools, memory_spec, session
from tests.bundled.files import hide_module
from tests.bundled.test_bundled_config import HINTS
from tests.conftest import ROOT

RESEARCH = ("tool-reasoning", "tool-vision", "tool-audio", "tool-docker", "tool-browser")
EXPECTED = {
    "tool-reasoning": {"reasoning"},
    "tool-vision": {"visual_question_answering", "visual_audio_youtube_analyzing"},
    "tool-audio": {"audio_transcription", "audio_question_answering"},
    "tool-docker": {"list_containers", "container_logs", "inspect_container", "container_stats"},
    "tool-browser": {
        "browser_navigate",
        "browser_snapshot",
        "browser_click",
        "browser_type",
        "browser_navigate_back",
        "browser_close",
    },
}


@pytest.mark.parametrize("name", RESEARCH)
def test_each_research_tool_has_yaml_metadata_that_matches_its_annotations(name, monkeypatch):
    # Any executable as the browser, which listing the tools never starts (so the test runs on a machine
    # without Chromium, as a newcomer's may be).
    monkeypatch.setenv("BROWSER_EXECUTABLE", "/bin/true")
    spec = bundled_spec(name)
    entry = listed_tools([memory_spec(name)])[0]
    assert entry.ok, entry.failure
    assert {t.name for t in entry.tools} == set(spec.tools) == EXPECTED[name]
    for tool in entry.tools:
        for key, hint in HINTS.items():
            assert tool.annotations.get(hint) is spec.tools[tool.name][key], f"{name}.{tool.name}: {key}"
        assert len(tool.description) > 80, f"{name}.{tool.name} needs a real description"


def test_research_servers_take_their_keys_from_the_environment_only():
    config = bundled_config()
    for name in RESEARCH:
        assert config.get(name).error is None, name
        raw = yaml.safe_load((ROOT / "config" / "tool" / f"{name}.yaml").read_text())
        for key, value in raw.get("env", {}).items():
            if key.endswith("_API_KEY"):
                assert value == f"${{oc.env:{key},''}}", f"{name}: {key} must come from the environment"


def test_a_missing_client_library_is_a_tool_error_with_the_install_line(model_env, monkeypatch):
    model_env(ANTHROPIC_API_KEY="sk-ant-not-used")
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if it were not installed
    got = session(memory_spec("reasoning"), ("reasoning", {"question": "Why?"}))
    assert got[0].exit_code == 1 and got[0].error_kind == "tool_error"
    assert "the anthropic client library is not installed: pip install 'miroctl[research]'" in got[0].error


def test_the_docker_server_without_its_library_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)  # as if it were not installed
    got = session(memory_spec("docker"), ("list_containers", {}))
    assert got[0].exit_code == 1
    assert "the docker client library is not installed: pip install 'miroctl[research]'" in got[0].error


@pytest.mark.process
def test_the_browser_server_without_playwright_refuses_to_start_and_says_why(tmp_path):
    hidden = hide_module(tmp_path / "shadow", "playwright")
    entry = listed_tools([bundled_spec("browser", {"PYTHONPATH": hidden})])[0]
    assert not entry.ok and entry.failure.kind == "exited"
    assert "the playwright package is not installed: pip install 'miroctl[research]'" in entry.failure.hint
