"""A fake OpenAI-compatible API: chat completions and audio transcriptions, with OpenAI's error bodies.

Base URL for the SDK: `fake.base_url` (…/v1). The key is checked like OpenAI does (Bearer token):
a wrong one gets 401 with `invalid_api_key`.
"""

from __future__ import annotations

import re
import time
from typing import Any

from tests.fakes.scripted import FakeService, Reply, Request

CHAT = r"/v1/chat/completions"
TRANSCRIPTIONS = r"/v1/audio/transcriptions"


def completion(content: str | None, model: str = "gpt-4o-2024-08-06", **message_extra: Any) -> dict[str, Any]:
    """A chat.completion object as OpenAI documents it (extra message fields: reasoning_content, ...)."""
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": None,
                    "annotations": [],
                    **message_extra,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_f33640a400",
    }


def error(status: int, message: str, kind: str, code: str | None = None, **headers: str) -> Reply:
    """An error reply with OpenAI's body: {"error": {"message", "type", "param", "code"}}."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Reply(status, body, headers={"x-request-id": "req_0123456789abcdef", **headers})


def rate_limited(retry_after: str = "1") -> Reply:
    return error(
        429,
        "Rate limit reached for gpt-4o in organization org-test on requests per min (RPM): Limit 3, Used 3.",
        "requests",
        "rate_limit_exceeded",
        **{"retry-after": retry_after},
    )


def server_error(status: int = 500) -> Reply:
    return error(status, "The server had an error while processing your request. Sorry about that!", "server_error")


class OpenAIFake(FakeService):
    """Chat completions answer `content` (and `message_extra`); transcriptions answer `transcript`."""

    def __init__(self, key: str = "sk-test-openai-0123456789") -> None:
        super().__init__()
        self.key = key
        self.content: str | None = "The answer is 42."
        self.message_extra: dict[str, Any] = {}
        self.transcript = "Hello from the recording."
        self.route("POST", CHAT, self._chat)
        self.route("POST", TRANSCRIPTIONS, self._transcribe)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _authorized(self, request: Request) -> Reply | None:
        if request.headers.get("authorization") == f"Bearer {self.key}":
            return None
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        shown = f"{given[:3]}***{given[-4:]}" if len(given) > 8 else "***"
        return error(401, f"Incorrect API key provided: {shown}.", "invalid_request_error", "invalid_api_key")

    def _chat(self, request: Request, match: re.Match[str]) -> Reply:
        refused = self._authorized(request)
        if refused is not None:
            return refused
        model = request.json().get("model", "gpt-4o")
        return Reply(200, completion(self.content, model, **self.message_extra))

    def _transcribe(self, request: Request, match: re.Match[str]) -> Reply:
        refused = self._authorized(request)
        if refused is not None:
            return refused
        form = request.form()
        if "file" not in form or "model" not in form:
            return error(400, "you must provide a file and a model", "invalid_request_error")
        if form.get("response_format", "json") == "text":
            return Reply(200, body=self.transcript.encode(), content_type="text/plain")
        return Reply(200, {"text": self.transcript, "usage": {"type": "duration", "seconds": 3}})

    def last_messages(self) -> list[dict[str, Any]]:
        """The messages of the last chat completion request."""
        return self.seen(CHAT)[-1].json()["messages"]
