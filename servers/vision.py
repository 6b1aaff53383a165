"""vision: ask a vision model about an image, or Gemini about a YouTube video (the seeds' vision server).

Images: Anthropic (ANTHROPIC_API_KEY), an OpenAI-compatible endpoint (OPENAI_API_KEY / OPENAI_BASE_URL,
or VISION_OPENAI_*) or Gemini (GEMINI_API_KEY), tried in that order unless VISION_BACKEND names one.
Local files are sent as base64 data, URLs as URLs (Gemini gets the downloaded bytes). YouTube videos
need Gemini, which reads them itself; so do video files (visual_question_answering_media, upstream
MiroThinker's media_path_or_url form, sends them inline up to VISION_MAX_VIDEO_BYTES, default 20 MB).
Models: VISION_ANTHROPIC_MODEL, VISION_OPENAI_MODEL, VISION_GEMINI_MODEL; VISION_MAX_BYTES caps an image
(default 20 MB).
"""

from __future__ import annotations

import base64
import functools
import re
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from miroctl.base.version import __version__

from .helpers import fetching, models
from .helpers.common import groupable, number_setting, result, setting

mcp = MCPServer("vision", version=__version__, log_level="WARNING")

DEFAULT_MODELS = {"Anthropic": "claude-sonnet-4-6", "OpenAI-compatible": "gpt-4o", "Gemini": "gemini-2.5-pro"}
MODEL_SETTINGS = {"Anthropic": "VISION_ANTHROPIC_MODEL", "OpenAI-compatible": "VISION_OPENAI_MODEL"}
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
YOUTUBE = re.compile(r"^https?://(www\.|m\.)?(youtube\.com/(watch\?|shorts/|live/)|youtu\.be/)\S+$", re.IGNORECASE)
MAX_ANSWER_TOKENS = 4096
PROMPT = (
    "Look carefully at the whole image. First write out any text visible in it (signs, labels, captions, "
    "numbers), saying where it is unclear. Then answer the question, describing anything uncertain or "
    "partly visible rather than leaving it out.\n\nQuestion: {question}"
)
VIDEO_TYPES = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
    ".mpeg": "video/mpeg",
    ".mpg": "video/mpeg",
    ".3gp": "video/3gpp",
    ".wmv": "video/x-ms-wmv",
    ".flv": "video/x-flv",
}
LOOKS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True)


@mcp.tool(annotations=LOOKS)
async def visual_question_answering(image_path_or_url: str, question: str) -> CallToolResult:
    """Ask a vision model a question about one image (PNG, JPEG, GIF or WebP) and return its answer.

    `image_path_or_url` is a local file path or an http(s) URL of the image itself (not of a page
    showing it); files inside a sandbox must be downloaded to this machine first. The answer starts
    with any text visible in the image, then answers `question`. Good at describing, reading and
    locating things; weak at reasoning about them (pass what it says to the reasoning tool).
    """
    if not question.strip():
        raise ToolError("question is empty: say what you want to know about the image")
    endpoint = _image_backend()
    image = await anyio.to_thread.run_sync(functools.partial(_image, image_path_or_url, fetch=endpoint.api == "Gemini"))
    prompt = PROMPT.format(question=question.strip())
    if endpoint.api == "Anthropic":
        answer, model = await _ask_anthropic(endpoint, image, prompt)
    elif endpoint.api == "Gemini":
        answer, model = await _ask_gemini(endpoint, [_gemini_image(image), prompt])
    else:
        answer, model = await _ask_openai(endpoint, image, prompt)
    source = image if isinstance(image, str) else image.source
    return result(answer, {"model": model, "api": endpoint.api, "image": source, "answer": answer})


@mcp.tool(annotations=LOOKS)
async def visual_audio_youtube_analyzing(
    url: str, question: str = "", provide_transcribe: bool = False
) -> CallToolResult:
    """Watch and listen to a public YouTube video with Gemini and answer a question about it, or transcribe it.

    `url` must be a YouTube video URL (youtube.com/watch, /shorts, /live, or youtu.be). Give a
    `question` (timestamps as MM:SS or MM:SS-MM:SS may point at a moment), set `provide_transcribe`
    for a timestamped transcript of speech with descriptions of what is shown, or both. Needs
    GEMINI_API_KEY. For a video's title, description or comments, scrape its page instead.
    """
    url = url.strip()
    if not YOUTUBE.match(url):
        raise ToolError(f"not a YouTube video URL: {url!r} (use youtube.com/watch?v=..., /shorts/..., or youtu.be/...)")
    fetching.check_url(url)
    if not question.strip() and not provide_transcribe:
        raise ToolError("give a question about the video, or set provide_transcribe=true for a transcript")
    endpoint = models.gemini_endpoint()
    if endpoint is None:
        raise ToolError(
            "visual_audio_youtube_analyzing needs Gemini, which can watch YouTube videos: set GEMINI_API_KEY "
            "(and GEMINI_BASE_URL for a proxy) in the server's environment"
        )
    parts: list[str] = []
    model = ""
    if provide_transcribe:
        ask = "Transcribe the audio of this video with timestamps, and describe what is shown at the salient moments."
        text, model = await _ask_gemini(endpoint, [_youtube(url), ask])
        parts.append(f"Transcript:\n\n{text}")
    if question.strip():
        text, model = await _ask_gemini(endpoint, [_youtube(url), f"Answer the question: {question.strip()}"])
        parts.append(f"Answer to: {question.strip()}\n\n{text}")
    text = "\n\n".join(parts)
    return result(text, {"model": model, "api": "Gemini", "url": url, "text": text})


@groupable(LOOKS)
async def visual_question_answering_media(media_path_or_url: str, question: str) -> CallToolResult:
    """Ask a model a question about one image (PNG, JPEG, GIF, WebP) or one video file and return its answer.

    `media_path_or_url` is a local file path or an http(s) URL of the image or video itself. Videos (MP4,
    MOV, WebM, MKV, AVI, MPEG, ...) are watched by Gemini (GEMINI_API_KEY); images go to the configured
    vision model, and the answer starts with any text visible in the image. For YouTube, use
    visual_audio_youtube_analyzing.
    """
    video_type = _video_type(media_path_or_url)
    if video_type is None:
        return await visual_question_answering(media_path_or_url, question)
    if not question.strip():
        raise ToolError("question is empty: say what you want to know about the video")
    endpoint = models.gemini_endpoint()
    if endpoint is None:
        raise ToolError("a video needs Gemini, which can watch it: set GEMINI_API_KEY in the server's environment")
    video = await anyio.to_thread.run_sync(functools.partial(_video, media_path_or_url, video_type))
    types = models.sdk("google.genai.types", "google-genai")
    part = types.Part.from_bytes(data=video.data, mime_type=video.mime)
    answer, model = await _ask_gemini(endpoint, [part, f"Answer the question: {question.strip()}"])
    return result(answer, {"model": model, "api": endpoint.api, "video": video.source, "answer": answer})


# ---------------------------------------------------------------------------------------------- inputs


def _video_type(given: str) -> str | None:
    """The video media type a path or URL names by its suffix, or None (an image, or anything else)."""
    path = urlsplit(given.strip()).path if fetching.is_url(given.strip()) else given.strip()
    return VIDEO_TYPES.get(PurePosixPath(path).suffix.lower())


def _video(given: str, video_type: str) -> fetching.Fetched:
    limit = int(number_setting("VISION_MAX_VIDEO_BYTES", 20 * 1024 * 1024, minimum=1024))
    if fetching.is_url(given.strip()):
        video = fetching.fetch_url(given.strip(), limit, timeout=60.0)
    else:
        video = fetching.read_local(given.strip(), limit, "video file")
    mime = video.mime if video.mime.startswith("video/") else video_type
    return fetching.Fetched(video.data, mime, video.name, video.source)


def _image_backend() -> models.Endpoint:
    choice = (setting("VISION_BACKEND") or "auto").lower()
    found = {
        "anthropic": models.anthropic_endpoint,
        "openai": lambda: models.openai_endpoint("VISION"),
        "gemini": models.gemini_endpoint,
    }
    if choice not in ("auto", *found):
        raise ToolError(f"VISION_BACKEND must be auto, anthropic, openai or gemini, got {choice!r}")
    for name, endpoint in found.items():
        if choice in ("auto", name) and (chosen := endpoint()) is not None:
            return chosen
    raise ToolError(
        "no vision model is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY (or OPENAI_BASE_URL for an "
        "OpenAI-compatible server) or GEMINI_API_KEY in the server's environment"
    )


def _image(given: str, *, fetch: bool) -> fetching.Fetched | str:
    """A local image read into memory, or an image URL (checked; downloaded when the API cannot fetch it)."""
    limit = int(number_setting("VISION_MAX_BYTES", 20 * 1024 * 1024, minimum=1024))
    if not given.strip():
        raise ToolError("image_path_or_url is empty: give a local image file or an image URL")
    if fetching.is_url(given):
        if not fetch:
            return fetching.check_url(given)
        image = fetching.fetch_url(given, limit, timeout=30.0)
    else:
        image = fetching.read_local(given, limit, "image file")
    if image.mime not in IMAGE_TYPES:
        raise ToolError(f"{given} is not a PNG, JPEG, GIF or WebP image (it looks like {image.mime})")
    return image


def _youtube(url: str) -> Any:
    types = models.sdk("google.genai.types", "google-genai")
    return types.Part(file_data=types.FileData(file_uri=url))


def _gemini_image(image: fetching.Fetched | str) -> Any:
    assert isinstance(image, fetching.Fetched)  # Gemini gets bytes: _image fetched the URL
    types = models.sdk("google.genai.types", "google-genai")
    return types.Part.from_bytes(data=image.data, mime_type=image.mime)


def _data_url(image: fetching.Fetched) -> str:
    return f"data:{image.mime};base64,{base64.b64encode(image.data).decode()}"


# ---------------------------------------------------------------------------------------------- backends


async def _ask_anthropic(endpoint: models.Endpoint, image: fetching.Fetched | str, prompt: str) -> tuple[str, str]:
    model = setting("VISION_ANTHROPIC_MODEL") or DEFAULT_MODELS["Anthropic"]
    if isinstance(image, str):
        source: dict[str, str] = {"type": "url", "url": image}
    else:
        source = {"type": "base64", "media_type": image.mime, "data": base64.b64encode(image.data).decode()}
    content = [{"type": "image", "source": source}, {"type": "text", "text": prompt}]
    try:
        async with models.anthropic_client(endpoint) as client:
            response = await client.messages.create(
                model=model, max_tokens=MAX_ANSWER_TOKENS, messages=[{"role": "user", "content": content}]
            )
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    blocks = getattr(response, "content", None)
    if not isinstance(blocks, list):
        raise ToolError(f"{endpoint.where} sent a malformed response: it has no content blocks")
    answer = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", "") == "text")
    return _nonempty(answer, endpoint, model), str(getattr(response, "model", None) or model)


async def _ask_openai(endpoint: models.Endpoint, image: fetching.Fetched | str, prompt: str) -> tuple[str, str]:
    model = setting("VISION_OPENAI_MODEL") or DEFAULT_MODELS["OpenAI-compatible"]
    url = image if isinstance(image, str) else _data_url(image)
    content = [{"type": "text", "text": prompt}, {"type": "image_url", "image_url": {"url": url}}]
    try:
        async with models.openai_client(endpoint) as client:
            response = await client.chat.completions.create(
                model=model, max_tokens=MAX_ANSWER_TOKENS, messages=[{"role": "user", "content": content}]
            )
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    return _nonempty(models.chat_text(response, endpoint), endpoint, model), str(
        getattr(response, "model", None) or model
    )


async def _ask_gemini(endpoint: models.Endpoint, contents: list[Any]) -> tuple[str, str]:
    model = setting("VISION_GEMINI_MODEL") or DEFAULT_MODELS["Gemini"]
    client = models.gemini_client(endpoint)
    try:
        response = await client.aio.models.generate_content(model=model, contents=contents)
        text = response.text
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    finally:
        await client.aio.aclose()
    if "exceeds the maximum number of tokens" in str(text or ""):
        raise ToolError("the video is too long for the model: ask about a shorter part (MM:SS-MM:SS)")
    return _nonempty(text or "", endpoint, model), model


def _nonempty(answer: str, endpoint: models.Endpoint, model: str) -> str:
    if not answer.strip():
        raise ToolError(f"{endpoint.where} returned an empty answer (model {model}): ask again or rephrase")
    return answer.strip()


if __name__ == "__main__":
    mcp.run("stdio")
