"""MarkItDown for the bundled servers: pages and files as Markdown, failures as one-line tool errors.

The fetching and converting itself is miroctl's one implementation (miroctl.base.webpages), so a
server's reads obey the same URL rules, size caps and timeouts as the scrape fallback.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.base import webpages
from miroctl.base.version import __version__
from miroctl.policy.urls import from_env

from .common import human_bytes, number_setting

DEFAULT_MAX_BYTES = 50 * 1024 * 1024


def read_url(
    url: str,
    *,
    max_bytes_setting: str = "READING_MAX_BYTES",
    timeout_setting: str = "READING_HTTP_TIMEOUT",
    user_agent: str = f"miroctl-reading/{__version__} (+MarkItDown)",
) -> str:
    """An http(s) URL fetched under the server's settings and the profile's URL rules, as Markdown."""
    max_bytes = int(number_setting(max_bytes_setting, DEFAULT_MAX_BYTES, minimum=1))
    timeout = number_setting(timeout_setting, 30.0, minimum=0.1)
    try:
        page = webpages.fetch(
            url,
            max_bytes=max_bytes,
            timeout=timeout,
            user_agent=user_agent,
            blocked_by=from_env().blocked_by,
            limit_name=max_bytes_setting,
        )
        return webpages.page_to_markdown(page)
    except webpages.PageError as exc:
        raise ToolError(str(exc)) from None


def read_document(path: Path, shown_as: str) -> str:
    """A local file as Markdown."""
    try:
        return webpages.file_to_markdown(path, shown_as)
    except webpages.PageError as exc:
        raise ToolError(str(exc)) from None


def read_data_uri(uri: str, *, max_bytes_setting: str = "READING_MAX_BYTES") -> str:
    """A data: URI's document (RFC 2397: `data:[type][;charset=...][;base64],data`) as Markdown."""
    header, comma, data = uri.partition(",")
    if not comma:
        raise ToolError("the data: URI has no comma: write data:[type][;base64],DATA")
    params = [p.strip() for p in header[len("data:") :].split(";")]
    encoded = len(params) > 1 and params[-1].lower() == "base64"
    content_type = ";".join(params[:-1] if encoded else params)
    if not content_type.partition(";")[0]:
        content_type = "text/plain" + content_type  # RFC 2397's default type (its parameters kept)
    limit = int(number_setting(max_bytes_setting, DEFAULT_MAX_BYTES, minimum=1))
    try:
        body = base64.b64decode(unquote(data), validate=True) if encoded else unquote_to_bytes(data)
    except (binascii.Error, ValueError):
        raise ToolError("the data: URI's base64 data is not valid base64") from None
    if len(body) > limit:
        raise ToolError(
            f"the data: URI holds {human_bytes(len(body))}, over the {human_bytes(limit)} limit ({max_bytes_setting})"
        )
    shown_as = f"the data: URI ({' '.join(content_type.partition(';')[0].split())})"
    try:
        return webpages.bytes_to_markdown(body, content_type, shown_as)
    except webpages.PageError as exc:
        raise ToolError(str(exc)) from None
