"""Live feedback while servers start: on a terminal only (a real pseudo-terminal as stderr), never when stderr
is piped or with --json, and the result on stdout is the same either way."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from rich.console import Console
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.render.progress import ServerProgress
from miroctl.sessions.stages import StageEvent, TimeBudget
from tests.conftest import HEALTHY_STARTUP, ROOT, parse_json
from tests.entry_support import console_entry
from tests.surface_support import echo, surface_yaml

TIMEOUT = 120


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "MIROCTL_URL", "MIROCTL_CONFIG")}
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}


class Terminal:
    """The real CLI with stderr on a pseudo-terminal, read as it is drawn, so a test can wait for a line."""

    def __init__(self, *argv: str) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "miroctl", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=_env(),
        )
        os.close(slave)
        self.master = master
        self.seen = bytearray()
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the last holder of the terminal's other end has gone
                data = b""
            with self.changed:
                self.seen.extend(data)
                self.changed.notify_all()
            if not data:
                return

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of `pattern` in what the terminal shows (colours and cursor moves left out)."""
        with self.changed:
            found = self.changed.wait_for(
                lambda: re.search(pattern, _plain(self.seen.decode(errors="replace"))), TIMEOUT
            )
        assert found, f"never drawn: {pattern!r} in {bytes(self.seen)!r}"
        return found

    def finish(self) -> tuple[int, str, str]:
        stdout, _ = self.proc.communicate(timeout=TIMEOUT)
        self.reader.join(TIMEOUT)
        os.close(self.master)
        return self.proc.returncode, stdout.decode(), self.seen.decode(errors="replace")


def on_terminal(*argv: str) -> tuple[int, str, str]:
    """Run the real CLI with stderr on a pseudo-terminal and stdout on a pipe: (exit code, stdout, terminal)."""
    return Terminal(*argv).finish()


@pytest.fixture
def piped(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CompletedProcess[str]]:
    """The console entry with stdout and stderr on pipes, in this process (tests/entry_support.py) and with the
    environment a Terminal's process gets: what is checked is that nothing but the result is written there."""
    for name in ("COLUMNS", "LINES", "MIROCTL_URL", "MIROCTL_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    return lambda *argv: console_entry(capfd, *argv)


def _pool(tmp_path: Path, write_config, tag: str) -> Path:
    env = {"MIROCTL_TEST_TAG": tag}
    good = surface_yaml(tmp_path, [echo()], name="good", env=env)
    broken = {"name": "broken", "tool_command": "python", "args": ["-c", "import sys; sys.exit(3)"], "env": env}
    return write_config({"good": good, "broken": broken})


def _plain(terminal: str) -> str:
    """What the terminal was sent, without its colour and cursor sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal)


def _without_times(text: str) -> str:
    """The text with its numbers (times differ from run to run) and the column widths they set taken out."""
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return re.sub(r"([ ━─])\1+", r"\1", text)


@pytest.mark.parametrize("command", ["list", "check"])
def test_a_terminal_sees_each_servers_stage_and_then_the_same_result(tmp_path, write_config, leak_tag, piped, command):
    path = _pool(tmp_path, write_config, leak_tag)
    code, stdout, terminal = on_terminal(command, "-c", str(path))
    assert code == 1  # broken is unhealthy
    assert f"miroctl {command}: loading the configuration" in terminal
    assert re.search(r"✓ good\s+done in \d+ ms", _plain(terminal))
    assert re.search(r"✗ broken\s+failed: exited", _plain(terminal))
    assert re.search(r"(starting|initialising)…", _plain(terminal))
    assert terminal.rstrip(" ").endswith("\x1b[2K") or "\x1b[?25h" in terminal[-40:]  # erased at the end
    plain = piped(command, "-c", str(path))
    assert plain.returncode == code
    assert _without_times(stdout) == _without_times(plain.stdout)


def test_a_call_on_a_terminal_shows_its_server_and_prints_the_result_alone_on_stdout(tmp_path, write_config):
    path = write_config({"good": surface_yaml(tmp_path, [echo()], name="good")})
    code, stdout, terminal = on_terminal("call", "good", "echo", "text=hi", "-c", str(path))
    assert code == 0
    assert stdout == "hi\n"
    assert "miroctl call: loading the configuration" in terminal
    assert re.search(r"✓ good\s+done in", _plain(terminal))


def test_piped_stderr_gets_no_progress_at_all(tmp_path, write_config, piped):
    path = write_config({"good": surface_yaml(tmp_path, [echo()], name="good")})
    done = piped("list", "-c", str(path))
    assert done.returncode == 0
    assert done.stderr == ""
    assert "good  stdio · 1 tool" in done.stdout


def test_json_on_a_terminal_gets_no_progress_at_all(tmp_path, write_config):
    path = write_config({"good": surface_yaml(tmp_path, [echo()], name="good")})
    code, stdout, terminal = on_terminal("list", "--json", "-c", str(path))
    assert code == 0
    assert terminal == ""
    assert [s["name"] for s in parse_json(stdout)["servers"]] == ["good"]
    code, stdout, terminal = on_terminal("call", "good", "echo", "text=hi", "--json", "-c", str(path))
    assert code == 0 and terminal == ""
    assert parse_json(stdout)["result"] == "hi"


def _with_a_server_that_must_not_start(tmp_path: Path, write_config) -> tuple[Path, Path]:
    marker = tmp_path / "started"
    slow = {"name": "slow", "tool_command": "sh", "args": ["-c", f"touch {marker}; exec sleep 30"]}
    path = write_config({"system": surface_yaml(tmp_path, [echo(), echo("now")], name="system"), "slow": slow})
    return path, marker


@pytest.mark.parametrize("words", [["system"], ["system", "text=hi"]])
def test_a_call_with_only_a_server_name_lists_its_tools_without_starting_the_others(tmp_path, write_config, words):
    path, marker = _with_a_server_that_must_not_start(tmp_path, write_config)
    result = CliRunner().invoke(app, ["call", *words, "-c", str(path)])
    assert result.exit_code == 2
    assert "missing tool name; tools of system: echo, now" in result.stderr
    assert "hint: miroctl call system echo [key=value ...]" in result.stderr
    assert not marker.exists()


def test_a_call_with_only_a_server_name_answers_json_with_the_same_reason(tmp_path, write_config):
    path, marker = _with_a_server_that_must_not_start(tmp_path, write_config)
    result = CliRunner().invoke(app, ["call", "system", "--json", "-c", str(path)])
    assert result.exit_code == 2
    envelope = parse_json(result.stdout)
    assert envelope["error_kind"] == "usage" and envelope["server_name"] == "system"
    assert envelope["error"] == "missing tool name; tools of system: echo, now"
    assert not marker.exists()


def test_a_server_with_a_tool_of_its_own_name_takes_the_word_as_that_tool(tmp_path, write_config):
    path = write_config({"echo": surface_yaml(tmp_path, [echo()], name="echo")})
    result = CliRunner().invoke(app, ["call", "echo", "text=hi", "-c", str(path)])
    assert result.exit_code == 0
    assert result.stdout == "hi\n"


def _drawn(view: ServerProgress) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system=None)
    console.print(view.renderable())
    return console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above


def test_a_pending_servers_line_shows_its_time_against_its_start_up_budget():
    now = 100.0
    view = ServerProgress(Console(file=io.StringIO()), "miroctl list", clock=lambda: now)
    view.began = 91.0
    wait = TimeBudget(30, 92.3)  # starting and initialising are one wait
    view.on_stage(StageEvent("tool-reading", "starting", at=92.3, budget=wait))
    view.on_stage(StageEvent("tool-reading", "initialising", at=95.0, budget=wait))
    view.on_stage(StageEvent("tool-python", "listing", at=99.5, budget=TimeBudget(7.5, 99.5)))
    view.on_stage(StageEvent("tool-system", "calling", "disk_usage", at=98.0))
    view.on_stage(StageEvent("tool-planner", "done", ms=812, at=99.0))
    lines = [line.rstrip() for line in _drawn(view).splitlines()]
    assert lines[0].endswith("miroctl list  1 of 4 servers answered  9.0 s")
    assert lines[1:] == [
        f"  {lines[1][2]} tool-reading  initialising…  7.7 s / 30 s",
        f"  {lines[1][2]} tool-python   listing tools…  0.5 s / 7.5 s",
        f"  {lines[1][2]} tool-system   calling disk_usage…  2.0 s",
        "  ✓ tool-planner  done in 812 ms",
    ]


def test_a_starting_server_on_a_terminal_counts_against_its_budget_until_it_answers(tmp_path, write_config, leak_tag):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    server = surface_yaml(tmp_path, [echo()], name="gated", env={"MIROCTL_TEST_TAG": leak_tag})
    command = " ".join([sys.executable, *server["args"]])
    server.update(tool_command="sh", args=["-c", f"read go < {gate}; exec {command}"])
    terminal = Terminal("list", "-c", str(write_config({"gated": server})))
    terminal.wait_for(rf"gated\s+(starting|initialising)…\s+\d+\.\d s / {HEALTHY_STARTUP:g} s")
    with gate.open("w") as opened:  # the server goes on only now: the line above was drawn while it waited
        opened.write("go\n")
    code, stdout, shown = terminal.finish()
    assert code == 0
    assert "gated  stdio · 1 tool" in stdout
    assert re.search(r"✓ gated\s+done in \d+ ms", _plain(shown))
