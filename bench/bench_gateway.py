"""The gateway under load: `miroctl bench --via` at concurrency 1, 8, 32, 128 beside a raw SDK session, and the
gateway's memory over a long run.

    python bench/bench_gateway.py [--levels 1,8,32,128] [--requests 1000] [--soak 60] [--cache bench/.cache]
                                  [--sides via,mcp,mcporter,sdk] [--json rows.json]

The upstream is @modelcontextprotocol/server-everything's `echo` (Node, over stdio), as in the other curves.
At each concurrency, round-robin (one run each, the order rotated from level to level), --requests calls after
50 unmeasured ones by:

- `via`: `miroctl bench ev echo message=hi --via URL -j C` against a `miroctl serve --transport http` started
  once before the runs (miroctl's JSON API: one POST per call);
- `mcp`: `miroctl bench --url URL/mcp ev__echo ...`: the same gateway through its MCP endpoint (Streamable
  HTTP), driven by miroctl's own SDK client;
- `mcporter`: the same client against mcporter 0.12.3's keep-alive bridge (`mcporter serve --http PORT`, the
  server marked "lifecycle": "keep-alive"), through its /mcp/ev endpoint. mcporter's daemon itself is reached
  only by its CLI, one process per call, so this bridge is the way to load it like the others;
- `sdk`: one raw mcp SDK session (mcp.Client over stdio) to its own server-everything, C tasks calling `echo`
  on it: the floor.

Throughput is completed calls over the measured run's wall time; p50/p99 are nearest-rank percentiles of each
call's latency; errors are failed calls (each side's answers are checked). On a shared machine the wall-clock
figures follow the load; the CPU per call does much less: for `via` and `mcp` the gateway process's (psutil),
for `mcporter` its bridge process's (the server runs in another), for `sdk` the raw client's own
(time.process_time over the measured calls). Then `--soak SECONDS` of
`bench --via -j 32` while the gateway's resident memory is sampled (psutil) every second: its slope in MB per
minute (least squares over the whole run, and over its second half).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIROCTL = [sys.executable, "-m", "miroctl"]
WARMUP = 50


def percentile(ordered: list[float], p: float) -> float:
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def sdk(concurrency: int, requests: int, command: list[str]) -> int:
    """One raw SDK session to `command`; `concurrency` tasks make `requests` calls of echo; prints the row."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    latencies: list[float] = []
    failed = 0

    async def load() -> float:
        nonlocal failed
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(stdio_client(params)) as client:
            for _ in range(WARMUP):
                await client.call_tool("echo", {"message": "hi"})
            left = requests

            async def worker() -> None:
                nonlocal left, failed
                while left > 0:
                    left -= 1
                    started = time.perf_counter()
                    try:
                        result = await client.call_tool("echo", {"message": "hi"})
                        good = not result.is_error and "hi" in result.content[0].text  # type: ignore[union-attr]
                    except Exception:  # noqa: BLE001 - a failed call is counted, as bench counts it
                        good = False
                    latencies.append((time.perf_counter() - started) * 1000)
                    failed += not good

            started, cpu = time.perf_counter(), time.process_time()
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)
            spent[0] = time.process_time() - cpu
            return time.perf_counter() - started

    spent = [0.0]
    elapsed = anyio.run(load)
    ordered = sorted(latencies)
    measured = row(len(ordered) / elapsed, percentile(ordered, 50), percentile(ordered, 99), failed)
    print(json.dumps({**measured, "cpu_ms": spent[0] / requests * 1000}))
    return 0


def row(rps: float, p50: float, p99: float, failed: int) -> dict[str, float]:
    return {"rps": rps, "p50_ms": p50, "p99_ms": p99, "errors": failed}


def shown(side: str, r: dict[str, float], floor: dict[str, float] | None) -> str:
    text = f"  {side} {r['rps']:6.0f}/s p50 {r['p50_ms']:6.2f} p99 {r['p99_ms']:7.2f} ms err {r['errors']:.0f}"
    text += f" cpu {r.get('cpu_ms', float('nan')):.2f} ms"
    if floor and side != "sdk":
        text += f" ({r['rps'] / floor['rps']:.2f}x, p99 {r['p99_ms'] / floor['p99_ms']:.2f}x)"
    return text


def cpu_seconds(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def bench_side(argv: list[str], requests: int, front: int) -> dict[str, float]:
    """One `miroctl bench --json` run: its throughput, p50, p99 and errors (a run that fails says why), and
    the CPU the gateway process `front` spent per call (its warm-up calls counted with the others)."""
    cpu = cpu_seconds(front)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    cpu_ms = (cpu_seconds(front) - cpu) / (requests + WARMUP) * 1000
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        print(f"FAILED {argv[3:8]}: exit {done.returncode}\n{done.stderr[-800:]}", file=sys.stderr)
        return row(float("nan"), float("nan"), float("nan"), requests)
    if done.returncode != 0 or document["completed"] != requests:
        print(f"FAILED {argv[3:8]}: exit {done.returncode}, {document['errors_by_kind']}", file=sys.stderr)
    latency = document["latency_ms"]
    errors = document["failed"] + requests - document["completed"]
    return {**row(document["throughput_rps"], latency["p50"], latency["p99"], errors), "cpu_ms": cpu_ms}


def sdk_side(concurrency: int, requests: int, command: list[str]) -> dict[str, float]:
    argv = [sys.executable, __file__, "--sdk", str(concurrency), str(requests), "--", *command]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"FAILED sdk: exit {done.returncode}\n{done.stderr[-800:]}", file=sys.stderr)
        return row(float("nan"), float("nan"), float("nan"), requests)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


class Mcporter:
    """mcporter's keep-alive bridge over Streamable HTTP, its state in `directory`, stopped with its daemon."""

    def __init__(self, modules: Path, config: Path, directory: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        xdg = {f"XDG_{k}_HOME": str(directory / k.lower()) for k in ("STATE", "CACHE", "CONFIG", "DATA")}
        self.env = {**os.environ, **xdg}
        self.argv = [str(modules / ".bin" / "mcporter"), "--config", str(config)]
        self.proc = subprocess.Popen(
            [*self.argv, "serve", "--http", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "MCPorter serve HTTP bridge http://127.0.0.1:PORT/mcp"
        if "/mcp" not in line:
            self.stop()
            raise SystemExit(f"mcporter serve did not start: {line}")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        self.url = f"http://127.0.0.1:{port}/mcp/ev"

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)
        subprocess.run([*self.argv, "daemon", "stop"], env=self.env, capture_output=True, check=False)


def soak(url: str, pid: int, seconds: float) -> dict[str, object]:
    """`bench --via -j 32` for `seconds` while the gateway's RSS is sampled each second; its slope."""
    import psutil

    gateway = psutil.Process(pid)
    argv = [*MIROCTL, "bench", "ev", "echo", "message=hi", "--via", url, "-j", "32", "-d", f"{seconds:g}", "--json"]
    load = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    started = time.monotonic()
    samples: list[tuple[float, float]] = []
    while load.poll() is None:
        samples.append(((time.monotonic() - started) / 60, gateway.memory_info().rss / 2**20))
        try:
            load.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
    out, err = load.communicate()
    document = json.loads(out) if out.strip() else {"completed": 0, "failed": -1, "throughput_rps": 0}
    if load.returncode != 0:
        print(f"soak: exit {load.returncode}\n{err[-800:]}", file=sys.stderr)
    whole = statistics.linear_regression(*zip(*samples, strict=True)).slope
    half = samples[len(samples) // 2 :]
    late = statistics.linear_regression(*zip(*half, strict=True)).slope
    return {
        "seconds": seconds,
        "calls": document["completed"],
        "errors": document["failed"],
        "rps": document["throughput_rps"],
        "rss_first_mb": samples[0][1],
        "rss_last_mb": samples[-1][1],
        "rss_max_mb": max(s[1] for s in samples),
        "slope_mb_per_min": whole,
        "slope_second_half_mb_per_min": late,
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,8,32,128")
    parser.add_argument("--requests", type=int, default=1000, help="measured calls per side and level")
    parser.add_argument("--sides", default="via,mcp,mcporter,sdk")
    parser.add_argument("--soak", type=float, default=60, help="seconds of the memory run (0: none)")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    opts = parser.parse_args()
    os.environ.pop("MIROCTL_URL", None)
    from bench_peers import install
    from bench_serve import Gateway

    modules = install(opts.cache.resolve())
    command = ["node", str(modules / "@modelcontextprotocol/server-everything/dist/index.js")]
    sides = opts.sides.split(",")
    n = opts.requests
    print(f"uptime at the start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    rows: list[dict[str, object]] = []
    document: dict[str, object] = {"rows": rows}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = directory / "mcp.json"
        server = {"command": command[0], "args": command[1:]}
        config.write_text(json.dumps({"mcpServers": {"ev": server}}))
        keep_alive = directory / "mcporter.json"
        keep_alive.write_text(json.dumps({"mcpServers": {"ev": {**server, "lifecycle": "keep-alive"}}}))
        gateway = Gateway(config)
        bridge = Mcporter(modules, keep_alive, directory) if "mcporter" in sides else None
        try:
            load = ["bench", "-n", str(n), "--warmup", str(WARMUP), "--json", "-j"]
            argvs = {
                "via": lambda c: [*MIROCTL, *load, str(c), "ev", "echo", "message=hi", "--via", gateway.url],
                "mcp": lambda c: [*MIROCTL, *load, str(c), "--url", f"{gateway.url}/mcp", "ev__echo", "message=hi"],
                "mcporter": lambda c: [*MIROCTL, *load, str(c), "--url", bridge.url, "echo", "message=hi"],  # type: ignore[union-attr]
            }
            fronts = {"via": gateway.proc.pid, "mcp": gateway.proc.pid, "mcporter": bridge.proc.pid if bridge else 0}
            for turn, c in enumerate(int(level) for level in opts.levels.split(",")):
                order = sides[turn % len(sides) :] + sides[: turn % len(sides)]
                runs = {
                    s: sdk_side(c, n, command) if s == "sdk" else bench_side(argvs[s](c), n, fronts[s]) for s in order
                }
                rows.append({"concurrency": c, **runs, "load": os.getloadavg()[0]})
                print(f"C={c:<4}" + "".join(shown(s, r, runs.get("sdk")) for s, r in runs.items()), flush=True)
            if opts.soak:
                import psutil

                before = psutil.Process(gateway.proc.pid).memory_info().rss / 2**20
                document["soak"] = result = soak(gateway.url, gateway.proc.pid, opts.soak)
                print(
                    f"soak {opts.soak:g}s at -j 32: {result['calls']} calls, {result['errors']} errors, "
                    f"{result['rps']:.0f}/s; gateway RSS {before:.1f} MB before, {result['rss_first_mb']:.1f} -> "
                    f"{result['rss_last_mb']:.1f} MB (max {result['rss_max_mb']:.1f}); slope "
                    f"{result['slope_mb_per_min']:+.2f} MB/min "
                    f"(second half {result['slope_second_half_mb_per_min']:+.2f})",
                    flush=True,
                )
        finally:
            gateway.stop()
            if bridge:
                bridge.stop()
    print(f"uptime at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    if opts.json:
        opts.json.write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--sdk":
        split = sys.argv.index("--")
        sys.exit(sdk(int(sys.argv[2]), int(sys.argv[3]), sys.argv[split + 1 :]))
    main()
