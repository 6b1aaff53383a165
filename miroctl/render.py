"""All output: Rich tables and text for humans, one JSON document for scripts.

The only module that uses Rich. Server-provided text (names, descriptions, results, stderr) only
ever reaches Rich as `Text` objects after `literal()`, so it is never read as markup, and control
characters are shown as visible escapes instead of reaching the terminal.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from miroctl.masking import Masker

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_C1_AND_SEPARATORS = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def literal(text: Any) -> str:
    """Server text made safe for a terminal: control characters become visible \\xNN escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else
                        f"\\u{ord(m.group()):04x}", str(text))


def dumps(document: Any) -> str:
    """JSON with non-ASCII kept readable but C1 controls and line separators escaped."""
    text = json.dumps(document, ensure_ascii=False, default=str)
    return _C1_AND_SEPARATORS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class Output:
    """Where a command writes: stdout for results, stderr for diagnostics; secrets masked in both."""

    def __init__(self, *, json_mode: bool = False, masker: Masker | None = None) -> None:
        self.json_mode = json_mode
        self.masker = masker or Masker()
        self.out = Console(markup=False, highlight=False, emoji=False, soft_wrap=False)
        self.err = Console(stderr=True, markup=False, highlight=False, emoji=False)

    def mask(self, text: str) -> str:
        return self.masker.text(text)

    def safe(self, text: Any) -> str:
        return literal(self.mask(str(text)))

    def json(self, document: Mapping[str, Any]) -> None:
        sys.stdout.write(dumps(self.masker.data(document)) + "\n")
        sys.stdout.flush()

    def text(self, text: str) -> None:
        """Result text on stdout, literally."""
        sys.stdout.write(self.safe(text) + ("" if text.endswith("\n") else "\n"))
        sys.stdout.flush()

    def note(self, message: str, style: str = "yellow") -> None:
        self.err.print(Text(self.safe(message), style=style))

    def error(self, message: str, hint: str | None = None, tail: Sequence[str] = (), label: str = "error") -> None:
        """A one-line reason on stderr, then its hint and the server's last stderr lines."""
        line = Text("miroctl: ", style="bold red")
        line.append(f"{label}: ", style="bold red")
        line.append(self.safe(message))
        self.err.print(line)
        if hint:
            self.err.print(Text(f"  hint: {self.safe(hint)}", style="yellow"))
        self.stderr_tail(tail)

    def stderr_tail(self, tail: Sequence[str], indent: str = "  ") -> None:
        if tail:
            self.err.print(Text(f"{indent}server stderr (last {len(tail)} lines):", style="dim"))
            for line in tail:
                self.err.print(Text(f"{indent}| {self.safe(line)}", style="dim"))

    @contextmanager
    def progress(self, label: str) -> Iterator[Any]:
        """A progress bar on stderr when it is a terminal; otherwise a callback that does nothing."""
        if self.json_mode or not self.err.is_terminal:
            yield _silent_progress
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[message]}"),
                       TimeElapsedColumn(), console=self.err, transient=True)
        task = bar.add_task(self.safe(label), total=None, message="")

        async def update(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, message=self.safe(message or ""))

        with bar:
            yield update


async def _silent_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


# ---------------------------------------------------------------------------------------------- list


def list_tables(out: Output, entries: Iterable[Any], *, schema: bool = False) -> None:
    """One table per healthy server; failing servers in place with their reason."""
    from miroctl.args import type_label

    for entry in entries:
        if not entry.ok:
            _failed_server(out, entry)
            continue
        title = Text(out.safe(entry.server), style="bold")
        meta = [entry.transport, f"{len(entry.tools)} tools", entry.server_version, f"{entry.duration_ms:.0f} ms"]
        title.append("  " + out.safe(" · ".join(m for m in meta if m)), style="dim")
        table = Table(title=title, title_justify="left", show_lines=schema, expand=False)
        table.add_column("tool", style="cyan", no_wrap=True)
        table.add_column("description")
        table.add_column("parameters (* required)")
        for tool in entry.tools:
            table.add_row(Text(out.safe(tool.name)), Text(out.safe(_summary(tool, schema))),
                          _parameters(out, tool, type_label))
        out.out.print(table)


def _summary(tool: Any, full: bool) -> str:
    if full:
        schema = json.dumps(tool.input_schema, indent=2, ensure_ascii=False)
        return f"{tool.description.strip()}\n\ninput schema:\n{schema}"
    return tool.summary


def _parameters(out: Output, tool: Any, type_label: Any) -> Text:
    properties = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    text = Text()
    for index, (name, prop) in enumerate(properties.items()):
        if index:
            text.append("\n")
        text.append(out.safe(name) + ("*" if name in required else ""), style="bold" if name in required else "")
        text.append(": " + out.safe(type_label(prop if isinstance(prop, Mapping) else {})), style="dim")
    return text


def _failed_server(out: Output, entry: Any) -> None:
    failure = entry.failure
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


# ---------------------------------------------------------------------------------------------- call


def call_result(out: Output, outcome: Any, saved: Sequence[str] = ()) -> None:
    """A call's outcome for humans: the result on stdout, notes and errors on stderr."""
    if outcome.corrected_from is not None:
        given = f"Server '{outcome.corrected_from}' not found or without that tool"
        out.note(f"[Auto-corrected: {given}; used '{outcome.server_name}' instead]")
    for note in outcome.notes:
        out.note(note)
    if outcome.ok:
        body = _pretty(outcome)
        if body:
            out.text(body)
    else:
        tail = outcome.failure.stderr_tail if outcome.failure else ()
        out.error(outcome.error or "", outcome.hint, tail, label=outcome.error_kind or "error")
    for path in saved:
        out.note(f"saved: {path}", style="green")


def _pretty(outcome: Any) -> str:
    text = outcome.result or ""
    if outcome.structured_content is not None and not text.strip():
        return json.dumps(outcome.structured_content, indent=2, ensure_ascii=False)
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


# ---------------------------------------------------------------------------------------------- serve


def serve_report(out: Output, health: Mapping[str, Any], where: str, separator: str) -> None:
    """What the gateway serves, on stderr: one ready line, then each left-out server and collision."""
    servers = health.get("servers", [])
    up = sum(1 for s in servers if s.get("state") == "connected")
    shape = "two meta-tools (list_tools, call_tool)" if health.get("lazy") else f"SERVER{separator}TOOL"
    line = Text("miroctl serve: ", style="bold green")
    tools, total = health.get("tools", 0), len(servers)
    line.append(f"{tools} tool{'' if tools == 1 else 's'} from {up} of {total} server{'' if total == 1 else 's'} "
                f"as {shape}, on {where}")
    out.err.print(line, soft_wrap=True)
    for server in servers:
        if server.get("state") != "connected":
            error = server.get("error") or {}
            reason = f"{error.get('kind')}: {error.get('message')}" if error else server.get("state")
            out.err.print(Text(f"  left out for now (retried when a client lists tools): {out.safe(server['name'])}: "
                               f"{out.safe(reason)}", style="yellow"), soft_wrap=True)
    for collision in health.get("collisions", []):
        out.err.print(Text(f"  name collision: {out.safe(collision['message'])}", style="yellow"), soft_wrap=True)
