"""Fetching a page under limits and turning documents into Markdown with MarkItDown (or, when the
`markitdown` extra is not installed, with miroctl.base.plainpages: text as it is, HTML through markdownify).

One implementation for every place that reads the web for a model: the scrape fallback in the core and
the bundled reading, scrape and wayback servers. A fetch checks every redirect against the caller's URL
rules, streams the body under a size cap (a missing or lying Content-Length cannot get past it), and
gives up after its timeout; every failure is a `PageError` whose message is one line a model can act on.
markitdown (~1 s to import) and requests are imported on first use.
"""

from __future__ import annotations

import functools
import io
import posixpath
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from miroctl.base import plainpages
from miroctl.base.text import human_bytes

MAX_REDIRECTS = 5
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1"
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")
_EXTRA = re.compile(r"optional dependency \[([A-Za-z0-9_-]+)\]")


class PageError(Exception):
    """A page could not be fetched or converted; the message says why in one line."""


@dataclass(frozen=True)
class Page:
    """A fetched document: its bytes, its content type, and the URL it finally came from."""

    body: bytes
    content_type: str
    url: str


def fetch(
    url: str,
    *,
    max_bytes: int,
    timeout: float,
    user_agent: str,
    blocked_by: Callable[[str], str | None] = lambda url: None,
    limit_name: str | None = None,
) -> Page:
    """The document at an http(s) URL, following redirects only to URLs that `blocked_by` lets through."""
    import requests

    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise PageError(f"only http(s) URLs can be fetched, not {url!r}")
    with requests.Session() as session:
        session.headers.update({"Accept": ACCEPT, "User-Agent": user_agent})
        for _ in range(MAX_REDIRECTS + 1):
            pattern = blocked_by(url)
            if pattern is not None:
                raise PageError(f"{url} is blocked by the url rule {pattern!r}")
            try:
                response = session.get(url, stream=True, timeout=(min(10.0, timeout), timeout), allow_redirects=False)
            except requests.Timeout:
                raise PageError(f"{url} did not answer within {timeout:g}s") from None
            except requests.exceptions.SSLError as exc:
                raise PageError(f"TLS failure reaching {url}: {reason(exc)}") from None
            except requests.RequestException as exc:
                raise PageError(f"cannot reach {url}: {reason(exc)}") from None
            with response:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise PageError(f"{url} answered HTTP {response.status_code} {response.reason or ''}".rstrip())
                body = _read(response, url, max_bytes, limit_name)
                return Page(body, response.headers.get("content-type", ""), url)
    raise PageError(f"more than {MAX_REDIRECTS} redirects from {url}")


def _read(response: Any, url: str, max_bytes: int, limit_name: str | None) -> bytes:
    over = f"{url} is larger than the {human_bytes(max_bytes)} limit" + (f" ({limit_name})" if limit_name else "")
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise PageError(over)
    buffer = bytearray()
    try:
        for chunk in response.iter_content(chunk_size=65536):
            buffer += chunk
            if len(buffer) > max_bytes:
                raise PageError(over)
    except OSError as exc:  # requests wraps socket errors; a body cut off mid-way is one of them
        raise PageError(f"reading {url} failed: {reason(exc)}") from None
    return bytes(buffer)


def page_to_markdown(page: Page, docintel_endpoint: str | None = None) -> str:
    """A fetched page as Markdown, converted by what its content type and URL say it is."""
    extension = posixpath.splitext(urlsplit(page.url).path)[1] or None
    if not markitdown_installed():
        if docintel_endpoint:
            raise PageError(
                f"cannot convert {page.url} with Document Intelligence without MarkItDown: {plainpages.INSTALL_HINT}"
            )
        return _plain(page.body, page.content_type, extension, page.url)
    info = _stream_info(page.content_type, url=page.url, extension=extension)
    converter = _converter(docintel_endpoint)
    return _converted(page.url, lambda: converter.convert_stream(io.BytesIO(page.body), stream_info=info))


def bytes_to_markdown(body: bytes, content_type: str, shown_as: str) -> str:
    """A document given as bytes of a content type (a data: URI's) as Markdown; `shown_as` names it in messages."""
    if not markitdown_installed():
        return _plain(body, content_type, None, shown_as)
    info = _stream_info(content_type)
    converter = _converter(None)
    return _converted(shown_as, lambda: converter.convert_stream(io.BytesIO(body), stream_info=info))


def _content_type(content_type: str) -> tuple[str | None, str | None]:
    """The MIME type and charset a Content-Type names."""
    mimetype, _, params = content_type.partition(";")
    charset = next((p.split("=", 1)[1].strip() for p in params.split(";") if p.strip().startswith("charset=")), None)
    return mimetype.strip() or None, charset


def _stream_info(content_type: str, **known: Any) -> Any:
    """MarkItDown's description of a stream: the MIME type and charset a Content-Type names, and `known`."""
    mimetype, charset = _content_type(content_type)
    return _markitdown().StreamInfo(mimetype=mimetype, charset=charset, **known)


def _plain(body: bytes, content_type: str, extension: str | None, source: str) -> str:
    mimetype, charset = _content_type(content_type)
    try:
        return plainpages.to_markdown(body, mimetype, charset, extension, source)
    except plainpages.NotPlain as exc:
        raise PageError(str(exc)) from None


def file_to_markdown(path: Path, shown_as: str) -> str:
    """A local file as Markdown; `shown_as` names it in messages."""
    if not markitdown_installed():
        try:
            body = path.read_bytes()
        except OSError as exc:
            raise PageError(f"cannot read {shown_as}: {exc.strerror or exc}") from None
        return _plain(body, "", path.suffix or None, shown_as)
    converter = _converter(None)
    return _converted(shown_as, lambda: converter.convert_local(str(path)))


def _converted(source: str, convert: Callable[[], Any]) -> str:
    markitdown = _markitdown()
    try:
        return str(convert().text_content or "")
    except markitdown.UnsupportedFormatException:
        raise PageError(f"cannot convert {source}: MarkItDown has no converter for this kind of file") from None
    except markitdown.FileConversionException as exc:
        raise PageError(_conversion_failure(source, exc)) from None
    except OSError as exc:
        raise PageError(f"cannot read {source}: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - markitdown's converters raise many kinds; each becomes the reason
        raise PageError(f"MarkItDown could not convert {source}: {one_line(exc)}") from None


def _conversion_failure(source: str, exc: Any) -> str:
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
    return f"cannot convert {source}: {one_line(causes[0]) if causes else 'unknown error'}"


def markitdown_installed() -> bool:
    """Whether MarkItDown (the `markitdown` extra) can be imported here."""
    try:
        _markitdown()
    except ImportError:
        return False
    return True


@functools.cache
def _markitdown() -> Any:
    """The markitdown module, imported once (~1 s), quietly."""
    with warnings.catch_warnings():
        # pydub warns at import when ffmpeg is missing; it matters only for audio files.
        warnings.filterwarnings("ignore", message="Couldn't find ffmpeg", category=RuntimeWarning)
        import markitdown
    return markitdown


@functools.lru_cache(maxsize=2)
def _converter(docintel_endpoint: str | None) -> Any:
    """One converter per Document Intelligence endpoint (building one loads models, so it is kept)."""
    markitdown = _markitdown()
    return markitdown.MarkItDown(docintel_endpoint=docintel_endpoint) if docintel_endpoint else markitdown.MarkItDown()


def reason(exc: BaseException) -> str:
    """The useful part of a network error: '[Errno 111] Connection refused' -> 'Connection refused'."""
    text = str(exc)
    found = _ERRNO.search(text)
    if found:
        return found.group(1).strip()
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "the host name does not resolve"
    if "timed out" in text.lower():
        return "timed out"
    return one_line(exc)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
