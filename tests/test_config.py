"""Config loading: server files, profiles, ecosystem JSON, ad-hoc servers, lookup, broken files."""

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.base.errors import ConfigError, NotFound
from miroctl.cli.app import app
from miroctl.config import loader as config
from tests.conftest import fixture_yaml, parse_json


@pytest.mark.process
def test_server_file_in_the_seeds_shape_becomes_a_spec_with_python_as_this_interpreter(write_config):
    path = write_config({"tool-a": fixture_yaml("tool-a", env={"GREETING": "hi"}, timeout=12)})
    loaded = config.load(str(path))
    spec = loaded.get("tool-a")
    assert spec.command == sys.executable
    assert spec.env["GREETING"] == "hi"
    assert spec.timeout == 12
    assert loaded.default_names == ("tool-a",)


def test_short_server_name_finds_the_tool_prefixed_one(write_config):
    loaded = config.load(str(write_config({"tool-a": fixture_yaml("tool-a")})))
    assert loaded.get("a").name == "tool-a"


def test_missing_env_var_is_named_in_that_servers_error_only(write_config, monkeypatch):
    monkeypatch.delenv("MIROCTL_NOPE_1", raising=False)
    monkeypatch.delenv("MIROCTL_NOPE_2", raising=False)
    broken = fixture_yaml("broken", env={"A": "${oc.env:MIROCTL_NOPE_2}", "B": "${oc.env:MIROCTL_NOPE_1}"})
    loaded = config.load(str(write_config({"broken": broken, "good": fixture_yaml("good")})))
    assert loaded.get("good").error is None
    error = loaded.get("broken").error
    assert "missing environment variables MIROCTL_NOPE_1, MIROCTL_NOPE_2" in error


def test_requires_env_names_a_missing_variable_or_its_alternatives_and_a_bad_entry(write_config, monkeypatch):
    for name in ("MIROCTL_NEED_A", "MIROCTL_NEED_B", "MIROCTL_NEED_C"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MIROCTL_NEED_C", "set")
    servers = {
        "plain": fixture_yaml("plain", requires_env=["MIROCTL_NEED_A"]),
        "either": fixture_yaml("either", requires_env=[["MIROCTL_NEED_A", "MIROCTL_NEED_B"]]),
        "inenv": fixture_yaml(
            "inenv", requires_env=[["MIROCTL_NEED_A", "MIROCTL_NEED_B"]], env={"MIROCTL_NEED_B": "x"}
        ),
        "outer": fixture_yaml("outer", requires_env=["MIROCTL_NEED_C"]),
        "blanked": fixture_yaml("blanked", requires_env=["MIROCTL_NEED_C"], env={"MIROCTL_NEED_C": ""}),
        "bad": fixture_yaml("bad", requires_env=[["MIROCTL_NEED_A", 3]]),
    }
    loaded = config.load(str(write_config(servers)))

    def problem(name: str) -> str | None:
        return loaded.get(name).config_error(os.environ)

    assert problem("plain").endswith("missing environment variable: set MIROCTL_NEED_A")
    assert problem("either").endswith("set one of MIROCTL_NEED_A, MIROCTL_NEED_B")
    assert problem("inenv") is None and problem("outer") is None
    assert problem("blanked").endswith("set MIROCTL_NEED_C")  # the server's own env wins, and '' is unset
    assert "requires_env entries must be variable names" in loaded.get("bad").error


def test_env_default_applies_and_interpolated_values_count_as_secrets(write_config, monkeypatch):
    monkeypatch.setenv("MIROCTL_TOKEN_X", "s3cret-value")
    server = fixture_yaml("s", env={"TOKEN": "${oc.env:MIROCTL_TOKEN_X}", "MODE": "${oc.env:MIROCTL_UNSET_Y,fast}"})
    spec = config.load(str(write_config({"s": server}))).get("s")
    assert spec.env["MODE"] == "fast"
    assert "s3cret-value" in spec.secrets


def test_bad_yaml_names_file_and_line_and_leaves_other_servers_alone(write_config):
    path = write_config({"bad": "name: bad\nargs: [a\n  b: c\n", "good": fixture_yaml("good")})
    loaded = config.load(str(path))
    bad = loaded.get("bad")
    assert bad.error.startswith("bad yaml at ") and "bad.yaml:3:" in bad.error
    assert loaded.get("good").error is None


def test_unknown_key_in_a_server_file_suggests_the_right_one(write_config):
    loaded = config.load(str(write_config({"s": {**fixture_yaml("s"), "tiemout": 3}})))
    assert loaded.get("s").error.endswith("unknown key 'tiemout': did you mean 'timeout'?")


def test_server_file_needs_exactly_one_of_command_or_url(write_config):
    loaded = config.load(str(write_config({"s": {"name": "s"}})))
    assert "exactly one of tool_command or url" in loaded.get("s").error


def test_tool_config_selects_the_default_servers_and_others_stay_reachable_by_name(write_config):
    path = write_config({"a": fixture_yaml("a"), "b": fixture_yaml("b")}, tool_config=["a"])
    loaded = config.load(str(path))
    assert [s.name for s in loaded.select()] == ["a"]
    assert [s.name for s in loaded.select(["b"])] == ["b"]


def test_disabled_server_is_not_in_the_default_set(write_config):
    loaded = config.load(str(write_config({"a": fixture_yaml("a"), "b": fixture_yaml("b", enabled=False)})))
    assert loaded.default_names == ("a",)


def test_tool_config_naming_a_missing_file_becomes_that_servers_error(write_config):
    loaded = config.load(str(write_config({"a": fixture_yaml("a")}, tool_config=["a", "ghost"])))
    assert "no server file for 'ghost'" in loaded.get("ghost").error


def test_selecting_an_unknown_server_is_not_found_with_a_suggestion(write_config):
    loaded = config.load(str(write_config({"alpha": fixture_yaml("alpha")})))
    with pytest.raises(NotFound) as raised:
        loaded.select(["alpah"])
    assert "did you mean 'alpha'" in raised.value.hint


def test_blacklist_pairs_are_read_from_the_profile(write_config):
    path = write_config({"a": fixture_yaml("a")}, tool_blacklist=[["a", "crash"]])
    assert ("a", "crash") in config.load(str(path)).profile.blacklist


def test_malformed_blacklist_entry_is_a_config_error(write_config):
    with pytest.raises(ConfigError, match="tool_blacklist entries must be"):
        config.load(str(write_config({"a": fixture_yaml("a")}, tool_blacklist=["a"])))


def test_mcp_servers_json_of_no_known_client_expands_env_references(tmp_path, monkeypatch):
    monkeypatch.setenv("MIROCTL_JSON_KEY", "abc123")
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {"command": "python", "args": ["-m", "x"], "env": {"KEY": "${env:MIROCTL_JSON_KEY}"}},
                    "remote": {"url": "http://127.0.0.1:9/sse", "headers": {"Authorization": "Bearer t0ken"}},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    loaded = config.load(str(path))
    assert loaded.get("local").env["KEY"] == "abc123"
    assert loaded.get("remote").transport == "sse"
    assert "Bearer t0ken" in loaded.get("remote").secrets
    assert loaded.default_names == ("local", "remote")


def test_vs_code_servers_json_with_type_http_is_streamable_http(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}))
    assert config.load(str(path)).get("web").transport == "streamable_http"


def test_invalid_json_config_is_one_line_with_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"mcpServers": {')
    with pytest.raises(ConfigError, match=r"bad JSON at .*broken.json:1:"):
        config.load(str(path))


def test_adhoc_stdio_and_url_servers_replace_the_configured_ones(write_config):
    path = write_config({"a": fixture_yaml("a")})
    loaded = config.load(
        str(path),
        stdio=["python -m miroctl.servers.reading"],
        urls=["http://127.0.0.1:9/mcp"],
        headers=["Authorization: Bearer zz-top"],
    )
    assert [s.name for s in loaded.select()] == ["reading", "127.0.0.1"]
    assert loaded.get("reading").command == "python"  # the PATH's, as an MCP host would run it
    assert loaded.get("127.0.0.1").headers["Authorization"] == "Bearer zz-top"
    assert "Bearer zz-top" in loaded.secrets()


def test_lookup_prefers_env_var_then_local_file_then_bundled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIROCTL_CONFIG", raising=False)
    assert config.find_config(None) == config.bundled_config_dir() / "miroctl.yaml"
    (tmp_path / "miroctl.yaml").write_text("tool_config: []\n")
    assert config.find_config(None) == tmp_path / "miroctl.yaml"
    other = tmp_path / "other.yaml"
    other.write_text("tool_config: []\n")
    monkeypatch.setenv("MIROCTL_CONFIG", str(other))
    assert config.find_config(None) == other


def test_dotenv_in_the_working_directory_fills_but_never_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIROCTL_DOTENV_SET", "from-env")
    monkeypatch.delenv("MIROCTL_DOTENV_NEW", raising=False)
    (tmp_path / ".env").write_text("MIROCTL_DOTENV_SET=from-file\nMIROCTL_DOTENV_NEW=fresh\n")
    config.load_dotenv_file()
    import os

    assert os.environ["MIROCTL_DOTENV_SET"] == "from-env"
    assert os.environ.pop("MIROCTL_DOTENV_NEW") == "fresh"


def test_list_with_a_missing_config_file_exits_2_with_one_line():
    result = CliRunner().invoke(app, ["list", "--config", "/nonexistent/miroctl.yaml"])
    assert result.exit_code == 2
    assert "config file not found: /nonexistent/miroctl.yaml" in result.stderr


def test_bundled_config_works_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIROCTL_CONFIG", raising=False)
    result = CliRunner().invoke(app, ["list", "reading", "--json"])
    assert result.exit_code == 0, result.stderr
    assert parse_json(result.stdout)["config"].endswith("miroctl.yaml")


def test_wheel_ships_the_default_config_and_servers_as_package_data(tmp_path):
    import subprocess
    import zipfile

    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(tmp_path.glob("miroctl-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "miroctl/bundled_config/miroctl.yaml" in names
    assert "miroctl/bundled_config/tool/tool-reading.yaml" in names
    assert "miroctl/servers/reading.py" in names  # servers/ in the checkout installs as miroctl.servers
    assert "miroctl/servers/helpers/quickstart.py" in names
    assert "miroctl/schemas/call.json" in names
    assert not any(name.startswith("servers/") for name in names)  # no top-level package to clash with a user's


def test_interpolated_paths_numbers_and_short_words_are_not_secrets_but_credentials_are(
    write_config, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIROCTL_ROOT_DIR", str(tmp_path))
    monkeypatch.setenv("MIROCTL_LIMIT", "120")
    monkeypatch.setenv("MIROCTL_SOME_VALUE", "tok-9f8e7d")
    monkeypatch.setenv("MIROCTL_LONG_VALUE", "q7Hd92kLx0Pz4mWv8Rt3")
    server = fixture_yaml(
        "s",
        env={
            "ROOT": "${oc.env:MIROCTL_ROOT_DIR}",
            "LIMIT": "${oc.env:MIROCTL_LIMIT}",
            "VALUE": "${oc.env:MIROCTL_SOME_VALUE}",  # short, and not named as a secret: a word like any other
            "API_KEY": "${oc.env:MIROCTL_SOME_VALUE}",  # the same value, named as a key
            "OTHER": "${oc.env:MIROCTL_LONG_VALUE}",  # not named, but random-looking
        },
    )
    secrets = config.load(str(write_config({"s": server}))).get("s").secrets
    assert secrets == {"tok-9f8e7d", "q7Hd92kLx0Pz4mWv8Rt3"}


def test_the_default_servers_come_in_the_profiles_order(write_config):
    path = write_config(
        {"a": fixture_yaml("a"), "b": fixture_yaml("b"), "c": fixture_yaml("c")}, tool_config=["c", "a", "b"]
    )
    assert [s.name for s in config.load(str(path)).select()] == ["c", "a", "b"]
