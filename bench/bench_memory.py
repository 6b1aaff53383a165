"""A 20 MB result: miroctl's cold call beside the mcp SDK's own client, time and peak memory of the client.

    python bench/bench_memory.py [--runs 5] [--chars 20000000]

Each run is a fresh process that makes one call of tests/servers/fixture.py's `big` tool over stdio and
reports its own wall time and peak resident memory (the server is another process, not counted):
`sdk` is mcp.Client(...).call_tool; `miroctl` is the command line (`miroctl call fx big chars=N`, the
result printed to /dev/null). Alternated, median of the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "servers" / "fixture.py"


def inner(kind: str, chars: int) -> None:
    started = time.perf_counter()
    if kind == "sdk":
        import anyio
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        async def call() -> int:
            params = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
            async with Client(stdio_client(params)) as client:
                result = await client.call_tool("big", {"chars": chars})
            return len(result.content[0].text)  # type: ignore[union-attr]

        size = anyio.run(call)
    else:
        from miroctl.launch.entry import run

        config = Path(os.environ["BENCH_CONFIG"])
        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                code = run(["call", "--config", str(config), "fx", "big", f"chars={chars}"])
            finally:
                sys.stdout = stdout
        size = chars if code == 0 else -1
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_mb": peak_kb / 1024, "chars": size}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chars", type=int, default=20_000_000)
    parser.add_argument("--inner", choices=("sdk", "miroctl"))
    opts = parser.parse_args()
    if opts.inner:
        inner(opts.inner, opts.chars)
        return
    config = Path("/tmp") / f"bench-memory-{os.getpid()}.json"
    config.write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE)]}}}))
    found: dict[str, list[dict[str, float]]] = {"sdk": [], "miroctl": []}
    try:
        for _ in range(opts.runs):
            for kind in found:
                done = subprocess.run(
                    [sys.executable, "-P", __file__, "--inner", kind, "--chars", str(opts.chars)],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "BENCH_CONFIG": str(config), "PYTHONPATH": str(ROOT)},
                    check=False,
                )
                record = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
                if record is None or record["chars"] != opts.chars:
                    print(f"{kind}: failed run\n{done.stderr[-800:]}", file=sys.stderr)
                    continue
                found[kind].append(record)
    finally:
        config.unlink()
    print(f"a {opts.chars / 1e6:g} M-character result, median of {opts.runs}; load {os.getloadavg()[0]:.1f}")
    sdk_time = statistics.median(r["seconds"] for r in found["sdk"])
    sdk_peak = statistics.median(r["peak_mb"] for r in found["sdk"])
    for kind, records in found.items():
        seconds = statistics.median(r["seconds"] for r in records)
        peak = statistics.median(r["peak_mb"] for r in records)
        ratios = f"{seconds / sdk_time:.2f}x the SDK's time, {peak / sdk_peak:.2f}x its peak"
        print(f"{kind:8} {seconds:6.2f} s  peak {peak:6.0f} MB  ({ratios})")


if __name__ == "__main__":
    main()
