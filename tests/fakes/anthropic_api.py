"""A fake Anthropic Messages API: POST /v1/messages with thinking blocks, and Anthropic's error bodies.

The key is checked like Anthropic does (`x-api-key`, or a Bearer token as the SDK sends it since the
2026 API versions; 401 `authentication_error` otherwise), so is the
`anthropic-version` header and the extended-thinking budget (at least 1024, below max_tokens).
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.scripted import FakeService, Reply, Request

MESSAGES = r"/v1/messages"


def message(text: str | None, thinking: str | None = None, model: str = "claude-sonnet-4-5-20250929") -> dict:
    """A Message object: a thinking block (with its signature) when given, then a text block when given."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "EqQBCkYIARgCIkDsig"})
    if text is not None:
        content.append({"type": "text", "text": text})
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 240,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def error(status: int, kind: str, text: str, **headers: str) -> Reply:
    """An error reply with Anthropic's body: {"type": "error", "error": {"type", "message"}}."""
    body = {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}
    return Reply(status, body, headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy", **headers})


def rate_limited(retry_after: str = "1") -> Reply:
    return error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute.",
        **{"retry-after": retry_after},
    )


def overloaded() -> Reply:
    return error(529, "overloaded_error", "Overloaded")


class AnthropicFake(FakeService):
    """Answers `text` after `thinking` (either may be None)."""

    def __init__(self, key: str = "sk-ant-test-0123456789") -> None:
        super().__init__()
        self.key = key
        self.text: str | None = "The answer is 42."
        self.thinking: str | None = "Six times seven is forty-two."
        self.route("POST", MESSAGES, self._messages)

    @property
    def base_url(self) -> str:
        return self.url

    def _messages(self, request: Request, match: re.Match[str]) -> Reply:
        # API versions from 2026 send the key as a Bearer token; older ones as x-api-key.
        if self.key not in (request.headers.get("x-api-key"), request.headers.get("authorization", "")[7:]):
            return error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return error(400, "invalid_request_error", "anthropic-version: header is required")
        body = request.json()
        thinking = body.get("thinking") or {}
        if thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens", 0)
            if budget < 1024 or budget >= body.get("max_tokens", 0):
                return error(400, "invalid_request_error", "thinking.budget_tokens: must be >= 1024 and < max_tokens")
        return Reply(200, message(self.text, self.thinking if thinking else None, body.get("model", "claude")))

    def last_body(self) -> dict[str, Any]:
        return self.seen(MESSAGES)[-1].json()
