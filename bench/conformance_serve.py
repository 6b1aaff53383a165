"""The official MCP conformance suite's server scenarios, against a server directly and through `miroctl serve`.

    python bench/conformance_serve.py [--cache bench/.cache/conformance] [--scenario NAME ...]

Installs Node 22 and `@modelcontextprotocol/conformance` from npm into a cache directory (once; the suite
needs Node >= 22), starts bench/conformance_server.py over streamable HTTP and runs every server scenario
(`--suite all`) against it; then starts `miroctl serve --transport http --plain-names` in front of the same
server (over stdio) and runs them again. It prints one row per scenario (direct | through miroctl serve) and
the count of scenarios passing directly that also pass through the gateway, and exits 1 when one does not.
A scenario passes when none of its checks fails (warnings are shown, not counted as failures).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_peers import install  # bench/ is on sys.path when a script there runs
from bench_serve import Gateway

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "bench" / "conformance_server.py"
PACKAGES = ("node@22", "@modelcontextprotocol/conformance@0.1.16")
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
# Why a scenario cannot pass through a gateway by its nature (none so far: the table says so if one appears).
BY_NATURE: dict[str, str] = {}


@dataclass(frozen=True)
class Outcome:
    """One scenario's checks, counted by status."""

    passed: int
    failed: int
    warnings: int
    failures: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def cell(self) -> str:
        verdict = f"pass ({self.passed})" if self.ok else f"FAIL ({self.failed} of {self.passed + self.failed})"
        return verdict + (f", {self.warnings} warning{'s' * (self.warnings != 1)}" if self.warnings else "")


def run_suite(url: str, modules: Path, out: Path, scenarios: list[str]) -> dict[str, Outcome]:
    """Every server scenario (or the ones named) against `url`: scenario -> its outcome."""
    env = {**os.environ, "PATH": f"{modules / '.bin'}{os.pathsep}{os.environ['PATH']}"}  # Node 22 first
    picks = [["--scenario", name] for name in scenarios] or [["--suite", "all"]]
    runs = []
    for pick in picks:  # exit 1 when a check fails: the checks are read from the result files below
        command = ["conformance", "server", "--url", url, *pick, "-o", str(out)]
        runs.append(subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False))
    found: dict[str, Outcome] = {}
    for directory in sorted(out.iterdir()):
        if (match := RESULT_DIR.match(directory.name)) and (directory / "checks.json").exists():
            found[match["scenario"]] = outcome(json.loads((directory / "checks.json").read_text()))
    if not found:
        raise SystemExit(f"the conformance suite ran no scenario against {url}:\n{runs[-1].stderr[-2000:]}")
    return found


def outcome(checks: list[dict[str, object]]) -> Outcome:
    statuses = [str(check.get("status")) for check in checks]
    failures = tuple(
        f"{check.get('id')}: {check.get('errorMessage')}" for check in checks if check["status"] == "FAILURE"
    )
    return Outcome(statuses.count("SUCCESS"), statuses.count("FAILURE"), statuses.count("WARNING"), failures)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DirectServer:
    """bench/conformance_server.py over streamable HTTP, in the background."""

    def __init__(self) -> None:
        port = free_port()
        command = [sys.executable, str(SERVER), "--transport", "http", "--port", str(port)]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while not _listening(port):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("the conformance server did not start")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def write_config(directory: Path) -> Path:
    """A profile serving bench/conformance_server.py over stdio, as `conformance`."""
    (directory / "tool").mkdir()
    server = {
        "name": "conformance",
        "tool_command": "python",
        "args": [str(SERVER), "--transport", "stdio"],
        "protocol": "legacy",  # its tools ask their client during calls (2025-11-25), which 2026-07-28 forbids
    }
    (directory / "tool" / "conformance.yaml").write_text(json.dumps(server))
    profile = directory / "miroctl.yaml"
    profile.write_text(json.dumps({"tool_config": ["conformance"], "startup_timeout": 60}))
    return profile


def report(direct: dict[str, Outcome], through: dict[str, Outcome]) -> bool:
    """The table, in Markdown; whether every scenario passing directly passes through the gateway."""
    print("| scenario | direct | through miroctl serve |")
    print("|---|---|---|")
    missing = Outcome(0, 1, 0, ("not run",))
    for name in sorted(direct.keys() | through.keys()):
        there = through.get(name, missing)
        note = f" ({BY_NATURE[name]})" if name in BY_NATURE and not there.ok else ""
        print(f"| {name} | {direct.get(name, missing).cell()} | {there.cell()}{note} |")
    passing = [name for name, result in direct.items() if result.ok]
    kept = [name for name in passing if through.get(name, missing).ok]
    print(f"\n{len(kept)} of {len(passing)} scenarios passing directly pass through miroctl serve")
    for name in sorted(set(passing) - set(kept)):
        print(f"- {name}: {'; '.join(through.get(name, missing).failures)}", file=sys.stderr)
    return len(kept) == len(passing)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache" / "conformance")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")
    options = parser.parse_args()
    modules = install(options.cache.resolve(), PACKAGES)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = DirectServer()
        try:
            (work / "direct").mkdir()
            direct = run_suite(server.url, modules, work / "direct", options.scenario)
        finally:
            server.stop()
        (work / "config").mkdir()
        gateway = Gateway(write_config(work / "config"), {"PYTHONPATH": str(ROOT)}, ("--plain-names",))
        try:
            (work / "through").mkdir()
            through = run_suite(f"{gateway.url}/mcp", modules, work / "through", options.scenario)
        finally:
            gateway.stop()
    raise SystemExit(0 if report(direct, through) else 1)


if __name__ == "__main__":
    main()
