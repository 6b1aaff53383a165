"""The search server against a fake Serper on 127.0.0.1 (in-process where the process is not the point), and
its keyless backend (ddgs) routed to a local proxy."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import anyio
import pytest

from miroctl.base.models import CallRequest
from miroctl.config import loader as config_
from miroctl.config.loader import Profile
from miroctl.config.sections import Sections
from miroctl.core.manager import Manager
from tests.bundled.conftest import bundled_spec, memory_spec, session
from tests.bundled.research import payload, quick_retries, refusing_proxy
from tests.conftest import refused_port
from tests.fakes.base import Reply
from tests.fakes.mediawiki import FakeMediaWiki, Page
from tests.fakes.serper import KEY, FakeSerper, organic
from tests.fakes.tls_proxy import InterceptingProxy


@pytest.fixture
def serper(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSerper]:
    """A fake Serper with a few indexed queries; the in-process server is pointed at it with the right key."""
    fake = FakeSerper()
    fake.index["miroctl"] = [
        organic("miroctl on PyPI", "https://pypi.org/project/miroctl/"),
        organic("MCP servers", "https://modelcontextprotocol.io/servers", date="Mar 3, 2026"),
    ]
    fake.index["alpha beta"] = [organic("Alpha and beta", "https://example.org/ab")]
    with fake.serve() as base:
        monkeypatch.setenv("SERPER_API_KEY", KEY)
        monkeypatch.setenv("SERPER_BASE_URL", base)
        monkeypatch.delenv("SEARCH_BACKEND", raising=False)
        monkeypatch.delenv("MIROCTL_URL_BLOCK", raising=False)
        quick_retries(monkeypatch)
        yield fake


def search(**arguments: object):
    return session(memory_spec("search"), ("google_search", arguments))[0]


def test_google_search_sends_serpers_documented_request_and_returns_its_results(serper):
    outcome = search(q="miroctl", gl="uk", hl="en", num=5, tbs="qdr:w", location="London, United Kingdom")
    data = payload(outcome)
    (request,) = serper.seen()
    assert request.method == "POST" and request.path == "/search"
    assert request.headers["x-api-key"] == KEY and request.headers["content-type"] == "application/json"
    assert request.json() == {
        "q": "miroctl",
        "gl": "uk",
        "hl": "en",
        "num": 5,
        "page": 1,
        "tbs": "qdr:w",
        "location": "London, United Kingdom",
    }
    assert data["backend"] == "serper" and data["dropped_by_url_rules"] == 0
    assert [r["link"] for r in data["organic"]] == [
        "https://pypi.org/project/miroctl/",
        "https://modelcontextprotocol.io/servers",
    ]
    assert data["organic"][1]["date"] == "Mar 3, 2026" and data["searchParameters"]["gl"] == "uk"
    assert outcome.structured_content == data


def test_results_on_blocked_pages_are_dropped_before_the_model_sees_them_and_counted(serper, monkeypatch):
    serper.index["gaia answers"] = [
        organic("The dataset", "https://huggingface.co/datasets/gaia-benchmark/GAIA"),
        organic("A space", "https://hf.co/spaces/someone/demo"),
        organic("A paper", "https://arxiv.org/abs/2311.12983"),
        organic("Mirror", "https://mirror.example.net/gaia", sitelinks=[{"title": "x", "link": "https://example.org"}]),
    ]
    serper.extras["gaia answers"] = {
        "knowledgeGraph": {"title": "GAIA", "descriptionLink": "https://huggingface.co/datasets/gaia"},
        "peopleAlsoAsk": [{"question": "Where?", "link": "https://huggingface.co/spaces/x/y"}],
    }
    monkeypatch.setenv("MIROCTL_URL_BLOCK", "huggingface.co/datasets\nhf.co/spaces\nhuggingface.co/spaces\nexample.net")
    data = payload(search(q="gaia answers"))
    assert [r["link"] for r in data["organic"]] == ["https://arxiv.org/abs/2311.12983"]
    assert "knowledgeGraph" not in data and data["peopleAlsoAsk"] == []
    assert data["dropped_by_url_rules"] == 5


def test_a_quoted_query_without_results_is_searched_again_without_its_quotes(serper):
    data = payload(search(q='"alpha beta"'))
    assert [r.json()["q"] for r in serper.seen()] == ['"alpha beta"', "alpha beta"]
    assert data["query"] == "alpha beta" and data["organic"][0]["link"] == "https://example.org/ab"
    assert "without quotes" in data["notes"][0]


def test_no_results_even_without_quotes_is_a_tool_error_that_says_so(serper):
    plain, quoted = session(
        memory_spec("search"),
        ("google_search", {"q": "nothing indexed"}),
        ("google_search", {"q": '"nothing" indexed'}),
    ).outcomes
    assert plain.exit_code == 1 and plain.error_kind == "tool_error"
    assert "no results for 'nothing indexed'" in plain.error
    assert quoted.exit_code == 1 and "no results for 'nothing indexed'" in quoted.error
    assert len(serper.seen()) == 3


def test_results_all_blocked_is_a_tool_error_naming_the_url_rules(serper):
    serper.index["only hf"] = [organic("d", "https://huggingface.co/datasets/a/b")]
    outcome = search(q="only hf")
    assert outcome.exit_code == 1 and "all 1 results for 'only hf' were dropped by the URL rules" in outcome.error


def test_an_empty_query_is_refused_without_a_request(serper):
    outcome = search(q="   ")
    assert outcome.exit_code == 1 and "q is empty" in outcome.error and serper.seen() == []


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_a_tool_error_naming_serper_api_key_and_is_not_retried(serper, status):
    serper.script(Reply(status, {"message": "Unauthorized.", "statusCode": status}))
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and outcome.error_kind == "tool_error"
    assert f"the key was refused (HTTP {status}: Unauthorized.): check SERPER_API_KEY" in outcome.error
    assert KEY not in outcome.error and len(serper.seen()) == 1


def test_other_client_errors_are_reported_with_serpers_message_and_not_retried(serper):
    serper.script(Reply(400, {"message": "Not enough credits", "statusCode": 400}))
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and "Serper: HTTP 400: Not enough credits" in outcome.error
    assert len(serper.seen()) == 1


def test_server_errors_are_retried_with_backoff_until_one_answers(serper):
    serper.script(Reply(503, "Service Unavailable"), Reply(500, {"message": "oops", "statusCode": 500}))
    data = payload(search(q="miroctl"))
    assert len(serper.seen()) == 3 and len(data["organic"]) == 2


def test_server_errors_that_persist_give_up_after_http_retries_attempts(serper):
    serper.script(*[Reply(502, "Bad Gateway")] * 3)
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and "Serper: HTTP 502 (tried 3 times)" in outcome.error
    assert len(serper.seen()) == 3


def test_a_429_is_retried_after_the_wait_retry_after_asks_for(serper):
    serper.script(Reply(429, {"message": "Too many requests", "statusCode": 429}, {"Retry-After": "1"}))
    data = payload(search(q="miroctl"))
    first, second = serper.seen()
    assert second.at - first.at >= 0.95, "Retry-After: 1 was not honoured (the backoff alone is 0.01 s)"
    assert len(data["organic"]) == 2


def test_a_retry_after_longer_than_http_max_wait_is_reported_instead_of_waited_for(serper):
    serper.script(Reply(429, {"message": "Too many requests", "statusCode": 429}, {"Retry-After": "120"}))
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1  # at once: a wait of 120 s would trip the per-test timeout
    assert "HTTP 429: Too many requests; it asks to retry after 120s, longer than HTTP_MAX_WAIT" in outcome.error
    assert len(serper.seen()) == 1


def test_a_service_that_does_not_answer_in_time_times_out_on_each_attempt(serper, monkeypatch):
    quick_retries(monkeypatch, attempts=2, timeout=0.3)
    serper.script(Reply(delay=3600), Reply(delay=3600))  # unanswered: only the 0.3 s timeout ends each attempt
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and "Serper: no answer within 0.3s (tried 2 times)" in outcome.error
    assert len(serper.seen()) == 2


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>gateway page</html>", "Serper sent a malformed answer (not JSON): '<html>gateway page</html>'"),
        (b"", "Serper sent a malformed answer (not JSON): an empty body"),
        ({"organic": "not a list"}, "Serper sent a malformed answer: no list of organic results"),
    ],
)
def test_a_malformed_answer_is_a_tool_error(serper, body, reason):
    serper.script(Reply(200, body))
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and outcome.error.endswith(reason)


def test_an_unreachable_service_is_retried_then_reported(serper, monkeypatch):
    monkeypatch.setenv("SERPER_BASE_URL", f"http://127.0.0.1:{refused_port()}")
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1
    assert "Serper: cannot connect to http://127.0.0.1:" in outcome.error
    assert outcome.error.endswith("Connection refused (tried 3 times)")


def test_a_redirect_on_the_same_host_is_followed_with_the_key_and_one_to_another_host_is_not(serper):
    serper.script(Reply(308, b"", {"Location": "/search"}))
    data = payload(search(q="miroctl"))
    assert [r.headers["x-api-key"] for r in serper.seen()] == [KEY, KEY] and len(data["organic"]) == 2
    elsewhere = FakeSerper()
    with elsewhere.serve() as other:
        serper.script(Reply(307, b"", {"Location": other.replace("127.0.0.1", "localhost") + "/search"}))
        outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and "Serper redirected to another host (localhost): not followed" in outcome.error
    assert elsewhere.seen() == []


def test_a_url_rule_in_the_query_denies_the_call_before_any_request(serper):
    outcome = search(q="site:huggingface.co https://huggingface.co/datasets/x/y")
    assert outcome.exit_code == 5 and "url rule" in outcome.error and serper.seen() == []


# ---------------------------------------------------------------------------------------------- backends


def test_without_a_key_and_without_ddgs_the_error_says_what_to_install(serper, monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY")
    monkeypatch.setitem(sys.modules, "ddgs", None)  # as if ddgs were not installed
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and outcome.error_kind == "tool_error"
    assert "SERPER_API_KEY is not set and the keyless backend needs the ddgs package" in outcome.error
    assert "pip install 'miroctl[research]'" in outcome.error and serper.seen() == []


@pytest.fixture
def keyless(serper, monkeypatch, tmp_path) -> Iterator[FakeMediaWiki]:
    """No Serper key; ddgs asks its Wikipedia engine, which reaches a fake MediaWiki through a TLS-inspecting proxy."""
    wiki = FakeMediaWiki(site="https://en.wikipedia.org")
    wiki.add(Page("Python (programming language)", "Python is a high-level programming language. It is popular."))
    with wiki.serve() as base:
        proxy = InterceptingProxy(tmp_path, {"en.wikipedia.org": base})
        with proxy.serve() as url:
            monkeypatch.delenv("SERPER_API_KEY")
            monkeypatch.setenv("DDGS_PROXY", url)
            monkeypatch.setenv("DDGS_CA_BUNDLE", str(proxy.ca))
            monkeypatch.setenv("DDGS_BACKEND", "wikipedia")
            yield wiki


def test_without_a_key_the_keyless_backend_answers_and_says_so(keyless, serper):
    data = payload(search(q="python programming"))
    assert data["backend"] == "ddgs" and serper.seen() == []
    assert data["organic"] == [
        {
            "title": "Python (programming language)",
            "link": "https://en.wikipedia.org/wiki/Python_(programming_language)",
            "snippet": "Python is a high-level programming language. It is popular.",
            "position": 1,
        }
    ]
    assert data["notes"][0].startswith("SERPER_API_KEY is not set: results come from the keyless ddgs metasearch")
    opensearch, extract = keyless.seen()
    assert (opensearch.query["action"], opensearch.query["search"]) == ("opensearch", "python programming")
    assert (extract.query["prop"], extract.query["titles"]) == ("extracts", "Python (programming language)")


def test_the_keyless_backends_results_pass_the_url_rules_too(keyless, monkeypatch):
    monkeypatch.setenv("MIROCTL_URL_BLOCK", "en.wikipedia.org/wiki/python_(programming_language)")
    outcome = search(q="python programming", tbs="qdr:h", location="Paris")
    assert outcome.exit_code == 1
    assert "all 1 results for 'python programming' were dropped by the URL rules" in outcome.error


def test_keyless_engines_that_cannot_be_reached_are_a_tool_error(serper, monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY")
    with refusing_proxy() as (proxy, connects):
        monkeypatch.setenv("DDGS_PROXY", proxy)
        monkeypatch.setenv("DDGS_BACKEND", "duckduckgo,wikipedia")
        outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and outcome.error_kind == "tool_error"
    assert "keyless search (ddgs) failed:" in outcome.error and "403" in outcome.error
    assert {line.split()[1] for line in connects} == {"html.duckduckgo.com:443", "en.wikipedia.org:443"}
    assert serper.seen() == []


def test_search_backend_serper_without_a_key_is_a_tool_error_naming_the_variable(serper, monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY")
    monkeypatch.setenv("SEARCH_BACKEND", "serper")
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and "SERPER_API_KEY is not set (SEARCH_BACKEND=serper)" in outcome.error


def test_an_unknown_search_backend_setting_is_a_tool_error(serper, monkeypatch):
    monkeypatch.setenv("SEARCH_BACKEND", "bing")
    outcome = search(q="miroctl")
    assert outcome.exit_code == 1 and "SEARCH_BACKEND must be auto, serper or ddgs, got 'bing'" in outcome.error


# ---------------------------------------------------------------------------------------------- over stdio


@pytest.mark.process
def test_the_shipped_server_over_stdio_gets_the_profiles_url_rules_and_the_fakes_url(serper):
    serper.index["mirrors"] = [organic("a", "https://example.org/a"), organic("b", "https://blocked.example.com/b")]
    spec = bundled_spec("search", {"SERPER_API_KEY": KEY, "SERPER_BASE_URL": serper.base, "HTTP_BACKOFF": "0.01"})
    profile = Profile(sections=Sections.parse({"url_rules": {"block": ["blocked.example.com"]}}))
    config = config_.Config(servers=(spec,), profile=profile, default_names=(spec.name,))

    assert spec.transport == "stdio"  # the shipped process, not the in-memory server

    async def run():
        async with Manager(config) as manager:
            return await manager.call(CallRequest(spec.name, "google_search", {"q": "mirrors"}, autocorrect=False))

    outcome = anyio.run(run)
    data = payload(outcome)
    assert [r["link"] for r in data["organic"]] == ["https://example.org/a"] and data["dropped_by_url_rules"] == 1
