"""A fake Jina reader (r.jina.ai): GET /URL or POST / with {"url": ...}; Authorization: Bearer KEY (optional,
as the keyless tier allows); Accept: application/json gives {"code": 200, "status": 20000, "data": {"title",
"description", "url", "content", "usage": {"tokens"}}, "meta": {...}}, otherwise the text form ("Title: ...
URL Source: ... Markdown Content: ..."). Errors as the reader sends them: {"data": null, "code", "name",
"status", "message", "readableMessage"} (401 bad key, 422 a page it cannot load, 429 with Retry-After)."""

from __future__ import annotations

from tests.fakes.base import FakeService, Reply, Seen, json_reply

KEY = "jina_test_key_0123456789abcdef"


def reader_error(code: int, name: str, status: int, message: str, **extra: object) -> Reply:
    body = {
        "data": None,
        "code": code,
        "name": name,
        "status": status,
        "message": message,
        "readableMessage": f"{name}: {message}",
        **extra,
    }
    headers = {"Retry-After": str(extra["retryAfter"])} if "retryAfter" in extra else {}
    return json_reply(body, code, **headers)


class FakeJina(FakeService):
    """`pages` maps a URL to (title, Markdown content): the pages the reader can load."""

    def __init__(self, key: str = KEY) -> None:
        super().__init__()
        self.key = key
        self.pages: dict[str, tuple[str, str]] = {}

    def route(self, request: Seen) -> Reply:
        auth = request.headers.get("authorization")
        if auth is not None and auth != f"Bearer {self.key}":
            return reader_error(401, "AuthenticationFailedError", 40103, "Invalid API key, please get a new one")
        if request.method == "POST" and request.path == "/":
            target = str(request.json().get("url") or "")
        else:
            target = request.path.lstrip("/")
        if target not in self.pages:
            return reader_error(
                422,
                "AssertionFailureError",
                42206,
                f"Failed to goto {target}: TimeoutError: Navigation timeout of 30000 ms exceeded",
            )
        title, content = self.pages[target]
        tokens = len(content.split())
        if "application/json" in request.headers.get("accept", ""):
            data = {"title": title, "description": "", "url": target, "content": content, "usage": {"tokens": tokens}}
            return json_reply({"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": tokens}}})
        return Reply(200, f"Title: {title}\n\nURL Source: {target}\n\nMarkdown Content:\n{content}")
