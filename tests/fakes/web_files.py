"""A small web site on 127.0.0.1 serving files the tests put there, redirects, and 5xx on demand."""

from __future__ import annotations

import re

from tests.fakes.scripted import FakeService, Reply, Request


class FileSite(FakeService):
    """GET /files/NAME serves `files[NAME]`; GET /go/N redirects (302) to the N-th target given to redirect_to,
    as a link shortener does: the target is not in the link, so only a check of the redirect itself can stop it."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, tuple[str, bytes]] = {}
        self.links: list[str] = []
        self.route("GET", r"/files/(.+)", self._file)
        self.route("GET", r"/go/(\d+)", self._redirect)

    def put(self, name: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Serve `data` at /files/NAME and return its URL."""
        self.files[name] = (content_type, data)
        return f"{self.url}/files/{name}"

    def redirect_to(self, target: str) -> str:
        self.links.append(target)
        return f"{self.url}/go/{len(self.links) - 1}"

    def _file(self, request: Request, match: re.Match[str]) -> Reply:
        if match.group(1) not in self.files:
            return Reply(404, body=b"not found", content_type="text/plain")
        kind, data = self.files[match.group(1)]
        return Reply(200, body=data, content_type=kind)

    def _redirect(self, request: Request, match: re.Match[str]) -> Reply:
        index = int(match.group(1))
        if index >= len(self.links):
            return Reply(404, body=b"no such link", content_type="text/plain")
        return Reply(302, body=b"", headers={"Location": self.links[index]}, content_type="text/plain")
