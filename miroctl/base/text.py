"""Small helpers for the words of messages, shared by every layer: counts, sizes, "did you mean" hints."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def counted(count: int, noun: str) -> str:
    """`1 tool`, `3 tools`: a count with its noun in the right number (regular plurals only)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """A "did you mean" hint, or None."""
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


def human_bytes(count: float) -> str:
    """A byte count for people, in binary units: 1536 -> '1.5 KB', 8589934592 -> '8.0 GB'."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1024 or unit == "PB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
