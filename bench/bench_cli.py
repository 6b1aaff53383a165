"""Wall-clock costs of the CLI: start-up, and `list` over N servers against one server alone.

    python bench/bench_cli.py [--runs 5] [--servers 8]

Each server is tests/servers/fixture.py over stdio, a server on the mcp SDK whose start-up is mostly
CPU (importing the SDK): on a 2-core machine N such servers cannot start faster than N/2 of them.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "servers" / "fixture.py"


def wall(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def profile(directory: Path, count: int) -> Path:
    tool = directory / "tool"
    tool.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        name = f"s{index}"
        body = {"name": name, "tool_command": "python", "args": [str(FIXTURE), "--name", name, "--tools", "add"]}
        (tool / f"{name}.yaml").write_text(yaml.safe_dump(body))
    path = directory / "miroctl.yaml"
    path.write_text(yaml.safe_dump({"startup_timeout": 60}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--servers", type=int, default=8)
    opts = parser.parse_args()
    miroctl = [sys.executable, "-m", "miroctl"]
    print(f"python -c pass            {wall([sys.executable, '-c', 'pass'], opts.runs) * 1000:7.0f} ms")
    print(f"miroctl --version         {wall([*miroctl, '--version'], opts.runs) * 1000:7.0f} ms")
    print(f"miroctl --help            {wall([*miroctl, '--help'], opts.runs) * 1000:7.0f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        one = profile(Path(tmp) / "one", 1)
        many = profile(Path(tmp) / "many", opts.servers)
        alone = wall([*miroctl, "list", "--config", str(one)], opts.runs)
        pool = wall([*miroctl, "list", "--config", str(many)], opts.runs)
        call = wall([*miroctl, "call", "--config", str(one), "s0", "add", "a=1"], opts.runs)
    print(f"miroctl list, 1 server    {alone * 1000:7.0f} ms")
    print(f"miroctl list, {opts.servers} servers   {pool * 1000:7.0f} ms  ({pool / alone:.2f}x one server)")
    print(f"miroctl call (cold)       {call * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
