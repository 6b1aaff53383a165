"""`config sources`: what was found where (client, scope, path, format, servers, problems)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from miroctl.render.output import Output


def sources_table(out: Output, rows: Sequence[Mapping[str, Any]]) -> None:
    """One row per file found; each problem on a line of its own under the servers."""
    if not rows:
        out.note(
            "no MCP client configs found (Claude Desktop, Claude Code, Cursor, VS Code, Codex, Gemini CLI, Windsurf)"
        )
        return
    table = Table(expand=False)
    for column in ("client", "scope", "path", "format", "servers", "problems"):
        table.add_column(column, no_wrap=column in ("client", "scope", "format"), overflow="fold")
    for row in rows:
        problems = Text("\n".join(out.safe(p) for p in row["problems"]), style="red")
        table.add_row(
            out.safe(row["client"]),
            out.safe(row["scope"]),
            out.safe(row["path"]),
            out.safe(row["format"]),
            out.safe(", ".join(row["servers"]) or "-"),
            problems,
        )
    out.out.print(table)


def import_report(out: Output, written: Sequence[tuple[str, str, Sequence[str]]], skipped: Sequence[str]) -> None:
    """What `config import` wrote (server -> file), each literal credential it kept, what it skipped."""
    for name, path, literal in written:
        out.out.print(Text(f"{out.safe(name)} -> {out.safe(path)}"))
        for where in literal:
            out.note(f"warning: {name}: {where} is a literal credential in the source, kept in {path}")
    for line in skipped:
        out.note(f"not imported: {line}")


def install_report(out: Output, action: str, name: str, where: str, runs: str, backup: str | None) -> None:
    """What `install` did to the client's file, then what the entry runs and where the old file was kept;
    unwrapped, so that a path can be copied whole."""
    lines = {
        "added": f"added {name} to {where}",
        "replaced": f"replaced {name} in {where}",
        "unchanged": f"{name} is already in {where}; nothing changed",
        "removed": f"removed {name} from {where}",
    }
    out.text(lines[action])
    if action != "removed":
        out.text(f"  runs: {runs}")
    if backup:
        out.text(f"  backup: {backup}")
