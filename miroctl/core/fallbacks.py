"""The scrape fallback: when a scrape-type tool fails, for any reason, convert its URL locally with MarkItDown.

The seeds fall back only on one error string and pass a placeholder endpoint; here any failure of a
configured scrape tool triggers it, the page is fetched under a timeout and a size cap, every
redirect is checked against the URL rules, and a Document Intelligence endpoint is used only when
the profile or `MIROCTL_DOCINTEL_ENDPOINT` names one. markitdown is imported only when needed.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio

from miroctl import __version__
from miroctl.config.sections import MarkItDownSection
from miroctl.policy.urls import URL_KEYS, UrlRules, urls_in

ENDPOINT_ENV = "MIROCTL_DOCINTEL_ENDPOINT"
TRIGGER_KINDS = frozenset({"tool_error", "failed", "timeout", "unavailable"})
MAX_REDIRECTS = 5
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1"


class FallbackError(Exception):
    """The fallback could not produce a result; the message says why in one line."""


@dataclass(frozen=True)
class MarkItDownFallback:
    """Settings of the MarkItDown fallback (the profile's `fallbacks.markitdown`)."""

    enabled: bool = True
    docintel_endpoint: str | None = None
    timeout: float = 60.0
    max_bytes: int = 20 * 1024 * 1024

    @classmethod
    def from_section(cls, settings: MarkItDownSection, environ: Mapping[str, str] | None = None) -> MarkItDownFallback:
        """The profile's `fallbacks.markitdown` (the Document Intelligence endpoint may come from the env)."""
        endpoint = settings.docintel_endpoint or (environ if environ is not None else os.environ).get(ENDPOINT_ENV)
        return cls(
            enabled=settings.enabled,
            docintel_endpoint=endpoint or None,
            timeout=settings.timeout or cls.timeout,
            max_bytes=int(settings.max_bytes or cls.max_bytes),
        )

    async def convert(self, url: str, rules: UrlRules) -> str:
        """The page at `url` as Markdown; FallbackError when it cannot be had."""
        try:
            with anyio.fail_after(self.timeout):
                return await anyio.to_thread.run_sync(self._convert, url, rules, abandon_on_cancel=True)
        except TimeoutError:
            raise FallbackError(f"no answer from {url} within {self.timeout:g}s") from None

    def _convert(self, url: str, rules: UrlRules) -> str:
        data, content_type, final_url = fetch(url, rules, self.max_bytes, self.timeout)
        converter, StreamInfo = _markitdown(self.docintel_endpoint)
        mimetype, _, params = content_type.partition(";")
        charset = next(
            (p.split("=", 1)[1].strip() for p in params.split(";") if p.strip().startswith("charset=")), None
        )
        extension = posixpath.splitext(urlsplit(final_url).path)[1] or None
        info = StreamInfo(
            mimetype=mimetype.strip() or None, charset=charset or None, url=final_url, extension=extension
        )
        try:
            result = converter.convert_stream(io.BytesIO(data), stream_info=info)
        except Exception as exc:  # noqa: BLE001 - markitdown raises many kinds; each becomes the reason
            raise FallbackError(f"MarkItDown could not convert {final_url}: {_one_line(exc)}") from None
        return result.text_content or ""


def url_argument(arguments: Mapping[str, Any]) -> str | None:
    """The URL a scrape call was about: a url/uri/link argument, else the first http(s) URL anywhere."""
    for key, value in arguments.items():
        if str(key).lower() in URL_KEYS and isinstance(value, str) and value.strip():
            return value.strip()
    return next(iter(urls_in(arguments)), None)


def fetch(url: str, rules: UrlRules, max_bytes: int, timeout: float) -> tuple[bytes, str, str]:
    """(body, content type, final URL), following redirects only to URLs the rules allow."""
    import requests

    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise FallbackError(f"only http(s) URLs can be fetched, not {url!r}")
    with requests.Session() as session:
        session.headers.update({"Accept": ACCEPT, "User-Agent": f"miroctl/{__version__} (MarkItDown fallback)"})
        for _ in range(MAX_REDIRECTS + 1):
            pattern = rules.blocked_by(url)
            if pattern is not None:
                raise FallbackError(f"{url} is blocked by the url rule {pattern!r}")
            try:
                response = session.get(url, stream=True, timeout=(min(10.0, timeout), timeout), allow_redirects=False)
            except requests.RequestException as exc:
                raise FallbackError(f"cannot fetch {url}: {_fetch_reason(exc)}") from None
            with response:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise FallbackError(f"{url} answered HTTP {response.status_code}")
                return _read(response, max_bytes), response.headers.get("content-type", ""), url
    raise FallbackError(f"more than {MAX_REDIRECTS} redirects from {url}")


def _read(response: Any, max_bytes: int) -> bytes:
    buffer = bytearray()
    for chunk in response.iter_content(chunk_size=65536):
        buffer += chunk
        if len(buffer) > max_bytes:
            raise FallbackError(f"{response.url} is larger than {max_bytes} bytes")
    return bytes(buffer)


@lru_cache(maxsize=2)
def _markitdown(endpoint: str | None) -> tuple[Any, Any]:
    """One converter per endpoint (building it loads models, so it is kept), and markitdown's StreamInfo."""
    with warnings.catch_warnings():
        # Importing markitdown warns on stderr when ffmpeg is missing, which only audio files need.
        warnings.filterwarnings("ignore", message="Couldn't find ffmpeg", category=RuntimeWarning)
        from markitdown import MarkItDown, StreamInfo

        return (MarkItDown(docintel_endpoint=endpoint) if endpoint else MarkItDown()), StreamInfo


def _fetch_reason(exc: BaseException) -> str:
    """The short reason inside requests' nested connection errors ("Connection refused", "timed out")."""
    text = str(exc)
    errno = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if errno:
        return errno.group(1).strip()
    if "timed out" in text.lower():
        return "timed out"
    return _one_line(exc)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
