"""audio: transcribe a recording, or ask a model about it (the seeds' audio server).

Both tools use an OpenAI-compatible endpoint: AUDIO_OPENAI_BASE_URL / AUDIO_OPENAI_API_KEY, else
OPENAI_BASE_URL / OPENAI_API_KEY. Transcription posts the file to /audio/transcriptions, which OpenAI
and local Whisper servers (faster-whisper-server, whisper.cpp, vLLM) speak; questions go to a chat
model that takes audio input. Models: AUDIO_TRANSCRIPTION_MODEL, AUDIO_QA_MODEL; AUDIO_MAX_BYTES caps
a file (default 25 MB, OpenAI's limit).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import wave
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from miroctl.base.version import __version__

from .helpers import fetching, models
from .helpers.common import number_setting, result, setting

mcp = MCPServer("audio", version=__version__, log_level="WARNING")

TRANSCRIPTION_MODEL = "gpt-4o-transcribe"
QA_MODEL = "gpt-4o-audio-preview"
QA_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
LISTENS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True)


@mcp.tool(annotations=LISTENS)
async def audio_transcription(audio_path_or_url: str) -> CallToolResult:
    """Transcribe speech in an audio file (MP3, WAV, M4A, OGG, FLAC, WebM...) and return the text.

    `audio_path_or_url` is a local file path or an http(s) URL of the audio file itself; files
    inside a sandbox must be downloaded to this machine first, and YouTube videos need
    visual_audio_youtube_analyzing instead. Returns the transcript as plain text.
    """
    endpoint = _endpoint()
    audio = await _audio(audio_path_or_url)
    model = setting("AUDIO_TRANSCRIPTION_MODEL") or TRANSCRIPTION_MODEL
    try:
        async with models.openai_client(endpoint) as client:
            answer = await client.audio.transcriptions.create(model=model, file=(audio.name, audio.data, audio.mime))
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    text = answer if isinstance(answer, str) else getattr(answer, "text", None)
    if not isinstance(text, str):
        raise ToolError(f"{endpoint.where} sent a malformed response: it has no text")
    if not text.strip():
        return result("(no speech was recognised in the recording)", _facts(audio, model, ""))
    return result(text.strip(), _facts(audio, model, text.strip()))


@mcp.tool(annotations=LISTENS)
async def audio_question_answering(audio_path_or_url: str, question: str) -> CallToolResult:
    """Ask a model that listens to audio a question about a WAV or MP3 recording and return its answer.

    Use it for what a transcript misses: who is speaking, tone, music, sounds. `audio_path_or_url`
    is a local file path or an http(s) URL of the file itself (WAV or MP3; transcribe other formats
    with audio_transcription). Returns the answer and the recording's duration when it can be read.
    """
    if not question.strip():
        raise ToolError("question is empty: say what you want to know about the recording")
    endpoint = _endpoint()
    audio = await _audio(audio_path_or_url)
    kind = QA_FORMATS.get(audio.mime)
    if kind is None:
        raise ToolError(f"{audio_path_or_url} is {audio.mime}; audio questions take WAV or MP3 (transcribe it instead)")
    model = setting("AUDIO_QA_MODEL") or QA_MODEL
    content = [
        {"type": "text", "text": f"Answer the question using the recording:\n\n{question.strip()}"},
        {"type": "input_audio", "input_audio": {"data": base64.b64encode(audio.data).decode(), "format": kind}},
    ]
    try:
        async with models.openai_client(endpoint) as client:
            response = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": content}]
            )
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    answer = models.chat_text(response, endpoint).strip()
    if not answer:
        raise ToolError(f"{endpoint.where} returned an empty answer (model {model}): ask again or rephrase")
    facts = _facts(audio, model, answer)
    duration = facts["duration_seconds"]
    return result(answer + (f"\n\nAudio duration: {duration:.1f} seconds" if duration else ""), facts)


def _endpoint() -> models.Endpoint:
    endpoint = models.openai_endpoint("AUDIO")
    if endpoint is None:
        raise ToolError(
            "no audio model is configured: set OPENAI_API_KEY, or AUDIO_OPENAI_BASE_URL for a local "
            "OpenAI-compatible Whisper server, in the server's environment"
        )
    return endpoint


async def _audio(given: str) -> fetching.Fetched:
    """A local or downloaded audio file, within AUDIO_MAX_BYTES."""
    if not given.strip():
        raise ToolError("audio_path_or_url is empty: give a local audio file or an audio URL")
    if "youtube.com/" in given or "youtu.be/" in given:
        raise ToolError("YouTube pages are not audio files: use visual_audio_youtube_analyzing for videos")
    limit = int(number_setting("AUDIO_MAX_BYTES", 25 * 1024 * 1024, minimum=1024))
    if fetching.is_url(given):
        fetch = functools.partial(fetching.fetch_url, given, limit, 60.0)
        audio = await anyio.to_thread.run_sync(fetch)
    else:
        audio = fetching.read_local(given, limit, "audio file")
    if not audio.mime.startswith(("audio/", "video/")):
        raise ToolError(f"{given} is not an audio file (it looks like {audio.mime})")
    return audio


def _facts(audio: fetching.Fetched, model: str, text: str) -> dict[str, Any]:
    return {
        "model": model,
        "source": audio.source,
        "bytes": len(audio.data),
        "duration_seconds": _duration(audio),
        "text": text,
    }


def _duration(audio: fetching.Fetched) -> float | None:
    """Seconds of a WAV recording (other formats would need a decoder: None)."""
    if audio.mime not in ("audio/wav", "audio/x-wav", "audio/wave"):
        return None
    with contextlib.suppress(wave.Error, EOFError), wave.open(io.BytesIO(audio.data)) as recording:
        rate = recording.getframerate()
        return recording.getnframes() / rate if rate else None
    return None


if __name__ == "__main__":
    mcp.run("stdio")
