"""Bundled profiles chosen by name (`-c research`), and missing variables named even inside nested defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.base.errors import ConfigError
from miroctl.cli.app import app
from miroctl.config import envrefs
from miroctl.config.loader import bundled_config_dir, find_config, load
from tests.conftest import fixture_yaml


def test_a_bare_name_with_no_such_file_here_is_the_bundled_profile_of_that_name(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("MIROCTL_CONFIG", raising=False)
    assert find_config("research", tmp_path) == bundled_config_dir() / "research.yaml"
    assert find_config("default", tmp_path) == bundled_config_dir() / "miroctl.yaml"
    monkeypatch.setenv("MIROCTL_CONFIG", "research")
    assert find_config(None, tmp_path) == bundled_config_dir() / "research.yaml"


def test_a_file_of_that_name_in_the_working_directory_wins_over_the_bundled_profile(tmp_path: Path):
    (tmp_path / "research").write_text("tool_config: []\n")
    assert find_config("research", tmp_path) == tmp_path / "research"


def test_an_unknown_name_is_a_config_error_that_lists_the_bundled_profiles(tmp_path: Path):
    with pytest.raises(ConfigError) as raised:
        find_config("resarch", tmp_path)
    assert raised.value.message == "config file not found: resarch (from --config)"
    assert raised.value.hint == "did you mean 'research'? (a bundled profile)"
    with pytest.raises(ConfigError) as far:
        find_config("nothing-like-it", tmp_path)
    assert far.value.hint == "bundled profiles: default, miroflow, mirothinker, research"
    with pytest.raises(ConfigError):
        find_config("../research", tmp_path)  # a path is a path, never a profile name


def test_the_global_config_option_before_the_command_selects_the_profile_for_it(tmp_path: Path, write_config):
    path = write_config({"solo": fixture_yaml("solo", "--tools", "echo")})
    result = CliRunner().invoke(app, ["-c", str(path), "list", "--json"])
    assert result.exit_code == 0, result.stderr
    assert [s["name"] for s in json.loads(result.stdout)["servers"]] == ["solo"]
    unknown = CliRunner().invoke(app, ["--config", "nosuch", "list", "--json"])
    assert unknown.exit_code == 2 and "bundled profiles: default, miroflow, mirothinker, research" in unknown.stderr


def test_a_commands_own_config_option_wins_over_the_global_one(write_config):
    path = write_config({"solo": fixture_yaml("solo", "--tools", "echo")})
    result = CliRunner().invoke(app, ["-c", "nosuch", "list", "-c", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["config"] == str(path)


@pytest.mark.parametrize(
    ("value", "environ", "missing"),
    [
        ("${oc.env:KEY}", {}, {"KEY"}),
        ("${oc.env:KEY}", {"KEY": ""}, set()),
        ("${oc.env:KEY,''}", {}, set()),
        ("${oc.env:KEY,${oc.env:OTHER}}", {}, {"OTHER"}),
        ("${oc.env:KEY,${oc.env:OTHER}}", {"KEY": "k"}, set()),
        ("${oc.env:KEY,${oc.env:OTHER,x}}", {}, set()),
        ("${oc.decode:${oc.env:TIMEOUT}}", {}, {"TIMEOUT"}),
        ("Bearer ${oc.env:TOKEN} and ${oc.env:SECOND,y}", {}, {"TOKEN"}),
        ("no interpolation, {braces} and $ signs", {}, set()),
    ],
)
def test_the_variables_a_value_needs_are_found_through_nested_defaults(value, environ, missing):
    assert envrefs.missing({"env": {"A": value}, "args": [value]}, environ) == missing


def test_a_missing_key_behind_a_nested_default_is_named_in_that_servers_config_failure(write_config, monkeypatch):
    monkeypatch.delenv("MIROCTL_PRIMARY_KEY_X", raising=False)
    monkeypatch.delenv("MIROCTL_FALLBACK_KEY_X", raising=False)
    keyed = fixture_yaml("keyed", env={"KEY": "${oc.env:MIROCTL_PRIMARY_KEY_X,${oc.env:MIROCTL_FALLBACK_KEY_X}}"})
    path = write_config({"keyed": keyed, "fine": fixture_yaml("fine", "--tools", "echo")})
    result = CliRunner().invoke(app, ["check", "--config", str(path), "--json"])
    assert result.exit_code == 1, result.stderr
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert servers["fine"]["ok"] is True
    failure = servers["keyed"]["failure"]
    assert failure["kind"] == "config" and failure["message"].endswith(
        "missing environment variable MIROCTL_FALLBACK_KEY_X"
    )


def test_values_from_the_environment_are_secrets_and_a_files_own_defaults_are_not(write_config, monkeypatch):
    monkeypatch.setenv("MIROCTL_TEST_SET_TOKEN", "tok-from-the-environment")
    monkeypatch.delenv("MIROCTL_TEST_UNSET_URL", raising=False)
    server = fixture_yaml(
        "s",
        env={
            "TOKEN": "${oc.env:MIROCTL_TEST_SET_TOKEN,''}",
            "BASE_URL": "${oc.env:MIROCTL_TEST_UNSET_URL,'https://api.example.org/v1'}",
            "NESTED": "${oc.env:MIROCTL_TEST_UNSET_URL,${oc.env:MIROCTL_TEST_SET_TOKEN}}",
        },
    )
    config = load(str(write_config({"s": server})))
    assert config.get("s").env["BASE_URL"] == "https://api.example.org/v1"
    assert config.secrets() == {"tok-from-the-environment"}
