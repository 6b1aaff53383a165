"""The shipped config: five bundled servers on by default, truthful metadata, the others ready but off."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.bundled.conftest import (
    BUNDLED,
    CONFIG,
    bundled_config,
    bundled_spec,
    listed_tools,
    memory_spec,
    shipped_server,
)
from tests.conftest import parse_json

HINTS = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}


def test_the_default_profile_enables_the_five_bundled_servers():
    config = bundled_config()
    assert config.default_names == BUNDLED
    for name in BUNDLED:
        spec = config.get(name)
        assert spec.error is None and spec.command == sys.executable
        assert spec.args == ("-P", "-m", "miroctl.servers", name.removeprefix("tool-"))


def test_a_shipped_server_file_read_alone_is_the_spec_the_default_profile_gives_it():
    config = bundled_config()
    assert len(config.servers) == 16
    for spec in config.servers:
        assert shipped_server(spec.name.removeprefix("tool-")) == spec == shipped_server(spec.name)


def test_every_bundled_tool_has_yaml_metadata_that_matches_its_annotations():
    specs = [bundled_spec(name) for name in BUNDLED]
    listed = listed_tools([memory_spec(name) for name in BUNDLED])  # the same servers, the same answers
    assert all(entry.ok for entry in listed), [entry.failure for entry in listed if not entry.ok]
    for spec, entry in zip(specs, listed):
        assert {t.name for t in entry.tools} == set(spec.tools), spec.name
        for tool in entry.tools:
            meta = spec.tools[tool.name]
            for key, hint in HINTS.items():
                assert tool.annotations.get(hint) is meta[key], f"{spec.name}.{tool.name}: {key}"
            assert len(tool.description) > 80, f"{spec.name}.{tool.name} needs a real description"


def test_system_and_network_tools_are_all_read_only():
    config = bundled_config()
    for name in ("tool-system", "tool-network"):
        assert all(meta["read_only"] is True for meta in config.get(name).tools.values()), name


def test_third_party_servers_are_configured_but_disabled():
    config = bundled_config()
    markitdown, browser = config.get("markitdown"), config.get("browser")
    assert markitdown.error is None and browser.error is None
    assert not markitdown.enabled and not browser.enabled
    assert markitdown.command == "markitdown-mcp"
    assert browser.command == sys.executable and browser.persistent
    assert {"tool-markitdown", "tool-browser"}.isdisjoint(config.default_names)


@pytest.mark.process
def test_the_markitdown_mcp_yaml_starts_the_pypi_server_and_lists_its_tool():
    spec = bundled_config().get("markitdown")
    installed = shutil.which("markitdown-mcp") or str(Path(sys.executable).with_name("markitdown-mcp"))
    entry = listed_tools([replace(spec, command=installed, startup_timeout=60)])[0]
    assert entry.ok, entry.failure
    assert [t.name for t in entry.tools] == ["convert_to_markdown"]


def test_a_third_party_server_whose_command_is_missing_is_reported_not_fatal():
    spec = replace(bundled_config().get("markitdown"), command="markitdown-mcp-not-installed")
    entry = listed_tools([spec])[0]
    assert not entry.ok and entry.failure.kind == "not_found"
    assert "markitdown-mcp-not-installed" in entry.failure.message


def test_miroctl_list_shows_the_five_bundled_servers_healthy(bundled_servers_in_memory):
    result = CliRunner().invoke(app, ["list", "--config", str(CONFIG), "--json"])
    assert result.exit_code == 0, result.stderr
    servers = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    assert set(servers) == set(BUNDLED)
    assert all(s["ok"] for s in servers.values())


@pytest.mark.process
def test_bundled_servers_start_beside_a_users_own_servers_package_and_without_python_on_path(tmp_path):
    # A project with its own `servers` package (common in MCP projects), and a PATH with no python on it (pipx).
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / "__init__.py").write_text("")
    (tmp_path / "servers" / "reading.py").write_text("raise SystemExit('the user s own servers.reading ran')\n")
    (tmp_path / "notes.txt").write_text("hello from the notes\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MIROCTL_CONFIG", "MIROCTL_URL")}
    env["PATH"] = str(tmp_path / "no-such-bin")
    done = subprocess.run(
        [sys.executable, "-m", "miroctl", "call", "reading", "read_file", "uri=notes.txt", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert "hello from the notes" in envelope["result"]
