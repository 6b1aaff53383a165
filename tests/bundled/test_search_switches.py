"""google_search's upstream options against a fake Serper: autocorrect, the REMOVE_* switches, decoded result
URLs and the unifuncs mirrors dropped (upstream's search side); the server runs in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bundled.conftest import memory_spec, session
from tests.bundled.research import payload, quick_retries
from tests.fakes.serper import KEY, FakeSerper, organic

ENCODED = "https://zh.wikipedia.org/wiki/%E5%8C%97%E4%BA%AC%E5%B8%82"
RESERVED = "https://example.org/a%2Fb?q=%E4%B8%AD%26x%3Dy%20z"


@pytest.fixture
def serper(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSerper]:
    fake = FakeSerper()
    fake.index["beijing"] = [
        organic("Beijing", ENCODED, sitelinks=[{"title": "Sub", "link": RESERVED}]),
        organic("Mirror of Beijing", "https://www.unifuncs.com/s/beijing"),
        organic("Beijing facts", "https://example.org/facts"),
    ]
    fake.extras["beijing"] = {
        "knowledgeGraph": {"title": "Beijing", "type": "Capital of China"},
        "answerBox": {"answer": "21.9 million"},
        "peopleAlsoAsk": [{"question": "Is Beijing big?", "snippet": "Yes.", "link": "https://example.org/big"}],
    }
    with fake.serve() as base:
        monkeypatch.setenv("SERPER_API_KEY", KEY)
        monkeypatch.setenv("SERPER_BASE_URL", base)
        for name in (
            "SEARCH_BACKEND",
            "MIROCTL_URL_BLOCK",
            "REMOVE_SNIPPETS",
            "REMOVE_KNOWLEDGE_GRAPH",
            "REMOVE_ANSWER_BOX",
        ):
            monkeypatch.delenv(name, raising=False)
        quick_retries(monkeypatch)
        yield fake


def search(**arguments: object) -> dict:
    return payload(session(memory_spec("search"), ("google_search", arguments))[0])


@pytest.mark.parametrize("value", [True, False])
def test_autocorrect_is_sent_to_serper_as_given(serper, value):
    search(q="beijing", autocorrect=value)
    assert serper.seen()[0].json()["autocorrect"] is value


def test_without_autocorrect_serper_gets_no_autocorrect_field(serper):
    search(q="beijing")
    assert "autocorrect" not in serper.seen()[0].json()


def test_result_urls_are_decoded_where_that_changes_no_part_of_the_url(serper):
    data = search(q="beijing")
    assert data["organic"][0]["link"] == "https://zh.wikipedia.org/wiki/北京市"
    assert data["organic"][0]["sitelinks"][0]["link"] == "https://example.org/a%2Fb?q=中%26x%3Dy%20z"


def test_unifuncs_mirrors_are_dropped_from_the_results_and_counted(serper):
    data = search(q="beijing")
    assert [r["title"] for r in data["organic"]] == ["Beijing", "Beijing facts"]
    assert data["dropped_by_url_rules"] == 1


def test_without_the_switches_every_section_keeps_its_snippets(serper):
    data = search(q="beijing")
    assert "knowledgeGraph" in data and "answerBox" in data
    assert all("snippet" in r for r in data["organic"]) and "snippet" in data["peopleAlsoAsk"][0]


@pytest.mark.parametrize("value", ["true", "1", "yes", "TRUE"])
def test_remove_snippets_leaves_the_snippets_out_of_organic_results_and_people_also_ask(serper, monkeypatch, value):
    monkeypatch.setenv("REMOVE_SNIPPETS", value)
    data = search(q="beijing")
    assert all("snippet" not in r for r in data["organic"]) and "snippet" not in data["peopleAlsoAsk"][0]
    assert data["organic"][0]["title"] == "Beijing" and "knowledgeGraph" in data


def test_remove_knowledge_graph_and_remove_answer_box_leave_out_those_sections_only(serper, monkeypatch):
    monkeypatch.setenv("REMOVE_KNOWLEDGE_GRAPH", "true")
    monkeypatch.setenv("REMOVE_ANSWER_BOX", "true")
    data = search(q="beijing")
    assert "knowledgeGraph" not in data and "answerBox" not in data
    assert all("snippet" in r for r in data["organic"])


def test_a_switch_set_to_false_leaves_its_section_in(serper, monkeypatch):
    monkeypatch.setenv("REMOVE_ANSWER_BOX", "false")
    assert "answerBox" in search(q="beijing")
