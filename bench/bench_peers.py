"""Cold `call` and `list` side by side with the peers, in one run, on the same stdio servers.

    python bench/bench_peers.py [--runs 7] [--cache bench/.cache] [--baseline TREE] [--only call,list,...]

Installs mcporter 0.12.3, MCP Inspector's CLI and @modelcontextprotocol/server-everything from npm into a
cache directory (once), then times, round-robin (one of each in turn, `--runs` rounds, median):

- a cold `call` (start the client, start the server, one tools/call, exit) and a cold `list` of
  server-everything (Node) and of tests/servers/fixture.py (a Python server on the SDK's MCPServer), for
  miroctl, mcporter, Inspector's CLI (`mcp-inspector --cli`, what `npx @modelcontextprotocol/inspector --cli`
  runs, without npx's own start-up) and bench/floor_client.py (stdlib JSON-RPC: the least any client pays);
- `miroctl list` of the bundled pool (config/miroctl.yaml), `miroctl --help`, and a warm `call --via` through
  a running `miroctl serve --transport http`.

With `--baseline TREE` (a checkout of an older miroctl), every miroctl row is also run from that tree in the
same rounds, so before and after are measured together. Ratios are to mcporter's median in the same run: a
shared machine's absolute times drift, ratios measured together hold. Every command's exit code and output
are checked on each run, so a fast failure never counts as a fast answer.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_serve import Gateway  # bench/ is on sys.path when a script there runs

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "servers" / "fixture.py"
FLOOR = ROOT / "bench" / "floor_client.py"
NPM_PACKAGES = (
    "mcporter@0.12.3",
    "@modelcontextprotocol/inspector@0.15.0",
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/conformance@0.1.16",
)


@dataclass
class Case:
    """One command line to time, and a piece of text its output must contain."""

    name: str
    argv: list[str]
    expect: str
    env: dict[str, str] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    answers: list[float] = field(default_factory=list)  # until the first byte of the answer on stdout
    cpu: list[float] = field(default_factory=list)
    failures: int = 0

    def run(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **self.env}
        )
        stdout, stderr, first = _read_both(proc)
        returncode = proc.wait()
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU of the client and of the servers it waited for (a server that is killed, not waited, is missed)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out = stdout.decode(errors="replace")
        if returncode != 0 or self.expect not in out:
            # a failed run never counts as a fast answer: it is counted, shown, and left out of the medians
            self.failures += 1
            print(f"{self.name}: exit {returncode}\n{stderr.decode(errors='replace')[-600:]}", file=sys.stderr)
            return
        self.times.append(elapsed)
        self.answers.append((first or time.perf_counter()) - started)
        self.cpu.append(cpu)

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")


def _read_both(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes, float | None]:
    """stdout and stderr to their ends, and when stdout's first byte came (perf_counter)."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    streams = {out_fd: bytearray(), err_fd: bytearray()}
    first: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                if key.fd == out_fd and first is None:
                    first = time.perf_counter()
                streams[key.fd] += chunk
    proc.stdout.close()
    proc.stderr.close()
    return bytes(streams[out_fd]), bytes(streams[err_fd]), first


def install(cache: Path, packages: tuple[str, ...] = NPM_PACKAGES) -> Path:
    """The npm `packages` in `cache` (installed once); the path of its node_modules."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise SystemExit("node and npm are needed: apt-get install nodejs npm")
    modules = cache / "node_modules"
    if not all((modules / _package_name(spec) / "package.json").exists() for spec in packages):
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "package.json").write_text('{"private": true}\n')
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", *packages], cwd=cache, check=True)
    return modules


def _package_name(spec: str) -> str:
    return spec.rsplit("@", 1)[0] if spec.count("@") > (1 if spec.startswith("@") else 0) else spec


UNCACHED = {"MIROCTL_CACHE_DIR": os.devnull}  # a file: no cache directory can be made under it
STARTUP = ["--startup-timeout", "120"]  # a loaded machine must not turn a slow start into a failed run


def miroctl(tree: Path) -> tuple[list[str], dict[str, str]]:
    """The command that runs miroctl from `tree`, and the environment that makes it (and its servers) do so
    (`-P`: the current directory, which may hold another miroctl, does not come before PYTHONPATH)."""
    return [sys.executable, "-P", "-m", "miroctl"], {"PYTHONPATH": str(tree)}


def pool_config(tree: Path, directory: Path, snapshots: bool = True) -> Path:
    """A copy of `tree`'s bundled profile whose servers run from `tree` too (they inherit no PYTHONPATH); with
    `snapshots` off, its servers load the SDK before they answer (as on their first start after a change)."""
    import yaml

    target = directory / f"pool-{tree.name}{'' if snapshots else '-no-snapshots'}"
    shutil.copytree(tree / "config", target, dirs_exist_ok=True)
    for path in (target / "tool").glob("*.yaml"):
        body = yaml.safe_load(path.read_text())
        body.setdefault("env", {})["PYTHONPATH"] = str(tree)
        if not snapshots:
            body["env"]["MIROCTL_SERVER_SNAPSHOTS"] = "0"
        path.write_text(yaml.safe_dump(body))
    return target / "miroctl.yaml"


def build_cases(modules: Path, trees: dict[str, Path], directory: Path, only: set[str]) -> list[Case]:
    """Every command line of the run, in the order each round runs them."""
    everything = ["node", str(modules / "@modelcontextprotocol/server-everything/dist/index.js")]
    python = [sys.executable, str(FIXTURE), "--name", "py", "--tools", "echo"]
    servers = {"everything": (everything, "echo", "message", "Echo: hi"), "py": (python, "echo", "text", "hi")}
    config = directory / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {name: {"command": s[0][0], "args": s[0][1:]} for name, s in servers.items()}})
    )
    mcporter = [str(modules / ".bin" / "mcporter"), "--config", str(config)]
    inspector = [str(modules / ".bin" / "mcp-inspector"), "--cli"]
    floor = [sys.executable, str(FLOOR)]
    cases: list[Case] = []
    for name, (command, tool, key, answer) in servers.items():
        if "call" in only:
            for label, tree in trees.items():
                argv, env = miroctl(tree)
                cases.append(
                    Case(
                        f"{name} call {label}",
                        [*argv, "call", *STARTUP, "--config", str(config), name, tool, f"{key}=hi"],
                        answer,
                        env,
                    )
                )
            cases.append(Case(f"{name} call mcporter", [*mcporter, "call", f"{name}.{tool}", f"{key}=hi"], answer))
            cases.append(
                Case(
                    f"{name} call inspector",
                    [*inspector, *command, "--method", "tools/call", "--tool-name", tool, "--tool-arg", f"{key}=hi"],
                    answer,
                )
            )
            cases.append(
                Case(f"{name} call floor", [*floor, "call", tool, json.dumps({key: "hi"}), "--", *command], answer)
            )
        if "list" in only:
            for label, tree in trees.items():
                argv, env = miroctl(tree)
                cases.append(
                    Case(f"{name} list {label}", [*argv, "list", *STARTUP, "--config", str(config), name], tool, env)
                )
            cases.append(Case(f"{name} list mcporter", [*mcporter, "list", name], tool))
            cases.append(Case(f"{name} list inspector", [*inspector, *command, "--method", "tools/list"], tool))
            cases.append(Case(f"{name} list floor", [*floor, "list", "--", *command], tool))
    for label, tree in trees.items():
        argv, env = miroctl(tree)
        if "pool" in only:
            pool = pool_config(tree, directory)
            cases.append(Case(f"pool list {label}", [*argv, "list", *STARTUP, "--config", str(pool)], "read_file", env))
            if label != "baseline":  # servers that load the SDK first: a first start, or snapshots turned off
                cold = pool_config(tree, directory, snapshots=False)
                argv_cold = [*argv, "list", *STARTUP, "--config", str(cold)]
                cases.append(Case(f"pool list {label} (no snapshots)", argv_cold, "read_file", env))
        if "help" in only:
            cases.append(Case(f"--help {label}", [*argv, "--help"], "call", env))
            if label != "baseline":  # a help rendered every time (its cache cannot be written)
                cases.append(Case(f"--help {label} (rendered)", [*argv, "--help"], "call", {**env, **UNCACHED}))
    return cases


def report(cases: list[Case], runs: int) -> None:
    by_name = {case.name: case for case in cases}
    print(f"\nmedian of {runs} (round-robin); load average at the end: {os.getloadavg()}")
    print("cpu: user+sys of the command and the children it waited for (median); a killed server's is not counted")
    print("answer: until the first byte on stdout (median); the rest is the servers' stop and the exit")
    print(f"{'row':32} {'median':>9} {'min':>9} {'answer':>9} {'cpu':>9}  ratio (of the wall medians)")
    for case in cases:
        server, _, rest = case.name.partition(" ")
        op = rest.split(" ")[0]
        peer = by_name.get(f"{server} {op} mcporter")
        ratio = f"{case.median / peer.median:.2f}x mcporter" if peer is not None else ""
        if case.name.startswith("pool list") and "pool list baseline" in by_name:
            ratio = f"{case.median / by_name['pool list baseline'].median:.2f}x baseline"
        if case.name.startswith("warm"):
            ratio = f"{case.median / by_name['everything call mcporter'].median:.3f}x mcporter's cold call"
        if not case.times:
            print(f"{case.name:32} every run failed ({case.failures})")
            continue
        cpu = statistics.median(case.cpu) * 1000
        failed = f"  ({case.failures} failed runs left out)" if case.failures else ""
        answer = statistics.median(case.answers) * 1000
        print(
            f"{case.name:32} {case.median * 1000:7.0f}ms {min(case.times) * 1000:7.0f}ms {answer:7.0f}ms "
            f"{cpu:7.0f}ms  {ratio}{failed}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--baseline", type=Path, help="a checkout of the miroctl to compare with")
    parser.add_argument("--only", default="call,list,pool,help,warm")
    opts = parser.parse_args()
    only = set(opts.only.split(","))
    modules = install(opts.cache.resolve())
    trees = {"miroctl": ROOT}
    if opts.baseline:
        trees = {"baseline": opts.baseline.resolve(), "miroctl": ROOT}
    print(f"load average at the start: {os.getloadavg()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        cases = build_cases(modules, trees, Path(tmp), only)
        gateway = None
        if "warm" in only:
            gateway = Gateway(Path(tmp) / "mcp.json", {"PYTHONPATH": str(ROOT)})
            argv, env = miroctl(ROOT)
            via = [*argv, "call", "--via", gateway.url, "everything", "echo", "message=hi"]
            cases.append(Case("warm call --via miroctl", via, "Echo: hi", env))
        try:
            for case in cases:  # one unmeasured round: npm and Python caches, the gateway's first session
                case.run()
                case.times.clear()
                case.cpu.clear()
                case.failures = 0
            for round_ in range(opts.runs):
                for case in cases:
                    case.run()
                print(f"round {round_ + 1}/{opts.runs} done", file=sys.stderr)
                report(cases, round_ + 1)  # so far: a run cut short still leaves its rounds
                sys.stdout.flush()
        finally:
            if gateway is not None:
                gateway.stop()


if __name__ == "__main__":
    main()
