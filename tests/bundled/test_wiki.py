"""The wiki server against a fake MediaWiki Action API on 127.0.0.1 (in-process; one test over stdio)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bundled.conftest import bundled_spec, memory_spec, session
from tests.bundled.research import quick_retries
from tests.conftest import refused_port
from tests.fakes.base import Reply
from tests.fakes.mediawiki import FakeMediaWiki, Page, Revision

PYTHON_TEXT = (
    "Python is a high-level programming language. It was created by Guido van Rossum. "
    "Its first release was in 1991. It emphasises readability. Python is dynamically typed. "
    "It supports several paradigms. It has a large standard library. It is often described as batteries "
    "included. Python consistently ranks among the most popular languages. It is used in data science. "
    "It is used in web development. It is used in education."
    "\n\n== History ==\nPython was conceived in the late 1980s. Work began in December 1989."
)


@pytest.fixture
def wiki(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMediaWiki]:
    fake = FakeMediaWiki()
    fake.add(Page("Python (programming language)", PYTHON_TEXT))
    fake.add(
        Page(
            "Mercury",
            "Mercury may refer to:",
            disambiguation=True,
            links=["Mercury (planet)", "Mercury (element)", "Freddie Mercury", "Mercury (mythology)"],
        )
    )
    fake.add(Page("Mercury (planet)", "Mercury is the first planet from the Sun."))
    fake.add(Page("Mercury Records", "Mercury Records is a record label."))
    fake.add(
        Page(
            "Lisbon",
            "Lisbon is the capital of Portugal.",
            revisions=[
                Revision(101, "2019-12-30T08:00:00Z", "Alice", "copyedit", 5100),
                Revision(102, "2020-01-03T10:00:00Z", "Bob", "population figures", 5230),
                Revision(103, "2020-01-15T12:30:00Z", "Carol", "", 5200),
                Revision(104, "2020-01-28T23:59:00Z", "Dan", "infobox", 5300),
                Revision(105, "2020-03-01T00:00:01Z", "Erin", "photo", 5400),
            ],
        )
    )
    fake.redirects["Python language"] = "Python (programming language)"
    with fake.serve() as base:
        monkeypatch.setenv("WIKI_API_URL", f"{base}/w/api.php")
        monkeypatch.delenv("WIKI_MAX_CHARS", raising=False)
        quick_retries(monkeypatch)
        yield fake


def page(**arguments: object):
    return session(memory_spec("wiki"), ("wiki_get_page_content", arguments))[0]


def revisions(**arguments: object):
    return session(memory_spec("wiki"), ("search_wiki_revision", arguments))[0]


def test_a_page_gives_its_first_sentences_title_and_url_through_textextracts(wiki):
    outcome = page(entity="Python (programming language)", first_sentences=3)
    assert outcome.exit_code == 0, outcome.error
    (request,) = wiki.seen()
    assert request.path == "/w/api.php"
    assert {
        k: request.query[k] for k in ("action", "format", "formatversion", "titles", "redirects", "exsentences")
    } == {
        "action": "query",
        "format": "json",
        "formatversion": "2",
        "titles": "Python (programming language)",
        "redirects": "1",
        "exsentences": "3",
    }
    assert set(request.query["prop"].split("|")) == {"extracts", "info", "pageprops"}
    assert request.query["explaintext"] == "1" and request.headers["user-agent"].startswith("miroctl/")
    assert "Page Title: Python (programming language)" in outcome.result
    assert (
        "First 3 sentences (introduction): Python is a high-level programming language. It was created by "
        "Guido van Rossum. Its first release was in 1991." in outcome.result
    )
    assert "It emphasises" not in outcome.result
    assert f"URL: {wiki.base}/wiki/Python_(programming_language)" in outcome.result
    assert outcome.structured_content["pageid"] == wiki.pages["Python (programming language)"].pageid


def test_more_than_ten_sentences_are_cut_from_the_whole_text_as_textextracts_stops_at_ten(wiki):
    outcome = page(entity="Python (programming language)", first_sentences=12)
    assert "exsentences" not in wiki.seen()[0].query
    assert "It is used in education." in outcome.result and "History" not in outcome.result


def test_first_sentences_zero_returns_the_whole_article_cut_at_wiki_max_chars(wiki, monkeypatch):
    whole = page(entity="Python (programming language)", first_sentences=0)
    assert "Content: " in whole.result and "Work began in December 1989." in whole.result
    monkeypatch.setenv("WIKI_MAX_CHARS", "200")
    cut = page(entity="Python (programming language)", first_sentences=0)
    assert f"[... {len(PYTHON_TEXT) - 200:,} more characters not shown (WIKI_MAX_CHARS)" in cut.result
    assert "Work began" not in cut.result


def test_a_redirect_is_followed_and_said(wiki):
    outcome = page(entity="python_language")
    assert "Page Title: Python (programming language)" in outcome.result
    assert "(Redirected from 'Python language')" in outcome.result


def test_a_disambiguation_page_is_a_tool_error_listing_the_meanings(wiki):
    outcome = page(entity="Mercury")
    assert outcome.exit_code == 1 and outcome.error_kind == "tool_error"
    assert (
        "'Mercury' is a disambiguation page with several meanings: Mercury (planet); Mercury (element); "
        "Freddie Mercury; Mercury (mythology). Call again with one of them" in outcome.error
    )
    assert wiki.seen()[1].query["prop"] == "links"


def test_a_missing_page_is_a_tool_error_listing_similar_titles(wiki):
    outcome = page(entity="Mercury band")
    assert outcome.exit_code == 1
    assert (
        "no Wikipedia page is titled 'Mercury band'; similar titles: Mercury; Mercury (planet); Mercury Records"
        in outcome.error
    )
    assert wiki.seen()[1].query["list"] == "search" and wiki.seen()[1].query["srsearch"] == "Mercury band"


def test_a_missing_page_with_nothing_similar_says_so_and_offers_the_wikis_suggestion(wiki):
    nothing = page(entity="Zzyzx qwv")
    wiki.suggestion = "zzyzx road"
    suggested = page(entity="Zzyzx qwv")
    assert "no Wikipedia page is titled 'Zzyzx qwv' and none is similar: try another name" in nothing.error
    assert "did you mean 'zzyzx road'?" in suggested.error


def test_an_invalid_title_and_an_empty_entity_are_tool_errors(wiki):
    got = session(
        memory_spec("wiki"),
        ("wiki_get_page_content", {"entity": "a[b]"}),
        ("wiki_get_page_content", {"entity": "  "}),
    )
    assert "'a[b]' is not a valid page title: The requested page title contains invalid characters" in got[0].error
    assert "entity is empty" in got[1].error and len(wiki.seen()) == 1


def test_api_errors_are_tool_errors_with_the_code_and_info(wiki):
    wiki.script(Reply(200, {"error": {"code": "internal_api_error_DBQueryError", "info": "A database error"}}))
    outcome = page(entity="Lisbon")
    assert (
        outcome.exit_code == 1
        and "MediaWiki API error internal_api_error_DBQueryError: A database error" in outcome.error
    )


def test_maxlag_answers_are_retried_after_their_retry_after(wiki):
    lagged = {"error": {"code": "maxlag", "info": "Waiting for a database server: 7 seconds lagged."}}
    wiki.script(Reply(200, lagged, {"Retry-After": "1"}))
    outcome = page(entity="Lisbon")
    first, second = wiki.seen()
    assert outcome.exit_code == 0 and second.at - first.at >= 0.95


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(429, "Too many requests"), "MediaWiki API: HTTP 429 (tried 3 times)"),
        (Reply(503, "<html>Wikimedia Error</html>"), "MediaWiki API: HTTP 503 (tried 3 times)"),
        (Reply(200, "<html>not json</html>"), "MediaWiki API sent a malformed answer (not JSON)"),
        (Reply(200, {"batchcomplete": True}), "MediaWiki API sent a malformed answer: no query result"),
        (
            Reply(403, {"error": {"code": "blocked", "info": "You have been blocked"}}),
            "HTTP 403: You have been blocked",
        ),
    ],
)
def test_http_failures_and_malformed_answers_are_tool_errors(wiki, reply, reason):
    wiki.script(reply, reply, reply)
    outcome = page(entity="Lisbon")
    assert outcome.exit_code == 1 and reason in outcome.error


def test_a_wiki_that_does_not_answer_in_time_is_a_timeout_tool_error(wiki, monkeypatch):
    quick_retries(monkeypatch, attempts=1, timeout=0.3)
    wiki.script(Reply(delay=3600))  # unanswered: only the 0.3 s timeout ends the lookup
    outcome = page(entity="Lisbon")
    assert "MediaWiki API: no answer within 0.3s" in outcome.error


def test_an_unreachable_wiki_is_a_tool_error(wiki, monkeypatch):
    monkeypatch.setenv("WIKI_API_URL", f"http://127.0.0.1:{refused_port()}/w/api.php")
    outcome = page(entity="Lisbon")
    assert outcome.exit_code == 1 and "Connection refused" in outcome.error


# ---------------------------------------------------------------------------------------------- revisions


def test_revisions_of_a_month_are_listed_oldest_first_with_urls(wiki):
    outcome = revisions(entity="Lisbon", year=2020, month=1)
    assert outcome.exit_code == 0, outcome.error
    query = wiki.seen()[0].query
    assert (query["rvstart"], query["rvend"], query["rvdir"]) == (
        "2020-01-01T00:00:00Z",
        "2020-01-31T23:59:59Z",
        "newer",
    )
    assert query["rvlimit"] == "50" and set(query["rvprop"].split("|")) == {
        "ids",
        "timestamp",
        "user",
        "comment",
        "size",
    }
    assert "Total Revisions Found: 3" in outcome.result
    assert "1. Revision ID: 102 (2020-01-03 10:00:00 UTC) by Bob, 5,230 bytes: population figures" in outcome.result
    assert f"URL: {wiki.base}/w/index.php?title=Lisbon&oldid=104" in outcome.result
    assert [r["revid"] for r in outcome.structured_content["revisions"]] == [102, 103, 104]
    assert outcome.structured_content["revisions"][0]["parentid"] == 101


def test_more_revisions_than_max_revisions_says_there_are_more(wiki):
    outcome = revisions(entity="Lisbon", year=2020, month=1, max_revisions=2)
    assert "Total Revisions Found: 2 (more exist)" in outcome.result
    assert "raise max_revisions to see more" in outcome.result and outcome.structured_content["more"] is True


def test_a_month_without_edits_gives_the_revision_in_force_then(wiki):
    outcome = revisions(entity="Lisbon", year=2020, month=2)
    assert "No edits in 2020-02; the revision in force during that month was made before it" in outcome.result
    assert "Revision ID: 104" in outcome.result and "Revision ID: 105" not in outcome.result
    assert wiki.seen()[1].query["rvstart"] == "2020-02-01T00:00:00Z" and "rvdir" not in wiki.seen()[1].query


def test_a_month_before_the_page_existed_is_a_tool_error(wiki):
    outcome = revisions(entity="Lisbon", year=2015, month=6)
    assert (
        outcome.exit_code == 1 and "'Lisbon' had no revisions by 2015-06: the page was created later" in outcome.error
    )


def test_revision_history_of_a_missing_page_lists_similar_titles(wiki):
    outcome = revisions(entity="Lisboa city", year=2020, month=1)
    assert outcome.exit_code == 1 and "no Wikipedia page is titled 'Lisboa city'" in outcome.error


def test_a_future_month_and_out_of_range_dates_are_refused(wiki):
    got = session(
        memory_spec("wiki"),
        ("search_wiki_revision", {"entity": "Lisbon", "year": 2099, "month": 12}),
        ("search_wiki_revision", {"entity": "Lisbon", "year": 2020, "month": 13}),
        ("search_wiki_revision", {"entity": "Lisbon", "year": 1999, "month": 1}),
    )
    assert got[0].exit_code == 1 and "2099-12 has not begun yet" in got[0].error
    assert got[1].exit_code == 2 and got[2].exit_code == 2  # the schema's limits: refused before sending
    assert wiki.seen() == []


@pytest.mark.process
def test_the_shipped_server_over_stdio_reads_the_fake_wiki(wiki):
    spec = bundled_spec("wiki", {"WIKI_API_URL": f"{wiki.base}/w/api.php", "HTTP_BACKOFF": "0.01"})
    got = session(spec, ("wiki_get_page_content", {"entity": "Mercury (planet)", "first_sentences": 1}))
    assert got[0].exit_code == 0, got[0].error
    assert "Mercury is the first planet from the Sun." in got[0].result and spec.transport == "stdio"
