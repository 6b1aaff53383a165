"""Run the README's two lines (install + main job, install + tests) on every Python this machine has, through a
venv, pipx and `uv tool install`, on the host and in a Debian trixie container (Python 3.13, PEP 668), and print
one table: Python, where, PEP 668, install method, install time, size, main job's exit, tests, and the
machine's load average when each run started.

    python bench/pythons.py [--python PATH]... [--image IMAGE]... [--no-container | --no-host] [--only 3.13]
                            [--methods pip,venv,pipx,uv] [--tests full|subset|none] [--log-dir DIR]

Each run gets a fresh copy of the sources (tracked and new files, as .ci/run takes them) and its own install
places; the README's line runs as written, with `python3` on PATH being the Python under test. Host Pythons:
/usr/bin/python3 and every python3.X in /usr/local/bin, /usr/bin or pyenv's versions (one per minor version,
the externally managed one first). The container: localhost/miroctl-base:trixie, made once with debootstrap
(root only) from Debian's archive when podman lacks it; its pip reaches the package index with the host's CA
bundle, and its pip and uv caches persist between runs in the cache folder (so only its first install
downloads everything). Every Python gets the first line through a venv and the second (tests); an externally
managed one also gets pipx and uv (the README's way to have miroctl on PATH there) and a bare `pip install .`
(a dry run), which PEP 668 must refuse. pipx and uv for the host come from PyPI into a tools venv in the cache
folder; the container's pipx is Debian's, its uv the host's binary. `--tests subset` runs SUBSET below instead
of the whole suite (which takes about 15 CPU-minutes per Python on a 2-core machine). Exits 1 when any run
failed.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from container_smoke import StepFailed, has_image, podman_flags, run  # bench/ is on sys.path when a script there runs

ROOT = Path(__file__).resolve().parent.parent
TRIXIE = "localhost/miroctl-base:trixie"
# What the trixie base carries: the system Python with its venv module, Debian's pipx, and the CAs.
TRIXIE_PACKAGES = "python3,python3-venv,pipx,ca-certificates"
# The version-sensitive parts: packaging, the call pipeline on both clients, list and check, which interpreter a
# server runs in, the reading server (MarkItDown), the Python sandbox (it forks), the third-party server, and the
# README's own examples and lines (through the docs test's fork server).
SUBSET = (
    "tests/test_packaging.py",
    "tests/test_call.py",
    "tests/test_lean.py",
    "tests/test_list.py",
    "tests/test_check.py",
    "tests/test_interpreters.py",
    "tests/test_third_party.py",
    "tests/bundled/test_reading.py",
    "tests/bundled/test_python_sandbox.py",
    "tests/test_docs.py",
)
SUBSET_FILTER = "not test_docs_example_prints_what_the_page_shows or README"  # of the pages' examples, the README's
MAIN_LINE = r"^python3 -m venv .*pip install \. && miroctl"
TEST_LINE = r"^python3 -m venv .*pip install .*pytest"  # the line .ci/run runs
INSIDE = "/src"
# The interpreter's version and whether it is externally managed; it fails where a venv cannot be made.
PROBE = (
    "import ensurepip, os, sys, sysconfig, venv; v = sys.version_info; "
    "managed = os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')); "
    "print(f'{v[0]}.{v[1]}.{v[2]}', managed)"
)  # where the sources are in the container


@dataclass(frozen=True)
class Python:
    """One interpreter to try: a host executable, or a container image's system python3."""

    version: str
    where: str  # "host /usr/bin/python3", "podman localhost/miroctl-base:trixie"
    externally_managed: bool
    executable: str = ""  # host only
    image: str = ""  # container only


@dataclass
class Outcome:
    python: Python
    method: str
    line: str  # "main" or "tests"
    install_exit: int | None = None
    install_s: float | None = None
    size_mb: float | None = None
    job_exit: int | None = None
    tests: str = ""
    note: str = ""
    listed: str = ""  # what the main job listed: "5 servers, 17 tools"
    load: float = 0.0  # the machine's load average (1 min) when the run started
    log: Path | None = None
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        if self.method == "pip":  # the bare install is expected to be refused on an externally managed Python
            return self.install_exit != 0 and "externally-managed-environment" in self.note
        return self.install_exit == 0 and self.job_exit == 0


def readme_lines() -> tuple[str, str]:
    readme = (ROOT / "README.md").read_text().splitlines()
    main = next(line for line in readme if re.match(MAIN_LINE, line))
    tests = next(line for line in readme if re.match(TEST_LINE, line))
    return main, tests


def split_line(line: str) -> tuple[str, str]:
    """The install part of a README line (up to its `pip install`) and the job after it."""
    parts = line.split(" && ")
    last = max(i for i, part in enumerate(parts) if part.startswith("pip install"))
    return " && ".join(parts[: last + 1]), " && ".join(parts[last + 1 :])


def probe(executable: str) -> Python | None:
    """The interpreter's version and whether it is externally managed (PEP 668), or None when it is older than
    3.11 or cannot make a venv with pip."""
    done = subprocess.run([executable, "-c", PROBE], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    version, managed = done.stdout.split()
    if tuple(int(n) for n in version.split(".")[:2]) < (3, 11):
        return None
    return Python(version, f"host {executable}", managed == "True", executable=executable)


def host_pythons(extra: list[str]) -> list[Python]:
    """One per minor version, an externally managed one first (the case the README's venv is for)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = ["/usr/bin/python3"]
    for minor in range(11, 16):
        found = shutil.which(f"python3.{minor}", path="/usr/local/bin:/usr/bin")
        candidates += [found] if found else []
        candidates += sorted(glob.glob(str(pyenv / "versions" / f"3.{minor}.*" / "bin" / f"python3.{minor}")))
    chosen: dict[tuple[int, ...], Python] = {}
    for executable in candidates:
        python = probe(executable)
        if python is None:
            continue
        key = release(python)[:2]
        if key not in chosen or (python.externally_managed and not chosen[key].externally_managed):
            chosen[key] = python
    named = [python for python in map(probe, extra) if python is not None]
    return sorted(chosen.values(), key=release) + named


def release(python: Python) -> tuple[int, ...]:
    return tuple(int(part) for part in python.version.split("."))


def trixie_image(cache: Path) -> str:
    """localhost/miroctl-base:trixie, made with debootstrap from Debian's archive when podman lacks it."""
    if has_image(TRIXIE):
        return TRIXIE
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        raise StepFailed(f"no {TRIXIE}: making it needs root and debootstrap (apt-get install debootstrap)")
    rootfs = cache / "trixie-rootfs"
    if rootfs.exists():
        shutil.rmtree(rootfs)
    print(f"making {TRIXIE} with debootstrap (a few minutes, once)", flush=True)
    run(["debootstrap", "--variant=minbase", f"--include={TRIXIE_PACKAGES}", "trixie", str(rootfs)])
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(["podman", "import", "-", TRIXIE], stdin=tar.stdout, capture_output=True, check=False)
    tar.wait()
    if imported.returncode != 0:
        raise StepFailed(f"podman import failed: {imported.stderr.decode().strip()}")
    shutil.rmtree(rootfs)
    return TRIXIE


def image_python(image: str, flags: tuple[str, ...]) -> Python:
    global_flags, run_flags = flags[:2], flags[2:]
    done = run(["podman", *global_flags, "run", "--rm", *run_flags, image, "python3", "-c", PROBE])
    version, managed = done.stdout.split()
    return Python(version, f"podman {image}", managed == "True", image=image)


def tools_venv(cache: Path) -> Path:
    """A venv holding pipx and uv, from PyPI, for the host's runs."""
    venv = cache / "tools"
    if not (venv / "bin" / "uv").exists() or not (venv / "bin" / "pipx").exists():
        run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "-q", "pipx", "uv"])
    return venv / "bin"


def copy_sources(directory: Path) -> None:
    """The files a fresh clone has (tracked and new ones, not what git ignores), as .ci/run takes them."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / name.decode()
        if source.is_file():
            target = directory / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def uv_index() -> dict[str, str]:
    """pip's index, when the machine sets one (a mirror), for uv, which does not read pip's config."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"], capture_output=True, text=True, check=False
    )
    url = done.stdout.strip()
    return {"UV_DEFAULT_INDEX": url} if done.returncode == 0 and url else {}


def script_for(python: Python, method: str, line: str, tests: str, src: str, tools: str) -> str:
    """The bash that runs one README line by one method, printing @@ markers: install exit and time, size, the
    job's exit. `python3` on PATH is the Python under test."""
    main, test_line = readme_lines()
    install, job = split_line(main if line == "main" else test_line)
    if line == "tests" and tests == "subset":
        job += f" -n 2 -k {shlex.quote(SUBSET_FILTER)} " + " ".join(SUBSET)
    place = f"{src}/.venv"
    if method == "pipx":
        install, place = "pipx install --python python3 .", f"{tools}/pipx/venvs/miroctl"
    elif method == "uv":
        install, place = "uv tool install --python python3 .", f"{tools}/uv/miroctl"
    elif (
        method == "pip"
    ):  # what the venv is for: a bare pip install into the system Python (a dry run: it installs nothing)
        install, job = "python3 -m pip install --dry-run .", "true"
    return f"""set -u
cd {shlex.quote(src)}
export PIPX_HOME={tools}/pipx PIPX_BIN_DIR={tools}/bin UV_TOOL_DIR={tools}/uv UV_TOOL_BIN_DIR={tools}/bin
export UV_PYTHON_DOWNLOADS=never PATH={tools}/bin:$PATH
t0=$(date +%s%N)
{install}
rc=$?
echo "@@install $rc $(( ($(date +%s%N) - t0) / 1000000 ))"
[ $rc -eq 0 ] || exit 0
echo "@@size $(du -sk {place} | cut -f1)"
{job}
echo "@@job $?"
"""


def host_shims(python: Python, directory: Path) -> str:
    """A folder whose python3 runs the Python under test (a script, so that a venv made by it finds its home)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("python3", "python"):
        shim = directory / name
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(python.executable)} "$@"\n')
        shim.chmod(0o755)
    return str(directory)


def execute(python: Python, method: str, line: str, tests: str, cache: Path, flags: tuple[str, ...]) -> str:
    with tempfile.TemporaryDirectory(prefix="miroctl-pythons-") as scratch:
        src, tools = Path(scratch) / "src", Path(scratch) / "tools"
        src.mkdir()
        tools.mkdir()
        copy_sources(src)
        if python.image:
            return in_container(python, method, line, tests, src, tools, cache, flags)
        path = f"{host_shims(python, Path(scratch) / 'shims')}:{cache / 'tools' / 'bin'}:/usr/bin:/bin"
        env = {**os.environ, **uv_index(), "PATH": path, "HOME": os.environ.get("HOME", "/root")}
        for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYENV_VERSION"):
            env.pop(name, None)
        script = script_for(python, method, line, tests, str(src), str(tools))
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False)
        return done.stdout + done.stderr


def in_container(
    python: Python, method: str, line: str, tests: str, src: Path, tools: Path, cache: Path, flags: tuple[str, ...]
) -> str:
    # podman's own network, not the host's: the docs' examples serve on fixed ports (18766, ...), which would meet
    # those of tests running on the host at the same time.
    ca = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    uv = cache / "tools" / "bin" / "uv"
    state = cache / "container-cache"
    state.mkdir(parents=True, exist_ok=True)
    global_flags, run_flags = flags[:2], flags[2:]
    script = script_for(python, method, line, tests, INSIDE, "/opt/tools")
    command = [
        "podman",
        *global_flags,
        "run",
        "--rm",
        *run_flags,
        "-v",
        f"{src}:{INSIDE}",
        "-v",
        f"{tools}:/opt/tools",
        "-v",
        f"{state}:/root/.cache",
        "-v",
        f"{uv}:/usr/local/bin/uv:ro",
        "-v",
        f"{ca}:/etc/ssl/host-ca.crt:ro",
        "-e",
        "PIP_CERT=/etc/ssl/host-ca.crt",
        "-e",
        "SSL_CERT_FILE=/etc/ssl/host-ca.crt",
        "-e",
        "PIP_DISABLE_PIP_VERSION_CHECK=1",
        *[f"-e{name}={value}" for name, value in uv_index().items()],
        python.image,
        "bash",
        "-c",
        script,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def read_outcome(outcome: Outcome, output: str) -> None:
    for marker in re.findall(r"^@@(\w+) (.*)$", output, re.MULTILINE):
        outcome.markers[marker[0]] = marker[1]
    if "install" in outcome.markers:
        code, ms = outcome.markers["install"].split()
        outcome.install_exit, outcome.install_s = int(code), int(ms) / 1000
    if "size" in outcome.markers:
        outcome.size_mb = int(outcome.markers["size"]) / 1024
    if "job" in outcome.markers:
        outcome.job_exit = int(outcome.markers["job"])
    tools = [int(n) for n in re.findall(r"^\S+ +\w+ · (\d+) tools? ·", output, re.MULTILINE)]
    if outcome.line == "main" and tools:
        outcome.listed = f"{len(tools)} servers, {sum(tools)} tools"
    summary = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|errors?)\b", line)]
    if outcome.line == "tests" and summary:
        outcome.tests = re.sub(r"=+", "", summary[-1]).strip()
    if "externally-managed-environment" in output:
        outcome.note = "externally-managed-environment"
    elif not outcome.ok and outcome.tests:
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)
        outcome.note = " ".join([outcome.tests, *failed])[:300]
    elif not outcome.ok:  # miroctl's own reason (a server it could not list, an error line), else the last line
        lines = [line for line in output.splitlines() if line.strip() and not line.startswith("@@")]
        reasons = [line for line in lines if line.startswith(("✗", "miroctl:", "ERROR", "error"))]
        outcome.note = (reasons or lines[-1:] or ["no output"])[0][:160]


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| Python | where | PEP 668 | install | line | install time | size | main job exit | tests | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        if o.method == "pip":
            install = "refused (PEP 668)" if o.ok else f"exit {o.install_exit}"
        else:
            install = (
                f"{o.install_s:.0f} s" if o.install_s is not None and o.install_exit == 0 else f"exit {o.install_exit}"
            )
        size = f"{o.size_mb:.0f} MB" if o.size_mb is not None else "-"
        job = "-" if o.line == "tests" or o.job_exit is None or o.method == "pip" else str(o.job_exit)
        job += f" ({o.listed})" if o.listed else ""
        tests = o.tests or ("-" if o.line == "main" else f"exit {o.job_exit}")
        method = {
            "venv": "venv (README line)",
            "pipx": "pipx install .",
            "uv": "uv tool install .",
            "pip": "pip install .",
        }
        rows.append(
            f"| {o.python.version} | {o.python.where} | {'yes' if o.python.externally_managed else 'no'} "
            f"| {method[o.method]} | {o.line} | {install} | {size} | {job} | {tests} | {o.load:.0f} |"
        )
    return "\n".join(rows)


def plan(pythons: list[Python], methods: list[str], tests: str) -> list[tuple[Python, str, str]]:
    runs: list[tuple[Python, str, str]] = []
    for python in pythons:
        if "pip" in methods and python.externally_managed and not python.image:
            runs.append((python, "pip", "main"))
        runs += [(python, "venv", "main")] if "venv" in methods else []
        # pipx and uv where the README offers them: a system Python that refuses pip installs
        if python.externally_managed:
            runs += [(python, method, "main") for method in methods if method in ("pipx", "uv")]
        if tests != "none":
            runs.append((python, "venv", "tests"))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="another host interpreter to try")
    parser.add_argument("--image", action="append", default=[], help="another podman image with python3 to try")
    parser.add_argument("--no-container", action="store_true", help="the host's Pythons only")
    parser.add_argument("--no-host", action="store_true", help="the containers only")
    parser.add_argument("--methods", default="pip,venv,pipx,uv", help="of pip (the refusal), venv, pipx, uv")
    parser.add_argument("--tests", choices=("full", "subset", "none"), default="subset")
    parser.add_argument("--log-dir", type=Path, help="keep each run's output here")
    parser.add_argument("--only", default="", help="only the Pythons whose version starts with this (3.13)")
    options = parser.parse_args()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "miroctl-pythons"
    cache.mkdir(parents=True, exist_ok=True)
    methods = options.methods.split(",")
    tools_venv(cache)
    pythons = [] if options.no_host else host_pythons(options.python)
    flags: tuple[str, ...] = ()
    if not options.no_container:
        try:
            if shutil.which("podman") is None:
                raise StepFailed("podman is not installed (Debian: apt-get install podman)")
            images = [trixie_image(cache), *options.image]
            flags = podman_flags(images[0])
            pythons += [image_python(image, flags) for image in images]
        except StepFailed as reason:
            print(f"skip containers: {reason}", file=sys.stderr)
    pythons = [python for python in pythons if python.version.startswith(options.only)]
    outcomes = []
    for python, method, line in plan(pythons, methods, options.tests):
        started = time.perf_counter()
        outcome = Outcome(python, method, line, load=os.getloadavg()[0])
        output = execute(python, method, line, options.tests, cache, flags)
        read_outcome(outcome, output)
        if options.log_dir:
            options.log_dir.mkdir(parents=True, exist_ok=True)
            name = f"{python.version}-{python.where.split()[0]}-{method}-{line}.log"
            outcome.log = options.log_dir / name
            outcome.log.write_text(output)
        state = "ok  " if outcome.ok else "FAIL"
        took = time.perf_counter() - started
        print(f"{state} {python.version} {python.where} {method} {line} ({took:.0f} s) {outcome.note}", flush=True)
        outcomes.append(outcome)
    print()
    print(table(outcomes))
    raise SystemExit(0 if all(outcome.ok for outcome in outcomes) else 1)


if __name__ == "__main__":
    main()
