"""How `list` grows with the pool: N stdio servers listed by miroctl, by mcporter and by the floor, one run each.

    python bench/bench_pool.py [--sizes 1,10,50,100] [--kinds py,everything] [--clients miroctl,mcporter,floor]
                               [--cache bench/.cache] [--json rows.json]

For each N and each kind of server (tests/servers/fixture.py with its one `echo` tool, an SDK server in
Python; @modelcontextprotocol/server-everything, a Node server), a configuration of N copies of that server
is listed, round-robin (one client after the other, one run each) by:

- miroctl: `miroctl list --config CONFIG` (every server of the pool), run in a wrapper process that calls
  miroctl's own entry point and reports `getrusage(RUSAGE_SELF)`: the kernel's high-water mark of that one
  process. A wrapper that forks and execs would see RUSAGE_CHILDREN, which folds in the largest waited-for
  descendant, i.e. a server; sampling the pid with psutil would miss short peaks. The wrapper costs what
  `python -m miroctl` costs (one interpreter, the same import).
- mcporter 0.12.3: `mcporter --config CONFIG list` (its config holds the same N servers), with its per-server
  timeout as long as miroctl's (it exits 0 with servers that timed out, so its summary must say "N healthy").
  Wall time only.
- the floor: this script's `--floor` mode, a stdlib asyncio client that starts the N servers all at once,
  sends initialize, notifications/initialized and tools/list to each, waits for every answer and kills them.

Every run's exit code and output are checked (each of the N servers must be named with its tool), so a fast
failure never counts as a fast answer. Prints the table, the ratios (miroctl / floor, miroctl / mcporter)
and miroctl's memory per added server: (peak at N - peak at 1) / (N - 1).
"""

from __future__ import annotations

import argparse
import asyncio
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
# mcporter's per-server list timeout (30 s by default), as long as miroctl's --startup-timeout below
MCPORTER_ENV = {"MCPORTER_LIST_TIMEOUT": "300000"}
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "floor", "version": "0"}}


def _request(ident: int, method: str, params: dict[str, object]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n").encode()


async def _answer(stdout: asyncio.StreamReader, ident: int) -> dict[str, object]:
    while line := await stdout.readline():
        message = json.loads(line)
        if message.get("id") == ident and "method" not in message:
            return message  # type: ignore[no-any-return]
    raise SystemExit("a server closed stdout before answering")


async def _list_one(command: list[str]) -> list[str]:
    server = await asyncio.create_subprocess_exec(*command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, limit=2**24)
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(_request(1, "initialize", HELLO))
        await _answer(server.stdout, 1)
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.stdin.write(_request(2, "tools/list", {}))
        result = (await _answer(server.stdout, 2))["result"]
        return [tool["name"] for tool in result["tools"]]  # type: ignore[index]
    finally:
        server.kill()  # the floor does not wait for a server to exit on its own
        await server.wait()


async def _floor(n: int, command: list[str], limit: int | None) -> None:
    gate = asyncio.Semaphore(limit or n)

    async def one() -> list[str]:
        async with gate:
            return await _list_one(command)

    listed = await asyncio.gather(*(one() for _ in range(n)))
    for i, names in enumerate(listed):
        print(f"s{i}: {' '.join(names)}")


def floor(n: int, command: list[str], limit: int | None = None) -> int:
    asyncio.run(_floor(n, command, limit))
    Path(os.environ["BENCH_PEAK_FILE"]).write_text(json.dumps({"peak_mb": peak_mb()}))
    return 0


def profile(directory: Path, command: list[str], n: int, concurrency: int) -> Path:
    """A miroctl profile of N copies of `command` (tool/s0.yaml ...) that starts `concurrency` of them at once."""
    (directory / "tool").mkdir(parents=True)
    for i in range(n):
        server = {"name": f"s{i}", "tool_command": command[0], "args": command[1:]}
        (directory / "tool" / f"s{i}.yaml").write_text(json.dumps(server))
    names = [f"s{i}" for i in range(n)]
    document = {"tool_config": names, "startup_timeout": 300, "concurrency": concurrency}
    (directory / "miroctl.yaml").write_text(json.dumps(document))
    return directory / "miroctl.yaml"


def timed(argv: list[str], env: dict[str, str], expect: list[str], peak_file: Path | None) -> dict[str, float]:
    """One run: wall seconds and (when the command reports it) its own peak memory; a failure says why."""
    if peak_file is not None:
        peak_file.unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, check=False)
    seconds = time.perf_counter() - started
    missing = [word for word in expect if word not in done.stdout]
    if done.returncode != 0 or missing:
        print(f"FAILED: {' '.join(argv[:6])}...: exit {done.returncode}, missing {missing[:3]}", file=sys.stderr)
        print(done.stderr[-800:], file=sys.stderr)
        return {"seconds": float("nan"), "failed": 1.0}
    row = {"seconds": seconds}
    if peak_file is not None:
        row["peak_mb"] = json.loads(peak_file.read_text())["peak_mb"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,10,50,100")
    parser.add_argument("--kinds", default="py,everything")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--clients", default="miroctl,mcporter,floor")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument(
        "--concurrency",
        default="",
        help="e.g. 2,4,8,16: for each, miroctl lists a profile of the N servers with that `concurrency` (servers "
        "started at once) and the floor starts at most that many at a time; mcporter (which starts every server at "
        "once) runs once per N. Without it: miroctl's default for an mcpServers file (4) and a floor of all at once.",
    )
    opts = parser.parse_args()
    # here, not at the top: the --inner process must hold miroctl alone (bench/ is on sys.path for a script)
    from bench_peers import install

    modules = install(opts.cache.resolve())
    commands = {
        "py": ([sys.executable, str(FIXTURE), "--name", "py", "--tools", "echo"], "echo"),
        "everything": (["node", str(modules / "@modelcontextprotocol/server-everything/dist/index.js")], "echo"),
    }
    sizes = [int(n) for n in opts.sizes.split(",")]
    kinds = opts.kinds.split(",")
    clients = set(opts.clients.split(","))
    limits: list[int | None] = [int(k) for k in opts.concurrency.split(",")] if opts.concurrency else [None]
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak.json"
        env = {"PYTHONPATH": str(ROOT), "BENCH_PEAK_FILE": str(peak_file), "MIROCTL_CACHE_DIR": str(Path(tmp) / "c")}
        for n in sizes:
            for kind in kinds:
                command, tool = commands[kind]
                config = Path(tmp) / f"{kind}-{n}.json"
                servers = {f"s{i}": {"command": command[0], "args": command[1:]} for i in range(n)}
                config.write_text(json.dumps({"mcpServers": servers}))
                expect = [f"s{n - 1}", tool]
                me = [sys.executable, __file__, "--inner", "list", "--startup-timeout", "300"]
                mcporter = [str(modules / ".bin" / "mcporter"), "--config", str(config), "list"]
                for index, limit in enumerate(limits):
                    listed = config if limit is None else profile(Path(tmp) / f"{kind}-{n}-{limit}", command, n, limit)
                    floor_argv = [sys.executable, __file__, "--floor", str(n), str(limit or n), "--", *command]
                    argvs = {
                        "miroctl": ([*me, "--config", str(listed)], env, expect, peak_file),
                        # its summary must count every server healthy: a timed-out server is not a fast answer
                        "mcporter": (mcporter, MCPORTER_ENV, [f"{n} healthy"], None),
                        "floor": (floor_argv, env, expect, peak_file),
                    }
                    nothing = {"seconds": float("nan")}
                    wanted = clients - ({"mcporter"} if index else set())  # mcporter has no such limit: once per N
                    runs = {k: timed(*how) if k in wanted else nothing for k, how in argvs.items()}
                    row: dict[str, object] = {"n": n, "kind": kind, "concurrency": limit, **runs}
                    rows.append(row)
                    m, p, f = (runs[k]["seconds"] for k in ("miroctl", "mcporter", "floor"))
                    print(
                        f"N={n:<4} {kind:10} {f'concurrency {limit} ' if limit else ''}"
                        f"miroctl {m:7.2f}s {runs['miroctl'].get('peak_mb', float('nan')):6.1f}MB  "
                        f"mcporter {p:7.2f}s  floor {f:7.2f}s {runs['floor'].get('peak_mb', float('nan')):6.1f}MB  "
                        f"{m / f:.2f}x floor  {m / p:.2f}x mcporter  load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
    for kind in kinds:
        base = next((r for r in rows if r["kind"] == kind and r["n"] == min(sizes)), None)
        for r in rows:
            if base is None or r["kind"] != kind or r["n"] == base["n"]:
                continue
            if "peak_mb" not in r["miroctl"] or "peak_mb" not in base["miroctl"]:  # type: ignore[operator]
                continue
            grown = r["miroctl"]["peak_mb"] - base["miroctl"]["peak_mb"]  # type: ignore[index]
            print(f"{kind}: miroctl's peak grows {grown / (r['n'] - base['n']):.3f} MB per server up to N={r['n']}")  # type: ignore[operator]
    print(f"load average at the end: {os.getloadavg()}")
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "--floor":
        split = sys.argv.index("--")
        sys.exit(floor(int(sys.argv[2]), sys.argv[split + 1 :], int(sys.argv[3]) if split > 3 else None))
    main()
