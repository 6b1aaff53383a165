"""The plots of bench/RESULTS.md from the rows bench_pool.py, bench_batch.py, bench_gateway.py and
bench_large.py wrote with --json.

    pip install 'miroctl[bench]'
    python bench/plot_curves.py --pool pool.json --batch batch.json --gateway gateway.json --large large.json
                                [--out bench]

Writes bench/curve_pool.png (wall time and miroctl's peak memory against N), bench/curve_batch.png (wall
time and peak memory against the batch length), bench/curve_gateway.png (throughput and p99 against the
concurrency, the gateway's memory over the long run) and bench/curve_large.png (time and peak memory against
the result's size).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def panels(count: int) -> tuple[Any, Any]:
    """A figure of `count` plots side by side, drawn off screen (matplotlib: the bench extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, count, figsize=(15 if count == 3 else 11, 4.2))


def plot_pool(rows: list[dict[str, object]], out: Path, rerun: list[dict[str, object]] | None = None) -> None:
    """`rerun`: rows of another run (e.g. --clients mcporter) whose clients are drawn dotted beside the first."""
    figure, (times, memory) = panels(2)
    for kind, style in (("py", "-"), ("everything", "--")):
        mine = [r for r in rows if r["kind"] == kind]
        sizes = [r["n"] for r in mine]
        for client, colour in (("miroctl", "tab:blue"), ("mcporter", "tab:orange"), ("floor", "tab:gray")):
            seconds = [r[client]["seconds"] for r in mine]  # type: ignore[index]
            times.plot(sizes, seconds, style, marker="o", color=colour, label=f"{client}, {kind}")
        for r_client in ("mcporter",) if rerun else ():
            again = [r for r in rerun or [] if r["kind"] == kind]
            seconds = [r[r_client]["seconds"] for r in again]  # type: ignore[index]
            label = f"{r_client}, {kind}, second run"
            times.plot([r["n"] for r in again], seconds, ":", marker="x", color="tab:red", label=label)
        peaks = [r["miroctl"]["peak_mb"] for r in mine]  # type: ignore[index]
        memory.plot(sizes, peaks, style, marker="o", color="tab:blue", label=f"miroctl, {kind}")
        floor = [r["floor"]["peak_mb"] for r in mine]  # type: ignore[index]
        memory.plot(sizes, floor, style, marker="o", color="tab:gray", label=f"floor, {kind}")
    times.set(xlabel="stdio servers listed (N)", ylabel="wall time (s)", title="list of N servers, one run each")
    memory.set(xlabel="stdio servers listed (N)", ylabel="client's own peak RSS (MB)", title="client memory")
    memory.set_ylim(bottom=0)
    times.legend(fontsize=7)
    memory.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def plot_batch(rows: list[dict[str, object]], out: Path) -> None:
    figure, (times, memory) = panels(2)
    sizes = [r["n"] for r in rows]
    for key, label, colour in (
        ("batch", "call --batch", "tab:blue"),
        ("via", "call --batch --via", "tab:green"),
        ("sdk", "raw SDK session", "tab:gray"),
    ):
        times.plot(sizes, [r[key]["seconds"] for r in rows], marker="o", color=colour, label=label)  # type: ignore[index]
        memory.plot(sizes, [r[key]["peak_mb"] for r in rows], marker="o", color=colour, label=label)  # type: ignore[index]
    memory.plot(sizes, [r["gateway_rss_mb"] for r in rows], ":", marker="o", color="tab:green", label="the gateway")
    for axes in (times, memory):
        axes.set_xscale("log")
        axes.legend(fontsize=7)
    times.set(xlabel="calls in the batch", ylabel="wall time (s)", title="calls of echo over stdio, one run each")
    memory.set(xlabel="calls in the batch", ylabel="peak RSS (MB)", title="client memory (gateway: RSS after)")
    memory.set_ylim(bottom=0)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


SIDES = {
    "via": ("bench --via (JSON API)", "tab:blue"),
    "mcp": ("bench --url serve's /mcp", "tab:green"),
    "mcporter": ("bench --url mcporter's bridge", "tab:orange"),
    "sdk": ("raw SDK session (floor)", "tab:gray"),
}


def plot_gateway(document: dict[str, object], out: Path, before: dict[str, object] | None = None) -> None:
    """`before`: the rows of a run before a fix, its `via` drawn dotted."""
    rows: list[dict[str, object]] = document["rows"]  # type: ignore[assignment]
    soak = document.get("soak")
    figure, axes = panels(3 if soak else 2)
    rate, tail = axes[0], axes[1]
    levels = [r["concurrency"] for r in rows]
    for side, (label, colour) in SIDES.items():
        if side not in rows[0]:
            continue
        rate.plot(levels, [r[side]["rps"] for r in rows], marker="o", color=colour, label=label)  # type: ignore[index]
        tail.plot(levels, [r[side]["p99_ms"] for r in rows], marker="o", color=colour, label=label)  # type: ignore[index]
    if before:
        old: list[dict[str, object]] = before["rows"]  # type: ignore[assignment]
        for panel, key in ((rate, "rps"), (tail, "p99_ms")):
            values = [r["via"][key] for r in old]  # type: ignore[index]
            panel.plot([r["concurrency"] for r in old], values, ":", marker="x", color="tab:blue", label="via, before")
            values = [r["sdk"][key] for r in old]  # type: ignore[index]
            panel.plot([r["concurrency"] for r in old], values, ":", marker="x", color="tab:gray", label="sdk, before")
    for panel in (rate, tail):
        panel.set_xscale("log", base=2)
        panel.legend(fontsize=7)
    rate.set(xlabel="calls in flight", ylabel="calls per second", title="echo of server-everything, one run each")
    tail.set(xlabel="calls in flight", ylabel="p99 latency (ms)", title="p99")
    tail.set_yscale("log")
    if isinstance(soak, dict):
        memory = axes[2]
        minutes, rss = zip(*soak["samples"], strict=True)
        memory.plot(minutes, rss, color="tab:blue")
        title = f"serve's RSS under bench --via -j 32: {soak['slope_mb_per_min']:+.2f} MB/min"
        memory.set(xlabel="minutes", ylabel="RSS (MB)", title=title)
        memory.set_ylim(bottom=0)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def plot_large(rows: list[dict[str, object]], out: Path) -> None:
    figure, (times, memory) = panels(2)
    sizes = [r["mb"] for r in rows]
    for key, label, colour in (
        ("call", "call (cold)", "tab:blue"),
        ("via", "call --via", "tab:green"),
        ("serve", "SDK client through serve (stdio)", "tab:purple"),
        ("sdk", "the SDK alone", "tab:gray"),
    ):
        times.plot(sizes, [r[key]["seconds"] for r in rows], marker="o", color=colour, label=label)  # type: ignore[index]
    for key, field, label, colour in (
        ("call", "peak_mb", "call (cold)", "tab:blue"),
        ("via", "peak_mb", "call --via, its client", "tab:green"),
        ("via", "gateway_peak_mb", "the gateway (--via)", "tab:olive"),
        ("serve", "serve_peak_mb", "serve (stdio)", "tab:purple"),
        ("sdk", "peak_mb", "the SDK alone", "tab:gray"),
    ):
        memory.plot(sizes, [r[key][field] for r in rows], marker="o", color=colour, label=label)  # type: ignore[index]
    memory.plot(sizes, [3 * s for s in sizes], ":", color="tab:red", label="3x the result")  # type: ignore[operator]
    times.set(xlabel="result (MB of text)", ylabel="wall time (s)", title="one call of fixture.py's big, one run each")
    memory.set(xlabel="result (MB of text)", ylabel="peak RSS (MB)", title="each process's own peak")
    for axes in (times, memory):
        axes.legend(fontsize=7)
        axes.set_ylim(bottom=0)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pool", type=Path)
    parser.add_argument("--pool-rerun", type=Path, help="rows of a second bench_pool.py run, drawn beside")
    parser.add_argument("--batch", type=Path)
    parser.add_argument("--gateway", type=Path)
    parser.add_argument("--gateway-before", type=Path, help="a bench_gateway.py run before a fix, drawn dotted")
    parser.add_argument("--large", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "bench")
    opts = parser.parse_args()
    if opts.pool:
        rerun = json.loads(opts.pool_rerun.read_text()) if opts.pool_rerun else None
        plot_pool(json.loads(opts.pool.read_text()), opts.out / "curve_pool.png", rerun)
    if opts.batch:
        plot_batch(json.loads(opts.batch.read_text()), opts.out / "curve_batch.png")
    if opts.gateway:
        before = json.loads(opts.gateway_before.read_text()) if opts.gateway_before else None
        plot_gateway(json.loads(opts.gateway.read_text()), opts.out / "curve_gateway.png", before)
    if opts.large:
        plot_large(json.loads(opts.large.read_text()), opts.out / "curve_large.png")


if __name__ == "__main__":
    main()
