"""`check`: the health table, the reasons and stderr tails of failing servers, and lock drift."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from miroctl.check.lockfile import LockCheck
from miroctl.check.report import CheckRun, Phase, ProbeReport
from miroctl.render.columns import Column, frame, widths, wrap
from miroctl.render.heading import heading
from miroctl.render.output import Output

_PHASE_COLUMNS = (("start", "start"), ("initialize", "init"), ("tools", "list"), ("ping", "ping"))
CHECK_LOG_WIDTH = 140  # a CI log has no width of its own (unless COLUMNS says): rows this wide stay one line each
CHECK_WIDE = 120  # narrower terminals get the reasons under the table instead of in a column


def check_table(out: Output, run: CheckRun) -> None:
    """The check as one table (a row per server), failure details under it, then lock changes and a summary.

    The column rules of render/columns.py: server names, versions and times whole, the reasons in the room
    left (under the table when there is too little); a screen too narrow for the table gets a server a line."""
    if not out.out.is_terminal and not os.environ.get("COLUMNS") and out.out.width < CHECK_LOG_WIDTH:
        out.out.width = CHECK_LOG_WIDTH
    wide = out.out.width >= CHECK_WIDE
    table = _check_rows(out, run, wide, reasons=wide and any(not r.ok for r in run.reports)) if wide else None
    if table is None:  # narrower, or the wide columns leave the reasons too little room: the narrow table
        wide, table = False, _check_rows(out, run, False, reasons=False)
    if table is not None:
        out.out.print(table)
    else:
        _check_lines(out, run)
    for report in run.reports:  # a server another interpreter ran says which
        if report.python:
            out.out.print(heading(out, report.server, f"python {report.python}"))
    for report in run.reports:
        if report.failure is not None and (not wide or report.failure.hint or report.failure.stderr_tail):
            _check_details(out, report, with_reason=not wide)
    if run.strict is not None:
        lint_findings(out, run)
    if run.lock is not None:
        lock_changes(out, run.lock)
    out.out.print(Text(_check_summary(run), style="bold green" if run.exit_code == 0 else "bold red"))


def _check_rows(out: Output, run: CheckRun, wide: bool, reasons: bool) -> Table | None:
    """The table, each column sized by the column rules; None when it does not fit the screen."""
    headers = _check_headers(run, wide, reasons)
    rows = [_check_cells(out, report, _phase_columns(run), wide, reasons) for report in run.reports]
    columns = [_column(header, [row[i].plain for row in rows]) for i, header in enumerate(headers)]
    sizes = widths(columns, out.out.width - frame(len(columns), light=not wide))
    if sizes is None:
        return None
    table = Table(caption=_check_caption(run, wide), caption_justify="left", expand=False)
    if not wide:  # narrow terminals: a lighter frame that gives the cells their room
        table.box, table.padding, table.collapse_padding, table.pad_edge = box.SIMPLE_HEAD, (0, 1), True, False
    for header, size in zip(headers, sizes, strict=True):
        right = header not in ("server", "status", "protocol", "version", "reason")
        table.add_column(
            header,
            width=size,
            no_wrap=header != "reason",
            overflow="fold",
            justify="right" if right else "left",
            style="bold" if header == "server" else "",
        )
    for row in rows:
        table.add_row(*row)
    return table


def _column(header: str, cells: list[str]) -> Column:
    """The reason is running text; every other cell (a name, a version, a time) is a token kept whole."""
    return Column.text(header, cells) if header == "reason" else Column.tokens(header, cells)


def _phase_columns(run: CheckRun) -> list[tuple[str, str]]:
    return [*_PHASE_COLUMNS, *((("smoke", "smoke"),) if run.smoke else ())]


def _check_headers(run: CheckRun, wide: bool, reasons: bool) -> list[str]:
    phases = [_start_header(run) if key == "start" else header for key, header in _phase_columns(run)]
    # below 120 columns the phases take the room (--json has every server's time)
    return [
        "server",
        *(["status"] if wide else []),
        "protocol",
        "version",
        "tools",
        *phases,
        *(["total"] if wide else []),
        *(["reason"] if reasons else []),
    ]


def _check_lines(out: Output, run: CheckRun) -> None:
    """Too narrow for the table: each server's mark and name alone on a line, its facts indented under it."""
    phases = _check_headers(run, wide=False, reasons=False)[4:]
    width = out.out.width
    for report in run.reports:
        cells = _check_cells(out, report, _phase_columns(run), wide=False, reasons=False)
        out.out.print(cells[0], soft_wrap=True)  # the name is never broken
        facts = f"protocol {cells[1].plain}, version {cells[2].plain}, tools {cells[3].plain}"
        times = ", ".join(f"{head} {cell.plain}" for head, cell in zip(phases, cells[4:], strict=True) if cell.plain)
        for line in (*wrap(facts, width, "    ", "      "), *wrap(times, width, "    ", "      ")):
            out.out.print(Text(line, style="dim"), soft_wrap=True)
    out.out.print(_check_caption(run, wide=False))


def _start_header(run: CheckRun) -> str:
    kinds = {r.start_phase for r in run.reports}
    return kinds.pop() if len(kinds) == 1 else "start"


def _check_caption(run: CheckRun, wide: bool) -> Text:
    text = "times in ms (total: each server's whole check, its start included)" if wide else "phase times in ms"
    text += "; ✗ failed there, – not run"
    if _start_header(run) == "start":
        text += "; start: spawn (stdio) or connect (HTTP)"
    modern = sorted({r.protocol_version for r in run.reports if _ping_removed(r) and r.protocol_version})
    if modern:
        text += f"; ping n/a: protocol {', '.join(modern)} has no ping"
    return Text(text, style="dim")


def _check_cells(
    out: Output, report: ProbeReport, columns: Sequence[tuple[str, str]], wide: bool, reasons: bool
) -> list[Text]:
    tools = str(len(report.tools)) if report.phases["tools"].status == "ok" else "–"
    cells = [Text(out.safe(report.protocol_version or "–")), Text(out.safe(report.server_version or "–")), Text(tools)]
    cells += [_phase_cell(report.phases[report.start_phase if key == "start" else key]) for key, _ in columns]
    if not wide:  # the mark alone says healthy or not; the reason follows under the table
        mark, style = _status(report)
        return [Text(f"{mark[0]} {out.safe(report.server)}", style=style), *cells]
    mark, style = _status(report)
    return [
        Text(out.safe(report.server)),
        Text(mark, style=style),
        *cells,
        Text(f"{report.duration_ms:.0f}"),  # the server's wall time, from the start of its check
        *([_reason_cell(out, report)] if reasons else []),
    ]


def _status(report: ProbeReport) -> tuple[str, str]:
    if report.ok:
        return "✓ healthy", "green"
    return ("✗ allowed", "yellow") if report.allowed_failure else ("✗ unhealthy", "red")


def _ping_removed(report: ProbeReport) -> bool:
    ping = report.phases["ping"]
    return ping.status == "skipped" and "not supported" in (ping.detail or "")


def _phase_cell(phase: Phase | None) -> Text:
    if phase is None:
        return Text("")
    if phase.status == "ok":
        return Text(f"{phase.ms:.0f}" if phase.ms is not None else "ok")
    if phase.status == "failed":
        return Text(f"✗ {phase.ms:.0f}" if phase.ms is not None else "✗", style="red")
    if phase.status == "skipped":
        return Text("n/a" if "not supported" in (phase.detail or "") else "–", style="dim")
    return Text("")


def _reason_cell(out: Output, report: ProbeReport) -> Text:
    if report.failure is None:
        return Text("")
    text = Text(f"{report.failure.kind}: ", style="yellow" if report.allowed_failure else "red")
    text.append(out.safe(report.failure.message))
    return text


def _check_details(out: Output, report: ProbeReport, with_reason: bool) -> None:
    """Under the table: the reason (if the table had no room for it), the hint, the last stderr lines."""
    failure = report.failure
    if failure is None:
        return
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


def lock_changes(out: Output, lock: LockCheck) -> None:
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
    for finding in lock.lint_new:
        line = Text("  + ", style="red")
        line.append(out.safe(f"{finding.server} {finding.tool}: new lint finding {finding.path}: {finding.problem}"))
        line.append("  [lint]", style="red")
        out.out.print(line)
    for server, key in lock.lint_fixed:
        out.out.print(
            Text(f"  - {out.safe(server)}: lint finding no longer reported: {out.safe(key)}  [lint]", style="green")
        )
    if lock.unchecked:
        out.out.print(
            Text("  not compared (unhealthy or not selected): " + out.safe(", ".join(lock.unchecked)), style="dim")
        )


def lint_findings(out: Output, run: CheckRun) -> None:
    """check --strict: each finding with its tool, path, problem, fix and the providers that reject it."""
    counted = run.findings
    shown = [f for r in run.reports if r.ok and r.lint for f in r.lint]
    if not shown:
        out.out.print(Text(f"schema lint ({', '.join(run.strict or ())}): no findings", style="green"))
        return
    head = f"schema lint ({', '.join(run.strict or ())}): {len(shown)} finding{'' if len(shown) == 1 else 's'}"
    if len(counted) != len(shown):
        head += f", {len(shown) - len(counted)} accepted by the lock file"
    out.out.print(Text(head, style="bold red" if counted else "bold yellow"))
    for finding in shown:
        line = Text("  ✗ " if finding in counted else "  ~ ", style="red" if finding in counted else "dim")
        line.append(out.safe(f"{finding.server} {finding.tool}"), style="bold")
        line.append(out.safe(f"  {finding.path}: {finding.problem}"))
        line.append(f"  [{','.join(finding.providers)}]", style="yellow")
        out.out.print(line)
        out.out.print(Text(f"      fix: {out.safe(finding.fix)}", style="dim"))


def _check_summary(run: CheckRun) -> str:
    counts = run.summary()
    parts = [f"{counts['healthy']} of {counts['servers']} servers healthy"]
    if counts["allowed_failures"]:
        parts.append(f"{counts['allowed_failures']} allowed to fail")
    if run.lock is not None and run.lock.changes:
        parts.append(f"tool surface changed: {len(run.lock.breaking)} breaking, {len(run.lock.drift)} drift")
    if run.findings:
        parts.append(f"{len(run.findings)} lint finding{'' if len(run.findings) == 1 else 's'}")
    return ", ".join(parts) + f" ({run.duration_ms / 1000:.1f} s)"
