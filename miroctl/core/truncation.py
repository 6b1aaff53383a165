"""Result limits: cut a long result to max_result_chars with a marker, or write all of it to a file.

Both work on the SDK's CallToolResult before miroctl copies anything out of it, so a huge result is
held once (as the SDK parsed it) and never joined, dumped or printed whole. The text is read in the
order the envelope joins it: text blocks, then embedded text resources, separated by newlines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from miroctl.base.masking import Masker

if TYPE_CHECKING:
    from mcp.types import CallToolResult, EmbeddedResource, TextContent

CHUNK = 1 << 20  # characters written at a time, so a huge text is never encoded whole
ERROR_MIN_CHARS = 2000  # error texts are cut too, but never shorter than this


def marker(original: int, kept: int) -> str:
    """The note that ends a cut text: how much was kept of how much."""
    return f"\n[... truncated by miroctl: {kept} of {original} characters shown]"


def record(original: int, limit: int, **extra: Any) -> dict[str, Any]:
    return {"original_chars": original, "kept_chars": limit, "limit": limit, **extra}


def text_length(result: CallToolResult) -> int:
    """Characters of the result's joined text, counted without joining it."""
    lengths = [len(text) for _, text in _texts(result)]
    return sum(lengths) + max(0, len(lengths) - 1)


def limit_result(result: CallToolResult, limit: int | None) -> dict[str, Any] | None:
    """Cut the result's text to `limit` characters in place; the `truncated` record, or None if it fits."""
    if limit is None:
        return None
    original = text_length(result)
    if original <= limit:
        return None
    budget, dropped = limit, []
    for block, text in list(_texts(result)):
        if budget <= 0:
            dropped.append(block)
        elif len(text) > budget:
            _set_text(block, text[:budget])
            budget = 0
        else:
            budget -= len(text) + 1
    result.content = [block for block in result.content if not any(block is d for d in dropped)]
    kept = next(reversed(list(_texts(result))), None)
    if kept is not None:
        _set_text(kept[0], kept[1] + marker(original, limit))
    extra: dict[str, Any] = {}
    if result.structured_content is not None:  # a copy of the same data: too big to keep as well
        result.structured_content = None
        extra["structured_content_dropped"] = True
    return record(original, limit, **extra)


def write_full(path: str, result: CallToolResult, masker: Masker) -> dict[str, Any]:
    """Write the result's whole text to `path` (secrets masked); returns {"path", "chars"}."""
    chars = 0
    with open(path, "w", encoding="utf-8", newline="") as handle:
        texts = [text for _, text in _texts(result)]
        if not texts and result.structured_content is not None:
            texts = [json.dumps(result.structured_content, ensure_ascii=False)]
        for index, text in enumerate(texts):
            if index:
                chars += handle.write("\n")
            text = masker.text(text)  # a copy only when a secret is found in it
            for start in range(0, len(text), CHUNK):
                chars += handle.write(text[start : start + CHUNK])
    return {"path": path, "chars": chars}


def _texts(result: CallToolResult) -> Iterator[tuple[TextContent | EmbeddedResource, str]]:
    """(block, text) for every text-bearing block, in the envelope's order."""
    blocks = result.content or []
    for block in blocks:
        if block.type == "text":
            yield block, block.text
    for block in blocks:
        if block.type == "resource" and isinstance(text := getattr(block.resource, "text", None), str):
            yield block, text


def _set_text(block: TextContent | EmbeddedResource, text: str) -> None:
    if block.type == "text":
        block.text = text
    else:
        block.resource = block.resource.model_copy(update={"text": text})
