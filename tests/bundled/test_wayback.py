"""The wayback server against a fake Wayback Machine on 127.0.0.1 (in-process; one test over stdio)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bundled.conftest import bundled_spec, memory_spec, session
from tests.bundled.research import quick_retries
from tests.conftest import refused_port
from tests.fakes.base import Reply
from tests.fakes.wayback import TOOLBAR, FakeWayback

PAGE_2019 = "<html><head><title>News</title></head><body><h1>News of 2019</h1><p>Old <b>story</b>.</p></body></html>"
PAGE_2021 = "<html><head><title>News</title></head><body><h1>News of 2021</h1><p>New story.</p></body></html>"


@pytest.fixture
def archive(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWayback]:
    fake = FakeWayback()
    fake.capture("20190310081500", "https://news.example.org/", PAGE_2019)
    fake.capture("20200101000000", "https://news.example.org/", "<html><body>gone</body></html>", statuscode="404")
    fake.capture("20210620174502", "https://news.example.org/", PAGE_2021)
    with fake.serve() as base:
        monkeypatch.setenv("WAYBACK_AVAILABILITY_URL", f"{base}/wayback/available")
        monkeypatch.setenv("WAYBACK_CDX_URL", f"{base}/cdx/search/cdx")
        monkeypatch.setenv("WAYBACK_WEB_URL", f"{base}/web")
        monkeypatch.delenv("MIROCTL_URL_BLOCK", raising=False)
        monkeypatch.delenv("WAYBACK_MAX_CHARS", raising=False)
        quick_retries(monkeypatch)
        yield fake


def lookup(**arguments: object):
    return session(memory_spec("wayback"), ("search_archived_webpage", arguments))[0]


def test_the_closest_snapshot_is_found_by_the_availability_api_and_read_as_markdown(archive):
    outcome = lookup(url="https://news.example.org/", year=2019, month=4, day=1)
    assert outcome.exit_code == 0, outcome.error
    available, snapshot = archive.seen()
    assert available.path == "/wayback/available"
    assert available.query == {"url": "https://news.example.org/", "timestamp": "20190401"}
    assert snapshot.path == "/web/20190310081500id_/https://news.example.org/"  # raw: without the toolbar
    assert "closest to 2019-04-01 (found by the availability API)" in outcome.result
    assert "Snapshot time: 2019-03-10 08:15:00 UTC (timestamp 20190310081500)" in outcome.result
    assert f"Archived URL: {archive.base}/web/20190310081500/https://news.example.org/" in outcome.result
    assert "# News of 2019" in outcome.result and "Old **story**." in outcome.result
    assert "Wayback Machine toolbar" not in outcome.result and TOOLBAR not in outcome.result
    assert outcome.structured_content["timestamp"] == "20190310081500"


def test_when_the_availability_api_misses_the_cdx_index_gives_the_nearest_good_capture(archive):
    archive.availability_blind = True
    outcome = lookup(url="news.example.org", year=2020, month=1, day=2)
    assert outcome.exit_code == 0, outcome.error
    before, after = (r.query for r in archive.seen("/cdx/"))
    assert before == {
        "url": "https://news.example.org",
        "output": "json",
        "fl": "timestamp,original,statuscode,mimetype",
        "filter": "statuscode:200",
        "to": "20200102",
        "limit": "-1",
    }
    assert (after["from"], after["limit"]) == ("20200102", "1")
    assert (
        "found by the CDX index" in outcome.result and "# News of 2019" in outcome.result
    )  # the 404 capture is skipped
    assert "no scheme was given: looked up https://news.example.org" in outcome.result


def test_year_zero_asks_for_the_most_recent_snapshot(archive):
    archive.availability_blind = True
    outcome = lookup(url="https://news.example.org/", year=0, month=0, day=0)
    assert "closest to the most recent" in outcome.result and "# News of 2021" in outcome.result
    assert archive.seen("/wayback/")[0].query == {"url": "https://news.example.org/"}
    assert archive.seen("/cdx/")[0].query["limit"] == "-1" and "to" not in archive.seen("/cdx/")[0].query


def test_a_day_past_the_end_of_the_month_becomes_its_last_day_and_is_said(archive):
    outcome = lookup(url="https://news.example.org/", year=2021, month=2, day=30)
    assert "2021-02-30 is not a date: used 2021-02-28" in outcome.result
    assert archive.seen()[0].query["timestamp"] == "20210228"


def test_a_page_never_archived_is_a_tool_error_after_both_apis_were_asked(archive):
    outcome = lookup(url="https://never.example.org/x", year=2020, month=5, day=5)
    assert outcome.exit_code == 1 and outcome.error_kind == "tool_error"
    assert "the Wayback Machine has no snapshot of https://never.example.org/x" in outcome.error
    assert [r.path for r in archive.seen()] == ["/wayback/available", "/cdx/search/cdx", "/cdx/search/cdx"]


def test_a_failing_availability_api_falls_back_to_the_cdx_index_and_says_so(archive, monkeypatch):
    quick_retries(monkeypatch, attempts=1)
    archive.script(Reply(503, "Service Unavailable"))
    outcome = lookup(url="https://news.example.org/", year=2021, month=7, day=1)
    assert outcome.exit_code == 0, outcome.error
    assert "the availability API failed (Wayback availability API: HTTP 503)" in outcome.result
    assert "found by the CDX index" in outcome.result and "# News of 2021" in outcome.result


@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        ([Reply(200, "<html>oops</html>")] * 2, "Wayback CDX API sent a malformed answer (not JSON)"),
        ([Reply(200, {"no": "table"})] * 2, "Wayback CDX API sent a malformed answer: not a JSON table"),
        ([Reply(429, "slow down", {"Retry-After": "0"})] * 4, "Wayback CDX API: HTTP 429 (tried 3 times)"),
    ],
)
def test_cdx_failures_after_an_empty_availability_answer_are_tool_errors(archive, replies, reason):
    archive.script(Reply(200, {"url": "x", "archived_snapshots": {}}), *replies)
    outcome = lookup(url="https://news.example.org/", year=2021, month=7, day=1)
    assert outcome.exit_code == 1 and reason in outcome.error


def test_a_snapshot_that_cannot_be_read_is_a_tool_error_naming_the_snapshot(archive):
    archive.capture("20220101000000", "https://broken.example.org/", "x")
    archive.script(
        Reply(
            200,
            {
                "archived_snapshots": {
                    "closest": {
                        "available": True,
                        "status": "200",
                        "timestamp": "20220101000000",
                        "url": f"{archive.base}/web/20220101000000/https://broken.example.org/",
                    }
                }
            },
        ),
        Reply(502, "Bad Gateway"),
    )
    outcome = lookup(url="https://broken.example.org/", year=2022, month=1, day=1)
    assert outcome.exit_code == 1
    assert "found a snapshot of https://broken.example.org/ from 2022-01-01 00:00:00 UTC" in outcome.error
    assert "but could not read it:" in outcome.error and "answered HTTP 502" in outcome.error


def test_a_blocked_url_is_refused_before_the_archive_is_asked(archive):
    outcome = lookup(url="huggingface.co/datasets/org/answers", year=2023, month=1, day=1)
    assert outcome.exit_code == 5 and "url rule" in outcome.error and archive.seen() == []


def test_the_servers_own_url_rule_check_refuses_a_blocked_page(archive, monkeypatch):
    monkeypatch.setenv("MIROCTL_URL_BLOCK", "news.example.org")  # the server's rules, as a host would pass them
    outcome = lookup(url="news.example.org/2020", year=2023, month=1, day=1)
    assert outcome.exit_code == 1 and "is blocked by the url rule 'news.example.org'" in outcome.error
    assert archive.seen() == []


def test_bad_urls_are_tool_errors_and_bad_dates_are_refused_by_the_schema(archive):
    got = session(
        memory_spec("wayback"),
        ("search_archived_webpage", {"url": " ", "year": 2020, "month": 1, "day": 1}),
        ("search_archived_webpage", {"url": "ftp://files.example.org/", "year": 2020, "month": 1, "day": 1}),
        ("search_archived_webpage", {"url": "https://news.example.org/", "year": 2020, "month": 13, "day": 1}),
    )
    assert "url is empty" in got[0].error and "url must be an http(s) address" in got[1].error
    assert got[2].exit_code == 2 and archive.seen() == []


def test_a_long_page_is_cut_at_wayback_max_chars(archive, monkeypatch):
    monkeypatch.setenv("WAYBACK_MAX_CHARS", "100")
    archive.capture(
        "20230505000000", "https://long.example.org/", "<html><body><p>" + "word " * 500 + "</p></body></html>"
    )
    outcome = lookup(url="https://long.example.org/", year=2023, month=5, day=5)
    assert "more characters not shown (WAYBACK_MAX_CHARS)" in outcome.result
    assert outcome.structured_content["cut_chars"] == outcome.structured_content["markdown_chars"] - 100


def test_an_archive_that_does_not_answer_in_time_is_a_timeout_tool_error(archive, monkeypatch):
    quick_retries(monkeypatch, attempts=1, timeout=0.3)
    archive.script(*[Reply(delay=3600)] * 3)  # unanswered: only the 0.3 s timeout ends the lookup
    outcome = lookup(url="https://news.example.org/", year=2021, month=7, day=1)
    assert outcome.exit_code == 1 and "no answer within 0.3s" in outcome.error


def test_an_unreachable_archive_is_a_tool_error(archive, monkeypatch):
    dead = f"http://127.0.0.1:{refused_port()}"
    for name, path in (("AVAILABILITY", "/wayback/available"), ("CDX", "/cdx/search/cdx")):
        monkeypatch.setenv(f"WAYBACK_{name}_URL", dead + path)
    quick_retries(monkeypatch, attempts=1)
    outcome = lookup(url="https://news.example.org/", year=2021, month=7, day=1)
    assert outcome.exit_code == 1 and "Wayback CDX API: cannot connect" in outcome.error


@pytest.mark.process
def test_the_shipped_server_over_stdio_reads_the_fake_archive(archive):
    spec = bundled_spec(
        "wayback",
        {
            "WAYBACK_AVAILABILITY_URL": f"{archive.base}/wayback/available",
            "WAYBACK_CDX_URL": f"{archive.base}/cdx/search/cdx",
            "WAYBACK_WEB_URL": f"{archive.base}/web",
        },
    )
    got = session(
        spec, ("search_archived_webpage", {"url": "https://news.example.org/", "year": 2021, "month": 6, "day": 1})
    )
    assert got[0].exit_code == 0, got[0].error
    assert "# News of 2021" in got[0].result and spec.transport == "stdio"
