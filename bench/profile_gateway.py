"""The gateway's CPU per `/v1/call`, measured in one process, and where it goes.

    python bench/profile_gateway.py [--calls 2000] [--jobs 1] [--runs 3] [--http auto|h11|httptools]
                                    [--loop auto|asyncio|uvloop] [--profile] [--top 40]

One gateway (the JSON API on 127.0.0.1, as `serve --transport http` builds it, with /metrics when
prometheus-client is installed) serves tests/servers/fixture.py's `echo` over stdio; `--jobs` threads each keep
one connection (`GatewayClient(keep_alive=True)`) and make `--calls` calls in all, after 50 unmeasured ones.
The gateway's CPU is the process's (user + system, getrusage) less the client threads' own (thread_time): the
upstream server runs in its own process. `--runs` repeats the measured calls on the same gateway. With
`--profile`, one more run under cProfile: its time per call grouped by the package of each function (idle waits
left out), and the `--top` functions by their own time; the profiler's clock is the loop thread's CPU time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import resource
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miroctl.config import loader  # noqa: E402 - after the path, to run from a checkout
from miroctl.core.manager import Manager  # noqa: E402
from miroctl.gateway.guard import HttpSettings  # noqa: E402
from miroctl.gateway.http import address_of, bind, serve_http  # noqa: E402
from miroctl.gateway.server import Gateway  # noqa: E402
from miroctl.remote import GatewayClient  # noqa: E402

FIXTURE = str(ROOT / "tests" / "servers" / "fixture.py")
WARMUP = 50
IDLE = ("select", "poll", "epoll", "run_once", "_run_once", "recv_into", "wait")  # a loop waiting, not working


def write_config(directory: Path) -> Path:
    (directory / "tool").mkdir()
    server = {"name": "fx", "tool_command": "python", "args": [FIXTURE, "--name", "fx", "--tools", "echo"]}
    (directory / "tool" / "fx.yaml").write_text(json.dumps(server))
    profile = directory / "miroctl.yaml"
    profile.write_text(json.dumps({"tool_config": ["fx"], "startup_timeout": 120}))
    return profile


def drive(url: str, calls: int, jobs: int) -> float:
    """`calls` calls of echo from `jobs` threads; the CPU seconds those threads spent."""
    client = GatewayClient(url, keep_alive=True)
    body = {"server": "fx", "tool": "echo", "arguments": {"text": "hi"}}
    spent: list[float] = []
    left = [calls]
    lock = threading.Lock()

    def worker() -> None:
        started = time.thread_time()
        while True:
            with lock:
                if left[0] <= 0:
                    break
                left[0] -= 1
            document = client.call(body)
            if document.get("is_error") or "hi" not in str(document.get("result")):
                raise SystemExit(f"a call failed: {document}")
        spent.append(time.thread_time() - started)

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    client.close()
    return sum(spent)


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(url: str, calls: int, jobs: int) -> tuple[float, float]:
    """The gateway's CPU per call (ms) and the calls per second of one run."""
    cpu, started = process_cpu(), time.perf_counter()
    clients = drive(url, calls, jobs)
    elapsed = time.perf_counter() - started
    return (process_cpu() - cpu - clients) / calls * 1000, calls / elapsed


def grouped(stats: pstats.Stats, calls: int, top: int) -> None:
    """Own time per call by package (idle waits left out), then the costliest functions."""
    parts: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, _, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if name.strip("<>").split(" ")[-1] in IDLE or "method 'poll'" in name or "control'" in name:
            continue
        parts[_package(filename, name)] += own
        rows.append((own, f"{Path(filename).name}:{name}"))
    for part, own in sorted(parts.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {own / calls * 1000:7.3f} ms  {part}")
    print("costliest functions (own time per call):")
    for own, where in sorted(rows, reverse=True)[:top]:
        print(f"  {own / calls * 1000:7.3f} ms  {where}")


def _package(filename: str, name: str) -> str:
    if filename == "~":
        return "builtins: " + name.split("'")[1].split(".")[0] if "'" in name else "builtins"
    path = Path(filename).parts
    for marker in ("site-packages", "miroctl"):
        if marker in path:
            index = path.index(marker)
            return path[index + 1] if marker == "site-packages" else "miroctl/" + path[index + 1]
    return "stdlib: " + Path(filename).stem


async def main(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = loader.load(str(write_config(Path(tmp))))
        settings = HttpSettings(port=0)
        sock = bind(settings)
        stop = anyio.Event()
        async with Manager(config, follow_changes=True) as manager:
            gateway = Gateway(manager, list(config.servers))
            await gateway.refresh()
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve_http, gateway, settings, sock, 1.0, stop)
                url = address_of(sock)
                await anyio.to_thread.run_sync(drive, url, WARMUP, 1)
                for _ in range(opts.runs):
                    cpu, rate = await anyio.to_thread.run_sync(measure, url, opts.calls, opts.jobs)
                    print(f"gateway CPU per call {cpu:.3f} ms; {rate:.0f} calls/s", flush=True)
                if opts.profile:
                    profiler = cProfile.Profile(time.thread_time)  # CPU time: a write that yields the core costs none
                    profiler.enable()
                    await anyio.to_thread.run_sync(drive, url, opts.calls, opts.jobs)
                    profiler.disable()
                    print("profiled, per call:")
                    grouped(pstats.Stats(profiler), opts.calls, opts.top)
                stop.set()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    options = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in __import__('os').getloadavg())}", flush=True)
    anyio.run(main, options, backend_options={"use_uvloop": options.loop == "uvloop"})
