"""How soon a user at a terminal sees the first line of feedback after pressing Enter.

    python bench/bench_feedback.py [--runs 9]

Runs `miroctl list` (against one stdio server) with stderr on a pseudo-terminal and measures, from the
moment the process is started, the time to the first byte on that terminal; `python -c pass` under the
same conditions is the floor (the interpreter's own start-up). Prints the medians and the spread.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SURFACE = ROOT / "tests" / "servers" / "surface.py"


def first_byte(argv: list[str], env: dict[str, str]) -> float | None:
    """Seconds from the start of the process to its first byte on the terminal (None if it wrote nothing)."""
    master, slave = pty.openpty()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = None
    while seen is None:
        ready, _, _ = select.select([master], [], [], 0.01)
        if ready:
            try:
                if os.read(master, 4096):
                    seen = time.perf_counter() - started
            except OSError:
                break
        elif proc.poll() is not None:
            break
    proc.wait()
    os.close(master)
    return seen


def config(directory: Path) -> Path:
    spec = directory / "spec.json"
    spec.write_text('{"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}')
    (directory / "tool").mkdir()
    server = {"name": "one", "tool_command": "python", "args": [str(SURFACE), "--spec", str(spec)]}
    (directory / "tool" / "one.yaml").write_text(yaml.safe_dump(server))
    profile = directory / "miroctl.yaml"
    profile.write_text(yaml.safe_dump({"tool_config": ["one"]}))
    return profile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
    with tempfile.TemporaryDirectory() as scratch:
        profile = config(Path(scratch))
        floor_cmd = [sys.executable, "-c", "import os; os.write(2, b'x')"]
        list_cmd = [sys.executable, "-m", "miroctl", "list", "-c", str(profile)]
        floors, firsts = [], []
        for _ in range(opts.runs):  # interleaved, so both see the same load
            floors.append(first_byte(floor_cmd, env) or float("nan"))
            firsts.append(first_byte(list_cmd, env) or float("nan"))
    print(f"load average: {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    for label, values in (("python writing one byte", floors), ("miroctl list, first line", firsts)):
        ms = sorted(v * 1000 for v in values)
        print(f"{label:28} median {statistics.median(ms):6.0f} ms   min {ms[0]:5.0f}   max {ms[-1]:5.0f}")


if __name__ == "__main__":
    main()
