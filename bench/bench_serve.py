"""Benchmark of `miroctl serve`, `--via` and `--batch` against the direct paths (numbers go to RESULTS.md).

    python bench/bench_serve.py [--runs 10] [--calls 300] [--batch 200]

Measures the issue's three goals on this machine:
  1. `miroctl call --via` against a warm gateway vs a cold direct `miroctl call` (median wall, whole process);
  2. the gateway's added latency per call vs a direct open SDK session (median over many calls);
  3. one `miroctl call --batch` of N calls vs N separate cold `miroctl call` processes.
The upstream is tests/servers/fixture.py (an MCPServer over stdio), tool `echo`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = str(ROOT / "tests" / "servers" / "fixture.py")
MIROCTL = [sys.executable, "-m", "miroctl"]


def write_config(directory: Path) -> Path:
    (directory / "tool").mkdir()
    (directory / "tool" / "bench.yaml").write_text(
        json.dumps(
            {"name": "bench", "tool_command": "python", "args": [FIXTURE, "--name", "bench", "--tools", "echo,add"]}
        )
    )
    profile = directory / "miroctl.yaml"
    profile.write_text(json.dumps({"tool_config": ["bench"], "startup_timeout": 60}))
    return profile


def wall(command: list[str], stdin: str | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=ROOT, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr}")
    return elapsed


class Gateway:
    """`miroctl serve --transport http` in the background."""

    def __init__(self, config: Path, env: dict[str, str] | None = None, options: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [*MIROCTL, "serve", "-c", str(config), "--transport", "http", "--port", "0", *options],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True).start()  # type: ignore[arg-type]
        deadline = time.monotonic() + 120
        while not (found := re.search(r"on (http://\S+)/mcp", "".join(self.lines))):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("gateway did not start:\n" + "".join(self.lines))
            time.sleep(0.05)
        self.url = found.group(1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def goal_1(config: Path, url: str, runs: int) -> dict[str, float]:
    cold = [wall([*MIROCTL, "call", "bench", "echo", "text=hi", "--json", "-c", str(config)]) for _ in range(runs)]
    warm = [wall([*MIROCTL, "call", "bench", "echo", "text=hi", "--json", "--via", url]) for _ in range(runs)]
    bare = [wall([sys.executable, "-c", "pass"]) for _ in range(runs)]
    return {"cold": statistics.median(cold), "warm": statistics.median(warm), "python": statistics.median(bare)}


async def _timed(client: object, tool: str) -> float:
    started = time.perf_counter()
    await client.call_tool(tool, {"text": "hi"})  # type: ignore[attr-defined]
    return time.perf_counter() - started


async def _latencies(client: object, tool: str, calls: int) -> list[float]:
    for _ in range(20):  # warm-up
        await _timed(client, tool)
    return [await _timed(client, tool) for _ in range(calls)]


async def goal_2(config: Path, url: str, calls: int) -> dict[str, float]:
    """Direct and gateway sessions open side by side, called alternately, so load hits both alike."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    direct = StdioServerParameters(command=sys.executable, args=[FIXTURE, "--name", "bench"])
    served = StdioServerParameters(
        command=sys.executable, args=["-m", "miroctl", "serve", "-c", str(config)], cwd=str(ROOT)
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with (
            Client(stdio_client(direct, errlog=errlog)) as plain,
            Client(stdio_client(served, errlog=errlog)) as gateway,
        ):
            await _latencies(plain, "echo", 20)
            await _latencies(gateway, "bench__echo", 20)
            served_process = _stdio_gateway_process()
            cpu_before = _cpu(served_process)
            pairs = [(await _timed(plain, "echo"), await _timed(gateway, "bench__echo")) for _ in range(calls)]
            cpu_per_call = (_cpu(served_process) - cpu_before) / calls
    results = {
        "direct": statistics.median(p[0] for p in pairs),
        "gateway_stdio": statistics.median(p[1] for p in pairs),
        "added": statistics.median(p[1] - p[0] for p in pairs),
        "gateway_cpu": cpu_per_call,
    }
    async with Client(f"{url}/mcp") as client:
        results["gateway_http"] = statistics.median(await _latencies(client, "bench__echo", calls))
    results["json_api"] = _json_api(url, calls)
    return results


def _stdio_gateway_process() -> object:
    import psutil

    return next(p for p in psutil.Process().children() if "serve" in p.cmdline() and "--transport" not in p.cmdline())


def _cpu(process: object) -> float:
    times = process.cpu_times()  # type: ignore[attr-defined]
    return times.user + times.system


def _json_api(url: str, calls: int) -> float:
    sys.path.insert(0, str(ROOT))
    from miroctl.client_http import GatewayClient

    client = GatewayClient(url)
    body = {"server": "bench", "tool": "echo", "arguments": {"text": "hi"}}
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        client.call(body)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def goal_3(config: Path, url: str, size: int, runs: int, cold_median: float) -> dict[str, float]:
    lines = "".join(
        json.dumps({"server": "bench", "tool": "echo", "arguments": {"text": f"line {i}"}}) + "\n" for i in range(size)
    )
    batch = statistics.median(wall([*MIROCTL, "call", "--batch", "-", "-c", str(config)], lines) for _ in range(3))
    via_batch = statistics.median(wall([*MIROCTL, "call", "--batch", "-", "--via", url], lines) for _ in range(3))
    via_each = sum(wall([*MIROCTL, "call", "bench", "echo", f"text=line {i}", "--via", url]) for i in range(size))
    return {
        "batch": batch,
        "via_batch": via_batch,
        "separate_cold_estimate": cold_median * size,
        "separate_via": via_each,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--goals", default="1,2,3", help="which goals to measure (3 needs 1)")
    opts = parser.parse_args()
    os.environ.pop("MIROCTL_URL", None)
    goals = set(opts.goals.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp))
        gateway = Gateway(config)
        try:
            one = goal_1(config, gateway.url, opts.runs) if goals & {"1", "3"} else None
            two = anyio.run(goal_2, config, gateway.url, opts.calls) if "2" in goals else None
            three = goal_3(config, gateway.url, opts.batch, opts.runs, one["cold"]) if "3" in goals else None
        finally:
            gateway.stop()
    report(one, two, three, opts)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def report(
    one: dict[str, float] | None, two: dict[str, float] | None, three: dict[str, float] | None, opts: argparse.Namespace
) -> None:
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores)")
    if one:
        print(f"## goal 1: one call, whole process (median of {opts.runs})")
        print(f"- cold direct `miroctl call`: {ms(one['cold'])}")
        print(f"- `miroctl call --via` (warm gateway): {ms(one['warm'])}  -> {one['cold'] / one['warm']:.1f}x faster")
        print(f"- `python -c pass`: {ms(one['python'])}")
    if two:
        print(f"## goal 2: latency per call on an open session (median of {opts.calls}, calls alternated)")
        print(f"- SDK client -> server directly: {ms(two['direct'])}")
        print(
            f"- SDK client -> miroctl serve (stdio) -> server: {ms(two['gateway_stdio'])}  "
            f"(added per call, median of pairs: {ms(two['added'])})"
        )
        print(f"- CPU time the gateway process spends per call: {ms(two['gateway_cpu'])}")
        print(f"- SDK client -> miroctl serve (streamable HTTP) -> server: {ms(two['gateway_http'])}")
        print(f"- JSON API POST /v1/call (new connection each): {ms(two['json_api'])}")
    if three:
        print(f"## goal 3: {opts.batch} calls")
        print(f"- one `miroctl call --batch` (direct, cold pool): {three['batch']:.2f} s")
        print(f"- one `miroctl call --batch --via`: {three['via_batch']:.2f} s")
        print(
            f"- {opts.batch} separate cold `miroctl call` (median x {opts.batch}): "
            f"{three['separate_cold_estimate']:.1f} s  -> batch takes 1/"
            f"{three['separate_cold_estimate'] / three['batch']:.0f}"
        )
        print(f"- {opts.batch} separate `miroctl call --via` (measured): {three['separate_via']:.1f} s")


if __name__ == "__main__":
    main()
