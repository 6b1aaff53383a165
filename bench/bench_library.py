"""The library's ToolManager against the seeds' spawn-per-call client and one raw SDK session (the floor).

    python bench/bench_library.py [--calls 20] [--spawn-calls 5]

One run, round-robin (each round runs every target once, in turn, so a change in the machine's load hits all
alike): N sequential and N concurrent calls of a one-tool server (tests/servers/fixture.py `echo`) through
(a) a client written with the SDK exactly as the seeds' ToolManager does it (stdio_client + ClientSession per
call), (b) one raw SDK ClientSession kept open (the floor), and the ToolManager (its kept sessions, opened
before timing). Prints per-call milliseconds and the ratios as a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
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
    times: dict[str, list[float]] = {k: [] for k in ("spawn", "raw_seq", "raw_conc", "tm_seq", "tm_conc")}
    for _ in range(rounds):
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--spawn-calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.spawn_calls, args.rounds))
