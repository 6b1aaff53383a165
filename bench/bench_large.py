"""How the cost grows with the size of one result: 1, 20 (and 100) MB of text through miroctl, beside the SDK.

    python bench/bench_large.py [--sizes 1,20] [--sdk-max 20] [--json rows.json]   # the full curve: --sizes 1,20,100

For each size, round-robin (one run each), tests/servers/fixture.py's `big` tool returns N MB of text over
stdio (its answer carries the text twice: as content and as structuredContent, as an MCPServer tool that
returns a str does), fetched by:

- `call`: a cold `miroctl call fx big chars=N -c CONFIG` (starts the server, calls, prints the text);
- `via`: `miroctl call fx big chars=N --via URL` through a `miroctl serve --transport http` started before the
  runs (its server up); the gateway's own peak (VmHWM) is read from /proc after each run (sizes ascend, so the
  high-water mark after a size is that size's);
- `serve`: a raw mcp SDK client that starts `miroctl serve -c CONFIG` over stdio and calls `fx__big` through
  it; the serve process's own peak (VmHWM) is read before the client closes it;
- `sdk`: the SDK alone, a raw mcp SDK client (mcp.Client over stdio) that starts the server and calls `big`.

The mcp SDK's stdio client splits its input by joining and splitting a growing string, which takes time
quadratic in the line's length (47 s for 20 MB here), so `serve` and `sdk`, both on that client, run only up
to --sdk-max MB. An answer of 100 MB of text is a 200 MB line, over miroctl's 64 MiB cap on one stdio line (a
server that never ends its line must not fill the memory): the runs raise it with MIROCTL_MAX_MESSAGE_BYTES.

Each is a fresh process timed whole (interpreter start, imports, the server's start where it has one); the
client's own peak is `getrusage(RUSAGE_SELF)` of that process (miroctl through its entry point in a wrapper,
bench/peak.py, so the server is not counted). Every run's output is checked: N characters of text arrived.
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
SERVER = [sys.executable, str(FIXTURE), "--name", "fx", "--tools", "big"]
MB = 1_000_000  # characters of a "MB" of result text (ASCII: one byte each)


def hwm_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sdk_client(chars: int, through: str | None) -> int:
    """A raw SDK client: calls `big` on the server directly, or `fx__big` through `miroctl serve` (config
    `through`); prints the text; writes its own peak (and the serve process's) to $BENCH_PEAK_FILE."""
    import anyio
    import psutil
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    peaks: dict[str, float] = {}

    async def call() -> None:
        if through:
            params = StdioServerParameters(command=sys.executable, args=["-m", "miroctl", "serve", "-c", through])
        else:
            params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with Client(stdio_client(params)) as client:
            result = await client.call_tool("fx__big" if through else "big", {"chars": chars})
            if through:
                served = next(p for p in psutil.Process().children() if "serve" in p.cmdline())
                peaks["serve_peak_mb"] = hwm_mb(served.pid)
            sys.stdout.write(result.content[0].text)  # type: ignore[union-attr]

    anyio.run(call)
    sys.stdout.flush()
    Path(os.environ["BENCH_PEAK_FILE"]).write_text(json.dumps({"peak_mb": peak_mb(), **peaks}))
    return 0


def timed(argv: list[str], env: dict[str, str], chars: int, out: Path, peak_file: Path) -> dict[str, float]:
    """One run: wall seconds and the peaks it reported; its output must hold the whole text."""
    peak_file.unlink(missing_ok=True)
    started = time.perf_counter()
    with out.open("w") as sink:
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    seconds = time.perf_counter() - started
    with out.open("rb") as text:
        got = sum(chunk.count(b"x") for chunk in iter(lambda: text.read(1 << 20), b""))
    if done.returncode != 0 or got != chars:
        print(f"FAILED {argv[2:6]}: exit {done.returncode}, {got}/{chars} chars\n{done.stderr[-800:]}", file=sys.stderr)
        return {"seconds": float("nan"), "peak_mb": float("nan")}
    return {"seconds": seconds, **json.loads(peak_file.read_text())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,20", help="result sizes in MB (the full curve: 1,20,100)")
    parser.add_argument("--sdk-max", type=float, default=20, help="largest size (MB) for serve and sdk")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    opts = parser.parse_args()
    sizes = [float(s) for s in opts.sizes.split(",")]
    os.environ.pop("MIROCTL_URL", None)
    # here, not at the top: the wrapper processes must hold miroctl or the SDK alone
    from bench_serve import Gateway

    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = directory / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"fx": {"command": SERVER[0], "args": SERVER[1:]}}}))
        peak_file, out = directory / "peak.json", directory / "out.txt"
        env = {
            "PYTHONPATH": str(ROOT),
            "BENCH_PEAK_FILE": str(peak_file),
            "MIROCTL_MAX_MESSAGE_BYTES": str(int(max(sizes) * MB * 3)),  # the text twice, and the JSON around it
        }
        gateway = Gateway(config, env)
        try:
            me = [sys.executable, __file__, "--inner", "call", "fx", "big"]
            timed([*me, "chars=10", "--via", gateway.url], env, 10, out, peak_file)  # its session is open
            print(f"gateway after one call: peak {hwm_mb(gateway.proc.pid):.1f} MB", flush=True)
            skipped = {"seconds": float("nan"), "peak_mb": float("nan"), "serve_peak_mb": float("nan")}
            for size in sizes:
                chars = int(size * MB)
                call = timed([*me, f"chars={chars}", "-c", str(config)], env, chars, out, peak_file)
                via = timed([*me, f"chars={chars}", "--via", gateway.url], env, chars, out, peak_file)
                via["gateway_peak_mb"] = hwm_mb(gateway.proc.pid)
                client = [sys.executable, __file__, "--sdk", str(chars)]
                through_sdk = size <= opts.sdk_max
                serve = timed([*client, str(config)], env, chars, out, peak_file) if through_sdk else skipped
                raw = timed(client, env, chars, out, peak_file) if through_sdk else skipped
                rows.append({"mb": size, "call": call, "via": via, "serve": serve, "sdk": raw})
                print(
                    f"{size:g} MB: call {call['seconds']:6.2f}s {call['peak_mb']:6.1f}MB  "
                    f"--via {via['seconds']:6.2f}s {via['peak_mb']:6.1f}MB (gateway {via['gateway_peak_mb']:.1f}MB)  "
                    f"serve {serve['seconds']:6.2f}s (serve {serve.get('serve_peak_mb', float('nan')):.1f}MB)  "
                    f"sdk {raw['seconds']:6.2f}s {raw['peak_mb']:6.1f}MB  load {os.getloadavg()[0]:.1f}",
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
        sys.exit(sdk_client(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None))
    main()
