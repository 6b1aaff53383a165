"""Text for Rich renderers that parse markup (Typer's help): brackets shown as typed, never read as styles."""

from __future__ import annotations

from rich.markup import escape


def as_typed(text: str) -> str:
    """`text` with anything that looks like a Rich tag (`[env: X]`, `[bold]`) escaped, so it prints as written."""
    return escape(text)
