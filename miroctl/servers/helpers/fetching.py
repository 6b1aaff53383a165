"""Files for the bundled servers from a local path or an http(s) URL: URL rules, size caps, timeouts, retries.

Every hop of a redirect is checked against miroctl's URL rules (MIROCTL_URL_BLOCK, or the defaults),
so a permitted URL cannot redirect to a blocked one. Bodies are read up to a cap and no further.
"""

from __future__ import annotations

import mimetypes
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from mcp.server.mcpserver.exceptions import ToolError

from miroctl import __version__
from miroctl.policy import urls
from miroctl.servers.helpers.common import human_bytes

SANDBOX_HOME = "/home/user"
MAX_REDIRECTS = 5
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
USER_AGENT = f"miroctl/{__version__} (+https://pypi.org/project/miroctl/)"


@dataclass(frozen=True)
class Fetched:
    """A file's bytes, its media type and where it came from."""

    data: bytes
    mime: str
    name: str
    source: str


def is_url(text: str) -> bool:
    return urlsplit(text.strip()).scheme.lower() in ("http", "https")


def check_url(url: str) -> str:
    """The URL, stripped, if it is http(s) with a host and no URL rule blocks it; else a tool error."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ToolError(f"not an http(s) URL with a host: {url!r}")
    blocked = urls.from_env().blocked_by(url)
    if blocked is not None:
        raise ToolError(f"{url} is blocked by miroctl's URL rules (pattern {blocked!r})")
    return url


def read_local(given: str, max_bytes: int, what: str = "file") -> Fetched:
    """A local file (a path or file:// URI), within the size cap; sandbox paths get a pointed error."""
    text = given.strip()
    if text.lower().startswith("file:"):
        text = unquote(urlsplit(text).path)
    path = Path(text).expanduser()
    if not path.exists():
        if text == SANDBOX_HOME or text.startswith(SANDBOX_HOME + "/"):
            raise ToolError(
                f"{given} is a path inside a sandbox, which this tool cannot read: copy it out with "
                "download_file_from_sandbox_to_local and pass the local path it returns"
            )
        raise ToolError(f"no such {what}: {given}")
    if not path.is_file():
        raise ToolError(f"{given} is not a file")
    size = path.stat().st_size
    if size > max_bytes:
        raise ToolError(f"{given} is {human_bytes(size)}, over the {human_bytes(max_bytes)} limit")
    if size == 0:
        raise ToolError(f"{given} is empty")
    data = path.read_bytes()
    return Fetched(data, guess_type(path.name, data), path.name, str(path))


def fetch_url(url: str, max_bytes: int, timeout: float, attempts: int = 3) -> Fetched:
    """An http(s) URL's body: redirects checked against the URL rules, capped, retried on transient failures."""
    import httpx2

    url = check_url(url)
    for attempt in range(attempts):
        try:
            return _fetch_once(httpx2, url, max_bytes, timeout)
        except _Transient as transient:
            if attempt == attempts - 1:
                raise ToolError(f"{url} could not be fetched after {attempts} attempts: {transient}") from None
            time.sleep(min(0.5 * 2**attempt, 4.0))
    raise AssertionError("unreachable")


class _Transient(Exception):
    """A failure worth another try: a refused connection, a timeout, a 5xx or 429 answer."""


def _fetch_once(httpx2: object, url: str, max_bytes: int, timeout: float) -> Fetched:
    client_class = httpx2.Client  # type: ignore[attr-defined]
    headers = {"User-Agent": USER_AGENT}
    with client_class(timeout=timeout, follow_redirects=False, headers=headers) as client:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                with client.stream("GET", current) as response:
                    if response.is_redirect:
                        current = check_url(urljoin(current, response.headers.get("location", "")))
                        continue
                    return _body(response, url, current, max_bytes)
            except httpx2.TimeoutException:  # type: ignore[attr-defined]
                raise _Transient(f"no answer within {timeout:g} s") from None
            except httpx2.TransportError as exc:  # type: ignore[attr-defined]
                raise _Transient(_reason(exc)) from None
        raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times")


def _body(response: object, url: str, final: str, max_bytes: int) -> Fetched:
    status = response.status_code  # type: ignore[attr-defined]
    if status in RETRY_STATUSES:
        raise _Transient(f"HTTP {status}")
    if status >= 400:
        raise ToolError(f"{url} answered HTTP {status} {response.reason_phrase}".rstrip())  # type: ignore[attr-defined]
    length = response.headers.get("content-length", "")  # type: ignore[attr-defined]
    if length.isdigit() and int(length) > max_bytes:
        raise ToolError(f"{url} is {human_bytes(int(length))}, over the {human_bytes(max_bytes)} limit")
    data = bytearray()
    for chunk in response.iter_bytes():  # type: ignore[attr-defined]
        data += chunk
        if len(data) > max_bytes:
            raise ToolError(f"{url} is over the {human_bytes(max_bytes)} limit")
    if not data:
        raise ToolError(f"{url} answered with an empty body")
    name = Path(unquote(urlsplit(final).path)).name or "download"
    declared = response.headers.get("content-type", "").split(";")[0].strip().lower()  # type: ignore[attr-defined]
    mime = declared if declared and declared != "application/octet-stream" else guess_type(name, bytes(data))
    return Fetched(bytes(data), mime, name, final)


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "the host name does not resolve"
    return text.splitlines()[0][:200]


_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
)


def guess_type(name: str, data: bytes) -> str:
    """A media type from the first bytes (the usual image and audio formats), else from the name."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"
