"""URL rules: which URLs no tool may be asked to fetch, found in any argument, decided before the call.

Pure functions, no I/O. The default rules refuse Hugging Face dataset and space pages (where
benchmark answers live), as the seeds do; unlike the seeds they also catch the short host
(hf.co), the spaces' app host (*.hf.space), the API routes, and URLs inside any argument.
Bundled servers read the profile's rules from `MIROCTL_URL_BLOCK` (see `from_env`).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import unquote, urlsplit

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
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})  # dots IDNA maps to "."
_EMBEDDED = re.compile(r"https?://[^\s\"'<>`\\)\]}]+", re.IGNORECASE)


@dataclass(frozen=True)
class UrlRules:
    """Blocked URL patterns: `host/path-prefix` (subdomains included) or a glob over `host/path`."""

    block: tuple[str, ...] = DEFAULT_BLOCK

    def blocked_by(self, url: str) -> str | None:
        """The pattern that blocks `url`, or None."""
        target = normalise(url)
        if target is None:
            return None
        return next((p for p in self.block if _matches(p, target)), None)

    def first_blocked(self, arguments: Any) -> tuple[str, str] | None:
        """(url, pattern) for the first blocked URL anywhere in a call's arguments, or None."""
        for url in urls_in(arguments):
            pattern = self.blocked_by(url)
            if pattern is not None:
                return url, pattern
        return None

    def drop_blocked(self, items: Iterable[Any], key: str = "link") -> list[Any]:
        """Search results without the blocked ones: items are URLs or mappings holding one under `key`."""
        kept = []
        for item in items:
            url = item.get(key) if isinstance(item, Mapping) else item
            if not (isinstance(url, str) and self.blocked_by(url)):
                kept.append(item)
        return kept


def from_env(environ: Mapping[str, str] | None = None) -> UrlRules:
    """The rules a server was started with (one pattern per line), or the defaults."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR)
    if value is None:
        return UrlRules()
    return UrlRules(tuple(line.strip() for line in value.splitlines() if line.strip()))


def to_env(rules: UrlRules) -> str:
    return "\n".join(rules.block)


def urls_in(value: Any, key: str | None = None) -> Iterator[str]:
    """Every URL in an argument value: values of url-like keys, and http(s) URLs in any string."""
    if isinstance(value, str):
        if key is not None and key.lower() in URL_KEYS:
            yield value.strip()
        yield from _EMBEDDED.findall(unicodedata.normalize("NFKC", value))
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield from urls_in(item, str(name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from urls_in(item, key)


def normalise(url: str) -> str | None:
    """`host/path` in the one form every spelling of a URL comes to, as a browser would resolve it: Unicode
    folded (NFKC, ideographic full stops as dots), percent-decoding, IDNA, lowercase, no www., userinfo or
    port, dot segments resolved, single slashes."""
    text = unicodedata.normalize("NFKC", url.strip()).replace("\\", "/")
    if "://" not in text[:12]:
        text = "http://" + text.lstrip("/")
    try:
        parts = urlsplit(text)
        host = _host(parts.hostname or "")
    except ValueError:
        return None
    if not host:
        return None
    return host + _path(parts.path)


def _host(raw: str) -> str:
    """A host name in ASCII: decoded, Unicode dots folded, IDNA-encoded, lowercase, without www. or end dots."""
    host = unicodedata.normalize("NFKC", _unquoted(raw)).translate(_DOTS).lower().strip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass  # not a valid IDNA name: compared as it is
    return host.removeprefix("www.")


def _path(raw: str) -> str:
    """The path decoded (repeatedly: %252e is a dot too), its dot segments resolved, lowercase."""
    segments: list[str] = []
    for segment in _unquoted(raw).replace("\\", "/").lower().split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return "/" + "/".join(segments)


def _unquoted(text: str) -> str:
    for _ in range(3):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return unicodedata.normalize("NFKC", text)


def _matches(pattern: str, target: str) -> bool:
    pattern = pattern.strip().lower()
    if any(c in pattern for c in "*?["):
        return fnmatchcase(target, pattern) or fnmatchcase(target, pattern.rstrip("/") + "/*")
    host, _, prefix = pattern.removeprefix("https://").removeprefix("http://").partition("/")
    host = _host(host)
    target_host, _, target_path = target.partition("/")
    if target_host != host and not target_host.endswith("." + host):
        return False
    prefix = prefix.strip("/")
    return not prefix or target_path == prefix or target_path.startswith(prefix + "/")
