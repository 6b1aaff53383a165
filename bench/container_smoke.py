"""Build the repository's Dockerfile with podman, run `miroctl serve --transport http` in it, and drive it from
the host: `/readyz`, `/metrics`, `miroctl list --via` and `miroctl call --via`, then a SIGTERM drain.

    python bench/container_smoke.py [--base IMAGE] [--keep]

pip in the image installs miroctl and its dependencies from the package index, trusting the host's CA bundle too
(handed to the build read-only), so a TLS-inspecting proxy works. Without `--base`, a local
`python:3.11-slim` is used when podman has one; otherwise a Debian base with python3 is made once with
debootstrap (root only) and imported as localhost/miroctl-base:bookworm. Prints one line per step and the
timings; exits 1 at the first step that fails, saying which, and leaves no container behind.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "localhost/miroctl:smoke"
DEBIAN_BASE = "localhost/miroctl-base:bookworm"
SOURCES = ("pyproject.toml", "README.md", "Dockerfile", ".dockerignore", "miroctl", "servers", "config")
# Where the kernel or the sandbox refuses what podman asks for by default (raising RLIMIT_NOFILE/NPROC, crun on
# a hybrid cgroup tree), these settings let the same image run; they are tried only when the defaults fail.
COMPAT = ("--runtime", "runc", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096")


class StepFailed(Exception):
    """A step of the smoke run failed; the message says which and why."""


def step(name: str, started: float) -> float:
    now = time.perf_counter()
    print(f"ok   {name} ({now - started:.1f} s)", flush=True)
    return now


def run(command: list[str], *, quiet: bool = True, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=quiet, text=True, check=False)
    if check and done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-8:])
        raise StepFailed(f"{' '.join(command[:4])} ... exited {done.returncode}\n{tail}")
    return done


def podman_flags(base: str) -> tuple[str, ...]:
    """() when podman runs a container as it is, else the compatibility flags (when those work)."""
    if run(["podman", "run", "--rm", base, "true"], check=False).returncode == 0:
        return ()
    global_flags, run_flags = COMPAT[:2], COMPAT[2:]
    if run(["podman", *global_flags, "run", "--rm", *run_flags, base, "true"], check=False).returncode == 0:
        print(f"note podman needs {' '.join(COMPAT)} on this machine", flush=True)
        return COMPAT
    raise StepFailed("podman cannot run a container here, even with " + " ".join(COMPAT))


def has_image(name: str) -> bool:
    return run(["podman", "image", "exists", name], check=False).returncode == 0


def debian_base(cache: Path) -> str:
    if has_image(DEBIAN_BASE):
        return DEBIAN_BASE
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        raise StepFailed("no base image: pass --base IMAGE, or run as root with debootstrap installed")
    rootfs = cache / "rootfs"
    if rootfs.exists():
        shutil.rmtree(rootfs)
    # debootstrap's own default mirror: the machine's package registry for Debian.
    run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates", "bookworm", str(rootfs)])
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(
        ["podman", "import", "-", DEBIAN_BASE], stdin=tar.stdout, capture_output=True, text=True, check=False
    )
    tar.wait()
    if imported.returncode != 0:
        raise StepFailed(f"podman import failed: {imported.stderr.strip()}")
    return DEBIAN_BASE


def build_context(directory: Path) -> None:
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, directory / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, directory / name)


def host_ca() -> tuple[str, ...]:
    """podman build arguments that hand the host's CA bundle to pip in the image (a TLS-inspecting proxy's CA
    reaches the build that way), or () when the host has none at the usual place."""
    bundle = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    if not bundle.is_file():
        return ()
    inside = "/etc/ssl/host-ca.crt"
    return ("--volume", f"{bundle}:{inside}:ro", "--build-arg", f"PIP_CERT={inside}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_ready(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if get(url)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise StepFailed(f"{url} did not answer 200 in time")


def miroctl_via(url: str, token: str, *args: str) -> dict[str, object]:
    env = {**os.environ, "MIROCTL_TOKEN": token}
    done = subprocess.run(
        [sys.executable, "-m", "miroctl", *args, "--via", url, "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise StepFailed(f"miroctl {' '.join(args)} --via exited {done.returncode}: {done.stderr.strip()}")
    document: dict[str, object] = json.loads(done.stdout)
    return document


def smoke(base: str | None, keep: bool) -> None:
    if shutil.which("podman") is None:
        raise StepFailed("podman is not installed (Debian: apt-get install podman)")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "miroctl-container"
    cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    base = base or ("python:3.11-slim" if has_image("python:3.11-slim") else debian_base(cache))
    flags = podman_flags(base)
    global_flags, run_flags = flags[:2], flags[2:]
    started = step(f"base image {base}", started)
    with tempfile.TemporaryDirectory(prefix="miroctl-image-") as directory:
        build_context(Path(directory))
        run(
            [
                "podman",
                *global_flags,
                "build",
                *run_flags,
                *host_ca(),
                "--build-arg",
                f"BASE={base}",
                "-t",
                IMAGE,
                directory,
            ]
        )
    size = run(["podman", "image", "inspect", IMAGE, "--format", "{{.Size}}"]).stdout.strip()
    started = step(f"image {IMAGE} built ({int(size) / 1e6:.0f} MB)", started)
    token, port, name = secrets.token_hex(16), free_port(), f"miroctl-smoke-{secrets.token_hex(4)}"
    url = f"http://127.0.0.1:{port}"
    run(
        [
            "podman",
            *global_flags,
            "run",
            "-d",
            *run_flags,
            "--name",
            name,
            "-p",
            f"127.0.0.1:{port}:8765",
            "-e",
            f"MIROCTL_TOKEN={token}",
            IMAGE,
        ]
    )
    try:
        wait_ready(f"{url}/readyz", time.monotonic() + 120)
        started = step(f"/readyz answers 200 on {url}", started)
        check_gateway(url, token)
        started = step("list, call, /metrics and the token through the container", started)
        stopped = run(["podman", *global_flags, "stop", "--time", "30", name])
        status = run(["podman", "inspect", name, "--format", "{{.State.ExitCode}}"]).stdout.strip()
        if status != "143":
            raise StepFailed(f"after SIGTERM the gateway exited {status}, not 143 (a drain): {stopped.stdout}")
        step("SIGTERM: drained and exited 143", started)
    finally:
        run(["podman", "rm", "-f", name], check=False)
        if not keep:
            run(["podman", "rmi", "-f", IMAGE], check=False)


def check_gateway(url: str, token: str) -> None:
    status, _ = get(f"{url}/v1/list")
    if status != 401:
        raise StepFailed(f"/v1/list without the token answered {status}, not 401")
    listing = miroctl_via(url, token, "list")
    servers = listing.get("servers")
    names = (
        sorted(str(server.get("name")) for server in servers if isinstance(server, dict))
        if isinstance(servers, list)
        else []
    )
    if "tool-planner" not in names:
        raise StepFailed(f"list --via shows {names}, without tool-planner")
    call = miroctl_via(url, token, "call", "planner", "add_todo", "titles=ship the image", "--task-id", "smoke")
    if "error" in call:
        raise StepFailed(f"call --via failed: {call['error']}")
    status, metrics = get(f"{url}/metrics", token)
    if status != 200 or "miroctl_" not in metrics:
        raise StepFailed(f"/metrics answered {status} without miroctl's metrics")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the base image (default: python:3.11-slim if present, else Debian)")
    parser.add_argument("--keep", action="store_true", help="keep the image afterwards")
    options = parser.parse_args()
    try:
        smoke(options.base, options.keep)
    except StepFailed as failure:
        print(f"FAIL {failure}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
