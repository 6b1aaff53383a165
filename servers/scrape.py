"""scrape: read a web page as Markdown, through the Jina reader (JINA_API_KEY) or fetched directly.

When the reader fails (a refused key, a rate limit that outlasts the retries, a page it cannot load)
or no key is set, the page is fetched directly and converted with MarkItDown; the answer says which.
URL rules are checked on the URL and on every redirect of a direct fetch. Settings (environment):
JINA_API_KEY, JINA_BASE_URL, SCRAPE_BACKEND (auto, jina or direct), SCRAPE_MAX_BYTES, SCRAPE_MAX_CHARS,
DEMO_MODE (1: results cut at 20,000 characters, as in the seeds), and webapi's HTTP_*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from .helpers.common import number_setting, result, setting
from .helpers.markdown_convert import read_url
from .helpers.webapi import (
    USER_AGENT,
    Answer,
    HttpSettings,
    call,
    json_message,
    one_line,
    page_url,
)

mcp = MCPServer("scrape", version="0.1.0", log_level="WARNING")

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
JINA_URL = "https://r.jina.ai"
DEMO_CHARS = 20_000  # the seeds' DEMO_SCRAPE_MAX_LENGTH
DEMO_ROOM = 1_000  # room for the title, URL and notes: the whole answer stays within DEMO_CHARS
YOUTUBE = ("youtube.com/watch", "youtube.com/shorts", "youtube.com/live", "youtu.be/")


@dataclass
class Scraped:
    """A page read by one of the backends."""

    content: str
    title: str | None
    url: str
    fetched_by: str
    tokens: int | None = None


@mcp.tool(annotations=READ, structured_output=False)
def scrape_website(url: str) -> CallToolResult:
    """Read one web page and return its main content as Markdown (links, lists and tables kept).

    url: the page's address (https:// is assumed without a scheme). Use google_search to find pages;
    this tool does not run searches. YouTube pages give their title, description and captions when
    available, not the video itself. Files behind a URL (PDF, DOCX, ...) are converted when possible.
    Returns the page's title, its URL, which backend read it (the Jina reader, or a direct fetch
    converted with MarkItDown when the reader is not configured or failed) and the content, cut at
    SCRAPE_MAX_CHARS characters. A URL the URL rules block, an unreachable page or an HTTP error is a
    tool error saying why.
    """
    notes: list[str] = []
    target = _target(url, notes)
    page = _scrape(target, notes)
    if any(marker in target for marker in YOUTUBE):
        notes.append("for what a video shows or says, use a video tool: this is the page's text only")
    content, cut = _cut(page.content.strip(), notes)
    title = one_line(page.title or "(none)")
    head = [f"Title: {title}", f"URL Source: {page.url}", f"Fetched by: {page.fetched_by}"]
    text = "\n".join(head + [f"Note: {note}" for note in notes]) + "\n\nMarkdown Content:\n"
    data = {
        "url": target,
        "final_url": page.url,
        "title": page.title,
        "fetched_by": page.fetched_by,
        "notes": notes,
        "chars": len(page.content.strip()),
        "cut_chars": cut,
        "tokens": page.tokens,
    }
    return result(text + content, data)


def _target(url: str, notes: list[str]) -> str:
    return page_url(url, notes, verb="read", done="read", refusal="it may not be read")


def _scrape(target: str, notes: list[str]) -> Scraped:
    """The reader when configured, with the direct fetch as the fallback; both failures said together."""
    backend = (setting("SCRAPE_BACKEND") or "auto").lower()
    if backend not in ("auto", "jina", "direct"):
        raise ToolError(f"the server setting SCRAPE_BACKEND must be auto, jina or direct, got {backend!r}")
    if backend == "direct" or (backend == "auto" and not setting("JINA_API_KEY")):
        reason = "SCRAPE_BACKEND=direct" if backend == "direct" else "JINA_API_KEY is not set"
        return _direct(target, f"a direct fetch converted with MarkItDown ({reason})")
    try:
        return _jina(target)
    except ToolError as failure:
        reader = str(failure)
    try:
        page = _direct(target, "a direct fetch converted with MarkItDown (the Jina reader failed)")
    except ToolError as failure:
        raise ToolError(f"{reader}; the direct fetch failed too: {failure}") from None
    notes.append(reader)
    return page


def _jina(target: str) -> Scraped:
    """POST the URL to the Jina reader (JSON in and out); the key, when set, as a bearer token."""
    key = setting("JINA_API_KEY")
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    base = (setting("JINA_BASE_URL") or JINA_URL).rstrip("/")
    settings = HttpSettings.from_env(timeout=60.0)
    answer = call(
        "Jina reader", "POST", f"{base}/", settings, describe=_jina_error, json={"url": target}, headers=headers
    )
    body = answer.json("Jina reader")
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, Mapping) or not isinstance(data.get("content"), str):
        raise ToolError("Jina reader sent a malformed answer: no data.content")
    if not data["content"].strip():
        raise ToolError("Jina reader: the page had no readable content")
    usage = data.get("usage")
    tokens = usage.get("tokens") if isinstance(usage, Mapping) else None
    title = str(data.get("title") or "") or None
    return Scraped(data["content"], title, str(data.get("url") or target), "the Jina reader", tokens)


def _jina_error(answer: Answer) -> str:
    message = json_message(answer, "readableMessage", "message")
    status = f"HTTP {answer.status}" + (f": {message}" if message else "")
    if answer.status in (401, 403):
        return f"the key was refused ({status}): check JINA_API_KEY"
    if answer.status == 422:
        return f"it could not load the page ({status})"
    return status


def _direct(target: str, how: str) -> Scraped:
    """The page fetched by miroctl itself (URL rules on every redirect, SCRAPE_MAX_BYTES, HTTP_TIMEOUT)."""
    markdown = read_url(
        target, max_bytes_setting="SCRAPE_MAX_BYTES", timeout_setting="HTTP_TIMEOUT", user_agent=USER_AGENT
    )
    if not markdown.strip():
        raise ToolError(f"{target} has no readable content")
    return Scraped(markdown, None, target, how)


def _cut(content: str, notes: list[str]) -> tuple[str, int]:
    """The content within SCRAPE_MAX_CHARS; with DEMO_MODE=1 within the seeds' 20,000 characters (said)."""
    limit = int(number_setting("SCRAPE_MAX_CHARS", 200_000, minimum=100))
    if setting("DEMO_MODE") == "1" and limit > DEMO_CHARS and len(content) > DEMO_CHARS - DEMO_ROOM:
        notes.append(f"DEMO_MODE=1: the answer is cut at {DEMO_CHARS:,} characters, as in the seeds")
        limit = DEMO_CHARS - DEMO_ROOM
    return _cut_at(content, limit)


def _cut_at(content: str, limit: int) -> tuple[str, int]:
    if len(content) <= limit:
        return content, 0
    cut = len(content) - limit
    return content[:limit] + f"\n\n[... {cut:,} more characters not shown]", cut


if __name__ == "__main__":
    mcp.run("stdio")
