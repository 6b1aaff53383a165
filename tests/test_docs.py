"""Every example of README.md and docs/*.md runs and prints what the page shows (tests/docs_support.py says how).

Each console block runs in its own scratch directory holding the page's file= blocks written above it, with
miroctl on PATH, COLUMNS=100, NO_COLOR=1 and HOME/XDG dirs inside the scratch space. A mismatch fails with a
diff naming the page and line, at its first run. MIROCTL_DOCS_UPDATE=1 writes the printed outputs into the
pages instead. The `miroctl` and `python` on PATH are clients of this worker's fork server (tests/forkserver.py):
real processes running the console entry, the example servers and scripts, without the interpreter's start and
the libraries' import; MIROCTL_DOCS_COLD=1 starts each as the plain console script or interpreter.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import docs_support as docs
from tests import forkserver
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UPDATE = os.environ.get("MIROCTL_DOCS_UPDATE") == "1"
COLD = os.environ.get("MIROCTL_DOCS_COLD") == "1"
COMMAND_TIMEOUT = 300
COMING = {"auth.md", "bench.md", "lint.md", "editor-configs.md", "record-replay.md", "deploy.md", "performance.md"}
COMING |= {"passthrough.md"}


@dataclass(frozen=True)
class Example:
    page: Path
    block: int
    line: int

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        for block in docs.parse(page.read_text()):
            if block.is_console:
                found.append(Example(page, block.index, block.line))
    return found


@pytest.fixture(scope="session")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """This worker's warm start for `miroctl` (tests/forkserver.py): the path of its socket, or None with
    MIROCTL_DOCS_COLD=1 (each command a new interpreter, as the console script starts)."""
    if COLD:
        yield None
        return
    # A short path: a Unix socket's path has at most 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="miroctl-fork-", dir="/tmp" if os.path.isdir("/tmp") else None))
    path = str(directory / "socket")
    env = scratch_env(tmp_path_factory.mktemp("fork-server"), None)
    server = subprocess.Popen(
        [sys.executable, "-P", "-m", forkserver.__name__, path],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert server.stdout is not None
    assert server.stdout.readline() == b"listening\n", "the docs' fork server did not start"
    try:
        yield path
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(directory, ignore_errors=True)


def scratch_env(space: Path, fork_socket: str | None) -> dict[str, str]:
    """A small, fixed environment: miroctl and python of this test run first on PATH, HOME and XDG in `space`.
    The `miroctl` and `python` there are the fork server's clients when one runs, else the console script's own
    start and this interpreter."""
    bin_dir = space / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / "miroctl"
    python = bin_dir / "python"
    if fork_socket is None:
        launcher.write_text(f"#!{sys.executable} -P\nfrom miroctl.launch.entry import main\n\nmain()\n")
    else:
        launcher.write_text(forkserver.client_script(fork_socket, str(python)))
    launcher.chmod(0o755)
    for wrapper in (python, bin_dir / "python3"):
        # A script, never a symlink: Python finds its venv from the path it was started by, so through a
        # symlink a venv's interpreter would be the base one, without miroctl and the SDK.
        if fork_socket is None:
            wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        else:
            wrapper.write_text(forkserver.python_client_script(fork_socket, str(python)))
        wrapper.chmod(0o755)
    env = {
        "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p),
        "PYTHONUNBUFFERED": "1",  # stdout and stderr reach the shared pipe in the order they were written
        "COLUMNS": "100",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
    }
    for name, sub in [("HOME", "home"), ("XDG_CONFIG_HOME", "home/.config"), ("XDG_STATE_HOME", "home/.state")]:
        env[name] = str(space / sub)
    env["XDG_CACHE_HOME"] = str(space / "home/.cache")
    env["TMPDIR"] = str(space / "tmp")
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "TMPDIR"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    return env


def run(script: str, cwd: Path, env: dict[str, str]) -> tuple[list[str], int]:
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=COMMAND_TIMEOUT,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"`{script}` did not finish within {COMMAND_TIMEOUT} s: {expired.output!r}")
    return done.stdout.decode("utf-8", "replace").split("\n"), done.returncode


@pytest.mark.process
@pytest.mark.timeout(COMMAND_TIMEOUT)  # a block runs several commands, each a real miroctl and its servers
@pytest.mark.parametrize("example", examples(), ids=str)
def test_docs_example_prints_what_the_page_shows(example: Example, tmp_path: Path, fork_server: str | None) -> None:
    outputs, failures = run_block(example, tmp_path, fork_server)
    if UPDATE:
        if failures:
            docs.rewrite(example.page, example.block, outputs)
        return
    assert not failures, "\n\n".join(failures) + "\n(MIROCTL_DOCS_UPDATE=1 writes the printed output into the page)"


FIDELITY_SCRIPT = """miroctl --version; echo "exit $?"
miroctl list --config nowhere.yaml; echo "exit $?"
echo 'not json' | miroctl call --stdio "python -c pass" t --args -; echo "exit $?"
miroctl call --stdio "python quits.py" t >/dev/null 2>errors.txt & wait $!; echo "exit $?"; cat errors.txt
miroctl call -c quits.yaml quits t; echo "exit $?"
(trap '' INT; miroctl --help | head -n 3); echo "exit $?"
python -u fails.py one 'two words'; echo "exit $?"
PYTHONSAFEPATH=1 python fails.py; echo "exit $?"
python -P -m miroctl.servers nosuch; echo "exit $?"
python sleeps.py & echo started; kill $!; wait $!; echo "exit $?"
python -c 'import sys; print(sys.argv)' -c; echo "exit $?"
"""
FIDELITY_FILES = {
    # A server that quits at once, and says which process started it (the fork server, when warm).
    "quits.py": """import os, sys
with open("parents.txt", "a") as parents:
    parents.write(open(f"/proc/{os.getppid()}/cmdline").read().replace("\\0", " ") + "\\n")
print("quits: no database at ./data.db", file=sys.stderr)
sys.exit(3)
""",
    "quits.yaml": "name: quits\ntool_command: python\nargs: [quits.py]\n",
    "fails.py": """import os, sys
print("argv", sys.argv, os.path.basename(__file__), __name__, __spec__, sys.path[0] == os.path.dirname(__file__))
print("on stderr", file=sys.stderr)
def deeper():
    raise ValueError("as a script fails")
deeper()
""",
    "sleeps.py": "import time\ntime.sleep(60)\n",
}


@pytest.mark.process
def test_a_command_through_the_fork_server_prints_and_exits_as_the_console_script_does(
    tmp_path: Path, fork_server: str | None
) -> None:
    """miroctl, the servers it starts and the scripts a page runs: warm, they print and exit as cold."""
    if fork_server is None:
        pytest.skip("MIROCTL_DOCS_COLD=1: no fork server")
    printed, parents = [], []
    for name, socket_path in (("warm", fork_server), ("cold", None)):
        scratch = tmp_path / name / "scratch"
        scratch.mkdir(parents=True)
        for file, text in FIDELITY_FILES.items():
            (scratch / file).write_text(text)
        env = scratch_env(tmp_path / name / "space", socket_path)
        done = subprocess.run(
            ["bash", "-c", FIDELITY_SCRIPT], cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        printed.append((done.returncode, done.stdout.decode().replace(str(tmp_path / name), "$SPACE")))
        parents.append((scratch / "parents.txt").read_text().splitlines())
    assert printed[0] == printed[1]
    assert "exit 2" in printed[0][1] and "exit 0" in printed[0][1] and "exit 143" in printed[0][1]
    assert "ValueError: as a script fails" in printed[0][1] and "usage: python -P -m miroctl.servers" in printed[0][1]
    warm, cold = parents
    assert len(warm) == len(cold) >= 2  # by the PATH's python (--stdio) and by miroctl's (the config), retried
    assert all("tests.forkserver" in line for line in warm) and not any("tests.forkserver" in line for line in cold)


def run_block(example: Example, tmp_path: Path, fork_socket: str | None) -> tuple[list[list[str]], list[str]]:
    """Run one console block in a new scratch directory; its refreshed outputs and its mismatches."""
    blocks = docs.parse(example.page.read_text())
    block = blocks[example.block]
    # A path of fixed length (Rich wraps long lines at the same places in every run), shown as $PWD.
    scratch = Path(tempfile.mkdtemp(prefix="miroctl-docs-", dir="/tmp" if os.path.isdir("/tmp") else None))
    env = scratch_env(tmp_path / "space", fork_socket)
    env["XDG_RUNTIME_DIR"] = str(scratch / ".run")  # the daemons' sockets: a short path of the block's own
    try:
        return run_commands(example, blocks, block, scratch, env)
    finally:
        stop_daemons(scratch, env)
        shutil.rmtree(scratch, ignore_errors=True)


def stop_daemons(scratch: Path, env: dict[str, str]) -> None:
    """End every daemon a block's commands started (a page shows how they start, not always how they end),
    with the block's own `miroctl`."""
    if (scratch / ".run").exists():
        command = ["miroctl", "daemon", "stop", "--all"]  # found on the block's PATH
        subprocess.run(command, cwd=scratch, env=env, capture_output=True, timeout=COMMAND_TIMEOUT, check=False)


def run_commands(
    example: Example, blocks: list[docs.Block], block: docs.Block, scratch: Path, env: dict[str, str]
) -> tuple[list[list[str]], list[str]]:
    written = [
        (scratch / str(file.file), "\n".join(file.body) + "\n") for file in docs.files_before(blocks, example.block)
    ]
    commands = block.commands()
    ports = {port: free_port() for port in docs.ports_in([c.script for c in commands] + [t for _, t in written])}
    shown = {run_port: page_port for page_port, run_port in ports.items()}
    for target, text in written:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(docs.renumbered(text, ports))
    outputs, failures = [], []
    for command in commands:
        actual, code = run(docs.renumbered(command.script, ports), scratch, env)
        actual = [docs.renumbered(line.replace(str(scratch), "$PWD"), shown) for line in actual]
        outputs.append(docs.refreshed(command.expected, actual, code))
        if code != command.expected_exit or not docs.matches(command.expected_output, actual):
            failures.append(docs.diff(command, actual, code, str(example)))
    if failures:  # what the block's daemons wrote, if it started any: a mismatch of theirs is explained there
        failures += [f"{log.name}:\n{log.read_text(errors='replace')}" for log in sorted(scratch.glob(".run/*/*.log"))]
    return outputs, failures


VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def test_readme_starts_with_the_install_line_and_the_ci_test_line_both_in_a_virtual_environment() -> None:
    readme = (ROOT / "README.md").read_text().split("\n")
    ci_line = next((line for line in readme if re.match(r"^python3 -m venv .*pip install .*pytest", line)), None)
    assert ci_line is not None, ".ci/run runs the README's first line matching ^python3 -m venv .*pip install .*pytest"
    assert ci_line == VENV + "pip install --no-compile -e '.[test]' && python -m pytest -q"
    assert readme.index(VENV + "pip install . && miroctl list") < readme.index(ci_line)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "^python3 -m venv .*pip install .*pytest" in ci, ".ci/run picks the line this test pins"


def test_every_docs_page_is_listed_in_the_index_and_every_link_points_to_a_page() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert page.name == "index.md" or f"({page.name})" in index, f"docs/index.md does not list {page.name}"
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if Path(target).name in COMING and "index.md" in page.name:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"


def test_a_console_block_is_checked_line_by_line_with_dots_for_any_lines() -> None:
    assert docs.matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert docs.matches(["a", "...", "z"], ["a", "z"])
    assert docs.matches(["...", "took 830 ms"], ["x", "took 12 ms  "])
    assert not docs.matches(["a", "...", "z"], ["a", "b"])
    assert not docs.matches(["a", "z"], ["a", "b", "z"])
    command = docs.parse("```console\n$ false \\\n  --flag\nno\n[exit 1]\n```\n")[0].commands()[0]
    assert (command.script, command.expected_output, command.expected_exit) == ("false \\\n  --flag", ["no"], 1)


def test_a_skip_marker_keeps_the_next_block_from_running() -> None:
    blocks = docs.parse("<!-- docs-test: skip needs a real API key -->\n\n```console\n$ x\n```\n```console\n$ y\n```\n")
    assert [b.is_console for b in blocks] == [False, True]
    assert blocks[0].skip == "needs a real API key"


def test_update_rewrites_only_its_block_and_keeps_the_dots(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```console\n$ one\nold\n...\nend\n\n$ two\nsame\n```\n\n```console\n$ three\nx\n```\n")
    blocks = docs.parse(page.read_text())
    first, second = blocks[0].commands()
    outputs = [
        docs.refreshed(first.expected, ["new", "b", "c", "end"], 3),
        docs.refreshed(second.expected, ["same"], 0),
    ]
    docs.rewrite(page, 0, outputs)
    assert page.read_text() == (
        "# t\n\n```console\n$ one\nnew\n...\nend\n[exit 3]\n\n$ two\nsame\n```\n\n```console\n$ three\nx\n```\n"
    )


def test_a_port_a_block_shows_is_replaced_for_the_run_and_shown_back_as_the_pages() -> None:
    script = "miroctl serve --port 8765 &\nmiroctl call --via http://127.0.0.1:8765/ x n=8765 ; sleep 18765"
    assert docs.ports_in([script, "url: http://localhost:9001/mcp\nport: 9002\n"]) == {8765, 9001, 9002}
    assert docs.renumbered(script, {8765: 40001}) == (
        "miroctl serve --port 40001 &\nmiroctl call --via http://127.0.0.1:40001/ x n=40001 ; sleep 18765"
    )
    assert docs.renumbered("v1.8765.2 and 8765.5 s", {8765: 40001}) == "v1.8765.2 and 8765.5 s"  # not ports
