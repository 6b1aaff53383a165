"""Result limits: cut a long result to max_result_chars with a marker, or write all of it to a file.

Both work on the result as the server sent it (the JSON of a Result) before miroctl copies anything
out of it, so a huge result is held once and never joined, dumped or printed whole. The text is read in the
order the envelope joins it: text blocks, then embedded text resources, separated by newlines.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace

from miroctl.base.masking import Masker
from miroctl.base.models import Truncated, Written

Result = dict[str, object]  # a Result as JSON: content, structuredContent, isError

CHUNK = 1 << 20  # characters written at a time, so a huge text is never encoded whole
ERROR_MIN_CHARS = 2000  # error texts are cut too, but never shorter than this


def marker(original: int, kept: int) -> str:
    """The note that ends a cut text: how much was kept of how much."""
    return f"\n[... truncated by miroctl: {kept} of {original} characters shown]"


def text_length(result: Result) -> int:
    """Characters of the result's joined text, counted without joining it."""
    lengths = [len(text) for _, text in _texts(result)]
    return sum(lengths) + max(0, len(lengths) - 1)


def limit_result(result: Result, limit: int | None) -> Truncated | None:
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
    result["content"] = [block for block in _listed(result) if not any(block is d for d in dropped)]
    kept = next(reversed(list(_texts(result))), None)
    if kept is not None:
        _set_text(kept[0], kept[1] + marker(original, limit))
    dropped_structured = result.get("structuredContent") is not None and not _fits(result["structuredContent"], limit)
    if dropped_structured:
        result.pop("structuredContent")  # a copy of the same data, too big to keep as well
    return Truncated(original, limit, limit, structured_content_dropped=dropped_structured)


def _fits(value: object, limit: int) -> bool:
    """Whether structured content, written as JSON, is within the limit (then it is kept whole)."""
    size = 0
    try:  # piece by piece, so a huge structured result is never written out whole just to be measured
        for piece in json.JSONEncoder(ensure_ascii=False, default=str).iterencode(value):
            size += len(piece)
            if size > limit:
                return False
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def write_kept(path: str, result: Result, masker: Masker) -> Written:
    """write_full to `path`; if that fails, to a new temp file so the result is never lost (the record then
    names the path asked for and why it failed). OSError only if the temp file cannot be written either."""
    try:
        return write_full(path, result, masker)
    except OSError as exc:
        reason = exc.strerror or str(exc)
    handle, kept = tempfile.mkstemp(prefix="miroctl-output-", suffix=".txt")
    os.close(handle)
    return replace(write_full(kept, result, masker), requested=path, error=f"cannot write {path}: {reason}")


def write_full(path: str, result: Result, masker: Masker) -> Written:
    """Write the result's whole text to `path` (secrets masked): where, and how many characters."""
    chars = 0
    with open(path, "w", encoding="utf-8", newline="") as handle:
        texts = [text for _, text in _texts(result)]
        if not texts and result.get("structuredContent") is not None:
            texts = [json.dumps(result["structuredContent"], ensure_ascii=False)]
        for index, text in enumerate(texts):
            if index:
                chars += handle.write("\n")
            text = masker.text(text)  # a copy only when a secret is found in it
            for start in range(0, len(text), CHUNK):
                chars += handle.write(text[start : start + CHUNK])
    return Written(path, chars)


def _texts(result: Result) -> Iterator[tuple[dict[str, object], str]]:
    """(block, text) for every text-bearing block, in the envelope's order."""
    blocks = [block for block in _listed(result) if isinstance(block, dict)]
    for block in blocks:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            yield block, text
    for block in blocks:
        resource = block.get("resource")
        text = resource.get("text") if isinstance(resource, dict) else None
        if block.get("type") == "resource" and isinstance(text, str):
            yield block, text


def _listed(result: Result) -> list[object]:
    content = result.get("content")
    return content if isinstance(content, list) else []


def _set_text(block: dict[str, object], text: str) -> None:
    if block.get("type") == "text":
        block["text"] = text
    else:
        resource = block["resource"]
        block["resource"] = {**resource, "text": text} if isinstance(resource, dict) else {"text": text}
