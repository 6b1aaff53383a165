"""Reading a JSON request body (a batch line, a gateway API request) with one-line reasons.

One validator for every JSON object miroctl takes from outside: unknown keys are named, every value is
checked for its type, and JSON's non-standard NaN and Infinity are refused as numbers. Each problem is
a UsageError (exit 2 on the command line, HTTP 400 from the gateway).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import NoReturn

from miroctl.base.errors import UsageError


def loads(text: str | bytes) -> object:
    """JSON text as Python values; NaN, Infinity and numbers too big for a float (1e999) are refused, and
    so is nesting deeper than the parser can follow: each a ValueError saying why."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a number")
    return number


class Body:
    """A JSON object with a known set of keys, read value by value."""

    def __init__(self, data: object, known: set[str], what: str, body: str = "the request body") -> None:
        """`what` names the object in messages (a line, the call, the check); `body` what must be an object."""
        if not isinstance(data, Mapping):
            raise UsageError(f"{body} must be a JSON object")
        unknown = sorted(str(key) for key in set(data) - known)
        if unknown:
            raise UsageError(f"unknown keys in {what}: {', '.join(unknown)}", hint=f"known: {', '.join(sorted(known))}")
        self.data = data
        self.what = what

    def tool(self) -> str:
        """The required `tool`: a non-empty string."""
        tool = self.data.get("tool")
        if not isinstance(tool, str) or not tool:
            raise UsageError(f"{self.what} needs a tool (a string)")
        return tool

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def string(self, key: str) -> str | None:
        """A non-empty string, or None when absent (or null, or empty)."""
        value = self.data.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise UsageError(f"{key} must be a string")
        return value

    def strings(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{key} must be a list of strings")
        return value

    def mapping(self, key: str) -> dict[str, object]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise UsageError(f"{key} must be a JSON object")
        return dict(value)

    def seconds(self, key: str) -> float | None:
        """A positive, finite number of seconds, or None when absent."""
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise UsageError(f"{key} must be a positive number of seconds")
        return float(value)

    def whole(self, key: str, minimum: int) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UsageError(f"{key} must be a whole number of at least {minimum}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise UsageError(f"{key} must be true or false")
        return value
