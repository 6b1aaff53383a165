"""Helpers shared by the bundled servers: results for a model and a script, numbers with context, settings."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from miroctl.base.text import human_bytes

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "GROUPABLE",
    "cut_middle",
    "groupable",
    "human_bytes",
    "number_setting",
    "of_total",
    "percent",
    "result",
    "scratch_dir",
    "setting",
    "state_dir",
]


# Tool functions a module does not serve itself but a grouping may (servers/group.py), with their annotations:
# upstream's forms of a tool whose names or parameters differ from the bundled server's own.
GROUPABLE: dict[Callable[..., Any], ToolAnnotations] = {}


def groupable(annotations: ToolAnnotations) -> Callable[[F], F]:
    """Mark a tool function that servers/group.py may serve, with the annotations it is served with."""

    def mark(function: F) -> F:
        GROUPABLE[function] = annotations
        return function

    return mark


def result(text: str, data: Mapping[str, Any] | None = None, *, error: bool = False) -> CallToolResult:
    """A tool result: text written for a model, and the same facts as structured data for scripts."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=dict(data) if data is not None else None,
        is_error=error,
    )


def percent(part: float, whole: float) -> str:
    """`part` as a share of `whole`: '6.4%' ('0.0%' when the whole is zero)."""
    return f"{(100.0 * part / whole) if whole else 0.0:.1f}%"


def of_total(part: float, whole: float) -> str:
    """A size in the context of its total: '512.0 MB of 8.0 GB (6.2%)'."""
    return f"{human_bytes(part)} of {human_bytes(whole)} ({percent(part, whole)})"


def setting(name: str) -> str | None:
    """An environment setting; unset and empty are the same (configs pass '' for 'not given')."""
    value = os.environ.get(name, "").strip()
    return value or None


def number_setting(name: str, default: float, *, minimum: float = 0.0) -> float:
    """A numeric environment setting, or a clear tool error naming the variable."""
    text = setting(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ToolError(f"the server setting {name} must be a number, got {text!r}") from None
    if value < minimum:
        raise ToolError(f"the server setting {name} must be at least {minimum:g}, got {text!r}")
    return value


def state_dir(env_var: str, leaf: str) -> Path:
    """Where a server keeps state: $env_var, else $XDG_STATE_HOME/miroctl/leaf, else ~/.local/state/..."""
    given = setting(env_var)
    if given:
        return Path(given).expanduser()
    base = setting("XDG_STATE_HOME")
    if base:
        return Path(base).expanduser() / "miroctl" / leaf
    home = setting("HOME")
    if home:
        return Path(home) / ".local" / "state" / "miroctl" / leaf
    return Path(tempfile.gettempdir()) / f"miroctl-{os.getuid()}" / leaf


def scratch_dir(env_var: str, leaf: str) -> Path:
    """Where a server keeps throw-away files: $env_var, else a per-user directory under the temp dir."""
    given = setting(env_var)
    if given:
        return Path(given).expanduser()
    return Path(tempfile.gettempdir()) / f"miroctl-{os.getuid()}" / leaf


def cut_middle(text: str, limit: int) -> tuple[str, int]:
    """Text of at most about `limit` characters: head and tail kept, a marker saying how much was cut."""
    if len(text) <= limit:
        return text, 0
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut:,} characters cut ...]\n{text[len(text) - tail :]}", cut
