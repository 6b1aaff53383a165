"""reading: read a local file or a URL and return it as Markdown (MarkItDown).

Settings (environment): READING_ROOT confines local reads to one directory tree (symlinks and `..`
resolved first); READING_MAX_BYTES caps a file's size (default 50 MB); READING_HTTP_TIMEOUT is the
seconds a URL may take to answer (default 30).
"""

from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from servers._common import human_bytes, number_setting, setting

mcp = MCPServer("reading", version="0.2.0", log_level="WARNING")

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
USER_AGENT = "miroctl-reading/0.2 (+MarkItDown)"
_EXTRA = re.compile(r"optional dependency \[([A-Za-z0-9_-]+)\]")
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


@mcp.tool(
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=True),
    structured_output=False,
)
def read_file(uri: str) -> str:
    """Read one document and return its full content converted to Markdown.

    `uri` is a local file path (absolute, or relative to the server's working directory or to
    READING_ROOT when that is set), a file:// URI, or an http(s) URL. HTML, plain text, CSV and JSON
    are always converted; PDF, DOCX, PPTX, XLSX and similar need MarkItDown's optional extras, and
    the error names the extra to install when one is missing. Directories are not listed.
    Returns the Markdown text of the whole document (tables as Markdown tables, HTML as headings,
    lists and links). Fails with a one-line reason for a missing file, a path outside READING_ROOT,
    an unreachable URL or an HTTP error status.
    """
    uri = uri.strip()
    if not uri:
        raise ToolError("uri is empty: give a local path, a file:// URI or an http(s) URL")
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        return _read_url(uri)
    if scheme not in ("", "file") and not re.match(r"^[A-Za-z]:[\\/]", uri):
        raise ToolError(f"unsupported URI scheme {scheme!r}: use a local path, a file:// URI or an http(s) URL")
    path = local_path(uri)
    return _convert(uri, lambda md: md.convert_local(str(path)))


# ---------------------------------------------------------------------------------------------- local files


def local_path(uri: str) -> Path:
    """The file a local path or file:// URI names, resolved, inside READING_ROOT, readable."""
    root = reading_root()
    path = Path(_path_part(uri)).expanduser()
    if root is not None and not path.is_absolute():
        path = root / path
    resolved = path.resolve()
    if root is not None and not resolved.is_relative_to(root):
        raise ToolError(f"{uri} is outside READING_ROOT: only files under that directory can be read")
    if not resolved.exists():
        raise ToolError(f"no such file: {uri}")
    if resolved.is_dir():
        raise ToolError(f"{uri} is a directory, not a file")
    limit = int(number_setting("READING_MAX_BYTES", DEFAULT_MAX_BYTES, minimum=1))
    size = resolved.stat().st_size
    if size > limit:
        raise ToolError(f"{uri} is {human_bytes(size)}, over the {human_bytes(limit)} limit (READING_MAX_BYTES)")
    return resolved


def reading_root() -> Path | None:
    """READING_ROOT resolved (symlinks followed), or None when reads are not confined."""
    given = setting("READING_ROOT")
    if given is None:
        return None
    root = Path(given).expanduser().resolve()
    if not root.is_dir():
        raise ToolError("READING_ROOT is not an existing directory: fix the server's configuration")
    return root


def _path_part(uri: str) -> str:
    if not uri.lower().startswith("file:"):
        return uri
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise ToolError(f"{uri} names a file on another host ({parts.netloc}); only local files can be read")
    return unquote(parts.path)


# ---------------------------------------------------------------------------------------------- URLs


def _read_url(url: str) -> str:
    import requests

    timeout = number_setting("READING_HTTP_TIMEOUT", 30.0, minimum=0.1)
    try:
        response = requests.get(url, timeout=(min(timeout, 10.0), timeout), stream=True,
                                headers={"User-Agent": USER_AGENT})
    except requests.Timeout:
        raise ToolError(f"{url} did not answer within {timeout:g}s") from None
    except requests.exceptions.SSLError as exc:
        raise ToolError(f"TLS failure reaching {url}: {_reason(exc)}") from None
    except requests.RequestException as exc:
        raise ToolError(f"cannot reach {url}: {_reason(exc)}") from None
    with response:
        _check_response(url, response)
        return _convert(url, lambda md: md.convert_response(response))


def _check_response(url: str, response: Any) -> None:
    if response.status_code >= 400:
        raise ToolError(f"{url} answered HTTP {response.status_code} {response.reason or ''}".rstrip())
    limit = int(number_setting("READING_MAX_BYTES", DEFAULT_MAX_BYTES, minimum=1))
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise ToolError(f"{url} is {human_bytes(int(length))}, over the {human_bytes(limit)} limit "
                        "(READING_MAX_BYTES)")


def _reason(exc: BaseException) -> str:
    """The useful part of a requests error: '[Errno 111] Connection refused' -> 'Connection refused'."""
    text = str(exc)
    found = _ERRNO.search(text)
    if found:
        return found.group(1).strip()
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "the host name does not resolve"
    return text.splitlines()[0][:200] if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------- conversion


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


def _convert(source: str, convert: Any) -> str:
    md = _markitdown()
    try:
        return convert(_converter()).text_content
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
            return (f"cannot convert {source}: MarkItDown's optional '{extra}' extra is not installed "
                    f"(pip install 'markitdown[{extra}]')")
    detail = str(causes[0]).strip().splitlines()[0] if causes and str(causes[0]).strip() else "unknown error"
    return f"cannot convert {source}: {detail}"


if __name__ == "__main__":
    mcp.run("stdio")
