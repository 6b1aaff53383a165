"""Percent-encoded URLs made readable without changing what they point at (upstream's decode_http_urls_in_dict).

Search APIs send links such as https://zh.wikipedia.org/wiki/%E5%8C%97%E4%BA%AC, which a model reads badly
and copies wrongly. Runs of %XX are decoded as UTF-8, except the encodings that carry meaning in a URL (the
reserved characters of RFC 3986, `%`, space) and control characters, which stay encoded; a run that is not
valid UTF-8 stays as it was.
"""

from __future__ import annotations

import re
from typing import Any

KEPT = frozenset(b":/?#[]@!$&'()*+,;=% \x7f") | frozenset(range(0x20))
RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def unquote_safely(text: str) -> str:
    """The text with its harmless percent-encodings decoded."""
    return RUN.sub(_decode_run, text)


def _decode_run(match: re.Match[str]) -> str:
    run = match.group(0)
    out: list[str] = []
    pending: list[str] = []
    for i in range(0, len(run), 3):
        code = run[i : i + 3]
        if int(code[1:], 16) in KEPT:
            out.append(_decoded(pending))
            pending = []
            out.append(code)
        else:
            pending.append(code)
    out.append(_decoded(pending))
    return "".join(out)


def _decoded(codes: list[str]) -> str:
    raw = bytes(int(code[1:], 16) for code in codes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(codes)


def decode_urls(data: Any) -> Any:
    """Every string holding `http` and `%` in nested lists and mappings, decoded; everything else unchanged."""
    if isinstance(data, str):
        return unquote_safely(data) if "%" in data and "http" in data else data
    if isinstance(data, list):
        return [decode_urls(item) for item in data]
    if isinstance(data, dict):
        return {key: decode_urls(value) for key, value in data.items()}
    return data
