"""Small helpers for the words of messages, shared by the core and the renderer."""


def counted(count: int, noun: str) -> str:
    """`1 tool`, `3 tools`: a count with its noun in the right number (regular plurals only)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
