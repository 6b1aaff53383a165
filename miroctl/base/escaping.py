"""Server text made safe to show: invisible and control characters as visible escapes, JSON with finite numbers.

Bidi overrides and isolates (which reorder what a reader sees, as in "Trojan Source"), zero-width
characters (which hide text inside names) and C0/C1 controls (terminal escapes) are never passed
through: human output and XML show them as `\\u202e`-style text, JSON writes them as `\\u` escapes
(the same string to a parser, visible to a reader). JSON never carries NaN or Infinity, which are not
JSON: non-finite numbers from a server are written as the strings "NaN", "Infinity" and "-Infinity".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

# Invisible or reordering characters: C1 controls, soft hyphen, Arabic letter mark, Mongolian vowel separator,
# zero-width space/joiners and direction marks, line/paragraph separators, bidi embeddings, overrides and
# isolates, word joiner and invisible operators, the byte order mark.
_INVISIBLE = "\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
INVISIBLE = re.compile(f"[{_INVISIBLE}]")
CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f{_INVISIBLE}]")  # everything `visible` escapes (not tab or newline)


def visible(text: Any) -> str:
    """Text with control and invisible characters as `\\xNN` / `\\uNNNN` escapes a reader can see."""
    return CONTROL.sub(_escape, str(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def finite(value: Any) -> Any:
    """A JSON-like value with NaN and infinities replaced by their names (same shape otherwise)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


PIECE = 1 << 18  # characters of JSON handed on at a time by `pieces`


def dumps(value: Any, **options: Any) -> str:
    """Strict JSON (no NaN or Infinity) with non-ASCII kept readable but invisible characters escaped."""
    text = json.dumps(finite(value), ensure_ascii=False, allow_nan=False, default=str, **options)
    return INVISIBLE.sub(_json_escape, text)


def pieces(value: Any, size: int = PIECE) -> Iterator[str]:
    """`dumps(value)` in pieces of about `size` characters, for a document too large to hold twice: only the
    encoding of one string at a time is held beside the value, never the whole document's text."""
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=str)
    held: list[str] = []
    count = 0
    for chunk in encoder.iterencode(finite(value)):
        for start in range(0, len(chunk), size):  # escapes are per character, so any cut is safe
            held.append(chunk[start : start + size])
            count += len(held[-1])
            if count >= size:
                yield INVISIBLE.sub(_json_escape, "".join(held))
                held, count = [], 0
    if held:
        yield INVISIBLE.sub(_json_escape, "".join(held))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"
