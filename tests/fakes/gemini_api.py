"""A fake Gemini API: POST /v1/models/{model}:generateContent (and /v1beta/...), with Google's error bodies.

The key is checked like Google does (`x-goog-api-key`; a wrong one gets 400 INVALID_ARGUMENT
"API key not valid", as the real API answers).
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.scripted import FakeService, Reply, Request

GENERATE = r"/v1(?:beta)?/models/([^/:]+):generateContent"  # google-genai 3 speaks v1, older ones v1beta


def candidates(text: str, model: str = "gemini-2.5-pro") -> dict[str, Any]:
    """A GenerateContentResponse as documented."""
    return {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 258, "candidatesTokenCount": 12, "totalTokenCount": 270},
        "modelVersion": model,
        "responseId": "x3v1aNTvLqPb1e8Px4CVkQk",
    }


def error(code: int, status: str, message: str, **headers: str) -> Reply:
    """An error reply with Google's body: {"error": {"code", "message", "status"}}."""
    return Reply(code, {"error": {"code": code, "message": message, "status": status}}, headers=headers)


def exhausted() -> Reply:
    return error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", **{"retry-after": "1"})


class GeminiFake(FakeService):
    """Answers `text`; records the parts each request sent."""

    def __init__(self, key: str = "AIza-test-gemini-0123456789") -> None:
        super().__init__()
        self.key = key
        self.text = "A cat sits on a red mat."
        self.route("POST", GENERATE, self._generate)

    @property
    def base_url(self) -> str:
        return self.url + "/"

    def _generate(self, request: Request, match: re.Match[str]) -> Reply:
        if request.headers.get("x-goog-api-key") != self.key:
            return error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
        if not request.json().get("contents"):
            return error(400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified")
        return Reply(200, candidates(self.text, match.group(1)))

    def last_parts(self) -> list[dict[str, Any]]:
        """The parts of the last request's contents, flattened."""
        contents = self.seen(GENERATE)[-1].json()["contents"]
        return [part for content in contents for part in content["parts"]]
