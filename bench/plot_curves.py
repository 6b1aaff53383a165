"""The plots of bench/RESULTS.md from the rows bench_pool.py and bench_batch.py wrote with --json.

    pip install 'miroctl[bench]'
    python bench/plot_curves.py --pool pool.json --batch batch.json [--out bench]

Writes bench/curve_pool.png (wall time and miroctl's peak memory against N) and bench/curve_batch.png (wall
time and peak memory against the batch length).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def plot_pool(rows: list[dict[str, object]], out: Path, rerun: list[dict[str, object]] | None = None) -> None:
    """`rerun`: rows of another run (e.g. --clients mcporter) whose clients are drawn dotted beside the first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (times, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (times, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pool", type=Path)
    parser.add_argument("--pool-rerun", type=Path, help="rows of a second bench_pool.py run, drawn beside")
    parser.add_argument("--batch", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "bench")
    opts = parser.parse_args()
    if opts.pool:
        rerun = json.loads(opts.pool_rerun.read_text()) if opts.pool_rerun else None
        plot_pool(json.loads(opts.pool.read_text()), opts.out / "curve_pool.png", rerun)
    if opts.batch:
        plot_batch(json.loads(opts.batch.read_text()), opts.out / "curve_batch.png")


if __name__ == "__main__":
    main()
