"""The daemon's costs: a cold call, the first call (which starts the daemon) and a call through it.

    python bench/bench_daemon.py [--runs 5]

The server is tests/servers/fixture.py over stdio marked `persistent: true`, so plain `miroctl call`s go
through a daemon; `--no-daemon` gives the cold call of the same server. Goals (issue 22): a call through the
daemon costs at most 0.15x a cold call, and the first call at most 1.3x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "servers" / "fixture.py"


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    miroctl = [sys.executable, "-m", "miroctl"]
    call = [*miroctl, "call", "counter", "counter"]
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        here = Path(tmp)
        (here / "tool").mkdir()
        server = {"name": "counter", "tool_command": "python", "args": [str(FIXTURE)], "persistent": True}
        (here / "tool" / "counter.yaml").write_text(yaml.safe_dump(server))
        (here / "miroctl.yaml").write_text(yaml.safe_dump({"startup_timeout": 60}))
        env = {**os.environ, "XDG_RUNTIME_DIR": str(here / "run")}
        env.pop("MIROCTL_DAEMON", None)
        cold, first, warm = [], [], []
        for _ in range(opts.runs):
            cold.append(timed([*call, "--no-daemon"], here, env))
            first.append(timed(call, here, env))
            warm.extend(timed(call, here, env) for _ in range(3))
            timed([*miroctl, "daemon", "stop"], here, env)
    c, f, w = (statistics.median(times) for times in (cold, first, warm))
    print(f"cold call (--no-daemon)            {c * 1000:7.0f} ms")
    print(f"first call (starts the daemon)     {f * 1000:7.0f} ms  ({f / c:.2f}x cold; goal <= 1.3x)")
    print(f"call through the running daemon    {w * 1000:7.0f} ms  ({w / c:.2f}x cold; goal <= 0.15x)")


if __name__ == "__main__":
    main()
