"""The library's ToolManager against the seeds' spawn-per-call client and one raw SDK session (the floor).

    python bench/bench_library.py [--calls 20] [--spawn-calls 5]

One run, round-robin (each round runs every target once, in turn, so a change in the machine's load hits all
alike): N sequential and N concurrent calls of a one-tool server (tests/servers/fixture.py `echo`) through
(a) a client written with the SDK exactly as the seeds' ToolManager does it (stdio_client + ClientSession per
call), (b) one raw SDK ClientSession kept open (the floor), and the ToolManager (its kept sessions, opened
before timing). Prints per-call milliseconds and the ratios as a markdown table; then, in the same
round-robin, the list of the default profile: `ToolManager.from_config().get_all_tool_definitions()` in a new
process against the CLI's cold `miroctl list` (both from a directory without a config, so both find the
bundled default profile), and a second listing on the same ToolManager.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from miroctl import ToolManager

FIXTURE = str(Path(__file__).resolve().parent.parent / "tests" / "servers" / "fixture.py")
PARAMS = StdioServerParameters(command=sys.executable, args=[FIXTURE, "--name", "fx", "--tools", "echo"])


async def spawn_per_call(n: int) -> float:
    """The seeds' client: a new process and session for every call."""
    started = time.perf_counter()
    for i in range(n):
        async with stdio_client(PARAMS, errlog=_quiet()) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("echo", {"text": str(i)})
    return (time.perf_counter() - started) * 1000 / n


async def raw_session(n: int, concurrent: bool) -> float:
    async with stdio_client(PARAMS, errlog=_quiet()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = time.perf_counter()
        calls = [session.call_tool("echo", {"text": str(i)}) for i in range(n)]
        await _run(calls, concurrent)
        return (time.perf_counter() - started) * 1000 / n


async def tool_manager(tm: ToolManager, n: int, concurrent: bool) -> float:
    await tm.execute_tool_call("fx", "echo", {"text": "warm"})  # its session is open before timing
    started = time.perf_counter()
    await _run([tm.execute_tool_call("fx", "echo", {"text": str(i)}) for i in range(n)], concurrent)
    return (time.perf_counter() - started) * 1000 / n


LIST_DEFAULT = """
import asyncio, time
from miroctl import ToolManager

async def main():
    tm = ToolManager.from_config()
    first = await tm.get_all_tool_definitions()
    started = time.perf_counter()
    await tm.get_all_tool_definitions()
    print((time.perf_counter() - started) * 1000, sum(len(s["tools"]) for s in first))

asyncio.run(main())
"""


def list_default(where: str) -> tuple[float, float]:
    """A new process listing the default profile through the ToolManager: its wall ms, and the second listing's."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LIST_DEFAULT], cwd=where, capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - started) * 1000
    return wall, float(done.stdout.split()[0])


def cli_cold_list(where: str) -> float:
    """`miroctl list` of the default profile in a new process (the console script, its cold path)."""
    command = [shutil.which("miroctl") or "miroctl", "list"]
    started = time.perf_counter()
    subprocess.run(command, cwd=where, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def _quiet() -> Any:
    return open(os.devnull, "w")  # the server's stderr, kept open for the life of the process


async def _run(calls: list, concurrent: bool) -> None:  # type: ignore[type-arg]
    if concurrent:
        await asyncio.gather(*calls)
    else:
        for call in calls:
            await call


async def main(calls: int, spawn_calls: int, rounds: int) -> None:
    tm = ToolManager([{"name": "fx", "params": PARAMS}])
    keys = ("spawn", "raw_seq", "raw_conc", "tm_seq", "tm_conc", "tm_list", "tm_relist", "cli_list")
    times: dict[str, list[float]] = {k: [] for k in keys}
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    where = tempfile.mkdtemp(prefix="bench-library-")  # no config here: both find the bundled default profile
    for _ in range(rounds):
        tm_list, tm_relist = await asyncio.to_thread(list_default, where)
        times["tm_list"].append(tm_list)
        times["tm_relist"].append(tm_relist)
        times["cli_list"].append(await asyncio.to_thread(cli_cold_list, where))
        times["spawn"].append(await spawn_per_call(spawn_calls))
        times["raw_seq"].append(await raw_session(calls, False))
        times["tm_seq"].append(await tool_manager(tm, calls, False))
        times["raw_conc"].append(await raw_session(calls, True))
        times["tm_conc"].append(await tool_manager(tm, calls, True))
    await tm.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print("| target | sequential ms/call | concurrent ms/call |")
    print("|---|---|---|")
    print(f"| (a) spawn per call (SDK, as the seeds) | {med['spawn']:.1f} | - |")
    print(f"| (b) one raw SDK session (the floor) | {med['raw_seq']:.2f} | {med['raw_conc']:.2f} |")
    print(f"| ToolManager (kept session) | {med['tm_seq']:.2f} | {med['tm_conc']:.2f} |")
    print()
    print(f"ToolManager vs (a): {med['spawn'] / med['tm_seq']:.0f}x faster per sequential call")
    print(
        f"ToolManager vs (b): {med['tm_seq'] / med['raw_seq']:.2f}x (sequential), "
        f"{med['tm_conc'] / med['raw_conc']:.2f}x (concurrent)"
    )
    print()
    print("| list of the default profile | ms (new process, wall) |")
    print("|---|---|")
    print(f"| `miroctl list` (the CLI's cold list) | {med['cli_list']:.0f} |")
    print(f"| ToolManager.from_config().get_all_tool_definitions() | {med['tm_list']:.0f} |")
    print(f"| the same ToolManager's second listing (in process) | {med['tm_relist']:.1f} |")
    print()
    print(f"ToolManager's first list vs the CLI's cold list: {med['tm_list'] / med['cli_list']:.2f}x")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--spawn-calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.spawn_calls, args.rounds))
