"""The scrape fallback: any failure of a scrape-type tool is answered by MarkItDown on the page itself."""

from __future__ import annotations

import anyio
from typer.testing import CliRunner

from miroctl.base.models import CallRequest
from miroctl.cli.app import app
from miroctl.core.fallbacks import url_argument
from miroctl.core.manager import Manager
from tests.conftest import parse_json
from tests.policy_support import memory_spec, pool, web_server, webtools_yaml

PAGE = (
    "<html><head><title>Fixture page</title></head><body><h1>Quarterly report</h1>"
    "<p>Revenue grew <b>12%</b>.</p><ul><li>alpha</li><li>beta</li></ul></body></html>"
)


def test_a_failing_scrape_over_stdio_falls_back_to_markitdown_on_a_local_page(write_config):
    with web_server({"/report.html": (200, "text/html; charset=utf-8", PAGE)}) as base:
        path = write_config({"web": webtools_yaml("web", "--scrape-error", "browser pool exhausted")})
        result = CliRunner().invoke(
            app, ["call", "-c", str(path), "web", "scrape", f"url={base}/report.html", "--json"]
        )
    assert result.exit_code == 0, result.stderr
    envelope = parse_json(result.stdout)
    assert "# Quarterly report" in envelope["result"]
    assert "alpha" in envelope["result"] and "<b>" not in envelope["result"]
    fallback = envelope["fallback"]
    assert (fallback["ok"], fallback["kind"], fallback["url"]) == (True, "markitdown", f"{base}/report.html")
    assert "browser pool exhausted" in fallback["original_error"]


def test_human_output_notes_the_fallback_on_stderr_and_prints_the_page_on_stdout(write_config):
    with web_server({"/r.html": (200, "text/html", PAGE)}) as base:
        path = write_config({"web": webtools_yaml("web")})
        result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "scrape", f"url={base}/r.html"])
    assert result.exit_code == 0, result.stderr
    assert "Quarterly report" in result.stdout
    assert "converted locally by MarkItDown" in result.stderr


def test_when_the_fallback_fails_too_the_original_error_comes_back_with_the_fallbacks_reason(tmp_path):
    async def main(base):
        async with Manager(pool(memory_spec())) as manager:
            return await manager.call(CallRequest("web", "scrape", {"url": f"{base}/missing.html"}))

    with web_server({}) as base:
        outcome = anyio.run(main, base)
    assert outcome.exit_code == 1
    assert "upstream refused the page" in outcome.error
    assert outcome.fallback["ok"] is False
    assert "HTTP 404" in outcome.fallback["error"]


def test_the_fallback_never_follows_a_redirect_to_a_blocked_url():
    async def main(base):
        async with Manager(pool(memory_spec())) as manager:
            return await manager.call(CallRequest("web", "scrape", {"url": f"{base}/short"}))

    with web_server({"/short": (302, "https://huggingface.co/datasets/gaia-benchmark/GAIA", "")}) as base:
        outcome = anyio.run(main, base)
    assert outcome.exit_code == 1
    assert "blocked by the url rule" in outcome.fallback["error"]


def test_the_fallback_follows_allowed_redirects():
    async def main(base):
        async with Manager(pool(memory_spec())) as manager:
            return await manager.call(CallRequest("web", "scrape", {"url": f"{base}/old"}))

    with web_server({"/old": (301, "/new.html", ""), "/new.html": (200, "text/html", PAGE)}) as base:
        outcome = anyio.run(main, base)
    assert outcome.exit_code == 0, outcome.error
    assert "Quarterly report" in outcome.result


def test_tools_that_are_not_scrape_type_or_profiles_that_turn_it_off_get_no_fallback():
    async def main(base, sections):
        async with Manager(pool(memory_spec(), **sections)) as manager:
            failing = await manager.call(CallRequest("web", "fail", {"message": f"see {base}/r.html"}))
            scrape = await manager.call(CallRequest("web", "scrape", {"url": f"{base}/r.html"}))
            return failing, scrape

    with web_server({"/r.html": (200, "text/html", PAGE)}) as base:
        failing, scrape = anyio.run(main, base, {"fallbacks": {"markitdown": {"enabled": False}}})
        assert failing.fallback is None and scrape.fallback is None and scrape.exit_code == 1
        _, renamed = anyio.run(main, base, {"fallbacks": {"markitdown": {"tools": ["fail", "scra*"]}}})
        assert renamed.ok and renamed.fallback["ok"]


def test_the_fallback_url_is_the_url_argument_or_else_the_first_url_in_any_argument():
    assert url_argument({"url": " https://a.org/x "}) == "https://a.org/x"
    assert url_argument({"target": "read https://b.org/y please"}) == "https://b.org/y"
    assert url_argument({"query": "no url"}) is None


def test_human_output_of_a_failed_fallback_gives_the_error_then_the_fallbacks_short_reason(write_config):
    path = write_config({"web": webtools_yaml("web")})
    result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "scrape", "url=http://127.0.0.1:9/x"])
    assert result.exit_code == 1
    lines = " ".join(result.stderr.split())
    assert lines.index("upstream refused the page") < lines.index("the MarkItDown fallback failed too")
    assert "cannot reach http://127.0.0.1:9/x: Connection refused" in lines
