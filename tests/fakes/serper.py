"""A fake Serper (google.serper.dev): POST /search with an X-API-KEY header and a JSON body, answered with
Serper's JSON (searchParameters, organic, peopleAlsoAsk, relatedSearches, knowledgeGraph, credits) and its
errors ({"message": ..., "statusCode": ...}: 403 for a bad key, 400 for a bad request)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.fakes.base import FakeService, Reply, Seen, json_reply

KEY = "serper-test-key-0123456789"


def organic(title: str, link: str, snippet: str = "", **extra: Any) -> dict[str, Any]:
    return {"title": title, "link": link, "snippet": snippet or f"About {title}.", **extra}


class FakeSerper(FakeService):
    """`index` maps a query to its organic results; `extras` to other sections (knowledgeGraph, ...)."""

    def __init__(self, key: str = KEY) -> None:
        super().__init__()
        self.key = key
        self.index: dict[str, list[dict[str, Any]]] = {}
        self.extras: dict[str, dict[str, Any]] = {}

    def route(self, request: Seen) -> Reply:
        if request.path != "/search" or request.method != "POST":
            return json_reply({"message": "Not found", "statusCode": 404}, 404)
        if request.headers.get("x-api-key") != self.key:
            return json_reply({"message": "Unauthorized.", "statusCode": 403}, 403)
        try:
            body = request.json()
        except ValueError:
            return json_reply({"message": "Invalid JSON body", "statusCode": 400}, 400)
        if not isinstance(body, Mapping) or not str(body.get("q") or "").strip():
            return json_reply({"message": "Missing query parameter: q", "statusCode": 400}, 400)
        return json_reply(self.results(body))

    def results(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Serper's answer: the page of organic results asked for, numbered, with searchParameters."""
        query = str(body["q"])
        num, page = int(body.get("num", 10)), int(body.get("page", 1))
        hits = self.index.get(query, [])[(page - 1) * num : page * num]
        parameters = {"q": query, "gl": body.get("gl", "us"), "hl": body.get("hl", "en"), "type": "search"}
        parameters.update({k: body[k] for k in ("num", "page", "location", "tbs", "autocorrect") if k in body})
        answer: dict[str, Any] = {
            "searchParameters": {**parameters, "engine": "google"},
            "organic": [{**hit, "position": (page - 1) * num + i} for i, hit in enumerate(hits, 1)],
        }
        answer.update(self.extras.get(query, {}))
        if hits:
            answer.setdefault("relatedSearches", [{"query": f"{query} meaning"}])
        answer["credits"] = 1
        return answer
