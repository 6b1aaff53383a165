"""The browser server from config/tool/tool-browser.yaml driving the machine's Chromium against pages served on
127.0.0.1: navigate, snapshot, click, type, back, one session kept across calls; and what happens without a browser."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from miroctl.base.models import CallOutcome
from miroctl.cli.app import app
from miroctl.servers.helpers import browser_session
from tests.bundled.conftest import CONFIG, Calls, bundled_spec, memory_spec, session, session_then
from tests.conftest import refused_port
from tests.fakes.web_files import FileSite

HOME = b"""<html><head><title>Shop</title></head><body>
<h1>Welcome</h1>
<a href="/files/about.html">About us</a>
<button onclick="document.body.insertAdjacentHTML('beforeend', '<p>Added to cart</p>')">Add to cart</button>
<form action="/files/results.html"><input name="q" aria-label="Search"><input type="submit" value="Go"></form>
</body></html>"""
ABOUT = b"<html><head><title>About</title></head><body><p>We sell teapots.</p></body></html>"
RESULTS = b"<html><head><title>Results</title></head><body><p>3 teapots found</p></body></html>"
BLOCKED = "https://huggingface.co/datasets/gaia-benchmark/GAIA"

if browser_session.find_browser() is None and not os.environ.get("CI"):
    pytest.skip("no Chromium or Chrome on this machine: apt-get install -y chromium", allow_module_level=True)


@pytest.fixture
def site():
    with FileSite().running() as web:
        for name, body in (("home.html", HOME), ("about.html", ABOUT), ("results.html", RESULTS)):
            web.put(name, body, "text/html")
        yield web


def ref(snapshot: str, role_and_name: str) -> str:
    """The [ref=eN] of the element whose snapshot line starts with `role "name"`."""
    found = re.search(re.escape(role_and_name) + r"[^\n]*\[ref=(\w+)\]", snapshot)
    assert found, f"{role_and_name} not in:\n{snapshot}"
    return found.group(1)


@pytest.mark.process
def test_one_browser_session_navigates_clicks_types_and_goes_back_across_calls(site, leak_tag):
    spec = bundled_spec("browser", {"MIROCTL_TEST_TAG": leak_tag})

    def clicks_and_types(opened: CallOutcome) -> Calls:
        snapshot = opened.structured_content["snapshot"] if opened.ok else ""
        button, search = ref(snapshot, 'button "Add to cart"'), ref(snapshot, 'textbox "Search"')
        return [
            ("browser_click", {"target": button, "element": "Add to cart button"}),
            ("browser_snapshot", {}),
            ("browser_type", {"target": search, "text": "teapot", "submit": True}),
            ("browser_navigate_back", {}),
            ("browser_close", {}),
        ]

    opened, got = session_then(spec, ("browser_navigate", {"url": f"{site.url}/files/home.html"}), clicks_and_types)
    snapshot = opened.structured_content["snapshot"]
    assert opened.exit_code == 0, opened.error
    assert opened.result.startswith(f"Page: Shop\nURL: {site.url}/files/home.html")
    assert 'heading "Welcome"' in snapshot and 'link "About us"' in snapshot
    assert [o.exit_code for o in got.outcomes] == [0] * 5, [o.error for o in got.outcomes]
    assert "Added to cart" in got[1].result, "the page clicked in one call is the page of the next"
    assert got[2].structured_content["url"] == f"{site.url}/files/results.html?q=teapot"
    assert "3 teapots found" in got[2].result
    assert got[3].structured_content["title"] == "Shop" and got.starts == 1
    assert got[4].result == "The browser is closed."


KEYS = b"""<html><head><title>Keys</title></head><body>
<button ondblclick="document.body.insertAdjacentHTML('beforeend', '<p>Opened twice</p>')">Open</button>
<script>let keys = "";</script>
<input aria-label="Name" onkeydown="keys += event.key; document.title = 'Keys ' + keys">
</body></html>"""


def test_double_clicks_and_slow_typing_take_playwright_mcps_parameters(site):
    site.put("keys.html", KEYS, "text/html")
    refs: dict[str, str] = {}

    def double_click_and_type(opened: CallOutcome) -> Calls:
        snapshot = opened.structured_content["snapshot"] if opened.ok else ""
        refs.update(button=ref(snapshot, 'button "Open"'), name=ref(snapshot, 'textbox "Name"'))
        return [
            ("browser_click", {"target": refs["button"], "doubleClick": True, "button": "left", "modifiers": []}),
            ("browser_type", {"target": refs["name"], "text": "tea", "slowly": True, "element": "Name field"}),
        ]

    opened, got = session_then(
        memory_spec("browser"), ("browser_navigate", {"url": f"{site.url}/files/keys.html"}), double_click_and_type
    )
    assert [o.exit_code for o in [opened, *got.outcomes]] == [0, 0, 0], [o.error for o in [opened, *got.outcomes]]
    assert "Opened twice" in got[0].result and got[0].structured_content["action"] == "double-clicked " + refs["button"]
    assert got[1].structured_content["title"].endswith("tea"), "one key event per character, in order"
    assert got[1].structured_content["action"] == "typed into Name field"


def test_stale_refs_refused_connections_and_blocked_urls_are_tool_errors(site, monkeypatch):
    monkeypatch.setenv("BROWSER_TIMEOUT", "5")
    spec = memory_spec("browser")
    got = session(
        spec,
        ("browser_navigate", {"url": f"{site.url}/files/home.html"}),
        ("browser_click", {"target": "e999"}),
        ("browser_click", {"target": "not a ref!"}),
        ("browser_navigate", {"url": f"http://127.0.0.1:{refused_port()}/"}),
        ("browser_navigate", {"url": site.redirect_to(BLOCKED)}),
        ("browser_navigate", {"url": "file:///etc/passwd"}),
        ("browser_navigate", {"url": BLOCKED}),
        ("browser_snapshot", {}),
    )
    assert got[0].exit_code == 0, got[0].error
    assert [o.exit_code for o in got.outcomes[1:6]] == [1] * 5
    assert "no element has ref e999 on this page: take a new browser_snapshot" in got[1].error
    assert "not a ref from a snapshot" in got[2].error
    assert "ERR_CONNECTION_REFUSED" in got[3].error
    assert "ERR_BLOCKED_BY_CLIENT" in got[4].error, "a redirect must not get round the URL rules"
    assert "not an http(s) URL" in got[5].error
    assert got[6].exit_code == 5 and got[6].error_kind == "denied"
    assert got[7].exit_code == 0 and urlsplit(got[7].structured_content["url"]).hostname != "huggingface.co"
    assert got.starts == 1


def test_without_a_browser_the_tools_say_what_to_install(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(browser_session, "PLACES", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("BROWSER_EXECUTABLE", raising=False)
    got = session(memory_spec("browser"), ("browser_snapshot", {}))
    assert got[0].exit_code == 1
    assert (
        "no Chromium or Google Chrome found: install Chromium (Debian/Ubuntu: apt-get install -y chromium)"
        in got[0].error
    )


@pytest.mark.process
def test_check_reports_a_missing_browser_plainly_and_the_other_servers_are_unaffected(bundled_servers_in_memory):
    # The browser's process is the point (it exits at its start); the system server runs in this process.
    runner = CliRunner()
    env = {"BROWSER_EXECUTABLE": "/nonexistent/chrome"}
    result = runner.invoke(app, ["check", "--config", str(CONFIG), "browser", "system", "--json"], env=env)
    assert result.exit_code == 1, result.stderr
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    failure = servers["tool-browser"]["failure"]
    assert failure["kind"] == "exited" and failure["phase"] == "initialize"
    assert "apt-get install -y chromium" in failure["hint"]
    assert servers["tool-system"]["ok"] is True


def test_the_browser_yaml_runs_the_bundled_server_persistently():
    spec = bundled_spec("browser")
    assert spec.persistent and not spec.enabled
    assert spec.args == ("-P", "-m", "miroctl.servers", "browser")
    assert replace(spec, enabled=True).smoke == {"tool": "browser_snapshot", "arguments": {}}
