"""MarkItDown for the reading server: fetch URLs with timeouts and limits, convert, explain failures.

markitdown (~1 s to import) is imported on first use, once.
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.servers.helpers.common import human_bytes, number_setting

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
USER_AGENT = "miroctl-reading/0.2 (+MarkItDown)"
_EXTRA = re.compile(r"optional dependency \[([A-Za-z0-9_-]+)\]")
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


def read_url(url: str) -> str:
    """An http(s) URL fetched (under READING_HTTP_TIMEOUT and READING_MAX_BYTES) and converted."""
    import requests

    timeout = number_setting("READING_HTTP_TIMEOUT", 30.0, minimum=0.1)
    try:
        response = requests.get(
            url, timeout=(min(timeout, 10.0), timeout), stream=True, headers={"User-Agent": USER_AGENT}
        )
    except requests.Timeout:
        raise ToolError(f"{url} did not answer within {timeout:g}s") from None
    except requests.exceptions.SSLError as exc:
        raise ToolError(f"TLS failure reaching {url}: {_reason(exc)}") from None
    except requests.RequestException as exc:
        raise ToolError(f"cannot reach {url}: {_reason(exc)}") from None
    with response:
        _check_response(url, response)
        return convert(url, lambda md: md.convert_response(response))


def _check_response(url: str, response: Any) -> None:
    if response.status_code >= 400:
        raise ToolError(f"{url} answered HTTP {response.status_code} {response.reason or ''}".rstrip())
    limit = int(number_setting("READING_MAX_BYTES", DEFAULT_MAX_BYTES, minimum=1))
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise ToolError(f"{url} is {human_bytes(int(length))}, over the {human_bytes(limit)} limit (READING_MAX_BYTES)")


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
    md = _markitdown()
    try:
        return str(how(_converter()).text_content)
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
