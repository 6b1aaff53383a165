"""MiroFlow's `playwright` server (config/miroflow/playwright.yaml): the real @playwright/mcp from npm on the
machine's Chromium, one session kept across calls, against a page served on 127.0.0.1; what a machine without
Node is told; and the bundled browser taking @playwright/mcp's parameters for the tools it has."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.cli.app import app
from miroctl.config import loader as config_
from tests.bundled.conftest import bundled_spec, listed_tools, session
from tests.fakes.web_files import FileSite

PAGE = b"<html><head><title>Teapots</title></head><body><h1>Our teapots</h1><p>Seven teapots in stock</p></body></html>"
NO_NODE = "no npx on this machine: install Node.js 20 or later (https://nodejs.org/en/download)"
NO_CHROMIUM = "no Chromium on this machine: apt-get install -y chromium"


def needs(tool: str, reason: str) -> None:
    """Skip without `tool` on PATH, except in CI, where .ci/run installs it and its absence is a failure."""
    if shutil.which(tool) is None and not os.environ.get("CI"):
        pytest.skip(reason)


def playwright_spec(cwd: Path, env: dict[str, str] | None = None) -> ServerSpec:
    """The miroflow profile's playwright server as shipped, run in `cwd` (it writes .playwright-mcp/ there)."""
    spec = config_.load("miroflow").get("playwright")
    assert spec is not None and spec.error is None, spec and spec.error
    return replace(spec, cwd=str(cwd), env={**spec.env, **(env or {})})


def parameters(tools: tuple[ToolInfo, ...], name: str) -> tuple[set[str], set[str]]:
    """(every parameter, the required ones) of one tool's input schema."""
    schema = next(tool.input_schema for tool in tools if tool.name == name)
    return set(schema.get("properties", {})), set(schema.get("required", []))


def test_miroflows_playwright_runs_the_pinned_playwright_mcp_headless_on_the_systems_chromium(monkeypatch):
    monkeypatch.setenv("BROWSER_EXECUTABLE", "/opt/chrome/chrome")
    spec = config_.load("miroflow").get("playwright")
    assert spec is not None and spec.error is None
    assert spec.command == "npx" and spec.persistent and not spec.enabled
    pinned = next(arg for arg in spec.args if arg.startswith("@playwright/mcp@"))
    assert all(part.isdigit() for part in pinned.removeprefix("@playwright/mcp@").split(".")), pinned
    assert {"--prefer-offline", "-y", "--headless", "--isolated", "--no-sandbox"} <= set(spec.args)
    assert spec.args[spec.args.index("--executable-path") + 1] == "/opt/chrome/chrome"


@pytest.mark.process
def test_navigate_then_snapshot_on_the_kept_session_shows_the_pages_text(tmp_path, leak_tag):
    needs("npx", NO_NODE)
    needs("chromium", NO_CHROMIUM)
    with FileSite().running() as site:
        site.put("teapots.html", PAGE, "text/html")
        spec = playwright_spec(tmp_path, {"MIROCTL_TEST_TAG": leak_tag})
        got = session(
            spec,
            ("browser_navigate", {"url": f"{site.url}/files/teapots.html"}),
            ("browser_snapshot", {}),
        )
    assert [o.exit_code for o in got.outcomes] == [0, 0], [o.error for o in got.outcomes]
    assert f"Page URL: {site.url}/files/teapots.html" in got[0].result
    assert "Page Title: Teapots" in got[0].result
    assert 'heading "Our teapots"' in got[1].result and "Seven teapots in stock" in got[1].result
    assert got.starts == 1, "the second call must reach the browser the first one opened"


def test_without_node_the_playwright_server_says_in_one_line_what_to_install(tmp_path):
    words, no_node = ["-c", "miroflow", "call", "playwright", "browser_snapshot"], {"PATH": str(tmp_path)}
    as_json = CliRunner().invoke(app, [*words, "--json"], env=no_node)
    as_text = CliRunner().invoke(app, words, env=no_node)
    assert as_json.exit_code == 3 and as_text.exit_code == 3, as_text.stderr
    envelope = json.loads(as_json.stdout)
    assert envelope["error"] == "command not found: npx"
    assert envelope["hint"].startswith("npx comes with Node.js: install Node.js from https://nodejs.org/en/download")
    assert as_text.stderr.splitlines() == [
        "miroctl: unavailable: command not found: npx",
        f"  hint: {envelope['hint']}",
    ]


@pytest.mark.process
def test_the_bundled_browser_takes_playwright_mcps_parameters_for_the_tools_it_has(tmp_path):
    needs("npx", NO_NODE)
    needs("chromium", NO_CHROMIUM)  # the bundled browser does not start without one
    upstream, bundled = listed_tools([playwright_spec(tmp_path), replace(bundled_spec("browser"), enabled=True)])
    assert upstream.failure is None and bundled.failure is None, (upstream.failure, bundled.failure)
    assert {tool.name for tool in bundled.tools} < {tool.name for tool in upstream.tools}
    for tool in bundled.tools:
        our_names, our_required = parameters(bundled.tools, tool.name)
        their_names, their_required = parameters(upstream.tools, tool.name)
        assert our_names <= their_names, (tool.name, our_names - their_names)
        assert our_required == their_required, (tool.name, our_required, their_required)
