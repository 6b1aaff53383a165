"""scrape_and_extract_info (MiroThinker's jina_scrape_llm_summary): the page through a fake Jina reader, then
one chat completion on a fake OpenAI-compatible API; the server runs in this process with the official SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.bundled.conftest import memory_spec, session, text_of
from tests.bundled.research import quick_retries
from tests.fakes.jina import KEY, FakeJina
from tests.fakes.openai_api import CHAT, OpenAIFake, error
from tests.fakes.site import FakeSite, html

PAGE = "https://example.org/report"


@dataclass
class Services:
    jina: FakeJina
    model: OpenAIFake
    site: FakeSite


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch, model_env) -> Iterator[Services]:
    jina, model, site = FakeJina(), OpenAIFake(), FakeSite()
    jina.pages[PAGE] = ("Annual report", "# Annual report\n\nRevenue in 2024 was 12.5 million euros.\n\nStaff: 40.")
    model.content = "Revenue in 2024: 12.5 million euros."
    site.pages["/direct"] = html("<p>Founded in 1998 in Lyon.</p>", title="About")
    with jina.serve() as reader, model.running(), site.serve():
        monkeypatch.setenv("JINA_API_KEY", KEY)
        monkeypatch.setenv("JINA_BASE_URL", reader)
        monkeypatch.setenv("SUMMARY_LLM_BASE_URL", f"{model.base_url}/chat/completions")
        monkeypatch.setenv("SUMMARY_LLM_API_KEY", model.key)
        monkeypatch.setenv("SUMMARY_LLM_MODEL_NAME", "summary-model")
        for name in ("SCRAPE_BACKEND", "EXTRACT_MAX_CHARS", "MIROCTL_URL_BLOCK"):
            monkeypatch.delenv(name, raising=False)
        quick_retries(monkeypatch)
        yield Services(jina, model, site)


def extract(url: str = PAGE, info: str = "What was the revenue in 2024?", **more: object):
    arguments = {"url": url, "info_to_extract": info, **more}
    return session(memory_spec("scrape"), ("scrape_and_extract_info", arguments))[0]


def test_the_page_is_scraped_then_one_model_call_extracts_what_the_question_asks(services):
    outcome = extract()
    assert outcome.exit_code == 0, outcome.error
    data = json.loads(outcome.result)
    assert data["success"] is True and data["extracted_info"] == "Revenue in 2024: 12.5 million euros."
    assert data["url"] == PAGE and data["model_used"] == "summary-model" and data["tokens_used"] == 29
    assert data["scrape_stats"]["all_content_displayed"] is True and data["scrape_stats"]["line_count"] == 5
    (request,) = services.model.seen(CHAT)
    sent = request.json()
    assert sent["model"] == "summary-model" and sent["max_tokens"] == 8192
    prompt = sent["messages"][0]["content"]
    assert "What was the revenue in 2024?" in prompt and "Revenue in 2024 was 12.5 million euros." in prompt
    assert len(services.jina.seen()) == 1


def test_a_base_url_without_the_chat_completions_path_reaches_the_same_endpoint(services, monkeypatch):
    monkeypatch.setenv("SUMMARY_LLM_BASE_URL", services.model.base_url)
    assert extract().exit_code == 0
    assert len(services.model.seen(CHAT)) == 1


def test_custom_headers_given_as_a_json_object_in_a_string_go_with_the_readers_request(services):
    outcome = extract(custom_headers='{"X-Locale": "fr-FR"}')
    assert outcome.exit_code == 0, outcome.error
    assert services.jina.seen()[0].headers["x-locale"] == "fr-FR"


def test_custom_headers_are_declared_as_a_string_so_every_provider_can_be_given_the_tool(services):
    outcome = extract(custom_headers={"X-Locale": "fr-FR"})  # an object: miroctl checks it against the schema
    assert outcome.exit_code == 2
    assert "custom_headers" in outcome.error and "custom_headers?: string | null" in str(outcome.hint)
    assert services.jina.seen() == []


@pytest.mark.parametrize("headers", ["X-Locale: fr-FR", '["X-Locale"]', '{"X-Locale": 1}'])
def test_custom_headers_that_are_not_an_object_of_strings_are_refused_before_the_page_is_read(services, headers):
    outcome = extract(custom_headers=headers)
    assert outcome.exit_code != 0
    assert "custom_headers" in outcome.error, outcome.error
    assert services.jina.seen() == [] and services.model.seen(CHAT) == []


def test_without_a_reader_key_the_page_is_fetched_directly_before_the_model_call(services, monkeypatch):
    monkeypatch.delenv("JINA_API_KEY")
    outcome = extract(url=f"{services.site.base}/direct", info="When was it founded?")
    assert outcome.exit_code == 0, outcome.error
    assert "Founded in 1998 in Lyon." in services.model.last_messages()[0]["content"]
    assert services.jina.seen() == []


def test_a_page_longer_than_the_limit_is_cut_and_the_stats_say_so(services, monkeypatch):
    monkeypatch.setenv("EXTRACT_MAX_CHARS", "1000")
    services.jina.pages[PAGE] = ("Long", "x" * 5000)
    data = json.loads(extract().result)
    assert data["scrape_stats"]["all_content_displayed"] is False and data["scrape_stats"]["char_count"] == 5000
    assert services.model.last_messages()[0]["content"].count("x") < 1200


def test_without_a_model_endpoint_it_fails_before_reading_the_page(services, monkeypatch):
    monkeypatch.delenv("SUMMARY_LLM_BASE_URL")
    outcome = extract()
    assert outcome.exit_code == 1 and "SUMMARY_LLM_BASE_URL is not set" in text_of(outcome)
    assert services.jina.seen() == [] and services.model.seen(CHAT) == []


def test_a_refused_model_key_is_a_tool_error_naming_the_setting_without_the_key(services, monkeypatch):
    monkeypatch.setenv("SUMMARY_LLM_API_KEY", "sk-wrong-key-000000")
    outcome = extract()
    assert outcome.exit_code == 1
    assert "refused the API key (HTTP 401" in outcome.error and "check SUMMARY_LLM_API_KEY" in outcome.error
    assert "sk-wrong-key-000000" not in outcome.error


def test_a_failing_model_is_a_tool_error_saying_so(services):
    services.model.queue(CHAT, error(400, "context length exceeded", "invalid_request_error"))
    outcome = extract()
    assert outcome.exit_code == 1 and "refused the request (HTTP 400): context length exceeded" in outcome.error


def test_a_dataset_page_is_refused_before_anything_is_read(services):
    outcome = extract(url="https://huggingface.co/datasets/gaia-benchmark/GAIA")
    assert outcome.exit_code == 5
    assert services.jina.seen() == [] and services.model.seen(CHAT) == []


def test_an_empty_question_is_refused(services):
    outcome = extract(info="  ")
    assert outcome.exit_code == 1 and "info_to_extract is empty" in outcome.error
