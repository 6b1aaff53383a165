"""The vision server from config/tool/tool-vision.yaml against fake OpenAI-compatible, Anthropic and Gemini APIs
and a file site on 127.0.0.1; the official SDKs run unchanged."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.bundled.conftest import cli_call, memory_spec, session
from tests.bundled.files import tiny_png
from tests.fakes import gemini_api, openai_api
from tests.fakes.anthropic_api import AnthropicFake
from tests.fakes.gemini_api import GENERATE, GeminiFake
from tests.fakes.openai_api import CHAT, OpenAIFake
from tests.fakes.scripted import Reply
from tests.fakes.web_files import FileSite

VIDEO = "https://www.youtube.com/watch?v=dQw4w9WgXcQ"
BLOCKED = "https://huggingface.co/datasets/gaia-benchmark/GAIA/resolve/main/answer.png"


@pytest.fixture
def png(tmp_path: Path) -> Path:
    return tiny_png(tmp_path / "red.png")


def ask(image: str, question: str = "What colour is the square?") -> tuple[str, dict[str, str]]:
    return ("visual_question_answering", {"image_path_or_url": image, "question": question})


def test_a_local_image_goes_to_an_openai_compatible_model_as_a_base64_data_url(model_env, png: Path):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        got = session(memory_spec("vision"), ask(str(png)))
    assert got[0].exit_code == 0, got[0].error
    sent = fake.seen(CHAT)[0].json()
    assert got[0].result == "The answer is 42." and got[0].structured_content["model"] == "gpt-4o"
    text, image = sent["messages"][0]["content"]
    assert "Question: What colour is the square?" in text["text"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()


def test_anthropic_gets_urls_as_url_sources_and_files_as_base64_sources(model_env, png: Path):
    with AnthropicFake().running() as fake:
        model_env(ANTHROPIC_API_KEY=fake.key, ANTHROPIC_BASE_URL=fake.base_url, VISION_ANTHROPIC_MODEL="claude-vision")
        got = session(memory_spec("vision"), ask("https://example.org/cat.jpg"), ask(f"file://{png}"))
        by_url, by_file = (r.json() for r in fake.seen("/v1/messages"))
    assert [o.exit_code for o in got.outcomes] == [0, 0], [o.error for o in got.outcomes]
    assert by_url["messages"][0]["content"][0]["source"] == {"type": "url", "url": "https://example.org/cat.jpg"}
    source = by_file["messages"][0]["content"][0]["source"]
    assert source["type"] == "base64" and source["media_type"] == "image/png"
    assert base64.b64decode(source["data"]) == png.read_bytes() and by_file["model"] == "claude-vision"


def test_gemini_gets_the_downloaded_image_inline(model_env, png: Path):
    with GeminiFake().running() as fake, FileSite().running() as site:
        model_env(GEMINI_API_KEY=fake.key, GEMINI_BASE_URL=fake.base_url)
        url = site.put("photo", png.read_bytes())  # no extension, octet-stream: the bytes say PNG
        got = session(memory_spec("vision"), ask(url))
    assert got[0].exit_code == 0, got[0].error
    parts = fake.last_parts()
    assert got[0].result == "A cat sits on a red mat." and got[0].structured_content["api"] == "Gemini"
    inline = parts[0]["inlineData"]  # field names as the SDK writes them (proto JSON takes both spellings)
    assert sorted(inline.values()) == sorted([base64.b64encode(png.read_bytes()).decode(), "image/png"])


def test_blocked_urls_are_refused_before_any_model_is_asked_even_behind_a_redirect(model_env, png: Path):
    with GeminiFake().running() as fake, FileSite().running() as site, OpenAIFake().running() as openai:
        model_env(GEMINI_API_KEY=fake.key, GEMINI_BASE_URL=fake.base_url)
        behind_redirect = session(memory_spec("vision"), ask(site.redirect_to(BLOCKED)))
        model_env(OPENAI_API_KEY=openai.key, OPENAI_BASE_URL=openai.base_url)
        direct = session(memory_spec("vision"), ask(BLOCKED))
        asked = len(fake.seen(GENERATE)) + len(openai.seen(CHAT))
    assert direct[0].exit_code == 5 and direct[0].error_kind == "denied", direct[0].error
    assert behind_redirect[0].exit_code == 1
    assert f"{BLOCKED} is blocked by the url rule" in behind_redirect[0].error
    assert asked == 0


def test_bad_images_and_missing_settings_are_tool_errors_that_say_what_to_do(model_env, tmp_path: Path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    bare = session(memory_spec("vision"), ask(str(notes)))
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        got = session(
            memory_spec("vision"),
            ask(str(notes)),
            ask("/home/user/chart.png"),
            ask(str(tmp_path / "missing.png")),
            ask("ftp://example.org/a.png"),
            ask(str(notes), question=" "),
        )
        asked = len(fake.seen(CHAT))
    assert bare[0].exit_code == 1 and "no vision model is configured: set ANTHROPIC_API_KEY" in bare[0].error
    assert all(o.exit_code == 1 and o.error_kind == "tool_error" for o in got.outcomes)
    assert "is not a PNG, JPEG, GIF or WebP image (it looks like text/plain)" in got[0].error
    assert "is a path inside a sandbox" in got[1].error and "download_file_from_sandbox_to_local" in got[1].error
    assert "no such image file" in got[2].error and "question is empty" in got[4].error
    assert asked == 0


def test_youtube_videos_are_transcribed_and_answered_by_gemini(model_env):
    with GeminiFake().running() as fake:
        model_env(GEMINI_API_KEY=fake.key, GEMINI_BASE_URL=fake.base_url, VISION_GEMINI_MODEL="gemini-test")
        got = session(
            memory_spec("vision"),
            (
                "visual_audio_youtube_analyzing",
                {"url": VIDEO, "question": "Who sings at 00:43?", "provide_transcribe": True},
            ),
        )
        requests = fake.seen(GENERATE)
    assert got[0].exit_code == 0, got[0].error
    assert [r.path.rpartition("/")[2] for r in requests] == ["gemini-test:generateContent"] * 2
    parts = requests[1].json()["contents"][0]["parts"]
    assert list(parts[0]["fileData"].values()) == [VIDEO]
    assert parts[1]["text"] == "Answer the question: Who sings at 00:43?"
    assert got[0].result.startswith("Transcript:\n\nA cat sits on a red mat.")
    assert "Answer to: Who sings at 00:43?\n\nA cat sits on a red mat." in got[0].result


def test_youtube_analysis_refuses_other_urls_and_names_the_key_it_needs(model_env):
    tool = "visual_audio_youtube_analyzing"
    got = session(
        memory_spec("vision"),
        (tool, {"url": VIDEO, "question": "What happens?"}),
        (tool, {"url": "https://vimeo.com/123", "question": "What happens?"}),
        (tool, {"url": VIDEO}),
    )
    assert all(o.exit_code == 1 for o in got.outcomes)
    assert "needs Gemini, which can watch YouTube videos: set GEMINI_API_KEY" in got[0].error
    assert "not a YouTube video URL" in got[1].error
    assert "give a question about the video, or set provide_transcribe=true" in got[2].error


def test_gemini_rate_limits_are_retried_and_bad_keys_and_outages_explained(model_env, png: Path):
    with GeminiFake().running() as fake:
        model_env(GEMINI_API_KEY=fake.key, GEMINI_BASE_URL=fake.base_url, MODEL_MAX_RETRIES="1")
        fake.queue(GENERATE, gemini_api.exhausted())
        first = session(memory_spec("vision"), ask(str(png)))
        outage = gemini_api.error(500, "INTERNAL", "An internal error has occurred.")
        fake.queue(GENERATE, outage, outage)
        second = session(memory_spec("vision"), ask(str(png)))
        tries = len(fake.seen(GENERATE))
        model_env(GEMINI_API_KEY="AIza-wrong")
        refused = session(memory_spec("vision"), ask(str(png)))
    assert first[0].exit_code == 0, first[0].error
    assert (
        second[0].exit_code == 1
        and "the Gemini API at GEMINI_BASE_URL failed (HTTP 500) after 1 retries" in second[0].error
    )
    assert tries == 4
    assert refused[0].exit_code == 1 and "API key not valid" in refused[0].error
    assert "AIza-wrong" not in refused[0].error


def test_openai_vision_failures_are_tool_errors(model_env, png: Path):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url, MODEL_TIMEOUT="0.5")
        fake.queue(
            CHAT,
            openai_api.error(400, "Invalid image.", "invalid_request_error", "invalid_image"),
            Reply(200, {"object": "chat.completion"}),
            Reply(200, openai_api.completion("late"), delay=30),
            Reply(200, openai_api.completion("  ")),
        )
        got = session(memory_spec("vision"), *[ask(str(png))] * 4)
    assert [o.exit_code for o in got.outcomes] == [1, 1, 1, 1]
    assert "refused the request (HTTP 400): Invalid image." in got[0].error
    assert "malformed response" in got[1].error
    assert "did not answer within 0.5 s" in got[2].error
    assert "returned an empty answer" in got[3].error


@pytest.mark.process
def test_miroctl_call_vision_over_stdio_answers_and_exits_0(png: Path):
    with OpenAIFake().running() as fake:
        env = {
            "OPENAI_API_KEY": fake.key,
            "OPENAI_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "",
            "GEMINI_API_KEY": "",
        }
        code, envelope = cli_call(
            "vision", "visual_question_answering", f"image_path_or_url={png}", "question=Colour?", env=env
        )
    assert code == 0, envelope
    assert envelope["result"] == "The answer is 42." and envelope["structured_content"]["api"] == "OpenAI-compatible"
