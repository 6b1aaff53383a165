"""MarkItDown for the bundled servers: fetch URLs with timeouts, limits and URL rules, convert, explain failures.

markitdown (~1 s to import) is imported on first use, once.
"""

from __future__ import annotations

import functools
import io
import posixpath
import re
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.policy.urls import UrlRules
from miroctl.servers.helpers.common import human_bytes, number_setting

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
USER_AGENT = "miroctl-reading/0.2 (+MarkItDown)"
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1"
MAX_REDIRECTS = 5
_EXTRA = re.compile(r"optional dependency \[([A-Za-z0-9_-]+)\]")
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


@dataclass(frozen=True)
class Page:
    """A fetched page converted to Markdown, with where it ended up and what it was."""

    markdown: str
    url: str
    content_type: str
    size: int
    title: str | None = None


def read_url(url: str) -> str:
    """An http(s) URL fetched (under READING_HTTP_TIMEOUT and READING_MAX_BYTES) and converted."""
    timeout = number_setting("READING_HTTP_TIMEOUT", 30.0, minimum=0.1)
    limit = int(number_setting("READING_MAX_BYTES", DEFAULT_MAX_BYTES, minimum=1))
    return fetch_markdown(url, timeout=timeout, max_bytes=limit, limit_setting="READING_MAX_BYTES").markdown


def fetch_markdown(
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    limit_setting: str,
    rules: UrlRules | None = None,
    user_agent: str = USER_AGENT,
) -> Page:
    """Fetch an http(s) URL (every redirect checked against `rules`, the body capped at `max_bytes`,
    each request under `timeout`) and convert it to Markdown; failures are one-line tool errors."""
    import requests

    with requests.Session() as session:
        session.headers.update({"User-Agent": user_agent, "Accept": ACCEPT})
        for _ in range(MAX_REDIRECTS + 1):
            _check_rules(url, rules)
            try:
                response = session.get(url, timeout=(min(timeout, 10.0), timeout), stream=True, allow_redirects=False)
            except requests.Timeout:
                raise ToolError(f"{url} did not answer within {timeout:g}s") from None
            except requests.exceptions.SSLError as exc:
                raise ToolError(f"TLS failure reaching {url}: {_reason(exc)}") from None
            except requests.RequestException as exc:
                raise ToolError(f"cannot reach {url}: {_reason(exc)}") from None
            with response:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    continue
                _check_response(url, response, max_bytes, limit_setting)
                body = _read_capped(url, response, max_bytes, limit_setting)
                content_type = response.headers.get("content-type", "")
            converted = _convert_bytes(url, body, content_type)
            return Page(str(converted.text_content), url, content_type, len(body), converted.title or None)
    raise ToolError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _check_rules(url: str, rules: UrlRules | None) -> None:
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise ToolError(f"only http(s) URLs can be fetched, not {url!r}")
    pattern = rules.blocked_by(url) if rules is not None else None
    if pattern is not None:
        raise ToolError(f"{url} is blocked by the url rule {pattern!r}")


def _check_response(url: str, response: Any, limit: int, limit_setting: str) -> None:
    if response.status_code >= 400:
        raise ToolError(f"{url} answered HTTP {response.status_code} {response.reason or ''}".rstrip())
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise ToolError(f"{url} is {human_bytes(int(length))}, over the {human_bytes(limit)} limit ({limit_setting})")


def _read_capped(url: str, response: Any, limit: int, limit_setting: str) -> bytes:
    import requests

    buffer = bytearray()
    try:
        for chunk in response.iter_content(chunk_size=65536):
            buffer += chunk
            if len(buffer) > limit:
                raise ToolError(f"{url} is larger than the {human_bytes(limit)} limit ({limit_setting})")
    except requests.RequestException as exc:
        raise ToolError(f"reading {url} failed: {_reason(exc)}") from None
    return bytes(buffer)


def _convert_bytes(url: str, body: bytes, content_type: str) -> Any:
    mimetype, _, params = content_type.partition(";")
    charset = next((p.split("=", 1)[1].strip() for p in params.split(";") if p.strip().startswith("charset=")), None)
    extension = posixpath.splitext(urlsplit(url).path)[1] or None
    info = _markitdown().StreamInfo(
        mimetype=mimetype.strip() or None, charset=charset or None, url=url, extension=extension
    )
    return convert_result(url, lambda md: md.convert_stream(io.BytesIO(body), stream_info=info))


def _reason(exc: BaseException) -> str:
    """The useful part of a requests error: '[Errno 111] Connection refused' -> 'Connection refused'."""
    text = str(exc)
    found = _ERRNO.search(text)
    if found:
        return found.group(1).strip()
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "the host name does not resolve"
    return text.splitlines()[0][:200] if text else type(exc).__name__


@functools.cache
def _markitdown() -> Any:
    """The markitdown module, imported once (~1 s), quietly."""
    with warnings.catch_warnings():
        # pydub warns at import when ffmpeg is missing; it matters only for audio files.
        warnings.filterwarnings("ignore", message="Couldn't find ffmpeg", category=RuntimeWarning)
        import markitdown
    return markitdown


@functools.cache
def _converter() -> Any:
    return _markitdown().MarkItDown()


def convert(source: str, how: Any) -> str:
    """The Markdown of a document, `how(converter)` doing the conversion; failures as one-line tool errors."""
    return str(convert_result(source, how).text_content)


def convert_result(source: str, how: Any) -> Any:
    """MarkItDown's result (text_content, title) of `how(converter)`; failures as one-line tool errors."""
    md = _markitdown()
    try:
        return how(_converter())
    except md.UnsupportedFormatException:
        raise ToolError(f"cannot convert {source}: MarkItDown has no converter for this kind of file") from None
    except md.FileConversionException as exc:
        raise ToolError(conversion_failure(source, exc)) from None
    except OSError as exc:
        raise ToolError(f"cannot read {source}: {exc.strerror or exc}") from None


def conversion_failure(source: str, exc: Any) -> str:
    """One line on why MarkItDown failed, naming the optional extra when one is missing."""
    causes = [a.exc_info[1] for a in exc.attempts or [] if a.exc_info is not None]
    for cause in causes:
        if isinstance(cause, _markitdown().MissingDependencyException):
            found = _EXTRA.search(str(cause))
            extra = found.group(1) if found else "all"
            return (
                f"cannot convert {source}: MarkItDown's optional '{extra}' extra is not installed "
                f"(pip install 'markitdown[{extra}]')"
            )
    detail = str(causes[0]).strip().splitlines()[0] if causes and str(causes[0]).strip() else "unknown error"
    return f"cannot convert {source}: {detail}"
