"""URL rules: which URLs no tool may be asked to fetch, found in any argument, decided before the call.

Pure functions, no I/O. The default rules refuse Hugging Face dataset and space pages (where
benchmark answers live), as the seeds do; unlike the seeds they also catch the short host
(hf.co), the spaces' app host (*.hf.space), the API routes, every spelling a browser resolves to
those pages, and URLs anywhere in any argument, nested ones included (policy/urlscan.py).
Bundled servers read the profile's rules from `MIROCTL_URL_BLOCK` (see `from_env`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from miroctl.policy.urlscan import Scan, TooMany, host_name

DEFAULT_BLOCK = (
    "huggingface.co/datasets",
    "huggingface.co/spaces",
    "huggingface.co/api/datasets",
    "huggingface.co/api/spaces",
    "hf.co/datasets",
    "hf.co/spaces",
    "datasets-server.huggingface.co",
    "hf.space",
)
ENV_VAR = "MIROCTL_URL_BLOCK"
URL_KEYS = frozenset({"url", "uri", "link", "href", "urls", "uris", "links"})
_URL_KEY = re.compile(r"(?:urls?|uris?|links?|hrefs?|website|address)$")  # page_url, targetUri, ...


@dataclass(frozen=True)
class UrlRules:
    """Blocked URL patterns: `host/path-prefix` (subdomains included) or a glob over `host/path`."""

    block: tuple[str, ...] = DEFAULT_BLOCK

    def blocked_by(self, url: str) -> str | None:
        """The pattern that blocks `url` or a URL nested in it, or None."""
        try:
            return next((p for _, target in Scan().findings(url, whole=True) for p in self._blocking(target)), None)
        except TooMany as exc:
            return f"<{exc}>"

    def first_blocked(self, arguments: object) -> tuple[str, str] | None:
        """(url, pattern) for the first blocked URL anywhere in a call's arguments (names too), or None; when
        there is more to read than a check reads, ("", "<why>"): refused unchecked."""
        scan = Scan()
        try:
            for text, whole in _strings(arguments):
                for url, target in scan.findings(text, whole=whole):
                    pattern = next(self._blocking(target), None)
                    if pattern is not None:
                        return url, pattern
        except TooMany as exc:
            return "", f"<{exc}>"
        return None

    def drop_blocked(self, items: Iterable[Any], key: str = "link") -> list[object]:
        """Search results without the blocked ones: items are URLs or mappings holding one under `key`."""
        kept = []
        for item in items:
            url = item.get(key) if isinstance(item, Mapping) else item
            if not (isinstance(url, str) and self.blocked_by(url)):
                kept.append(item)
        return kept

    def _blocking(self, target: str) -> Iterator[str]:
        return (p for p in self.block if _matches(p, target))


def from_env(environ: Mapping[str, str] | None = None) -> UrlRules:
    """The rules a server was started with (one pattern per line), or the defaults."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR)
    if value is None:
        return UrlRules()
    return UrlRules(tuple(line.strip() for line in value.splitlines() if line.strip()))


def to_env(rules: UrlRules) -> str:
    return "\n".join(rules.block)


def urls_in(value: object) -> Iterator[str]:
    """Every URL written in an argument value: values of url-like keys, and the URLs in any string."""
    scan = Scan()
    try:
        for text, whole in _strings(value):
            yield from scan.written(text, whole=whole)
    except TooMany:
        return


def is_url_key(name: str) -> bool:
    return _URL_KEY.search(name.lower()) is not None


def _strings(value: object, key: str | None = None) -> Iterator[tuple[str, bool]]:
    """(string, whether it is meant as one URL) for every string in a value, mapping keys included."""
    if isinstance(value, str):
        yield value, key is not None and is_url_key(key)
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield str(name), False
            yield from _strings(item, str(name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item, key)


@lru_cache(maxsize=256)
def _pattern_host(host: str) -> str:
    return host_name(host)


def _matches(pattern: str, target: str) -> bool:
    pattern = pattern.strip().lower()
    if any(c in pattern for c in "*?["):
        return fnmatchcase(target, pattern) or fnmatchcase(target, pattern.rstrip("/") + "/*")
    host, _, prefix = pattern.removeprefix("https://").removeprefix("http://").partition("/")
    host = _pattern_host(host)
    target_host, _, target_path = target.partition("/")
    if target_host != host and not target_host.endswith("." + host):
        return False
    prefix = prefix.strip("/")
    return not prefix or target_path == prefix or target_path.startswith(prefix + "/")
