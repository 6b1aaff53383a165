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

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from miroctl.masking import Masker
from miroctl.wording import counted

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

    _bar: Any = None  # the live progress bar, paused while a question is asked

    def __init__(self, *, json_mode: bool = False, masker: Masker | None = None) -> None:
        self.json_mode = json_mode
        self.masker = masker or Masker()
        self.out = Console(markup=False, highlight=False, emoji=False, soft_wrap=False)
        self.err = Console(stderr=True, markup=False, highlight=False, emoji=False, soft_wrap=True)

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

        self._bar = bar
        try:
            with bar:
                yield update
        finally:
            self._bar = None

    def confirm(self, question: Any) -> bool:
        """Ask mode ask's question on the terminal (stderr); anything but yes is no."""
        from rich.prompt import Confirm

        prompt = Text("miroctl: ", style="bold yellow")
        prompt.append(self.safe(f"{question.decision.message}. Run {question.server}.{question.tool}"))
        arguments = self.mask(dumps(self.masker.data(dict(question.arguments))))
        prompt.append(self.safe(f" with {arguments[:300]}?" if question.arguments else "?"))
        if self._bar is not None:
            self._bar.stop()
        try:
            return Confirm.ask(prompt, console=self.err, default=False)
        except (EOFError, KeyboardInterrupt):
            return False
        finally:
            if self._bar is not None:
                self._bar.start()


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
        meta = [entry.transport, counted(len(entry.tools), "tool"), entry.server_version, f"{entry.duration_ms:.0f} ms"]
        title.append("  " + out.safe(" · ".join(m for m in meta if m)), style="dim")
        table = Table(title=title, title_justify="left", show_lines=schema, expand=False)
        table.add_column("tool", style="cyan", no_wrap=True)
        table.add_column("description")
        table.add_column("parameters (* required)")
        for tool in entry.tools:
            table.add_row(Text(out.safe(tool.name)), Text(out.safe(_summary(tool, schema))),
                          _parameters(out, tool, type_label))
        out.out.print(table)
        _offered(out, entry)


def _offered(out: Output, entry: Any) -> None:
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
    policy_notes(out, outcome)
    if outcome.ok and outcome.output is None:
        body = _pretty(outcome)
        if body:
            out.text(body)
    else:
        tail = outcome.failure.stderr_tail if outcome.failure else ()
        out.error(outcome.error or "", outcome.hint, tail, label=outcome.error_kind or "error")
        if outcome.fallback and not outcome.fallback.get("ok"):
            out.note(f"the MarkItDown fallback failed too: {outcome.fallback['error']}")
    for path in saved:
        out.note(f"saved: {path}", style="green")


def fetched_result(out: Output, fetched: Any, saved: Sequence[str] = ()) -> None:
    """A resource's text contents, or a prompt's messages role by role; errors on stderr."""
    if not fetched.ok:
        tail = fetched.failure.stderr_tail if fetched.failure else ()
        out.error(fetched.error or "", fetched.hint, tail, label=fetched.error_kind or "error")
        return
    if fetched.what == "prompt" and fetched.description:
        out.note(fetched.description, style="dim")
    for item in fetched.content:
        block = item if fetched.what == "resource" else item.get("content") or {}
        if fetched.what == "prompt":
            out.text(f"[{item.get('role', '')}]")
        text = block.get("text") if "text" in block else (block.get("resource") or {}).get("text")
        if isinstance(text, str):
            out.text(text)
    for path in saved:
        out.note(f"saved: {path}", style="green")


def policy_notes(out: Output, outcome: Any) -> None:
    """What the policy layer did to a call: fallback, cut, whole result written to a file."""
    fallback = outcome.fallback
    if fallback and fallback.get("ok"):
        out.note(f"{outcome.tool_name} failed ({fallback['original_error']}); "
                 f"this is {fallback['url']} converted locally by MarkItDown")
    cut = outcome.truncated
    if cut:
        out.note(f"result cut to {cut['kept_chars']} of {cut['original_chars']} characters (max_result_chars); "
                 "--output FILE writes all of it")
    if outcome.output:
        out.note(f"wrote the whole result ({outcome.output['chars']} characters) to {outcome.output['path']}",
                 style="green")


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


# ---------------------------------------------------------------------------------------------- check

_PHASE_COLUMNS = (("start", "start"), ("initialize", "init"), ("tools", "list"), ("ping", "ping"))
CHECK_LOG_WIDTH = 140  # a CI log has no width of its own; rows this wide stay one line each
CHECK_WIDE = 120  # narrower terminals get the reasons under the table instead of in a column


def check_table(out: Output, run: Any) -> None:
    """The check as one table (a row per server), failure details under it, then lock changes and a summary."""
    if not out.out.is_terminal and out.out.width < CHECK_LOG_WIDTH:
        out.out.width = CHECK_LOG_WIDTH
    wide = out.out.width >= CHECK_WIDE
    out.out.print(_check_rows(out, run, wide, reasons=wide and any(not r.ok for r in run.reports)))
    for report in run.reports:
        if report.failure is not None and (not wide or report.failure.hint or report.failure.stderr_tail):
            _check_details(out, report, with_reason=not wide)
    if run.lock is not None:
        lock_changes(out, run.lock)
    out.out.print(Text(_check_summary(run), style="bold green" if run.exit_code == 0 else "bold red"))


def _check_rows(out: Output, run: Any, wide: bool, reasons: bool) -> Table:
    columns = [*_PHASE_COLUMNS, *((("smoke", "smoke"),) if run.smoke else ())]
    table = Table(caption=_check_caption(run), caption_justify="left", expand=False,
                  **({} if wide else {"box": box.SIMPLE_HEAD, "padding": (0, 1), "collapse_padding": True,
                                       "pad_edge": False}))
    table.add_column("server", no_wrap=True, min_width=6, style="bold")
    if wide:
        table.add_column("status", no_wrap=True)
    table.add_column("protocol", no_wrap=True, min_width=10)
    table.add_column("version", overflow="fold", min_width=7)
    table.add_column("tools", justify="right", no_wrap=True)
    for key, header in columns:
        table.add_column(_start_header(run) if key == "start" else header, justify="right", no_wrap=True)
    if reasons:
        table.add_column("reason", overflow="fold", min_width=16, ratio=1)
    for report in run.reports:
        table.add_row(*_check_cells(out, report, columns, wide, reasons))
    return table


def _start_header(run: Any) -> str:
    kinds = {r.start_phase for r in run.reports}
    return kinds.pop() if len(kinds) == 1 else "start"


def _check_caption(run: Any) -> Text:
    text = "phase times in ms; ✗ failed there, – not run"
    if _start_header(run) == "start":
        text += "; start: spawn (stdio) or connect (HTTP)"
    modern = sorted({r.protocol_version for r in run.reports if _ping_removed(r)})
    if modern:
        text += f"; ping n/a: protocol {', '.join(modern)} has no ping"
    return Text(text, style="dim")


def _check_cells(out: Output, report: Any, columns: Sequence[tuple[str, str]], wide: bool,
                 reasons: bool) -> list[Text]:
    tools = str(len(report.tools)) if report.phases["tools"].status == "ok" else "–"
    cells = [Text(out.safe(report.protocol_version or "–")), Text(out.safe(report.server_version or "–")), Text(tools)]
    cells += [_phase_cell(report.phases[report.start_phase if key == "start" else key]) for key, _ in columns]
    if not wide:  # the mark alone says healthy or not; the reason follows under the table
        mark, style = _status(report)
        return [Text(f"{mark[0]} {out.safe(report.server)}", style=style), *cells]
    mark, style = _status(report)
    return [Text(out.safe(report.server)), Text(mark, style=style), *cells,
            *([_reason_cell(out, report)] if reasons else [])]


def _status(report: Any) -> tuple[str, str]:
    if report.ok:
        return "✓ healthy", "green"
    return ("✗ allowed", "yellow") if report.allowed_failure else ("✗ unhealthy", "red")


def _ping_removed(report: Any) -> bool:
    ping = report.phases["ping"]
    return ping.status == "skipped" and "not supported" in (ping.detail or "")


def _phase_cell(phase: Any) -> Text:
    if phase.status == "ok":
        return Text(f"{phase.ms:.0f}" if phase.ms is not None else "ok")
    if phase.status == "failed":
        return Text(f"✗ {phase.ms:.0f}" if phase.ms is not None else "✗", style="red")
    if phase.status == "skipped":
        return Text("n/a" if "not supported" in (phase.detail or "") else "–", style="dim")
    return Text("")


def _reason_cell(out: Output, report: Any) -> Text:
    if report.failure is None:
        return Text("")
    text = Text(f"{report.failure.kind}: ", style="yellow" if report.allowed_failure else "red")
    text.append(out.safe(report.failure.message))
    return text


def _check_details(out: Output, report: Any, with_reason: bool) -> None:
    """Under the table: the reason (if the table had no room for it), the hint, the last stderr lines."""
    failure = report.failure
    tail = failure.stderr_tail[-5:]
    line = Text("✗ ", style="yellow" if report.allowed_failure else "red")
    line.append(out.safe(report.server), style="bold")
    if with_reason:
        out.out.print(line + Text("  ") + _reason_cell(out, report))
        line = Text("")
    if failure.hint and not (tail and failure.hint.startswith("its stderr ends:")):
        line.append(f"  hint: {out.safe(failure.hint)}", style="yellow")
    elif tail:
        line.append(f"  stderr (last {len(tail)} line{'s' if len(tail) > 1 else ''}):", style="dim")
    if line.plain:
        out.out.print(line)
    for text in tail:
        out.out.print(Text(f"  | {out.safe(text)}", style="dim"))


def lock_changes(out: Output, lock: Any) -> None:
    """The tool-surface comparison: what was written, then each change with its severity."""
    if lock.written:
        out.out.print(Text(f"wrote the tool surface of the healthy servers to {out.safe(lock.written)}", style="dim"))
    if lock.against is None:
        return
    if not lock.changes:
        out.out.print(Text(f"tool surface matches {out.safe(lock.against)}", style="green"))
    else:
        head = f"tool surface differs from {lock.against}: {len(lock.breaking)} breaking, {len(lock.drift)} drift"
        out.out.print(Text(out.safe(head), style="bold red"))
    for change in lock.changes:
        mark = {"added": "+", "removed": "-"}.get(change.kind, "~")
        line = Text(f"  {mark} ", style="red" if change.severity == "breaking" else "yellow")
        line.append(out.safe(f"{change.server} {change.tool or '(server)'}: {change.detail}"))
        line.append(f"  [{change.severity}]", style="red" if change.severity == "breaking" else "yellow")
        out.out.print(line)
    if lock.unchecked:
        out.out.print(Text("  not compared (unhealthy or not selected): " + out.safe(", ".join(lock.unchecked)),
                           style="dim"))


def _check_summary(run: Any) -> str:
    counts = run.summary()
    parts = [f"{counts['healthy']} of {counts['servers']} servers healthy"]
    if counts["allowed_failures"]:
        parts.append(f"{counts['allowed_failures']} allowed to fail")
    if run.lock is not None and run.lock.changes:
        parts.append(f"tool surface changed: {len(run.lock.breaking)} breaking, {len(run.lock.drift)} drift")
    return ", ".join(parts) + f" ({run.duration_ms / 1000:.1f} s)"

# ---------------------------------------------------------------------------------------------- serve


def serve_report(out: Output, health: Mapping[str, Any], where: str, separator: str) -> None:
    """What the gateway serves, on stderr: one ready line, then each left-out server and collision."""
    servers = health.get("servers", [])
    up = sum(1 for s in servers if s.get("state") == "connected")
    shape = "two meta-tools (list_tools, call_tool)" if health.get("lazy") else f"SERVER{separator}TOOL"
    line = Text("miroctl serve: ", style="bold green")
    tools, total = health.get("tools", 0), len(servers)
    line.append(f"{counted(tools, 'tool')} from {up} of {counted(total, 'server')} as {shape}, on {where}")
    out.err.print(line, soft_wrap=True)
    for server in servers:
        if server.get("state") != "connected":
            error = server.get("error") or {}
            reason = f"{error.get('kind')}: {error.get('message')}" if error else server.get("state")
            out.err.print(Text(f"  left out for now (tried again later): {out.safe(server['name'])}: "
                               f"{out.safe(reason)}", style="yellow"), soft_wrap=True)
    for collision in health.get("collisions", []):
        out.err.print(Text(f"  name collision: {out.safe(collision['message'])}", style="yellow"), soft_wrap=True)
