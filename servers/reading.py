"""reading: read a local file or a URL and return it as Markdown (MarkItDown)."""

from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from miroctl.base.version import __version__

from .helpers.common import human_bytes, number_setting, setting
from .helpers.markdown_convert import DEFAULT_MAX_BYTES, read_data_uri, read_document, read_url

mcp = MCPServer("reading", version=__version__, log_level="WARNING")

# Settings (environment): READING_ROOT confines local reads to one directory tree (symlinks and `..`
# resolved first); READING_MAX_BYTES caps a file's size (default 50 MB); READING_HTTP_TIMEOUT is the
# seconds a URL may take to answer (default 30).


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
    ),
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
    return read_uri(uri, data=False)


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
    ),
    structured_output=False,
)
def convert_to_markdown(uri: str) -> str:
    """Convert a resource described by an http:, https:, file: or data: URI to Markdown.

    The same reader as read_file (markitdown-mcp's tool of this name): http(s) URLs and file: URIs
    (or local paths) follow read_file's rules (READING_ROOT, READING_MAX_BYTES, the URL rules), and a
    data: URI (`data:text/html;base64,...`) is converted by its media type, under the same size cap.
    Returns the Markdown text of the whole document.
    """
    return read_uri(uri, data=True)


def read_uri(uri: str, *, data: bool) -> str:
    """The Markdown of what `uri` names: an http(s) URL, a file: URI or local path, and a data: URI when `data`."""
    if data:
        kinds = "a local path, a file:// URI, an http(s) URL or a data: URI"
    else:
        kinds = "a local path, a file:// URI or an http(s) URL"
    uri = uri.strip()
    if not uri:
        raise ToolError(f"uri is empty: give {kinds}")
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        return read_url(uri)
    if scheme == "data" and data:
        return read_data_uri(uri)
    if scheme not in ("", "file"):
        raise ToolError(f"unsupported URI scheme {scheme!r}: use {kinds}")
    path = local_path(uri)
    return read_document(path, uri)


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


if __name__ == "__main__":
    mcp.run("stdio")
