"""scrape: read a web page as Markdown, through the Jina reader (JINA_API_KEY) or fetched directly.

When the reader fails (a refused key, a rate limit that outlasts the retries, a page it cannot load)
or no key is set, the page is fetched directly and converted with MarkItDown; the answer says which.
URL rules are checked on the URL and on every redirect of a direct fetch. Settings (environment):
JINA_API_KEY, JINA_BASE_URL, SCRAPE_BACKEND (auto, jina or direct), SCRAPE_MAX_BYTES, SCRAPE_MAX_CHARS,
DEMO_MODE (1: results cut at 20,000 characters, as in the seeds), and webapi's HTTP_*.
scrape_and_extract_info (MiroThinker's jina_scrape_llm_summary) reads the page the same way, then asks one
model (an OpenAI-compatible chat completions endpoint) for what the question needs: SUMMARY_LLM_BASE_URL,
SUMMARY_LLM_API_KEY and SUMMARY_LLM_MODEL_NAME as upstream names them, EXTRACT_MAX_CHARS (the most page text
the model is given), and models.py's MODEL_TIMEOUT and MODEL_MAX_RETRIES.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BeforeValidator, WithJsonSchema

from .helpers import models
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
EXTRACT = READ.model_copy(update={"idempotent_hint": False})  # a model's answer differs from call to call
JINA_URL = "https://r.jina.ai"
DEMO_CHARS = 20_000  # the seeds' DEMO_SCRAPE_MAX_LENGTH
DEMO_ROOM = 1_000  # room for the title, URL and notes: the whole answer stays within DEMO_CHARS
YOUTUBE = ("youtube.com/watch", "youtube.com/shorts", "youtube.com/live", "youtu.be/")
EXTRACT_CHARS = 409_600  # upstream's limit on the page text given to the model
EXTRACT_TOKENS = 8192
EXTRACT_PROMPT = """Read the content below, taken from {url}, and extract what this request asks for:

{request}

Quote the relevant passages exactly where you can, with the numbers, names and dates they give. Say plainly
if the content does not hold the answer, and what it holds instead. Answer with the extracted information only.

CONTENT:
{content}"""


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


def _headers(value: object) -> object:
    """custom_headers as a JSON object in a string (what the schema says, as every model provider can be told
    it) or as an object (what MiroThinker's agents send); anything else is left for validation to refuse."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else None
        except ValueError:
            raise ValueError(f"custom_headers must be a JSON object of header names to values: {EXAMPLE}") from None
    return value


# A free-form map cannot be declared to Gemini (it refuses the whole tool list), so the schema says string; the
# server takes an object all the same, from a client that sends one without checking it against the schema.
EXAMPLE = '{"Accept-Language": "fr"}'
Headers = Annotated[
    dict[str, str] | None,
    BeforeValidator(_headers),
    WithJsonSchema(
        {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": f"a JSON object of header names to values, e.g. {EXAMPLE}",
        }
    ),
]


@mcp.tool(annotations=EXTRACT, structured_output=False)
async def scrape_and_extract_info(url: str, info_to_extract: str, custom_headers: Headers = None) -> CallToolResult:
    """Read a web page, PDF, code or text file at a URL, then have a model extract the information asked for.

    url: the address (https:// is assumed without a scheme). info_to_extract: what to find, usually a
    question. custom_headers: extra HTTP headers for the page's request through the Jina reader, as a JSON
    object of names to values.
    Prefer this to scrape_website for long pages and PDFs: only the extracted information comes back.

    Returns JSON: success, url, extracted_info, scrape_stats (line and character counts, whether the whole
    page was given to the model), model_used and tokens_used. A blocked or unreachable page, a missing
    model endpoint (SUMMARY_LLM_BASE_URL) or a failed model request is a tool error saying why.
    """
    if not info_to_extract.strip():
        raise ToolError("info_to_extract is empty: say what to find on the page")
    notes: list[str] = []
    target = _target(url, notes)
    endpoint = _summary_endpoint()
    page = _scrape(target, notes, dict(custom_headers or {}))
    content = page.content.strip()
    limit = int(number_setting("EXTRACT_MAX_CHARS", EXTRACT_CHARS, minimum=1000))
    given, cut = _cut_at(content, limit)
    extracted, model, tokens = await _extract(endpoint, target, info_to_extract, given)
    stats = {
        "line_count": content.count("\n") + 1,
        "char_count": len(content),
        "last_char_line": given.count("\n") + 1,
        "all_content_displayed": cut == 0,
    }
    data = {
        "success": True,
        "url": target,
        "extracted_info": extracted,
        "error": "",
        "scrape_stats": stats,
        "model_used": model,
        "tokens_used": tokens,
        "fetched_by": page.fetched_by,
        "notes": notes,
    }
    return result(json.dumps(data, ensure_ascii=False, indent=1), data)


def _summary_endpoint() -> models.Endpoint:
    """The model that extracts: upstream's SUMMARY_LLM_BASE_URL is the chat completions URL itself."""
    url = setting("SUMMARY_LLM_BASE_URL")
    if url is None:
        raise ToolError("SUMMARY_LLM_BASE_URL is not set: scrape_and_extract_info needs a model to extract with")
    base = url.rstrip("/").removesuffix("/chat/completions")
    return models.Endpoint(
        "OpenAI-compatible", setting("SUMMARY_LLM_API_KEY"), base, "SUMMARY_LLM_API_KEY", "SUMMARY_LLM_BASE_URL"
    )


async def _extract(endpoint: models.Endpoint, url: str, request: str, content: str) -> tuple[str, str, int | None]:
    """One chat completion: the extracted text, the model that answered and the tokens used."""
    model = setting("SUMMARY_LLM_MODEL_NAME") or "gpt-4o-mini"
    prompt = EXTRACT_PROMPT.format(url=url, request=request.strip(), content=content)
    try:
        async with models.openai_client(endpoint) as client:
            response = await client.chat.completions.create(
                model=model, max_tokens=EXTRACT_TOKENS, messages=[{"role": "user", "content": prompt}]
            )
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    answer = models.chat_text(response, endpoint).strip()
    if not answer:
        raise ToolError(f"{endpoint.where} returned an empty answer (model {model}): ask again, or rephrase")
    usage = getattr(response, "usage", None)
    tokens = getattr(usage, "total_tokens", None)
    return answer, str(getattr(response, "model", None) or model), tokens if isinstance(tokens, int) else None


def _target(url: str, notes: list[str]) -> str:
    return page_url(url, notes, verb="read", done="read", refusal="it may not be read")


def _scrape(target: str, notes: list[str], headers: Mapping[str, str] | None = None) -> Scraped:
    """The reader when configured, with the direct fetch as the fallback; both failures said together."""
    backend = (setting("SCRAPE_BACKEND") or "auto").lower()
    if backend not in ("auto", "jina", "direct"):
        raise ToolError(f"the server setting SCRAPE_BACKEND must be auto, jina or direct, got {backend!r}")
    if headers:
        notes.append("custom_headers are sent with the Jina reader's request only, not with a direct fetch")
    if backend == "direct" or (backend == "auto" and not setting("JINA_API_KEY")):
        reason = "SCRAPE_BACKEND=direct" if backend == "direct" else "JINA_API_KEY is not set"
        return _direct(target, f"a direct fetch converted with MarkItDown ({reason})")
    try:
        return _jina(target, headers or {})
    except ToolError as failure:
        reader = str(failure)
    try:
        page = _direct(target, "a direct fetch converted with MarkItDown (the Jina reader failed)")
    except ToolError as failure:
        raise ToolError(f"{reader}; the direct fetch failed too: {failure}") from None
    notes.append(reader)
    return page


def _jina(target: str, extra: Mapping[str, str] | None = None) -> Scraped:
    """POST the URL to the Jina reader (JSON in and out); the key, when set, as a bearer token."""
    key = setting("JINA_API_KEY")
    headers = {**(extra or {}), "Accept": "application/json", "Content-Type": "application/json"}
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
