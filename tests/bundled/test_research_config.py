"""The research servers' files: each tool listed by its server has yaml metadata that matches its annotations,
a description a model can act on, and every key comes from the environment, so no server file holds one."""

from __future__ import annotations

import pytest
import yaml

from tests.bundled.conftest import bundled_config, bundled_spec, listed_tools
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
def test_each_research_tool_has_yaml_metadata_that_matches_its_annotations(name):
    spec = bundled_spec(name)
    entry = listed_tools([spec])[0]
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
