"""The audio server from config/tool/tool-audio.yaml against a fake OpenAI-compatible API (chat completions and
/audio/transcriptions, as local Whisper servers speak it) and a file site on 127.0.0.1."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.bundled.conftest import cli_call, memory_spec, session
from tests.bundled.files import tiny_png, tone_wav
from tests.fakes import openai_api
from tests.fakes.openai_api import CHAT, TRANSCRIPTIONS, OpenAIFake
from tests.fakes.scripted import Reply
from tests.fakes.web_files import FileSite


@pytest.fixture
def wav(tmp_path: Path) -> Path:
    return tone_wav(tmp_path / "tone.wav", seconds=0.5)


def transcribe(source: str) -> tuple[str, dict[str, str]]:
    return ("audio_transcription", {"audio_path_or_url": source})


def test_a_local_recording_is_posted_to_the_transcriptions_endpoint(model_env, wav: Path):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        got = session(memory_spec("audio"), transcribe(str(wav)))
    assert got[0].exit_code == 0, got[0].error
    form = fake.seen(TRANSCRIPTIONS)[0].form()
    assert got[0].result == "Hello from the recording."
    assert form["model"] == "gpt-4o-transcribe" and form["file"] == ("tone.wav", wav.read_bytes())
    assert got[0].structured_content["duration_seconds"] == pytest.approx(0.5)


def test_a_local_whisper_server_needs_only_its_base_url_and_gets_downloaded_audio(model_env, wav: Path):
    with OpenAIFake(key="no-key-needed").running() as whisper, FileSite().running() as site:
        model_env(AUDIO_OPENAI_BASE_URL=whisper.base_url, AUDIO_TRANSCRIPTION_MODEL="Systran/faster-whisper-small")
        url = site.put("talk.mp3", b"ID3\x03\x00" + b"\x00" * 2048, "audio/mpeg")
        got = session(memory_spec("audio"), transcribe(url))
    assert got[0].exit_code == 0, got[0].error
    form = whisper.seen(TRANSCRIPTIONS)[0].form()
    assert form["model"] == "Systran/faster-whisper-small" and form["file"][0] == "talk.mp3"


def test_questions_send_the_recording_as_input_audio_and_report_its_duration(model_env, wav: Path):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        got = session(
            memory_spec("audio"), ("audio_question_answering", {"audio_path_or_url": str(wav), "question": "Pitch?"})
        )
    assert got[0].exit_code == 0, got[0].error
    sent = fake.seen(CHAT)[0].json()
    assert got[0].result == "The answer is 42.\n\nAudio duration: 0.5 seconds"
    text, audio = sent["messages"][0]["content"]
    assert sent["model"] == "gpt-4o-audio-preview" and text["text"].endswith("Pitch?")
    assert audio["input_audio"] == {"data": base64.b64encode(wav.read_bytes()).decode(), "format": "wav"}


def test_bad_inputs_are_tool_errors_and_nothing_is_sent(model_env, tmp_path: Path, wav: Path):
    png = tiny_png(tmp_path / "image.png")
    flac = tmp_path / "song.flac"
    flac.write_bytes(b"fLaC" + b"\x00" * 100)
    bare = session(memory_spec("audio"), transcribe(str(wav)))
    with OpenAIFake().running() as fake, FileSite().running() as site:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url, AUDIO_MAX_BYTES="2048")
        got = session(
            memory_spec("audio"),
            transcribe(str(png)),
            transcribe("https://www.youtube.com/watch?v=dQw4w9WgXcQ"),
            transcribe("/home/user/recording.mp3"),
            transcribe(str(wav)),
            transcribe(site.put("empty.mp3", b"", "audio/mpeg")),
            transcribe(site.url + "/files/missing.mp3"),
            transcribe(site.redirect_to("https://huggingface.co/datasets/x/y/resolve/main/a.mp3")),
            ("audio_question_answering", {"audio_path_or_url": str(flac), "question": "Genre?"}),
        )
        sent = len(fake.requests)
        direct = session(memory_spec("audio"), transcribe("https://huggingface.co/datasets/x/y/resolve/main/a.mp3"))
    assert direct[0].exit_code == 5 and direct[0].error_kind == "denied", direct[0].error
    assert bare[0].exit_code == 1 and "no audio model is configured: set OPENAI_API_KEY" in bare[0].error
    assert [o.exit_code for o in got.outcomes] == [1] * 8, [o.error for o in got.outcomes]
    assert "is not an audio file (it looks like image/png)" in got[0].error
    assert "use visual_audio_youtube_analyzing" in got[1].error
    assert "is a path inside a sandbox" in got[2].error
    assert "larger than the 2.0 KB limit" in got[3].error
    assert "answered with an empty body" in got[4].error and "answered HTTP 404" in got[5].error
    assert "blocked by the url rule" in got[6].error
    assert "audio questions take WAV or MP3" in got[7].error
    assert sent == 0


def test_api_failures_are_explained_and_a_busy_server_is_retried(model_env, wav: Path):
    with OpenAIFake().running() as fake:
        model_env(OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url, MODEL_MAX_RETRIES="1", MODEL_TIMEOUT="0.5")
        fake.queue(
            TRANSCRIPTIONS,
            openai_api.server_error(503),
            Reply(200, {"text": "after a retry"}),
            openai_api.rate_limited("0.1"),
            openai_api.rate_limited("0.1"),
            Reply(200, {"duration": 1}),
            Reply(200, {"text": "late"}, delay=30),
            Reply(200, {"text": "late"}, delay=30),
        )
        got = session(memory_spec("audio"), *[transcribe(str(wav))] * 4)
        model_env(OPENAI_API_KEY="sk-not-the-key")
        refused = session(memory_spec("audio"), transcribe(str(wav)))
    assert got[0].exit_code == 0 and got[0].result == "after a retry"
    assert got[1].exit_code == 1 and "is rate limiting (HTTP 429) after 1 retries" in got[1].error
    assert got[2].exit_code == 1 and "malformed response: it has no text" in got[2].error
    assert got[3].exit_code == 1 and "did not answer within 0.5 s" in got[3].error
    assert refused[0].exit_code == 1 and "refused the API key (HTTP 401" in refused[0].error
    assert "check OPENAI_API_KEY" in refused[0].error and "sk-not-the-key" not in refused[0].error


@pytest.mark.process
def test_miroctl_call_audio_over_stdio_transcribes_and_exits_0(wav: Path):
    with OpenAIFake().running() as fake:
        env = {"OPENAI_API_KEY": fake.key, "OPENAI_BASE_URL": fake.base_url}
        code, envelope = cli_call("audio", "audio_transcription", f"audio_path_or_url={wav}", env=env)
    assert code == 0, envelope
    assert envelope["result"] == "Hello from the recording."
