"""How `call --batch` grows with the batch: 1,000 and 10,000 calls, direct and `--via`, beside a raw SDK session.

    python bench/bench_batch.py [--sizes 1000,10000] [--jobs 8]

For each batch length, round-robin (one run each), against tests/servers/fixture.py's `echo` over stdio:

- `miroctl call --batch FILE -c CONFIG`: miroctl starts the server, makes every call over one pool, prints
  one envelope per line;
- `miroctl call --batch FILE --via URL` through a `miroctl serve --transport http` started once before the
  runs (its server already up): the gateway's resident memory is read (psutil) after each run;
- `sdk`: one raw mcp SDK session (mcp.Client over stdio) that starts the same server and makes the same calls
  one by one.

Each is a fresh process timed whole (interpreter start, imports, the server's start where it has one); its own
peak memory is `getrusage(RUSAGE_SELF)` in that process (miroctl runs through its entry point in a wrapper, so
the server's memory is not counted). Every run's output is checked: N lines, each the right answer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peak import inner, peak_mb  # bench/ is on sys.path when a script there runs

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "servers" / "fixture.py"
SERVER = [sys.executable, str(FIXTURE), "--name", "fx", "--tools", "echo"]


def sdk(n: int) -> int:
    """One raw SDK session: the same n calls, one by one, each answer printed as one line."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def calls() -> None:
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with Client(stdio_client(params)) as client:
            for i in range(n):
                result = await client.call_tool("echo", {"text": f"line {i}"})
                print(json.dumps({"text": result.content[0].text}))  # type: ignore[union-attr]

    anyio.run(calls)
    sys.stdout.flush()
    Path(os.environ["BENCH_PEAK_FILE"]).write_text(json.dumps({"peak_mb": peak_mb()}))
    return 0


def timed(argv: list[str], env: dict[str, str], n: int, out: Path, peak_file: Path) -> dict[str, float]:
    """One run: wall seconds and the process's own peak memory; output checked line by line."""
    peak_file.unlink(missing_ok=True)
    started = time.perf_counter()
    with out.open("w") as sink:
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    seconds = time.perf_counter() - started
    good = sum(1 for i, line in enumerate(out.open()) if f"line {i}" in line)
    if done.returncode != 0 or good != n:
        print(
            f"FAILED {argv[2:5]}: exit {done.returncode}, {good}/{n} right lines\n{done.stderr[-800:]}", file=sys.stderr
        )
        return {"seconds": float("nan"), "peak_mb": float("nan")}
    return {"seconds": seconds, "peak_mb": json.loads(peak_file.read_text())["peak_mb"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--jobs", type=int, default=8, help="miroctl's --jobs (its default)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    opts = parser.parse_args()
    os.environ.pop("MIROCTL_URL", None)
    # here, not at the top: the wrapper processes must hold miroctl or the SDK alone
    import psutil
    from bench_serve import Gateway

    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = directory / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"fx": {"command": SERVER[0], "args": SERVER[1:]}}}))
        peak_file, out = directory / "peak.json", directory / "out.jsonl"
        env = {"PYTHONPATH": str(ROOT), "BENCH_PEAK_FILE": str(peak_file)}
        gateway = Gateway(config, env)
        gateway_rss = psutil.Process(gateway.proc.pid)
        try:
            me = [sys.executable, __file__, "--inner", "call", "--jobs", str(opts.jobs), "--batch"]
            warm = directory / "warm.jsonl"  # one unmeasured call through the gateway: its session is open
            warm.write_text(json.dumps({"server": "fx", "tool": "echo", "arguments": {"text": "line 0"}}) + "\n")
            timed([*me, str(warm), "--via", gateway.url], env, 1, out, peak_file)
            print(f"gateway after one call: {gateway_rss.memory_info().rss / 2**20:.1f} MB", flush=True)
            for n in (int(size) for size in opts.sizes.split(",")):
                batch = directory / f"batch-{n}.jsonl"
                with batch.open("w") as lines:
                    for i in range(n):
                        lines.write(json.dumps({"server": "fx", "tool": "echo", "arguments": {"text": f"line {i}"}}))
                        lines.write("\n")
                direct = timed([*me, str(batch), "-c", str(config)], env, n, out, peak_file)
                via = timed([*me, str(batch), "--via", gateway.url], env, n, out, peak_file)
                via_gateway = gateway_rss.memory_info().rss / 2**20
                raw = timed([sys.executable, __file__, "--sdk", str(n)], env, n, out, peak_file)
                rows.append({"n": n, "batch": direct, "via": via, "gateway_rss_mb": via_gateway, "sdk": raw})
                print(
                    f"N={n:<6} batch {direct['seconds']:7.2f}s {direct['peak_mb']:6.1f}MB "
                    f"({direct['seconds'] / raw['seconds']:.2f}x sdk)  "
                    f"--via {via['seconds']:7.2f}s {via['peak_mb']:6.1f}MB "
                    f"({via['seconds'] / raw['seconds']:.2f}x sdk; gateway {via_gateway:.1f}MB)  "
                    f"sdk {raw['seconds']:7.2f}s {raw['peak_mb']:6.1f}MB  load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        finally:
            gateway.stop()
    print(f"load average at the end: {os.getloadavg()}")
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "--sdk":
        sys.exit(sdk(int(sys.argv[2])))
    main()
