"""The scrape fallback: when a scrape-type tool fails, for any reason, convert its URL locally with MarkItDown.

The seeds fall back only on one error string and pass a placeholder endpoint; here any failure of a
configured scrape tool triggers it, the page is fetched under a timeout and a size cap, every
redirect is checked against the URL rules, and a Document Intelligence endpoint is used only when
the profile or `MIROCTL_DOCINTEL_ENDPOINT` names one. markitdown is imported only when needed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from miroctl.base import webpages
from miroctl.base.version import __version__
from miroctl.config.sections import MarkItDownSection
from miroctl.policy.urls import URL_KEYS, UrlRules, urls_in

ENDPOINT_ENV = "MIROCTL_DOCINTEL_ENDPOINT"
TRIGGER_KINDS = frozenset({"tool_error", "failed", "timeout", "unavailable"})


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
        try:
            page = webpages.fetch(
                url,
                max_bytes=self.max_bytes,
                timeout=self.timeout,
                user_agent=f"miroctl/{__version__} (MarkItDown fallback)",
                blocked_by=rules.blocked_by,
            )
            return webpages.page_to_markdown(page, self.docintel_endpoint)
        except webpages.PageError as exc:
            raise FallbackError(str(exc)) from None


def url_argument(arguments: Mapping[str, object]) -> str | None:
    """The URL a scrape call was about: a url/uri/link argument, else the first http(s) URL anywhere."""
    for key, value in arguments.items():
        if str(key).lower() in URL_KEYS and isinstance(value, str) and value.strip():
            return value.strip()
    return next(iter(urls_in(arguments)), None)
