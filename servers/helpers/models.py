"""Clients of model APIs for the bundled servers: the official SDKs, configured from the environment.

Anthropic (`anthropic`), any OpenAI-compatible endpoint (`openai`: OpenAI, vLLM, OpenRouter, a local
Whisper server) and Gemini (`google-genai`). The SDKs come with `pip install 'miroctl[research]'` and
are imported when a tool first needs one. Their failures become one-line tool errors naming what to
check; an API key never appears in them.

Settings (environment of a server): ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OPENAI_API_KEY,
OPENAI_BASE_URL, GEMINI_API_KEY, GEMINI_BASE_URL; a server may have its own OpenAI-compatible
endpoint as <PREFIX>_OPENAI_API_KEY / <PREFIX>_OPENAI_BASE_URL (REASONING_, VISION_, AUDIO_).
MODEL_TIMEOUT is the seconds one request may take, MODEL_MAX_RETRIES how often a rate-limited (429),
overloaded (5xx) or timed-out request is tried again (the SDKs wait as Retry-After asks).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from .common import number_setting, setting

INSTALL_HINT = "pip install 'miroctl[research]'"
# A local OpenAI-compatible server (vLLM, a Whisper server) may need no key; the SDK insists on one.
NO_KEY = "no-key-needed"


def sdk(module: str, package: str) -> Any:
    """The SDK module, or a tool error with the one-line install hint."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ToolError(f"the {package} client library is not installed: {INSTALL_HINT}") from None


@dataclass(frozen=True)
class Endpoint:
    """Where one API is reached and with what key; `names` are the settings, for messages."""

    api: str  # "Anthropic", "OpenAI-compatible", "Gemini"
    key: str | None
    base_url: str | None
    key_name: str
    url_name: str

    @property
    def where(self) -> str:
        return f"the {self.api} API" + (f" at {self.url_name}" if self.base_url else "")


def anthropic_endpoint() -> Endpoint | None:
    """Anthropic when ANTHROPIC_API_KEY is set."""
    key = setting("ANTHROPIC_API_KEY")
    if key is None:
        return None
    return Endpoint("Anthropic", key, setting("ANTHROPIC_BASE_URL"), "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


def openai_endpoint(prefix: str = "") -> Endpoint | None:
    """An OpenAI-compatible endpoint: <PREFIX>_OPENAI_* first, then OPENAI_*; None when neither a key nor a URL."""
    for names in ((f"{prefix}_OPENAI_API_KEY", f"{prefix}_OPENAI_BASE_URL"), ("OPENAI_API_KEY", "OPENAI_BASE_URL")):
        if not prefix and names[0].startswith("_"):
            continue
        key, url = setting(names[0]), setting(names[1])
        if key or url:
            return Endpoint("OpenAI-compatible", key, url, names[0], names[1])
    return None


def gemini_endpoint() -> Endpoint | None:
    """Gemini when GEMINI_API_KEY is set."""
    key = setting("GEMINI_API_KEY")
    if key is None:
        return None
    return Endpoint("Gemini", key, setting("GEMINI_BASE_URL"), "GEMINI_API_KEY", "GEMINI_BASE_URL")


def timeout() -> float:
    return number_setting("MODEL_TIMEOUT", 600.0, minimum=0.1)


def max_retries() -> int:
    return int(number_setting("MODEL_MAX_RETRIES", 3, minimum=0))


def anthropic_client(endpoint: Endpoint) -> Any:
    """An AsyncAnthropic client for the endpoint (use it in `async with`)."""
    module = sdk("anthropic", "anthropic")
    return module.AsyncAnthropic(
        api_key=endpoint.key, base_url=endpoint.base_url, timeout=timeout(), max_retries=max_retries()
    )


def openai_client(endpoint: Endpoint) -> Any:
    """An AsyncOpenAI client for the endpoint (use it in `async with`)."""
    module = sdk("openai", "openai")
    return module.AsyncOpenAI(
        api_key=endpoint.key or NO_KEY, base_url=endpoint.base_url, timeout=timeout(), max_retries=max_retries()
    )


def gemini_client(endpoint: Endpoint) -> Any:
    """A google-genai Client for the endpoint, retrying 429 and 5xx answers MODEL_MAX_RETRIES times."""
    genai = sdk("google.genai", "google-genai")
    types = sdk("google.genai.types", "google-genai")
    retry = types.HttpRetryOptions(
        attempts=max_retries() + 1, initial_delay=0.2, max_delay=8.0, http_status_codes=[429, 500, 502, 503, 504]
    )
    options = types.HttpOptions(base_url=endpoint.base_url, timeout=int(timeout() * 1000), retry_options=retry)
    return genai.Client(api_key=endpoint.key, http_options=options)


def chat_text(response: Any, endpoint: Endpoint) -> str:
    """The text of a chat completion's first choice, or a tool error for a malformed completion."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices or getattr(choices[0], "message", None) is None:
        raise ToolError(f"{endpoint.where} sent a malformed response: it has no choices[0].message")
    return str(choices[0].message.content or "")


def failure(exc: BaseException, endpoint: Endpoint) -> ToolError:
    """One line for a failed API request: what happened, and what to check."""
    if isinstance(exc, ToolError):
        return exc
    name = type(exc).__name__
    status = _status(exc)
    where = endpoint.where
    if "Timeout" in name:
        return ToolError(f"{where} did not answer within {timeout():g} s (MODEL_TIMEOUT)")
    if status is None and ("Connection" in name or "Connect" in name):
        return ToolError(f"cannot connect to {where}: {_cause(exc)}")
    if status is None and ("Validation" in name or isinstance(exc, ValueError)):
        return ToolError(f"{where} sent a malformed response: {_one_line(exc)}")
    if status is None:
        return ToolError(f"{where} request failed: {name}: {_one_line(exc)}")
    return ToolError(_status_line(status, exc, endpoint))


def _status_line(status: int, exc: BaseException, endpoint: Endpoint) -> str:
    said = _message(exc)
    where = endpoint.where
    if status in (401, 403):
        return f"{where} refused the API key (HTTP {status}: {said}): check {endpoint.key_name}"
    if status == 404:
        return f"{where} answered 404 ({said}): check the model name and {endpoint.url_name}"
    if status == 429:
        wait = _retry_after(exc)
        after = f"; it asks to wait {wait} s (Retry-After)" if wait else ""
        return f"{where} is rate limiting (HTTP 429) after {max_retries()} retries{after}: {said}"
    if status >= 500:
        return f"{where} failed (HTTP {status}) after {max_retries()} retries: {said}"
    return f"{where} refused the request (HTTP {status}): {said}"


def _status(exc: BaseException) -> int | None:
    for attribute in ("status_code", "code"):
        value = getattr(exc, attribute, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


def _message(exc: BaseException) -> str:
    """The API's own error message from its JSON body (all three APIs nest it under "error")."""
    body = getattr(exc, "body", None) or getattr(exc, "details", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return _clip(inner["message"])
    message = getattr(exc, "message", None)
    return _clip(message) if isinstance(message, str) and message else _one_line(exc)


def _retry_after(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    return value.strip() if isinstance(value, str) and value.strip() else None


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return _one_line(inner) if inner is not None and str(inner) else _one_line(exc)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return _clip(text.splitlines()[0]) if text else type(exc).__name__


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
