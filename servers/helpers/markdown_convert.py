"""MarkItDown for the bundled servers: pages and files as Markdown, failures as one-line tool errors.

The fetching and converting itself is miroctl's one implementation (miroctl.base.webpages), so a
server's reads obey the same URL rules, size caps and timeouts as the scrape fallback.
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.base import webpages
from miroctl.base.version import __version__
from miroctl.policy.urls import from_env

from .common import number_setting

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
