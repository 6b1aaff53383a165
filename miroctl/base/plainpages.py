"""Documents as Markdown without MarkItDown: what a lean install (no `miroctl[markitdown]`) converts itself.

Text, Markdown, JSON and other text formats are returned as they are, CSV as a Markdown table (as MarkItDown
does); HTML goes through markdownify
(the converter MarkItDown itself uses for HTML), with scripts and styles dropped. Anything else (PDF, Office
files, images) is a PageError that names the extra to install. markdownify and BeautifulSoup are imported
when an HTML page is converted.
"""

from __future__ import annotations

import csv
import io
import mimetypes

from miroctl.base.text import human_bytes

INSTALL_HINT = "pip install 'miroctl[markitdown]'"
HTML = frozenset({"text/html", "application/xhtml+xml"})
TEXT = frozenset(
    {
        "application/json", "application/ld+json", "application/xml", "application/yaml", "application/x-yaml",
        "application/toml", "application/javascript", "application/x-sh", "application/x-python",
    }
)  # fmt: skip
_EXTENSIONS = {".md": "text/markdown", ".markdown": "text/markdown", ".yaml": "application/yaml", ".yml": "text/yaml"}


class NotPlain(Exception):
    """The document is of a kind only MarkItDown converts; the message says which and what to install."""


def kind_of(mimetype: str | None, extension: str | None) -> str | None:
    """The MIME type a document is read as: the one given (unless it says nothing), else its extension's."""
    given = (mimetype or "").strip().lower()
    if given and given != "application/octet-stream":
        return given
    ext = (extension or "").lower()
    return _EXTENSIONS.get(ext) or (mimetypes.guess_type("x" + ext)[0] if ext else None)


def to_markdown(body: bytes, mimetype: str | None, charset: str | None, extension: str | None, source: str) -> str:
    """The document as Markdown, or NotPlain for a kind that needs MarkItDown."""
    kind = kind_of(mimetype, extension)
    if kind in HTML:
        return _html(_text(body, charset))
    if kind == "text/csv":
        return _table(_text(body, charset))
    if kind is not None and (kind.startswith("text/") or kind in TEXT or kind.endswith(("+json", "+xml"))):
        return _text(body, charset)
    if kind is None and b"\x00" not in body[:8192]:
        try:
            return body.decode(charset or "utf-8")  # no type and no extension: text if it reads as text
        except (UnicodeDecodeError, LookupError):
            pass
    what = kind or f"a file of {human_bytes(len(body))} that is not text"
    named = "" if what in source else f" ({what})"
    raise NotPlain(f"cannot convert {source}{named} without MarkItDown: {INSTALL_HINT}")


def _text(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def _table(text: str) -> str:
    """CSV rows as a Markdown table, the first row its header."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    cells = [[cell.replace("|", "\\|").replace("\n", " ") for cell in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join([lines[0], "| " + " | ".join(["---"] * width) + " |", *lines[1:]])


def _html(text: str) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(["script", "style", "noscript"]):
        tag.extract()
    body = soup.find("body") or soup
    return str(MarkdownConverter(heading_style="ATX").convert_soup(body)).strip()
