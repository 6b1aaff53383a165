"""What the daemon does at its edges: a log past its size limit, Ctrl-C while it starts, a SIGKILL of the daemon
(real processes: the daemon is the point)."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

import psutil
import pytest

from miroctl.daemonclient.places import LOG_LIMIT
from tests.conftest import wait_for_no_tagged
from tests.test_daemon import GUARD, Here, content, gone, here, wait_for  # noqa: F401 - here: the fixture

pytestmark = pytest.mark.process
CALL_LINE = "call counter/counter: ok"


def log_of(place: Here) -> Path:
    (record,) = place.records()
    return place.runtime / "miroctl" / f"{record['key']}.log"


def grow(log: Path) -> None:
    with log.open("a") as file:
        file.write("x" * LOG_LIMIT + "\n")


def test_a_daemons_log_past_its_limit_is_moved_aside_and_a_new_one_goes_on(here: Here) -> None:  # noqa: F811
    assert here.run("call", "counter", "counter").returncode == 0
    log = log_of(here)
    grow(log)
    assert here.run("call", "counter", "counter").stdout.strip() == "2"
    old = log.with_name(log.name + ".1")
    assert old.stat().st_size > LOG_LIMIT
    assert CALL_LINE in old.read_text()[-1000:]  # the call that took the log past its limit
    third = here.run("call", "counter", "counter")
    assert (third.returncode, third.stdout.strip()) == (0, "3")
    text = log.read_text()
    assert "the log grew past 5 MB: the earlier lines are in" in text
    assert CALL_LINE in text and len(text) < 10_000
    logs = here.control("logs", "-n", "0")
    assert logs.returncode == 0
    assert "x" * 100 not in logs.stdout and CALL_LINE in logs.stdout


def test_a_new_daemon_starts_a_new_log_when_the_last_ones_is_past_its_limit(here: Here) -> None:  # noqa: F811
    assert here.run("call", "counter", "counter").returncode == 0
    log = log_of(here)
    assert here.control("stop").returncode == 0
    grow(log)
    again = here.run("call", "counter", "counter")
    assert (again.returncode, again.stdout.strip()) == (0, "1")
    assert log.with_name(log.name + ".1").stat().st_size > LOG_LIMIT
    text = log.read_text()
    assert "serving" in text.splitlines()[0] and len(text) < 10_000


def test_ctrl_c_while_the_daemon_starts_stops_it_and_leaves_no_socket_or_record(here: Here, tmp_path: Path) -> None:  # noqa: F811
    hooks, started = tmp_path / "hooks", tmp_path / "daemon-started"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        textwrap.dedent(f"""
            import os, signal, sys
            if "--ready-fd" in sys.argv:  # the daemon, and no other process: it stalls before it listens
                with open({str(started)!r}, "w") as file:
                    file.write(str(os.getpid()))
                signal.pause()
        """)
    )
    path = os.pathsep.join(p for p in (str(hooks), os.environ.get("PYTHONPATH")) if p)
    argv = here.argv("call", "counter", "counter")
    call = subprocess.Popen(
        argv, cwd=here.root, env=here.env(PYTHONPATH=path), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    wait_for(lambda: content(started) != "")
    daemon = psutil.Process(int(content(started)))
    call.send_signal(signal.SIGINT)
    assert call.wait(timeout=GUARD) == 130
    assert gone([daemon])
    assert here.records() == []
    assert list((here.runtime / "miroctl").glob("*.sock")) == []


def test_a_sigkill_of_the_daemon_leaves_no_server_nor_a_servers_detached_child_behind(
    here: Here,  # noqa: F811
    leak_tag: str,
) -> None:
    started = here.run("call", "counter", "spawn_child", "detach=true")
    assert started.returncode == 0, started.stderr
    grandchild = psutil.Process(int(started.stdout.strip()))
    assert grandchild.ppid() != here.daemon().pid  # it left its server's group and session
    here.daemon().kill()
    assert gone([grandchild])
    assert wait_for_no_tagged(leak_tag) == []  # the servers and the keeper too
