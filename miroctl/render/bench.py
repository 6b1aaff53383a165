"""`bench`: the live line while it runs (stderr, terminals only) and the summary table at the end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from miroctl.core.bench import Tally
from miroctl.render.heading import heading
from miroctl.render.output import Output


def progress_line(tally: Tally) -> str:
    """What the live progress shows: calls answered, their rate, errors so far, calls in flight."""
    errors = f"{tally.failed} error{'' if tally.failed == 1 else 's'}"
    behind = f", {tally.missed} could not keep up" if tally.missed else ""
    return f"{tally.completed} done, {tally.rate():.1f}/s, {errors}{behind}, {tally.in_flight} in flight"


def bench_summary(out: Output, document: Mapping[str, Any]) -> None:
    """The summary: latency percentiles, throughput and errors by kind, then one verdict line."""
    plan = document["plan"]
    target = f"{document.get('server') or ''}.{document.get('tool') or ''}".strip(".")
    where = f"via {document['via']}" if document.get("via") else None
    shape = f"rate {plan['rate']:g}/s" if plan.get("rate") else None
    interrupted = "interrupted: partial results" if document.get("interrupted") else None
    out.out.print(heading(out, target, where, shape, f"concurrency {plan['concurrency']}", interrupted))
    table = Table(show_header=True, header_style="bold")
    for name in ("requests", "ok", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms", "req/s"):
        table.add_column(name, justify="right", no_wrap=True)
    latency = document["latency_ms"]
    table.add_row(
        str(document["completed"]),
        str(document["succeeded"]),
        str(document["failed"]),
        *(_ms(latency[key]) for key in ("p50", "p90", "p99", "max")),
        f"{document['throughput_rps']:.1f}",
    )
    out.out.print(table)
    if document["could_not_keep_up"]:  # an open loop's calls that were due but never made
        behind = Text(f"  could not keep up: {document['could_not_keep_up']}", style="red")
        behind.append("  calls due that found no free slot in time (not made)", style="dim")
        out.out.print(behind)
    for kind, count in document["errors_by_kind"].items():
        sample = document["error_samples"].get(kind) or ""
        line = Text(f"  {kind}: {count}", style="red")
        if sample:
            line.append(f"  e.g. {out.safe(sample[:200])}", style="dim")
        out.out.print(line)
    out.out.print(_verdict(document))


def _verdict(document: Mapping[str, Any]) -> Text:
    rate, limit = document["error_rate"], document["plan"]["max_error_rate"]
    seconds = f"{document['elapsed_s']:.1f} s"
    if document["passed"]:
        return Text(f"error rate {rate:.2%} (max {limit:.2%}) in {seconds}", style="bold green")
    return Text(f"error rate {rate:.2%} is over the maximum {limit:.2%} ({seconds})", style="bold red")


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"
