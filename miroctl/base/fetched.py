"""The envelope of one resource read or prompt fetch (`read --json`, `prompt --json`).

In base, not with the fetching itself, so the warm client can rebuild it from a gateway's document
without the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from miroctl.base.errors import ErrorKindName
from miroctl.base.models import Envelope, Failure


@dataclass
class Fetched(Envelope):
    """The envelope of one resource read or prompt fetch: its `content`, or why there is none."""

    server_name: str | None
    what: str  # resource | prompt
    name: str  # the resource's URI, or the prompt's name
    content: list[dict[str, object]] = field(default_factory=list)  # resource contents, or prompt messages
    description: str | None = None
    error: str | None = None
    error_kind: ErrorKindName | None = None
    hint: str | None = None
    failure: Failure | None = None
    duration_ms: float = 0.0

    def blocks(self) -> list[dict[str, object]]:
        """The content as MCP content blocks (a resource's contents become embedded resources)."""
        if self.what == "resource":
            return [{"type": "resource", "resource": item} for item in self.content]
        return [content if isinstance(content := message.get("content"), dict) else {} for message in self.content]

    def to_dict(self) -> dict[str, object]:
        key, items = ("uri", "contents") if self.what == "resource" else ("prompt", "messages")
        body: dict[str, object] = {"schema": f"miroctl.{self.what}/1", "server_name": self.server_name, key: self.name}
        if self.ok:
            body[items] = self.content
            if self.what == "prompt":
                body["description"] = self.description
        else:
            body.update(error=self.error, error_kind=self.error_kind, hint=self.hint)
            if self.failure is not None:
                body["failure"] = self.failure.to_dict()
        body.update(is_error=not self.ok, duration_ms=round(self.duration_ms, 1), exit_code=int(self.exit_code))
        return body
