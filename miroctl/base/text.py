"""Small helpers for the words of messages, shared by every layer: counts and "did you mean" hints."""

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
