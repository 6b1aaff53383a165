"""Files for the bundled servers from a local path or an http(s) URL: URL rules, size caps, timeouts, retries.

Downloads go through base/webpages: every hop of a redirect is checked against miroctl's URL rules
(MIROCTL_URL_BLOCK, or the defaults), so a permitted URL cannot redirect to a blocked one, and bodies
are read up to a cap and no further.
"""

from __future__ import annotations

import mimetypes
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.base import webpages
from miroctl.base.version import __version__
from miroctl.policy import urls

from .common import human_bytes

SANDBOX_HOME = "/home/user"
# Worth another try: a refused or dropped connection, no answer in time, a busy or failing server.
_TRANSIENT = re.compile(r"cannot reach|did not answer|reading .* failed|answered HTTP (429|5\d\d)")
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
        raise ToolError(f"{url} is blocked by the url rule {blocked!r}")
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
        raise ToolError(f"{given} is {human_bytes(size)}, larger than the {human_bytes(max_bytes)} limit")
    if size == 0:
        raise ToolError(f"{given} is empty")
    data = path.read_bytes()
    return Fetched(data, guess_type(path.name, data), path.name, str(path))


def fetch_url(url: str, max_bytes: int, timeout: float, attempts: int = 3) -> Fetched:
    """An http(s) URL's body (base/webpages: every redirect checked, capped), tried again on transient failures."""
    url = check_url(url)
    for attempt in range(attempts):
        try:
            page = webpages.fetch(
                url, max_bytes=max_bytes, timeout=timeout, user_agent=USER_AGENT, blocked_by=urls.from_env().blocked_by
            )
        except webpages.PageError as exc:
            if attempt == attempts - 1 or not _TRANSIENT.search(str(exc)):
                raise ToolError(str(exc)) from None
            time.sleep(min(0.5 * 2**attempt, 4.0))
            continue
        if not page.body:
            raise ToolError(f"{url} answered with an empty body")
        name = Path(unquote(urlsplit(page.url).path)).name or "download"
        declared = page.content_type.split(";")[0].strip().lower()
        mime = declared if declared and declared != "application/octet-stream" else guess_type(name, page.body)
        return Fetched(page.body, mime, name, page.url)
    raise AssertionError("unreachable")


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
