"""wiki: Wikipedia pages and their revision history over the MediaWiki Action API (no key).

Settings (environment): WIKI_API_URL (any MediaWiki's api.php; default English Wikipedia), WIKI_MAX_CHARS
(the most text a whole page returns), WIKI_USER_AGENT (Wikimedia asks clients to name themselves and a
contact), and webapi's HTTP_* (maxlag and rate-limit answers are retried like 429s).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from .helpers.common import number_setting, result, setting
from .helpers.webapi import USER_AGENT, Answer, HttpSettings, call, json_message

mcp = MCPServer("wiki", version="0.1.0", log_level="WARNING")

WIKI = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
SERVICE = "MediaWiki API"
API_URL = "https://en.wikipedia.org/w/api.php"
MAX_EXSENTENCES = 10  # TextExtracts' own limit; more sentences are cut here from the whole text
OPTIONS_SHOWN = 15
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_HEADING = re.compile(r"^=+ .* =+$")
HINT = "Read a revision with scrape_website (or read_file) at its URL."


@mcp.tool(annotations=WIKI, structured_output=False)
def wiki_get_page_content(entity: str, first_sentences: Annotated[int, Field(ge=0, le=1000)] = 10) -> CallToolResult:
    """Get the Wikipedia page of an entity (a person, place, concept, event) as plain text.

    entity: the page title or a name for it (redirects such as "UK" -> "United Kingdom" are followed).
    first_sentences: how many sentences from the start of the article to return (default 10, the
    introduction); 0 returns the whole article (long; cut at WIKI_MAX_CHARS characters).
    Returns the page title, the sentences (or the whole text) and the page URL. A name with several
    meanings (a disambiguation page) is a tool error listing the titles it may mean; a page that does
    not exist is a tool error listing similar titles. Call again with one of those titles.
    """
    name = _entity(entity)
    page = _one_page(
        {
            "titles": name,
            "redirects": "1",
            "prop": "extracts|info|pageprops",
            "inprop": "url",
            "ppprop": "disambiguation",
            "explaintext": "1",
            "exlimit": "1",
            **({"exsentences": str(first_sentences)} if 0 < first_sentences <= MAX_EXSENTENCES else {}),
        },
        name,
    )
    if "disambiguation" in (page.get("pageprops") or {}):
        raise ToolError(_disambiguation(page["title"]))
    text, cut = _text(str(page.get("extract") or ""), first_sentences)
    lines = [f"Page Title: {page['title']}", *_redirect_note(page)]
    if not text:
        lines.append("The page has no text extract (it may be a list, a table or a redirect stub).")
    elif first_sentences:
        lines.append(f"First {first_sentences} sentences (introduction): {text}")
    else:
        lines.append(f"Content: {text}")
    if cut:
        lines.append(f"[... {cut:,} more characters not shown (WIKI_MAX_CHARS); ask for first_sentences instead]")
    lines.append(f"URL: {page.get('fullurl') or _page_url(page['title'])}")
    data = {"title": page["title"], "url": page.get("fullurl"), "pageid": page.get("pageid"), "text": text}
    return result("\n\n".join(lines), {**data, "redirected_from": page.get("redirected_from"), "cut_chars": cut})


@mcp.tool(annotations=WIKI, structured_output=False)
def search_wiki_revision(
    entity: str,
    year: Annotated[int, Field(ge=2001, le=2100)],
    month: Annotated[int, Field(ge=1, le=12)],
    max_revisions: Annotated[int, Field(ge=1, le=500)] = 50,
) -> CallToolResult:
    """List the edits (revisions) of a Wikipedia page made in one month, oldest first.

    entity: the page title (redirects are followed). year, month: the month to look at (UTC).
    max_revisions: the most revisions to list (1-500, default 50).
    Returns each revision's id, time, editor, size and comment, with a URL that shows the page as it
    was right after that edit (read it with scrape_website). A month without edits gives the revision
    in force during that month instead. A missing page is a tool error listing similar titles.
    """
    name = _entity(entity)
    start = dt.datetime(year, month, 1, tzinfo=dt.UTC)
    if start > dt.datetime.now(dt.UTC):
        raise ToolError(f"{year}-{month:02d} has not begun yet: ask for a past month")
    end = start.replace(day=calendar.monthrange(year, month)[1], hour=23, minute=59, second=59)
    params = {"titles": name, "redirects": "1", "prop": "revisions|info", "inprop": "url"}
    revisions = {"rvprop": "ids|timestamp|user|comment|size", "rvlimit": str(max_revisions)}
    page, answer = _page_and_answer(
        {**params, **revisions, "rvstart": _iso(start), "rvend": _iso(end), "rvdir": "newer"}, name
    )
    found = list(page.get("revisions") or [])
    period = f"{year}-{month:02d}"
    lines = [f"Page Title: {page['title']}", *_redirect_note(page), f"Revision Period: {period}"]
    if not found:
        before, _ = _page_and_answer({**params, **revisions, "rvlimit": "1", "rvstart": _iso(start)}, name)
        found = list(before.get("revisions") or [])
        if not found:
            raise ToolError(f"{page['title']!r} had no revisions by {period}: the page was created later")
        lines.append(f"No edits in {period}; the revision in force during that month was made before it:")
    else:
        lines.append(f"Total Revisions Found: {len(found)}" + (" (more exist)" if "continue" in answer else ""))
    lines.append("Revisions:\n" + "\n".join(_revision_line(i, r, page["title"]) for i, r in enumerate(found, 1)))
    if "continue" in answer:
        lines.append(f"There were more than {max_revisions} edits in {period}: raise max_revisions to see more.")
    lines.append(HINT)
    rows = [{**r, "url": _revision_url(page["title"], r.get("revid"))} for r in found]
    data = {"title": page["title"], "period": period, "revisions": rows, "more": "continue" in answer}
    return result("\n\n".join(lines), data)


# ---------------------------------------------------------------------------------------------- the API


def _api_url() -> str:
    return setting("WIKI_API_URL") or API_URL


def _query(params: Mapping[str, str]) -> Any:
    """One action=query request (JSON, formatversion 2); MediaWiki's error objects become tool errors."""
    answer = call(
        SERVICE,
        "GET",
        _api_url(),
        HttpSettings.from_env(),
        describe=_describe,
        busy=_busy,
        params={"action": "query", "format": "json", "formatversion": "2", **params},
        headers={"User-Agent": setting("WIKI_USER_AGENT") or USER_AGENT},
    )
    data = answer.json(SERVICE)
    if not isinstance(data, Mapping):
        raise ToolError(f"{SERVICE} sent a malformed answer: not a JSON object")
    error = data.get("error")
    if isinstance(error, Mapping):
        raise ToolError(f"{SERVICE} error {error.get('code', '?')}: {error.get('info', 'no details')}")
    if not isinstance(data.get("query"), Mapping):
        raise ToolError(f"{SERVICE} sent a malformed answer: no query result")
    return data


def _page_and_answer(params: Mapping[str, str], name: str) -> tuple[dict[str, Any], Any]:
    """The one page a titles= query asked about (missing and invalid titles as tool errors), and the answer."""
    data = _query(params)
    pages = data["query"].get("pages")
    if not isinstance(pages, list) or not pages or not isinstance(pages[0], Mapping):
        raise ToolError(f"{SERVICE} sent a malformed answer: no page in the query result")
    page = dict(pages[0])
    if page.get("invalid"):
        raise ToolError(f"{name!r} is not a valid page title: {page.get('invalidreason', 'no reason given')}")
    if page.get("missing") is not None and page.get("missing") is not False:
        raise ToolError(_missing(name))
    redirects = data["query"].get("redirects") or []
    if redirects and isinstance(redirects[0], Mapping):
        page["redirected_from"] = redirects[0].get("from")
    return page, data


def _one_page(params: Mapping[str, str], name: str) -> dict[str, Any]:
    return _page_and_answer(params, name)[0]


def _describe(answer: Answer) -> str:
    info = json_message(answer, "error.info")
    return f"HTTP {answer.status}" + (f": {info}" if info else "")


def _busy(answer: Answer) -> str | None:
    """MediaWiki says "try later" with HTTP 200: maxlag (with Retry-After) or a rate limit."""
    if b'"error"' not in answer.body[:200]:
        return None
    code = json_message(answer, "error.code")
    if code in ("maxlag", "ratelimited"):
        return f"{code}: {json_message(answer, 'error.info') or 'the wiki asks to try later'}"
    return None


# ---------------------------------------------------------------------------------------------- answers


def _entity(entity: str) -> str:
    name = " ".join(entity.split())
    if not name:
        raise ToolError("entity is empty: give a page title or a name")
    return name


def _missing(name: str) -> str:
    """No page by that title: the reason, with up to five similar titles from a search."""
    data = _query({"list": "search", "srsearch": name, "srlimit": "5", "srprop": "", "srinfo": "suggestion"})
    titles = [str(hit.get("title")) for hit in data["query"].get("search") or [] if isinstance(hit, Mapping)]
    suggestion = (data["query"].get("searchinfo") or {}).get("suggestion")
    if titles:
        return f"no Wikipedia page is titled {name!r}; similar titles: {'; '.join(titles)}. Call again with one of them"
    if suggestion:
        return f"no Wikipedia page is titled {name!r} and none is similar; did you mean {suggestion!r}?"
    return f"no Wikipedia page is titled {name!r} and none is similar: try another name"


def _disambiguation(title: str) -> str:
    """A disambiguation page: the reason, with the titles it links to."""
    page = _one_page({"titles": title, "prop": "links", "plnamespace": "0", "pllimit": "50"}, title)
    options = [str(link.get("title")) for link in page.get("links") or [] if isinstance(link, Mapping)]
    shown = "; ".join(options[:OPTIONS_SHOWN]) + ("; ..." if len(options) > OPTIONS_SHOWN else "")
    meanings = shown or "no titles listed"
    return f"{title!r} is a disambiguation page with several meanings: {meanings}. Call again with one of them"


def _text(extract: str, sentences: int) -> tuple[str, int]:
    """The sentences asked for (or the whole text up to WIKI_MAX_CHARS) and how many characters were cut."""
    text = extract.strip()
    if sentences > MAX_EXSENTENCES:  # headings are not sentences; paragraphs run on
        lines = (line.strip() for line in text.splitlines())
        text = " ".join(_SENTENCE_END.split(" ".join(x for x in lines if x and not _HEADING.match(x)))[:sentences])
    if sentences:
        return text, 0
    limit = int(number_setting("WIKI_MAX_CHARS", 100_000, minimum=100))
    return (text[:limit], len(text) - limit) if len(text) > limit else (text, 0)


def _redirect_note(page: Mapping[str, Any]) -> list[str]:
    source = page.get("redirected_from")
    return [f"(Redirected from {source!r})"] if source else []


def _revision_line(index: int, revision: Mapping[str, Any], title: str) -> str:
    when = str(revision.get("timestamp", "")).replace("T", " ").replace("Z", " UTC")
    size = revision.get("size")
    details = [f"by {revision.get('user', 'an unknown editor')}"] + (
        [f"{size:,} bytes"] if isinstance(size, int) else []
    )
    comment = str(revision.get("comment") or "").strip()
    line = f"{index}. Revision ID: {revision.get('revid')} ({when}) {', '.join(details)}"
    return line + (f": {comment}" if comment else "") + f"\n   URL: {_revision_url(title, revision.get('revid'))}"


def _index_url() -> str:
    api = _api_url()
    return api[: -len("api.php")] + "index.php" if api.endswith("api.php") else api


def _revision_url(title: str, revid: Any) -> str:
    return f"{_index_url()}?title={quote(title.replace(' ', '_'))}&oldid={revid}"


def _page_url(title: str) -> str:
    return f"{_index_url()}?title={quote(title.replace(' ', '_'))}"


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


if __name__ == "__main__":
    mcp.run("stdio")
