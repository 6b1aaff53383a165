"""A plain web site for the direct fetches: pages (and redirects) by path, anything else 404."""

from __future__ import annotations

from tests.fakes.base import FakeService, Reply, Seen


def html(body: str, title: str = "Fixture") -> Reply:
    page = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    return Reply(200, page.encode(), {"Content-Type": "text/html; charset=utf-8"})


def redirect(location: str) -> Reply:
    return Reply(302, b"", {"Location": location})


class FakeSite(FakeService):
    def __init__(self) -> None:
        super().__init__()
        self.pages: dict[str, Reply] = {}

    def route(self, request: Seen) -> Reply:
        return self.pages.get(request.path, Reply(404, "Not Found"))
