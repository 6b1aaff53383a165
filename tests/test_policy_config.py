"""The profile's policy sections and per-tool metadata are validated with one-line reasons."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from miroctl.base.errors import ConfigError
from miroctl.cli.app import app
from miroctl.config import loader as config_
from miroctl.policy.decisions import Policy
from tests.conftest import parse_json
from tests.policy_support import webtools_yaml


def test_a_full_policy_profile_loads_into_the_policy(write_config, tmp_path):
    path = write_config(
        {"web": webtools_yaml("web", max_result_chars=500, tools={"wipe": {"risk": "high", "destructive": True}})},
        policy={
            "mode": "ask",
            "allowlist": ["web.*"],
            "allow_high": ["web.wipe"],
            "allow_notify": ["web.note"],
            "assume_yes": True,
            "ask_timeout": 30,
        },
        url_rules={"block": ["example.org/private"]},
        fallbacks={
            "markitdown": {
                "tools": ["scrape", "fetch_page"],
                "timeout": 20,
                "docintel_endpoint": "https://docintel.example/",
            }
        },
        log="logs/calls.jsonl",
        max_result_chars=10000,
    )
    loaded = config_.load(str(path))
    policy = Policy.from_profile(loaded.profile, environ={})
    assert (policy.mode, policy.allowlist, policy.allow_high, policy.assume_yes) == (
        "ask",
        ("web.*",),
        ("web.wipe",),
        True,
    )
    assert (policy.allow_notify, policy.ask_timeout) == (("web.note",), 30.0)
    assert policy.url_rules.block == ("example.org/private",)
    assert policy.scrape_tools == ("scrape", "fetch_page")
    assert policy.max_result_chars == 10000
    assert loaded.profile.sections.log == str(tmp_path / "logs" / "calls.jsonl")
    web = loaded.get("web")
    assert web.tools == {"wipe": {"risk": "high", "destructive": True}, "*": {"max_result_chars": 500}}
    assert policy.result_limit(web, "peek") == 500


@pytest.mark.parametrize(
    ("profile", "reason"),
    [
        ({"policy": {"mode": "yolo"}}, "policy: mode must be one of bypass, read_only, normal, ask, got 'yolo'"),
        ({"policy": {"moed": "ask"}}, "policy: unknown key 'moed'"),
        ({"policy": {"allowlist": "web.*", "assume_yes": "sure"}}, "policy.assume_yes: expected true or false"),
        ({"url_rules": {"block": [3]}}, "url_rules.block: expected a list of patterns"),
        ({"max_result_chars": -5}, "max_result_chars: expected a positive number of characters, got -5"),
        ({"fallbacks": {"markitdown": {"timeout": 0}}}, "fallbacks.markitdown.timeout: expected a positive number"),
        ({"log": 7}, "log: expected a file path, got 7"),
        ({"policy": {"ask_timeout": 0}}, "policy.ask_timeout: expected a positive number, got 0"),
        ({"policy": {"allow_notify": [""]}}, "policy.allow_notify: expected a list of patterns"),
    ],
)
def test_a_bad_policy_section_exits_2_with_a_one_line_reason(write_config, profile, reason):
    path = write_config({"web": webtools_yaml("web")}, **profile)
    result = CliRunner().invoke(app, ["list", "-c", str(path)])
    assert result.exit_code == 2
    assert reason in " ".join(result.stderr.split())  # one line, however the terminal wraps it


def test_a_misspelled_policy_key_gets_a_suggestion(write_config):
    path = write_config({"web": webtools_yaml("web")}, policy={"alowlist": ["x"]})
    with pytest.raises(ConfigError) as caught:
        config_.load(str(path))
    assert caught.value.hint == "did you mean 'allowlist'?"


@pytest.mark.parametrize(
    ("tools", "reason"),
    [
        ({"wipe": {"risk": "extreme"}}, "tools.wipe.risk must be one of low, normal, high, got 'extreme'"),
        ({"wipe": {"read_only": "yes please"}}, "tools.wipe.read_only: expected true or false"),
        ({"wipe": {"readonly": True}}, "tools.wipe: unknown key 'readonly'"),
        ({"wipe": {"max_result_chars": 0}}, "tools.wipe.max_result_chars: expected a positive number"),
        ({"wipe": {"category": "alert"}}, "tools.wipe.category must be one of notify, got 'alert'"),
    ],
)
def test_bad_per_tool_metadata_becomes_that_servers_config_error(write_config, tools, reason):
    loaded = config_.load(str(write_config({"web": webtools_yaml("web", tools=tools), "ok": webtools_yaml("ok")})))
    assert reason in loaded.get("web").error
    assert loaded.get("ok").error is None


def test_a_server_with_bad_metadata_is_reported_in_place_by_list(write_config):
    path = write_config({"web": webtools_yaml("web", tools={"wipe": {"risk": "extreme"}})})
    result = CliRunner().invoke(app, ["list", "-c", str(path), "--json"])
    assert result.exit_code == 1
    error = parse_json(result.stdout)["servers"][0]["failure"]
    assert error["kind"] == "config" and "risk must be one of" in error["message"]


def test_a_profile_without_policy_sections_gets_the_defaults(write_config):
    loaded = config_.load(str(write_config({"web": webtools_yaml("web")})))
    policy = Policy.from_profile(loaded.profile, environ={})
    assert (policy.mode, policy.allowlist, policy.max_result_chars) == ("normal", (), None)
    assert "huggingface.co/datasets" in policy.url_rules.block
