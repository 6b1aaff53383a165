"""reading: read a local file or a URL and return it as Markdown (MarkItDown)."""

from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

mcp = MCPServer("reading", version="0.1.0", log_level="WARNING")


def _local_path(uri: str) -> Path:
    if uri.startswith("file://"):
        return Path(unquote(urlsplit(uri).path))
    return Path(uri).expanduser()


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True, idempotent_hint=True))
def read_file(uri: str) -> str:
    """Read a document and return its content as Markdown.

    `uri` is a local path, a file:// URI, or an http(s) URL. HTML, text, CSV and JSON are
    converted by MarkItDown. Returns the Markdown text of the whole document.
    """
    from markitdown import MarkItDown

    scheme = urlsplit(uri).scheme
    if scheme in ("http", "https"):
        return MarkItDown().convert(uri).text_content
    path = _local_path(uri)
    if not path.is_file():
        raise ToolError(f"no such file: {uri}")
    return MarkItDown().convert(str(path)).text_content


if __name__ == "__main__":
    mcp.run("stdio")
