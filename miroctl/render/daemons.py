"""`daemon status` and `daemon logs`: the background daemons, as a table and as their log lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.text import Text

from miroctl.render.heading import heading
from miroctl.render.output import Output


def daemons_table(out: Output, documents: Sequence[Mapping[str, Any]]) -> None:
    """One block per daemon: its id, pid, state and idle time, then its config, servers, sessions and socket."""
    if not documents:
        out.note("no daemon is running")
        return
    for doc in documents:
        state = str(doc.get("state"))
        shown = Text(out.safe(state), style="green" if state == "running" else "red")
        idle = f"idle {_idle(doc.get('idle_seconds'), doc.get('idle_exit_after'))}"
        out.out.print(heading(out, f"daemon {doc.get('id')}", f"pid {doc.get('pid') or '-'}", shown, idle))
        servers = ", ".join(f"{s.get('name')} ({s.get('state')})" for s in doc.get("servers") or []) or "-"
        for label, value in (
            ("config", f"{doc.get('config') or '(default)'} in {doc.get('cwd') or '-'}"),
            ("servers", servers),
            ("sessions", doc.get("sessions", "-")),
            ("socket", doc.get("socket")),
        ):
            out.out.print(Text(f"  {label:<9}{out.safe(value)}"))


def _idle(idle: Any, limit: Any) -> str:
    """How long the daemon has had nothing to do, of how long it waits before it exits."""
    numbers = all(isinstance(n, float | int) and not isinstance(n, bool) for n in (idle, limit))
    return f"{idle:g}s of {limit:g}s" if numbers else "-"


def log_lines(out: Output, path: Path, lines: Sequence[str], last: int, heading: bool) -> None:
    """The last `last` lines of a daemon's log (0: all), literally and masked; under its path with `heading`."""
    if heading:
        out.note(f"==> {path} <==")
    for line in lines[-last:] if last else lines:
        out.text(line)
