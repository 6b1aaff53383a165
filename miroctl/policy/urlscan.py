"""Where the URLs in a string lead: every URL at any offset, read as a browser or Node reads it, nested ones too.

A URL is resolved by the WHATWG URL standard's parser (ada, the one Node uses: `https:/host`, `https:host`,
backslashes, tabs and newlines inside, IDNA, IPv4 numbers) and by Python's lenient split (what Python
clients do), and each reading counts. Inside a URL's path, query and fragment, decoded, every URL is
found again, with or without a scheme, however deep (archives, readers, redirectors, `?u=...`). The
work is bounded: a string holding more URLs than LIMIT, or a URL longer than MAX_URL, is a `TooMany`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

LIMIT = 2_000  # URLs read in one check: far more than an honest call holds, few enough to stay quick
MAX_URL = 16_384  # characters: longer than any server accepts, and a bound on the work per URL
_SCHEME = re.compile(r"(?:https?|wss?|ftp):", re.IGNORECASE)  # the special schemes, at any offset
_BARE = re.compile(r"(?<=[/=?&#:,;|])[\w-]+(?:\.[\w-]+)+\.?(?=[/?#:]|$)", re.UNICODE)  # a host after a delimiter
_END = re.compile(r"[\s\"'<>`]")  # where a URL in running text ends
_CUT = re.compile(r"[)\]}&,;|]")  # where it may end too (Markdown links, lists, query parameters)
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")  # the parser drops these anywhere in a URL
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})  # dots IDNA maps to "."
_EDGES = "".join(map(chr, range(0x21)))  # the parser strips C0 controls and spaces at both ends
_DECODINGS = 4  # percent-decoding rounds (%252F is a slash too)


class TooMany(Exception):
    """More URLs, or a longer one, than a check reads: treated as blocked."""


class Scan:
    """One check's reading of strings: the URLs seen (each read once) and the work left."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.left = limit
        self.seen: set[str] = set()

    def findings(self, text: str, *, whole: bool = False) -> Iterator[tuple[str, str]]:
        """(URL as written, `host/path` it or a URL nested in it leads to), for every URL in `text`;
        `whole`: the string is meant as one URL (a url-like argument), a scheme assumed without one."""
        for written in self._starts(text, whole=whole):
            queue = [written]
            while queue:
                for target, rest in _readings(queue.pop()):
                    yield written, target
                    queue.extend(self._starts(rest, bare=True))

    def written(self, text: str, *, whole: bool = False) -> Iterator[str]:
        """The URLs written in `text` (not nested or decoded ones), without the text's punctuation around them."""
        for spelling in _spellings(text)[:2]:
            starts = [spelling.strip(_EDGES)] if whole else []
            starts += [_until_end(spelling, match.start()) for match in _SCHEME.finditer(spelling)]
            for url in map(_tidy, starts):
                if url and url not in self.seen:
                    self._count(url)
                    yield url

    def _starts(self, text: str, *, whole: bool = False, bare: bool = False) -> Iterator[str]:
        for spelling in _spellings(text):
            if whole:
                yield from self._new(spelling.strip(_EDGES))
            for match in _SCHEME.finditer(spelling):
                yield from self._new(_until_end(spelling, match.start()))
            if bare:
                for match in _BARE.finditer(spelling):
                    yield from self._new(_until_end(spelling, match.start()))

    def _new(self, candidate: str) -> Iterator[str]:
        cut = _CUT.search(candidate)
        for text in (candidate, candidate[: cut.start()] if cut else ""):
            if text and text not in self.seen:
                self._count(text)
                yield text

    def _count(self, url: str) -> None:
        if len(url) > MAX_URL:
            raise TooMany(f"a URL longer than {MAX_URL:,} characters")
        self.left -= 1
        if self.left < 0:
            raise TooMany(f"more than {LIMIT:,} URLs to check")
        self.seen.add(url)


def _spellings(text: str) -> list[str]:
    """The text as given, Unicode-folded (NFKC) without tabs and newlines, and that percent-decoded."""
    spellings = [text]
    current = unicodedata.normalize("NFKC", text).translate(_TAB_NEWLINE)
    for _ in range(_DECODINGS + 1):
        if current not in spellings:
            spellings.append(current)
        decoded = unquote(current)
        if decoded == current:
            break
        current = decoded
    return spellings


def _until_end(text: str, start: int) -> str:
    end = _END.search(text, start)
    return text[start : end.start() if end else len(text)]


def _tidy(url: str) -> str:
    """The URL without a sentence's end or a closing bracket that it did not open."""
    while url and (
        url[-1] in ".,;:!?" or (url[-1] in ")]}" and url.count(url[-1]) > url.count("([{"[")]}".index(url[-1])]))
    ):
        url = url[:-1]
    return url


def _readings(candidate: str) -> list[tuple[str, str]]:
    """(`host/path`, the rest: path, query and fragment) as the WHATWG parser and Python's split read it."""
    found = []
    for href in _resolved(candidate):
        try:
            parts = urlsplit(href)
            host = host_name(parts.hostname or "")
        except ValueError:
            continue
        if host:
            rest = (
                parts.path
                + (f"?{parts.query}" if parts.query else "")
                + (f"#{parts.fragment}" if parts.fragment else "")
            )
            found.append((host + _path(parts.path), rest))
    return found


def _resolved(candidate: str) -> list[str]:
    """The candidate resolved by the WHATWG parser (http:// assumed without a scheme), and as Python reads it."""
    given = candidate if _SCHEME.match(candidate) else "http://" + candidate.lstrip("/\\")
    lenient = unicodedata.normalize("NFKC", candidate).replace("\\", "/")
    if "://" not in lenient[:12]:
        lenient = "http://" + lenient.lstrip("/")
    whatwg = _whatwg(given)
    return [lenient] if whatwg is None else [whatwg, lenient]


def _whatwg(url: str) -> str | None:
    import ada_url  # ~30 ms, paid only by a check that meets a URL

    try:
        parsed = ada_url.parse_url(url, attributes=("href",))
    except ValueError:
        return None
    return str(parsed["href"])


def host_name(raw: str) -> str:
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
    for _ in range(_DECODINGS):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return unicodedata.normalize("NFKC", text)
