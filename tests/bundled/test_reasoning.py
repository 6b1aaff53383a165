"""The reasoning server from config/tool/tool-reasoning.yaml against fake Anthropic and OpenAI-compatible APIs
on 127.0.0.1: the official SDKs run unchanged, only their base URLs point at the fakes."""

from __future__ import annotations

import pytest

from tests.bundled.conftest import bundled_spec, cli_call, memory_spec, session
from tests.conftest import refused_port
from tests.fakes import anthropic_api, openai_api
from tests.fakes.anthropic_api import MESSAGES, AnthropicFake
from tests.fakes.openai_api import CHAT, OpenAIFake
from tests.fakes.scripted import Reply

QUESTION = {"question": "What is six times seven?"}


def anthropic_env(fake: AnthropicFake, **extra: str) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": fake.key, "ANTHROPIC_BASE_URL": fake.base_url, **extra}


def test_reasoning_asks_anthropic_with_extended_thinking_and_returns_the_answer(model_env):
    with AnthropicFake().running() as fake:
        model_env(**anthropic_env(fake))
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    assert got[0].exit_code == 0, got[0].error
    body = fake.last_body()
    assert got[0].result == "The answer is 42."
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 19000} and body["max_tokens"] == 21000
    assert body["model"] == "claude-sonnet-4-6"
    assert body["messages"][0]["content"][0]["text"] == QUESTION["question"]
    assert got[0].structured_content["api"] == "Anthropic" and got[0].structured_content["thinking_only"] is False


def test_reasoning_returns_the_thinking_when_the_answer_is_empty_and_fails_when_both_are(model_env):
    with AnthropicFake().running() as fake:
        model_env(**anthropic_env(fake, REASONING_ANTHROPIC_MODEL="claude-opus-test"))
        fake.queue(MESSAGES, Reply(200, anthropic_api.message("", thinking="Forty-two, by counting.")))
        fake.queue(MESSAGES, Reply(200, anthropic_api.message(None, thinking="")))
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION), ("reasoning", QUESTION))
    assert got[0].exit_code == 0 and got[0].structured_content["thinking_only"] is True
    assert fake.last_body()["model"] == "claude-opus-test"
    assert got[0].result.startswith("(the model gave no final answer; this is its thinking)")
    assert got[0].result.endswith("Forty-two, by counting.")
    assert got[1].exit_code == 1 and got[1].error_kind == "tool_error"
    assert "returned an empty answer (model claude-sonnet-4-5-20250929): ask again" in got[1].error


def test_reasoning_uses_an_openai_compatible_endpoint_when_no_anthropic_key_is_set(model_env):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        fake.message_extra = {"reasoning_content": "vLLM's thinking"}
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION))
        fake.content = None
        thinking = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    assert got[0].exit_code == 0 and got[0].result == "The answer is 42."
    sent = fake.seen(CHAT)[0].json()
    assert sent["model"] == "o3" and sent["messages"] == [{"role": "user", "content": QUESTION["question"]}]
    assert got[0].structured_content["api"] == "OpenAI-compatible"
    assert thinking[0].exit_code == 0 and thinking[0].result.endswith("vLLM's thinking")


def test_a_local_openai_compatible_server_needs_only_a_base_url(model_env):
    with OpenAIFake(key="no-key-needed").running() as fake:
        model_env(REASONING_OPENAI_BASE_URL=fake.base_url, REASONING_OPENAI_MODEL="qwen3-32b")
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    assert got[0].exit_code == 0, got[0].error
    sent = fake.seen(CHAT)[0].json()
    assert sent["model"] == "qwen3-32b"


def test_reasoning_without_any_model_configured_names_what_to_set(model_env):
    got = session(
        memory_spec("reasoning"),
        ("reasoning", QUESTION),
        ("reasoning", {"question": "   "}),
    )
    assert got[0].exit_code == 1 and got[0].error_kind == "tool_error"
    assert "no reasoning model is configured: set ANTHROPIC_API_KEY (Anthropic) or OPENAI_API_KEY" in got[0].error
    assert got[1].exit_code == 1 and "question is empty" in got[1].error


def test_a_refused_key_is_a_tool_error_naming_the_variable_without_the_key(model_env):
    with AnthropicFake().running() as fake, OpenAIFake().running() as openai:
        model_env(ANTHROPIC_API_KEY="sk-ant-wrong-key-123456", ANTHROPIC_BASE_URL=fake.base_url)
        anthropic = session(memory_spec("reasoning"), ("reasoning", QUESTION))
        model_env(REASONING_BACKEND="openai", OPENAI_API_KEY="sk-wrong-openai-key", OPENAI_BASE_URL=openai.base_url)
        other = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    assert anthropic[0].exit_code == 1
    assert "refused the API key (HTTP 401: invalid x-api-key): check ANTHROPIC_API_KEY" in anthropic[0].error
    assert other[0].exit_code == 1 and "check OPENAI_API_KEY" in other[0].error
    assert "sk-ant-wrong-key-123456" not in anthropic[0].error and "sk-wrong-openai-key" not in other[0].error


def test_a_429_with_retry_after_is_waited_out_and_retried(model_env):
    with AnthropicFake().running() as fake:
        model_env(**anthropic_env(fake, MODEL_MAX_RETRIES="2"))
        fake.queue(MESSAGES, anthropic_api.rate_limited(retry_after="1"))
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION))
        first, second = fake.seen(MESSAGES)
    assert got[0].exit_code == 0 and got[0].result == "The answer is 42."
    assert second.at - first.at >= 0.9, "the SDK must wait as Retry-After asks"


def test_a_lasting_429_is_a_tool_error_that_says_how_long_to_wait(model_env):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url, MODEL_MAX_RETRIES="1")
        fake.queue(CHAT, openai_api.rate_limited("0.1"), openai_api.rate_limited("7"))
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION))
        tries = len(fake.seen(CHAT))
    assert got[0].exit_code == 1 and tries == 2
    assert "is rate limiting (HTTP 429) after 1 retries; it asks to wait 7 s (Retry-After)" in got[0].error
    assert "Rate limit reached for gpt-4o" in got[0].error


def test_server_errors_are_retried_then_reported_with_their_status(model_env):
    with AnthropicFake().running() as fake:
        model_env(**anthropic_env(fake, MODEL_MAX_RETRIES="1"))
        fake.queue(MESSAGES, anthropic_api.overloaded(), anthropic_api.overloaded())
        fake.queue(MESSAGES, anthropic_api.overloaded())
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION), ("reasoning", QUESTION))
    assert got[0].exit_code == 1 and "failed (HTTP 529) after 1 retries: Overloaded" in got[0].error
    assert got[1].exit_code == 0 and got[1].result == "The answer is 42."


def test_a_model_that_does_not_answer_in_time_is_a_timeout_tool_error(model_env):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url, MODEL_TIMEOUT="0.5")
        fake.queue(CHAT, Reply(200, openai_api.completion("late"), delay=3600))  # only MODEL_TIMEOUT ends it
        got = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    assert got[0].exit_code == 1
    assert "did not answer within 0.5 s (MODEL_TIMEOUT)" in got[0].error


def test_malformed_bodies_and_refused_connections_are_explained(model_env):
    with OpenAIFake().running() as fake, AnthropicFake().running() as anthropic:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        fake.queue(
            CHAT, Reply(200, body=b"{not json"), Reply(200, {}), Reply(200, body=b"<html>", content_type="text/html")
        )
        openai = session(memory_spec("reasoning"), *[("reasoning", QUESTION)] * 3)
        model_env(**anthropic_env(anthropic))
        anthropic.queue(MESSAGES, Reply(200, {"type": "message"}))
        claude = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    model_env(ANTHROPIC_API_KEY="sk-ant-x", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{refused_port()}")
    refused = session(memory_spec("reasoning"), ("reasoning", QUESTION))
    assert [o.exit_code for o in openai.outcomes] == [1, 1, 1]
    assert all("sent a malformed response" in o.error for o in openai.outcomes), [o.error for o in openai.outcomes]
    assert claude[0].exit_code == 1 and "malformed response: it has no content blocks" in claude[0].error
    assert refused[0].exit_code == 1 and "cannot connect to the Anthropic API at ANTHROPIC_BASE_URL" in refused[0].error


@pytest.mark.process
def test_miroctl_call_reasoning_over_stdio_answers_and_exits_0():
    with AnthropicFake().running() as fake:
        env = anthropic_env(fake)
        code, envelope = cli_call("reasoning", "reasoning", "question=What is six times seven?", env=env)
        spec_env = bundled_spec("reasoning").env
    assert code == 0, envelope
    assert envelope["result"] == "The answer is 42." and envelope["structured_content"]["api"] == "Anthropic"
    assert spec_env["REASONING_THINKING_BUDGET"] == "19000"


def test_miroctl_call_reasoning_without_a_key_exits_2_naming_what_to_set_before_starting_the_server():
    code, envelope = cli_call(
        "reasoning", "reasoning", "question=Why?", env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    )
    assert code == 2
    assert envelope["error_kind"] == "config"
    assert "missing environment variable: set one of ANTHROPIC_API_KEY, OPENAI_API_KEY" in envelope["error"]
