"""The scrape server against a fake Jina reader and a fake site on 127.0.0.1 (in-process; one test over stdio).

miroctl's own MarkItDown fallback is turned off in most tests here, so that what is checked is the server's
answer, not the fallback the manager adds on top of a failed scrape."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest

from miroctl.base.models import CallOutcome, CallRequest, ServerSpec
from miroctl.config import loader as config_
from miroctl.config.loader import Profile
from miroctl.config.sections import Sections
from miroctl.core.manager import Manager
from tests.bundled.conftest import bundled_spec, memory_spec
from tests.bundled.research import quick_retries
from tests.conftest import refused_port
from tests.fakes.base import Reply
from tests.fakes.jina import KEY, FakeJina, reader_error
from tests.fakes.site import FakeSite, html, redirect

NO_FALLBACK = Profile(sections=Sections.parse({"fallbacks": {"markitdown": {"enabled": False}}}))


@dataclass
class Web:
    jina: FakeJina
    site: FakeSite

    def url(self, path: str) -> str:
        return f"{self.site.base}{path}"


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[Web]:
    jina, site = FakeJina(), FakeSite()
    site.pages["/article"] = html("<h1>Hello page</h1><p>A <a href='/next'>link</a>.</p>", title="Article")
    with jina.serve() as reader, site.serve():
        jina.pages[f"{site.base}/article"] = ("Article", "# Hello page\n\nA [link](/next).")
        monkeypatch.setenv("JINA_API_KEY", KEY)
        monkeypatch.setenv("JINA_BASE_URL", reader)
        for name in ("SCRAPE_BACKEND", "DEMO_MODE", "SCRAPE_MAX_CHARS", "SCRAPE_MAX_BYTES", "MIROCTL_URL_BLOCK"):
            monkeypatch.delenv(name, raising=False)
        quick_retries(monkeypatch)
        yield Web(jina, site)


def scrape(url: str, spec: ServerSpec | None = None, profile: Profile = NO_FALLBACK) -> CallOutcome:
    spec = spec or memory_spec("scrape")
    config = config_.Config(servers=(spec,), profile=profile, default_names=(spec.name,))

    async def run() -> CallOutcome:
        async with Manager(config) as manager:
            return await manager.call(CallRequest(spec.name, "scrape_website", {"url": url}, autocorrect=False))

    return anyio.run(run)


def test_with_a_key_the_page_is_read_by_the_jina_reader(web):
    outcome = scrape(web.url("/article"))
    assert outcome.exit_code == 0, outcome.error
    (request,) = web.jina.seen()
    assert (request.method, request.path) == ("POST", "/")
    assert request.json() == {"url": web.url("/article")}
    assert request.headers["authorization"] == f"Bearer {KEY}" and request.headers["accept"] == "application/json"
    assert "Title: Article" in outcome.result and "Fetched by: the Jina reader" in outcome.result
    assert outcome.result.endswith("Markdown Content:\n# Hello page\n\nA [link](/next).")
    assert outcome.structured_content["tokens"] == 5 and web.site.seen() == []


def test_without_a_key_the_page_is_fetched_directly_and_converted_with_markitdown(web, monkeypatch):
    monkeypatch.delenv("JINA_API_KEY")
    outcome = scrape(web.url("/article"))
    assert outcome.exit_code == 0, outcome.error
    assert "Fetched by: a direct fetch converted with MarkItDown (JINA_API_KEY is not set)" in outcome.result
    assert "# Hello page" in outcome.result and "[link](/next)" in outcome.result and web.jina.seen() == []


def test_a_refused_key_falls_back_to_a_direct_fetch_and_says_why(web, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "jina_wrong")
    outcome = scrape(web.url("/article"))
    assert outcome.exit_code == 0, outcome.error
    assert "Fetched by: a direct fetch converted with MarkItDown (the Jina reader failed)" in outcome.result
    assert (
        "Note: Jina reader: the key was refused (HTTP 401: AuthenticationFailedError: Invalid API key" in outcome.result
    )
    assert "check JINA_API_KEY" in outcome.result and "jina_wrong" not in outcome.result
    assert len(web.jina.seen()) == 1  # a refused key is not retried


def test_when_the_reader_and_the_direct_fetch_both_fail_the_error_gives_both_reasons(web, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "jina_wrong")
    outcome = scrape(f"http://127.0.0.1:{refused_port()}/gone")
    assert outcome.exit_code == 1 and outcome.error_kind == "tool_error"
    assert "Jina reader: the key was refused (HTTP 401" in outcome.error
    assert "; the direct fetch failed too: cannot reach http://127.0.0.1:" in outcome.error
    assert "Connection refused" in outcome.error


@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        (
            [reader_error(429, "RateLimitTriggeredError", 42903, "Per IP rate limit exceeded", retryAfter=0)] * 3,
            "Jina reader: HTTP 429: RateLimitTriggeredError: Per IP rate limit exceeded (tried 3 times)",
        ),
        ([Reply(503, "upstream connect error")] * 3, "Jina reader: HTTP 503 (tried 3 times)"),
        ([Reply(200, b"<html>not json</html>")], "Jina reader sent a malformed answer (not JSON)"),
        ([Reply(200, {"code": 200, "data": None})], "Jina reader sent a malformed answer: no data.content"),
        ([Reply(200, {"code": 200, "data": {"content": "  "}})], "Jina reader: the page had no readable content"),
    ],
)
def test_reader_failures_are_retried_when_transient_then_fall_back_and_are_said(web, replies, reason):
    web.jina.script(*replies)
    outcome = scrape(web.url("/article"))
    assert outcome.exit_code == 0, outcome.error
    assert f"Note: {reason}" in outcome.result and "# Hello page" in outcome.result
    assert len(web.jina.seen()) == len(replies)


def test_a_page_the_reader_cannot_load_falls_back_and_a_missing_page_is_an_http_error(web):
    outcome = scrape(web.url("/missing"))
    assert outcome.exit_code == 1
    assert "Jina reader: it could not load the page (HTTP 422: AssertionFailureError: Failed to goto" in outcome.error
    assert f"the direct fetch failed too: {web.url('/missing')} answered HTTP 404" in outcome.error


def test_a_reader_that_does_not_answer_in_time_times_out_then_falls_back(web, monkeypatch):
    quick_retries(monkeypatch, attempts=2, timeout=0.3)
    web.jina.script(Reply(delay=3600), Reply(delay=3600))  # unanswered: only the 0.3 s timeout ends each attempt
    outcome = scrape(web.url("/article"))
    assert outcome.exit_code == 0 and "Note: Jina reader: no answer within 0.3s (tried 2 times)" in outcome.result


def test_a_429_is_retried_after_the_wait_it_asks_for(web):
    web.jina.script(reader_error(429, "RateLimitTriggeredError", 42903, "Per IP rate limit exceeded", retryAfter=1))
    outcome = scrape(web.url("/article"))
    first, second, *_ = web.jina.seen()  # a third only when the retry itself was lost (a loaded machine)
    assert outcome.exit_code == 0 and "Fetched by: the Jina reader" in outcome.result
    assert second.at - first.at >= 0.95


def test_a_blocked_url_is_denied_by_miroctl_before_the_server_is_asked(web):
    outcome = scrape("https://huggingface.co/datasets/gaia-benchmark/GAIA")
    assert outcome.exit_code == 5 and "url rule" in outcome.error and web.jina.seen() == []


def test_the_server_refuses_a_url_its_rules_block_and_redirects_to_one(web, monkeypatch):
    monkeypatch.delenv("JINA_API_KEY")
    web.site.pages["/jump"] = redirect("https://huggingface.co/datasets/x/y")
    monkeypatch.setenv("MIROCTL_URL_BLOCK", f"huggingface.co/datasets\n127.0.0.1:{refused_port()}/x")
    jump = scrape(web.url("/jump"))
    assert jump.exit_code == 1
    assert "https://huggingface.co/datasets/x/y is blocked by the url rule 'huggingface.co/datasets'" in jump.error
    monkeypatch.setenv("MIROCTL_URL_BLOCK", "127.0.0.1/article")
    direct = scrape(web.url("/article"))
    assert (
        direct.exit_code == 1 and "is blocked by the url rule '127.0.0.1/article': it may not be read" in direct.error
    )


def test_pages_over_scrape_max_bytes_are_refused(web, monkeypatch):
    monkeypatch.delenv("JINA_API_KEY")
    monkeypatch.setenv("SCRAPE_MAX_BYTES", "50")
    outcome = scrape(web.url("/article"))
    assert outcome.exit_code == 1 and "limit (SCRAPE_MAX_BYTES)" in outcome.error


def test_demo_mode_cuts_the_content_at_twenty_thousand_characters_as_in_the_seeds(web, monkeypatch):
    web.jina.pages[web.url("/long")] = ("Long", "word " * 10_000)
    monkeypatch.setenv("DEMO_MODE", "1")
    outcome = scrape(web.url("/long"))
    assert "Note: DEMO_MODE=1: the answer is cut at 20,000 characters, as in the seeds" in outcome.result
    assert len(outcome.result) <= 20_000 and outcome.truncated is None  # miroctl's own DEMO cut has nothing left to do
    assert outcome.structured_content["cut_chars"] == len(("word " * 10_000).strip()) - 19_000
    monkeypatch.delenv("DEMO_MODE")
    monkeypatch.setenv("SCRAPE_MAX_CHARS", "1000")
    cut = scrape(web.url("/long"))
    assert (
        "DEMO_MODE" not in cut.result and cut.structured_content["cut_chars"] == len(("word " * 10_000).strip()) - 1000
    )


def test_scrape_backend_chooses_the_keyless_reader_or_the_direct_fetch(web, monkeypatch):
    monkeypatch.delenv("JINA_API_KEY")
    monkeypatch.setenv("SCRAPE_BACKEND", "jina")
    keyless = scrape(web.url("/article"))
    assert "Fetched by: the Jina reader" in keyless.result and "authorization" not in web.jina.seen()[0].headers
    monkeypatch.setenv("JINA_API_KEY", KEY)
    monkeypatch.setenv("SCRAPE_BACKEND", "direct")
    direct = scrape(web.url("/article"))
    assert "(SCRAPE_BACKEND=direct)" in direct.result and len(web.jina.seen()) == 1
    monkeypatch.setenv("SCRAPE_BACKEND", "browser")
    assert "SCRAPE_BACKEND must be auto, jina or direct" in scrape(web.url("/article")).error


def test_bad_urls_are_tool_errors(web):
    assert "url is empty" in scrape("  ").error
    assert "url must be an http(s) address, got 'file:///etc/passwd'" in scrape("file:///etc/passwd").error


@pytest.mark.process
def test_the_shipped_server_over_stdio_reads_through_the_fake_reader(web):
    spec = bundled_spec("scrape", {"JINA_API_KEY": KEY, "JINA_BASE_URL": web.jina.base, "HTTP_BACKOFF": "0.01"})
    outcome = scrape(web.url("/article"), spec)
    assert outcome.exit_code == 0, outcome.error
    assert "Fetched by: the Jina reader" in outcome.result and spec.transport == "stdio"
    assert KEY not in outcome.result
