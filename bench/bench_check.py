"""`miroctl check` over N slow-starting servers against the slowest one alone.

    python bench/bench_check.py [--runs 5] [--servers 8] [--delay 1.0]

Scenarios, each timed as a whole `miroctl check --json` process (wall) and by the run's own
`duration_ms` (probing only: without miroctl's start-up and its import of the mcp SDK):

- waiting:  tests/servers/legacy.py --delay D, a server that sleeps D seconds before it answers
            (start-up that waits: a JVM, a container, a remote login). The issue's goal: N of them
            take at most 1.3x the slowest one alone.
- sdk:      tests/servers/fixture.py, a server on the mcp SDK whose ~1 s start-up is CPU (importing
            the SDK): on a 2-core machine N of them cannot start faster than N/2 of them.
- one hung: N-1 waiting servers and one that never answers, with --timeout T: the run costs T, not more.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "servers" / "legacy.py"
FIXTURE = ROOT / "tests" / "servers" / "fixture.py"


def check(config: Path, runs: int, *extra: str) -> tuple[float, float]:
    """Median wall seconds of the whole process, and median of the run's own duration_ms, in seconds."""
    walls, probes = [], []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "miroctl", "check", "--json", "--config", str(config), *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        walls.append(time.perf_counter() - started)
        probes.append(json.loads(done.stdout)["duration_ms"] / 1000)
    return statistics.median(walls), statistics.median(probes)


def profile(directory: Path, servers: list[dict]) -> Path:
    tool = directory / "tool"
    tool.mkdir(parents=True, exist_ok=True)
    for body in servers:
        (tool / f"{body['name']}.yaml").write_text(yaml.safe_dump(body))
    path = directory / "miroctl.yaml"
    path.write_text(yaml.safe_dump({"startup_timeout": 60}))
    return path


def waiting(name: str, delay: float) -> dict:
    return {"name": name, "tool_command": "python", "args": [str(LEGACY), "--name", name, "--delay", str(delay)]}


def sdk(name: str) -> dict:
    return {"name": name, "tool_command": "python", "args": [str(FIXTURE), "--name", name, "--tools", "add"]}


def hung(name: str) -> dict:
    return {"name": name, "tool_command": "python", "args": [str(FIXTURE), "--name", name, "--mode", "hang"]}


def compare(label: str, one: Path, many: Path, count: int, runs: int, *extra: str) -> None:
    alone_wall, alone_probe = check(one, runs, *extra)
    pool_wall, pool_probe = check(many, runs, *extra)
    print(f"{label:<10} 1 server   wall {alone_wall:6.2f} s   probing {alone_probe:6.2f} s")
    print(
        f"{label:<10} {count} servers  wall {pool_wall:6.2f} s   probing {pool_probe:6.2f} s   "
        f"ratio wall {pool_wall / alone_wall:.2f}x, probing {pool_probe / alone_probe:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=2.0, help="--timeout for the hung-server scenario")
    opts = parser.parse_args()
    n = opts.servers
    print(f"{os.cpu_count()} cores, python {sys.version.split()[0]}, median of {opts.runs} runs")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        compare(
            "waiting",
            profile(root / "w1", [waiting("s0", opts.delay)]),
            profile(root / "wn", [waiting(f"s{i}", opts.delay) for i in range(n)]),
            n,
            opts.runs,
        )
        compare(
            "sdk",
            profile(root / "s1", [sdk("s0")]),
            profile(root / "sn", [sdk(f"s{i}") for i in range(n)]),
            n,
            opts.runs,
        )
        mixed = [waiting(f"s{i}", opts.delay) for i in range(n - 1)] + [hung("stuck")]
        compare(
            "one hung",
            profile(root / "h1", [hung("stuck")]),
            profile(root / "hn", mixed),
            n,
            opts.runs,
            "--timeout",
            str(opts.timeout),
        )


if __name__ == "__main__":
    main()
