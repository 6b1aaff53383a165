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


def correction_note(given: str, tool: str, used: str, given_exists: bool = False, failed: bool = False) -> str:
    """The seeds' note on a call sent to another server than the one named (`given`): a result starts with
    it and a space; `given_exists` when that server is configured but lacks the tool."""
    missing = f"has no tool '{tool}'" if given_exists else "not found"
    lead = f"[Auto-corrected: Server '{given}' {missing}, but tool '{tool}' was found only in server '{used}'"
    if failed:
        return f"{lead}, attempted auto-correction but still failed]"
    return f"{lead}, so automatically used '{used}' instead]"


def unknown_server_hint(name: str, names: Iterable[str]) -> str:
    """The hint of every "no server named" error: the nearest configured name, else where to see them all."""
    return suggest(name, list(names)) or "miroctl list shows the configured servers"
