"""search: web search for an agent: Google results through the Serper API, or a keyless metasearch (ddgs).

Results pass miroctl's URL rules (MIROCTL_URL_BLOCK, by default the Hugging Face dataset and space pages)
before the model sees them, and the answer says how many were dropped. A quoted query that finds nothing
is tried once more without its quotes, as the seeds do. Settings (environment): SERPER_API_KEY,
SERPER_BASE_URL, SEARCH_BACKEND (auto, serper or ddgs), DDGS_BACKEND (the engines ddgs asks), DDGS_PROXY and
DDGS_CA_BUNDLE (a proxy for ddgs, and the CA of one that inspects TLS), and webapi's HTTP_*.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from miroctl.policy import urls

from .helpers.common import result, setting
from .helpers.webapi import Answer, HttpSettings, call, json_message, one_line

mcp = MCPServer("search", version="0.1.0", log_level="WARNING")

SEARCH = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
SERPER_URL = "https://google.serper.dev"
INSTALL_HINT = "pip install 'miroctl[research]'"
QUOTES = '"“”„'  # typographic quotes count too
SECTIONS = ("organic", "peopleAlsoAsk", "topStories", "news", "images", "videos", "places")
SINGLE_SECTIONS = ("knowledgeGraph", "answerBox")
DDGS_TIMELIMITS = {"qdr:d": "d", "qdr:w": "w", "qdr:m": "m", "qdr:y": "y"}


@dataclass
class Found:
    """One backend's answer, reshaped like Serper's: sections of results, and notes for the model."""

    backend: str
    sections: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@mcp.tool(annotations=SEARCH, structured_output=False)
def google_search(
    q: str,
    gl: str = "us",
    hl: str = "en",
    location: str | None = None,
    num: Annotated[int, Field(ge=1, le=100)] = 10,
    tbs: str | None = None,
    page: Annotated[int, Field(ge=1, le=100)] = 1,
) -> CallToolResult:
    """Search the web (Google through the Serper API; a keyless metasearch when no key is set).

    q: the search words; Google operators work ("exact phrase", site:example.org, filetype:pdf).
    gl: country of the results (us, uk, cn, de, ...). hl: interface language (en, zh, es, ...).
    location: a city-level place, e.g. "SoHo, New York, United States".
    num: results per page (1-100). page: which page of results (1 = the first).
    tbs: a time filter: qdr:h (past hour), qdr:d (day), qdr:w (week), qdr:m (month), qdr:y (year).

    Returns JSON: the organic results (title, link, snippet, position, date when known), and when
    Google has them a knowledge graph, an answer box, "people also ask" and related searches; plus
    "backend" (serper or ddgs) and "dropped_by_url_rules", the number of results the URL rules removed.
    A quoted query with no results is retried once without the quotes (said in "notes"). No results at
    all, a refused key or an unreachable service is a tool error saying why.
    """
    query = q.strip()
    if not query:
        raise ToolError("q is empty: give the words to search for")
    rules = urls.from_env()
    found, dropped = _filtered(_backend()(query, gl, hl, location, num, tbs, page), rules)
    unquoted = " ".join(query.translate({ord(c): " " for c in QUOTES}).split())
    if not found.sections.get("organic") and unquoted and any(c in query for c in QUOTES):
        retry, dropped_again = _filtered(_backend()(unquoted, gl, hl, location, num, tbs, page), rules)
        retry.notes.insert(0, f"No results for {query}; these are the results for {unquoted} (without quotes).")
        found, dropped, query = retry, dropped + dropped_again, unquoted
    if not found.sections.get("organic"):
        raise ToolError(_nothing_found(query, dropped))
    data = {"backend": found.backend, "query": query, **found.sections, "dropped_by_url_rules": dropped}
    if found.notes:
        data["notes"] = found.notes
    return result(json.dumps(data, ensure_ascii=False, indent=1), data)


def _nothing_found(query: str, dropped: int) -> str:
    if dropped:
        return f"all {dropped} results for {query!r} were dropped by the URL rules: search for other pages"
    return f"no results for {query!r}: try other or fewer words"


# ---------------------------------------------------------------------------------------------- backends


Backend = Callable[[str, str, str, str | None, int, str | None, int], Found]


def _backend() -> Backend:
    """The search function to use: Serper with a key, else the keyless ddgs (SEARCH_BACKEND forces one)."""
    chosen = (setting("SEARCH_BACKEND") or "auto").lower()
    if chosen not in ("auto", "serper", "ddgs"):
        raise ToolError(f"the server setting SEARCH_BACKEND must be auto, serper or ddgs, got {chosen!r}")
    if chosen == "serper" or (chosen == "auto" and setting("SERPER_API_KEY")):
        return _serper
    return _ddgs


def _serper(q: str, gl: str, hl: str, location: str | None, num: int, tbs: str | None, page: int) -> Found:
    """One Serper search: POST {SERPER_BASE_URL}/search with the key in X-API-KEY."""
    key = setting("SERPER_API_KEY")
    if key is None:
        raise ToolError("SERPER_API_KEY is not set (SEARCH_BACKEND=serper): set it, or use SEARCH_BACKEND=auto")
    body: dict[str, Any] = {"q": q, "gl": gl, "hl": hl, "num": num, "page": page}
    body.update({name: value for name, value in (("location", location), ("tbs", tbs)) if value})
    base = (setting("SERPER_BASE_URL") or SERPER_URL).rstrip("/")
    answer = call(
        "Serper",
        "POST",
        f"{base}/search",
        HttpSettings.from_env(),
        describe=_serper_error,
        json=body,
        headers={"X-API-KEY": key, "Content-Type": "application/json"},
    )
    data = answer.json("Serper")
    if not isinstance(data, Mapping) or not isinstance(data.get("organic", []), list):
        raise ToolError("Serper sent a malformed answer: no list of organic results")
    sections = {name: data[name] for name in ("searchParameters", *SINGLE_SECTIONS, *SECTIONS) if name in data}
    sections["relatedSearches"] = data.get("relatedSearches") or []
    sections.setdefault("organic", [])
    return Found("serper", sections)


def _serper_error(answer: Answer) -> str:
    message = json_message(answer, "message", "error")
    status = f"HTTP {answer.status}" + (f": {message}" if message else "")
    if answer.status in (401, 403):
        return f"the key was refused ({status}): check SERPER_API_KEY"
    return status


def _ddgs(q: str, gl: str, hl: str, location: str | None, num: int, tbs: str | None, page: int) -> Found:
    """One keyless search with ddgs (several public engines, no key), reshaped like Serper's answer."""
    try:
        import ddgs
        import ddgs.exceptions
    except ImportError:
        raise ToolError(
            f"SERPER_API_KEY is not set and the keyless backend needs the ddgs package: {INSTALL_HINT} "
            "(or set SERPER_API_KEY)"
        ) from None
    notes = ["SERPER_API_KEY is not set: results come from the keyless ddgs metasearch, not from Google."]
    timelimit = _ddgs_timelimit(tbs, notes)
    if location:
        notes.append(f"location {location!r} is not supported by the keyless backend and was ignored.")
    options = {"region": f"{gl.lower()}-{hl.lower()}", "timelimit": timelimit, "max_results": num, "page": page}
    hits = _ddgs_hits(ddgs, q, options)
    organic = [
        {"title": h.get("title", ""), "link": h.get("href", ""), "snippet": h.get("body", ""), "position": i}
        for i, h in enumerate(hits, 1)
    ]
    return Found("ddgs", {"organic": organic}, notes)


def _ddgs_hits(ddgs: Any, q: str, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """ddgs's text results; "no results" is an empty list, other failures are tool errors."""
    if os.environ.get("DDGS_PROXY") == "":
        del os.environ["DDGS_PROXY"]  # ddgs would take an empty proxy setting as a proxy URL
    timeout = HttpSettings.from_env(timeout=10.0).timeout
    verify = setting("DDGS_CA_BUNDLE") or True
    engines = ddgs.DDGS(proxy=setting("DDGS_PROXY"), timeout=max(1, round(timeout)), verify=verify)
    try:
        hits = engines.text(q, safesearch="moderate", backend=setting("DDGS_BACKEND") or "auto", **options)
    except ddgs.exceptions.RatelimitException:
        raise ToolError("keyless search (ddgs) was rate limited: try later, or set SERPER_API_KEY") from None
    except ddgs.exceptions.TimeoutException:
        raise ToolError(f"keyless search (ddgs): the engines did not answer within {timeout:g}s") from None
    except ddgs.exceptions.DDGSException as exc:
        if "no results" in str(exc).lower():
            return []
        raise ToolError(f"keyless search (ddgs) failed: {one_line(str(exc), 240)}") from None
    return [dict(hit) for hit in hits if isinstance(hit, Mapping)]


def _ddgs_timelimit(tbs: str | None, notes: list[str]) -> str | None:
    if not tbs:
        return None
    if tbs == "qdr:h":
        notes.append("past hour (qdr:h) is not available from the keyless backend: the past day was searched.")
        return "d"
    if tbs not in DDGS_TIMELIMITS:
        notes.append(f"time filter {tbs!r} is not supported by the keyless backend and was ignored.")
    return DDGS_TIMELIMITS.get(tbs)


# ---------------------------------------------------------------------------------------------- URL rules


def _filtered(found: Found, rules: urls.UrlRules) -> tuple[Found, int]:
    """The results without those the URL rules block (a URL anywhere in an entry blocks it)."""
    dropped = 0
    for name in SECTIONS:
        entries = found.sections.get(name)
        if isinstance(entries, list):
            kept = [entry for entry in entries if rules.first_blocked(entry) is None]
            dropped += len(entries) - len(kept)
            found.sections[name] = kept
    for name in SINGLE_SECTIONS:
        if name in found.sections and rules.first_blocked(found.sections[name]) is not None:
            del found.sections[name]
            dropped += 1
    return found, dropped


if __name__ == "__main__":
    mcp.run("stdio")
