"""A fake MediaWiki Action API (/w/api.php, format=json, formatversion=2) as Wikipedia documents it:
action=query with titles (normalized, redirects=1), prop=extracts (TextExtracts: explaintext, exintro,
exsentences 1-10), info (inprop=url), pageprops (ppprop=disambiguation), links, revisions (rvprop, rvlimit,
rvstart/rvend/rvdir, continue), list=search (srsearch, srlimit, srinfo=suggestion); missing and invalid
titles; errors as {"error": {"code", "info", "docref"}, "servedby"}."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.base import FakeService, Reply, Seen, json_reply

DOCREF = "See https://en.wikipedia.org/w/api.php for API usage."
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass
class Revision:
    revid: int
    timestamp: str  # ISO 8601 UTC, e.g. 2024-05-03T10:00:00Z
    user: str = "Editor"
    comment: str = ""
    size: int = 1000


@dataclass
class Page:
    title: str
    text: str  # plain text; the intro is everything before the first "\n\n== "
    pageid: int = 0
    disambiguation: bool = False
    links: list[str] = field(default_factory=list)
    revisions: list[Revision] = field(default_factory=list)  # oldest first


class FakeMediaWiki(FakeService):
    """Pages by title, redirects (from -> to), and a search suggestion."""

    def __init__(self, site: str | None = None) -> None:
        super().__init__()
        self.site = site  # the wiki's public address in page URLs (default: where the fake listens)
        self.pages: dict[str, Page] = {}
        self.redirects: dict[str, str] = {}
        self.suggestion: str | None = None

    def add(self, page: Page) -> Page:
        page.pageid = page.pageid or 1000 + len(self.pages)
        self.pages[page.title] = page
        return page

    def route(self, request: Seen) -> Reply:
        if request.path != "/w/api.php":
            return Reply(404, "Not Found")
        q = request.query
        if q.get("action") == "opensearch":
            return self._opensearch(q)
        if q.get("format") != "json":
            return Reply(400, "the fake answers format=json only")
        if q.get("action") != "query":
            return _error("badvalue", f'Unrecognized value for parameter "action": {q.get("action")}.')
        answer: dict[str, Any] = {"batchcomplete": True, "query": {}}
        if "titles" in q:
            self._titles(q, answer)
        if q.get("list") == "search":
            self._search(q, answer)
        return json_reply(answer if q.get("formatversion") == "2" else _version1(answer))

    def url(self, title: str) -> str:
        return f"{self.site or self.base}/wiki/{title.replace(' ', '_')}"

    def _opensearch(self, q: dict[str, str]) -> Reply:
        """action=opensearch: [search, [titles], [descriptions], [urls]] (its format is JSON by default)."""
        words = q.get("search", "").lower().split()
        hits = sorted(p.title for p in self.pages.values() if all(w in p.title.lower() for w in words))
        hits = hits[: int(q.get("limit", 10))]
        return json_reply([q.get("search", ""), hits, [""] * len(hits), [self.url(t) for t in hits]])

    # ------------------------------------------------------------------------------------------ titles

    def _titles(self, q: dict[str, str], answer: dict[str, Any]) -> None:
        query = answer["query"]
        pages = []
        for given in q["titles"].split("|"):
            title = _normalise(given)
            if title != given:
                query.setdefault("normalized", []).append({"fromencoded": False, "from": given, "to": title})
            if q.get("redirects") is not None and title in self.redirects:
                query.setdefault("redirects", []).append({"from": title, "to": self.redirects[title]})
                title = self.redirects[title]
            pages.append(self._page(title, q, answer))
        query["pages"] = pages

    def _page(self, title: str, q: dict[str, str], answer: dict[str, Any]) -> dict[str, Any]:
        bad = re.search(r"[\[\]{}<>|#]", title)
        if bad:
            reason = f'The requested page title contains invalid characters: "{bad.group(0)}".'
            return {"title": title, "invalidreason": reason, "invalid": True}
        page = self.pages.get(title)
        if page is None:
            return {"ns": 0, "title": title, "missing": True}
        entry: dict[str, Any] = {"pageid": page.pageid, "ns": 0, "title": page.title}
        props = set(q.get("prop", "").split("|"))
        if "extracts" in props:
            entry["extract"] = self._extract(page, q, answer)
        if "info" in props and "url" in q.get("inprop", ""):
            url = self.url(page.title)
            entry.update(fullurl=url, editurl=f"{url}?action=edit", canonicalurl=url)
        if "pageprops" in props and page.disambiguation:
            entry["pageprops"] = {"disambiguation": ""}
        if "links" in props:
            entry["links"] = [{"ns": 0, "title": t} for t in page.links[: int(q.get("pllimit", 10))]]
        if "revisions" in props:
            self._revisions(page, q, entry, answer)
        return entry

    def _extract(self, page: Page, q: dict[str, str], answer: dict[str, Any]) -> str:
        text = page.text.split("\n\n== ")[0] if "exintro" in q else page.text
        if "exsentences" in q:
            count = int(q["exsentences"])
            if count > 10:
                answer.setdefault("warnings", {})["extracts"] = {"warnings": "exsentences may not be over 10"}
                count = 10
            text = " ".join(_SENTENCE_END.split(text)[:count])
        return text

    def _revisions(self, page: Page, q: dict[str, str], entry: dict[str, Any], answer: dict[str, Any]) -> None:
        newer = q.get("rvdir", "older") == "newer"
        start, end = q.get("rvstart"), q.get("rvend")
        low, high = (start, end) if newer else (end, start)
        chosen = [
            r for r in page.revisions if (low is None or r.timestamp >= low) and (high is None or r.timestamp <= high)
        ]
        chosen = chosen if newer else list(reversed(chosen))
        limit = 500 if q.get("rvlimit") == "max" else int(q.get("rvlimit", 1))
        fields = set(q.get("rvprop", "ids|timestamp|flags|comment|user").split("|"))
        previous = {r.revid: p.revid for p, r in zip(page.revisions, page.revisions[1:])}
        entry["revisions"] = [_revision(r, fields, previous.get(r.revid, 0)) for r in chosen[:limit]]
        if len(chosen) > limit:
            nxt = chosen[limit]
            answer["continue"] = {
                "rvcontinue": f"{nxt.timestamp.replace('-', '').replace(':', '')}|{nxt.revid}",
                "continue": "||",
            }
            answer.pop("batchcomplete", None)

    # ------------------------------------------------------------------------------------------ search

    def _search(self, q: dict[str, str], answer: dict[str, Any]) -> None:
        words = q.get("srsearch", "").lower().split()
        hits = [p for p in self.pages.values() if any(w in p.title.lower() for w in words)]
        limit = int(q.get("srlimit", 10))
        answer["query"]["search"] = [{"ns": 0, "title": p.title, "pageid": p.pageid} for p in hits[:limit]]
        if "suggestion" in q.get("srinfo", "") and self.suggestion:
            answer["query"]["searchinfo"] = {"suggestion": self.suggestion}


def _version1(answer: dict[str, Any]) -> dict[str, Any]:
    """The same answer in formatversion 1: pages keyed by id (missing ones by -1, -2, ...), true as ""."""
    query = dict(answer["query"])
    if "pages" in query:
        keyed = {}
        for index, page in enumerate(query["pages"], 1):
            flags = {k: "" for k in ("missing", "invalid") if page.get(k) is True}
            keyed[str(page.get("pageid", -index))] = {**page, **flags}
        query["pages"] = keyed
    return {**answer, "query": query, **({"batchcomplete": ""} if answer.get("batchcomplete") else {})}


def _normalise(title: str) -> str:
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


def _revision(revision: Revision, fields: set[str], parent: int) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if "ids" in fields:
        entry.update(revid=revision.revid, parentid=parent)
    for name in ("user", "timestamp", "size", "comment"):
        if name in fields:
            entry[name] = getattr(revision, name)
    return entry


def _error(code: str, info: str) -> Reply:
    return json_reply({"error": {"code": code, "info": info, "docref": DOCREF}, "servedby": "mw-api-fake"})
