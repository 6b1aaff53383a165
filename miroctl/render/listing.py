"""`list`: one table per server (tools, then resources, templates and prompts when asked); failures in place.

What a user types is never cut: tool and parameter names and types, and resource URIs, keep their whole
width; descriptions get the room left, at least half of it, wrap, and are shortened (… at the end) only on
a terminal (the column rules of render/columns.py); a screen too narrow for a table gets the same facts as
indented lines. `--brief` is one signature line per tool. One tool in detail is render/tooldetail.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from miroctl.base.models import Failure, ServerTools, ToolInfo
from miroctl.base.text import counted
from miroctl.core import schemas
from miroctl.render.columns import PARAMETERS, PROSE_MIN, Column, frame, parameters_header, shortened, widths, wrap
from miroctl.render.heading import heading
from miroctl.render.output import Output, without_tail_line
from miroctl.render.tooldetail import tool_detail

DESCRIPTION_MIN = PROSE_MIN  # narrower than this, the description goes under the tool name instead
DESCRIPTION_SHARE = 0.5  # the description's least share of what the tool names leave; the types wrap first
DESCRIPTION_LINES = 3  # on a terminal, a description longer than this many lines is shortened (… at the end)
_SENTENCE = re.compile(r"(.+?[.!?])(?=\s+[A-Z(`\"']|$)")


@dataclass(frozen=True)
class View:
    """How `list` shows the tools: a table (default), each in detail (`schema`) or one line each (`brief`);
    `connection` is the options an example `miroctl call` line needs to reach the same server."""

    schema: bool = False
    brief: bool = False
    connection: tuple[str, ...] = ()


def list_tables(out: Output, entries: Iterable[ServerTools], view: View | None = None) -> None:
    """One table per healthy server (each tool in detail with `schema`); failing servers in place."""
    view = view or View()
    for entry in entries:
        if not entry.ok:
            _failed_server(out, entry)
            continue
        out.out.print(_title(out, entry))
        if view.schema:
            for tool in entry.tools:
                tool_detail(out, entry.server, tool, view.connection)
        elif entry.tools and view.brief:
            _brief(out, entry.tools)
        elif entry.tools:
            drawn = _tools_table(out, entry.tools)
            out.out.print(drawn, soft_wrap=isinstance(drawn, Text))  # lines: wrapped already, names whole
        else:
            out.out.print(Text("  no tools", style="dim"))
        _rejected(out, entry)
        _offered(out, entry)


def _title(out: Output, entry: ServerTools) -> Text:
    meta = [entry.transport, counted(len(entry.tools), "tool"), entry.server_version, f"{entry.duration_ms:.0f} ms"]
    return heading(out, entry.server, *meta, f"python {entry.python}" if entry.python else None)


def parameter_lines(out: Output, tool: ToolInfo) -> list[tuple[str, str]]:
    """(name with * when required, type) for each parameter of a tool."""
    schema = tool.input_schema
    required = set(schemas.listed(schemas.resolve(schema, schema), "required"))
    return [
        (out.safe(name) + ("*" if name in required else ""), out.safe(schemas.type_label(prop, schema)))
        for name, prop in schemas.properties(schema).items()
    ]


def signature(out: Output, tool: ToolInfo) -> str:
    """`name(a*: string, b: integer)`: the tool as it is called, * marking what is required."""
    return f"{out.safe(tool.name)}({', '.join(f'{name}: {kind}' for name, kind in parameter_lines(out, tool))})"


def first_sentence(text: str) -> str:
    """The text up to its first full stop that ends a sentence (the whole text when there is none)."""
    match = _SENTENCE.match(text)
    return match.group(1) if match else text


def _brief(out: Output, tools: Sequence[ToolInfo]) -> None:
    """One line per tool: its signature, then its first sentence; on a terminal wrapped under itself, never
    inside a word (a name stays whole), elsewhere one line each for grep."""
    for tool in tools:
        sentence = first_sentence(out.safe(tool.summary))
        line = signature(out, tool) + (f" — {sentence}" if sentence else "")
        pieces = [line]
        if out.out.is_terminal:
            pieces = wrap(line, out.out.width, later="    ")
        for piece in pieces:
            out.out.print(Text(piece), soft_wrap=True)


def _tools_table(out: Output, tools: Sequence[ToolInfo]) -> Table | Text:
    """tool | description | parameters by the column rules (render/columns.py): names and types whole, the
    descriptions at least half of what is left; narrower screens stack, then fall back to lines."""
    width = out.out.width
    params = {tool.name: parameter_lines(out, tool) for tool in tools}
    lines = [p for found in params.values() for p in found]
    # A tool's name is never broken, unless it is longer than the screen (then no layout keeps it whole).
    names = [name for name in (out.safe(t.name) for t in tools) if len(name) <= width - 4]
    least, full = _parameter_widths(lines)
    columns = [
        Column.tokens("tool", names),
        Column.text("description", (out.safe(t.summary) for t in tools)),
        Column.folding(PARAMETERS, least, full),
    ]
    sizes = widths(columns, width - frame(3), DESCRIPTION_SHARE)
    if sizes is None:
        return _stacked_table(out, tools, params, width, (least, full))
    tool_w, description_w, params_w = sizes
    table = Table(expand=False, box=box.HEAVY_HEAD)
    table.add_column("tool", style="cyan", width=tool_w, overflow="fold")
    table.add_column("description", max_width=description_w)
    table.add_column(parameters_header(params_w), width=params_w, overflow="fold")
    for tool in tools:
        summary = _described(out, tool, description_w, max(DESCRIPTION_LINES, len(params[tool.name])))
        table.add_row(Text(out.safe(tool.name)), Text(summary), _parameters(params[tool.name]))
    return table


def _parameter_widths(lines: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """The parameters column's least width (each name whole, its type under it) and its full width."""
    full = max((len(name) + 2 + len(kind) for name, kind in lines), default=0)
    least = max((len(name) + 1 for name, _ in lines), default=0)
    return least, full


def _described(out: Output, tool: ToolInfo, width: int, lines: int) -> str:
    """The tool's summary: whole when stdout is a file or a pipe, shortened to `lines` on a terminal."""
    return shortened(out.safe(tool.summary), width, lines, out.out.is_terminal)


def _stacked_table(
    out: Output,
    tools: Sequence[ToolInfo],
    params: Mapping[str, list[tuple[str, str]]],
    width: int,
    params_range: tuple[int, int],
) -> Table | Text:
    """Too narrow for three columns: the description under the tool's name, the parameters beside it
    (as wide as they can be); narrower still, one tool per line."""
    names = [name for name in (out.safe(t.name) for t in tools) if len(name) <= width - 4]
    longest_tool = max((len(name) for name in names), default=0)
    columns = [
        Column.text("tool / description", (), max(longest_tool, DESCRIPTION_MIN)),
        Column.folding(PARAMETERS, *params_range),
    ]
    sizes = widths(columns, width - frame(2), share=0)
    if sizes is None:
        return _tool_lines(out, tools, params)
    params_w = sizes[1]
    tool_w = width - frame(2) - params_w
    table = Table(expand=False, box=box.HEAVY_HEAD)
    table.add_column("tool / description", width=tool_w, overflow="fold")
    table.add_column(parameters_header(params_w), width=params_w, overflow="fold")
    for tool in tools:
        cell = Text(out.safe(tool.name), style="cyan")
        if tool.summary:
            room = max(DESCRIPTION_LINES, len(params[tool.name]) - 1)
            cell.append("\n" + _described(out, tool, tool_w, room), style="")
        table.add_row(cell, _parameters(params[tool.name]))
    return table


def _tool_lines(out: Output, tools: Sequence[ToolInfo], params: Mapping[str, list[tuple[str, str]]]) -> Text:
    """Too narrow for a table: each tool's name alone on its line, its description and parameters under it."""
    text = Text()  # wrapped here, so that a name is never broken
    width = max(20, out.out.width - 4)
    for index, tool in enumerate(tools):
        if index:
            text.append("\n")
        text.append(out.safe(tool.name), style="cyan")
        summary = _described(out, tool, width, DESCRIPTION_LINES)
        for line in wrap(summary, width):
            text.append("\n    " + line)
        for name, kind in params[tool.name]:
            text.append("\n    ")
            text.append(name, style="bold" if name.endswith("*") else "")
            text.append(": " + kind, style="dim")
    return text


def _parameters(lines: Sequence[tuple[str, str]]) -> Text:
    """`name*: type` a line each; a narrow column wraps the type under its name, never cuts either."""
    text = Text()
    for index, (name, kind) in enumerate(lines):
        if index:
            text.append("\n")
        text.append(name, style="bold" if name.endswith("*") else "")
        text.append(": " + kind, style="dim")
    return text


def _rejected(out: Output, entry: ServerTools) -> None:
    """Tools the server listed that the protocol rejects: named, with why, below its valid ones."""
    if not entry.rejected:
        return
    line = Text("✗ ", style="bold red")
    line.append(out.safe(entry.server), style="bold")
    line.append(f"  protocol: {counted(len(entry.rejected), 'listed tool')} rejected (not callable)", style="red")
    out.out.print(line)
    for item in entry.rejected:
        out.out.print(Text(f"  {out.safe(item.name)}: {out.safe(item.reason)}", style="yellow"))
    out.out.print()


_SECTIONS = (
    ("resources", "resource", ("uri", "name", "mimeType")),
    ("resource_templates", "resource template", ("uriTemplate", "name", "mimeType")),
    ("prompts", "prompt", ("name", "arguments")),
)


def _offered(out: Output, entry: ServerTools) -> None:
    """The resources, templates and prompts of `list --resources --prompts`, when asked for and offered."""
    for key, noun, columns in _SECTIONS:
        items = getattr(entry, key)
        failure = entry.list_failures.get(key)
        if failure is not None:
            _section_failed(out, entry.server, noun, failure)
            continue
        if items is None or (not items and key == "resource_templates"):
            continue
        if not items:
            out.out.print(heading(out, entry.server, f"no {noun}s"))
            continue
        out.out.print(heading(out, entry.server, counted(len(items), noun)))
        cells = [[out.safe(_offer_cell(item, column)) for column in (*columns, "description")] for item in items]
        key_w = max(len(columns[0]), *(len(row[0]) for row in cells))
        if out.out.width - key_w - 3 * len(columns) - 4 < DESCRIPTION_MIN * 2:
            _offer_lines(out, cells)
        else:
            out.out.print(_offer_table(cells, columns, key_w))


def _section_failed(out: Output, server: str, noun: str, failure: Failure) -> None:
    """A section the server failed to list, in its place: which, the class of failure and why."""
    line = Text("✗ ", style="bold red")
    line.append(out.safe(server), style="bold")
    line.append(f"  {noun}s not listed: {failure.kind}: ", style="red")
    line.append(out.safe(failure.message))
    out.out.print(line)
    if failure.hint:
        out.out.print(Text(f"  hint: {out.safe(failure.hint)}", style="yellow"))


def _offer_lines(out: Output, cells: Sequence[Sequence[str]]) -> None:
    """Narrow: each URI (or name) alone on its line, never broken by miroctl, the rest indented under it."""
    for row in cells:
        out.out.print(Text("  " + row[0], style="cyan"), soft_wrap=True)
        detail = " · ".join(cell for cell in row[1:] if cell)
        if detail:
            out.out.print(Text("      " + detail, style="dim"))


def _offer_table(cells: Sequence[Sequence[str]], columns: Sequence[str], key_w: int) -> Table:
    """The first column (a URI, a template or a name: what `read` and `prompt` take) keeps its whole width."""
    table = Table(expand=False, box=box.HEAVY_HEAD)
    table.add_column(columns[0], style="cyan", width=key_w, no_wrap=True)
    for column in (*columns[1:], "description"):
        table.add_column(column, ratio=2 if column == "description" else 1)
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _offer_cell(item: Mapping[str, Any], column: str) -> str:
    if column == "arguments":
        return ", ".join(f"{a.get('name')}{'*' if a.get('required') else ''}" for a in item.get("arguments") or ())
    if column == "description":
        return next((line.strip() for line in str(item.get("description") or "").splitlines() if line.strip()), "")
    return str(item.get(column) or "")


def _failed_server(out: Output, entry: ServerTools) -> None:
    failure = entry.failure
    if failure is None:
        return
    line = Text("✗ ", style="bold red")
    line.append(out.safe(entry.server), style="bold")
    if entry.python:
        line.append(f"  python {out.safe(entry.python)} ·", style="dim")
    line.append(f"{' ' if entry.python else '  '}{failure.kind}: ", style="red")
    line.append(out.safe(failure.message))
    out.out.print(line)
    tail = failure.stderr_tail[-5:]
    hint = without_tail_line(failure.hint, tail)
    if hint:
        out.out.print(Text(f"  hint: {out.safe(hint)}", style="yellow"))
    for text in tail:
        out.out.print(Text(f"  | {out.safe(text)}", style="dim"))
    out.out.print()
