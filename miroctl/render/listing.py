"""`list`: one table per server (tools, then resources, templates and prompts when asked); failures in place."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from miroctl.base.models import ServerTools, ToolInfo
from miroctl.base.text import counted
from miroctl.core.arguments import type_label
from miroctl.render.output import Output


def list_tables(out: Output, entries: Iterable[ServerTools], *, schema: bool = False) -> None:
    """One table per healthy server; failing servers in place with their reason."""
    for entry in entries:
        if not entry.ok:
            _failed_server(out, entry)
            continue
        title = Text(out.safe(entry.server), style="bold")
        meta = [entry.transport, counted(len(entry.tools), "tool"), entry.server_version, f"{entry.duration_ms:.0f} ms"]
        title.append("  " + out.safe(" · ".join(m for m in meta if m)), style="dim")
        table = Table(title=title, title_justify="left", show_lines=schema, expand=False)
        table.add_column("tool", style="cyan", no_wrap=True)
        table.add_column("description")
        table.add_column("parameters (* required)")
        for tool in entry.tools:
            table.add_row(
                Text(out.safe(tool.name)), Text(out.safe(_summary(tool, schema))), _parameters(out, tool, type_label)
            )
        out.out.print(table)
        _offered(out, entry)


def _offered(out: Output, entry: ServerTools) -> None:
    """The resources, templates and prompts of `list --resources --prompts`, when asked for and offered."""
    sections = (
        ("resources", "resource", ("uri", "name", "mimeType")),
        ("resource_templates", "resource template", ("uriTemplate", "name", "mimeType")),
        ("prompts", "prompt", ("name", "arguments")),
    )
    for key, noun, columns in sections:
        items = getattr(entry, key)
        if items is None or (not items and key == "resource_templates"):
            continue
        if not items:
            out.out.print(Text(f"{out.safe(entry.server)}  no {noun}s", style="dim"))
            continue
        title = Text(f"{out.safe(entry.server)}  {counted(len(items), noun)}", style="dim")
        table = Table(title=title, title_justify="left", expand=False)
        for column in (*columns, "description"):
            table.add_column(column, style="cyan" if column in ("uri", "uriTemplate", "name") else "")
        for item in items:
            table.add_row(*(Text(out.safe(_offer_cell(item, column))) for column in (*columns, "description")))
        out.out.print(table)


def _offer_cell(item: Mapping[str, Any], column: str) -> str:
    if column == "arguments":
        return ", ".join(f"{a.get('name')}{'*' if a.get('required') else ''}" for a in item.get("arguments") or ())
    if column == "description":
        return next((line.strip() for line in str(item.get("description") or "").splitlines() if line.strip()), "")
    return str(item.get(column) or "")


def _summary(tool: ToolInfo, full: bool) -> str:
    if full:
        schema = json.dumps(tool.input_schema, indent=2, ensure_ascii=False)
        return f"{tool.description.strip()}\n\ninput schema:\n{schema}"
    return tool.summary


def _parameters(out: Output, tool: ToolInfo, type_label: Callable[[Any], str]) -> Text:
    properties = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    text = Text()
    for index, (name, prop) in enumerate(properties.items()):
        if index:
            text.append("\n")
        text.append(out.safe(name) + ("*" if name in required else ""), style="bold" if name in required else "")
        text.append(": " + out.safe(type_label(prop if isinstance(prop, Mapping) else {})), style="dim")
    return text


def _failed_server(out: Output, entry: ServerTools) -> None:
    failure = entry.failure
    if failure is None:
        return
    line = Text("✗ ", style="bold red")
    line.append(out.safe(entry.server), style="bold")
    line.append(f"  {failure.kind}: ", style="red")
    line.append(out.safe(failure.message))
    out.out.print(line)
    if failure.hint:
        out.out.print(Text(f"  hint: {out.safe(failure.hint)}", style="yellow"))
    for text in failure.stderr_tail[-5:]:
        out.out.print(Text(f"  | {out.safe(text)}", style="dim"))
    out.out.print()
