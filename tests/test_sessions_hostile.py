"""The lean client against servers that break the stdio framing: a flood of requests written before the
server reads again, junk on stdout before the first answer."""

from __future__ import annotations

import subprocess
import sys

import anyio

from miroctl.base.models import ServerSpec, Step
from miroctl.sessions import lean
from miroctl.sessions.failures import died_during
from miroctl.sessions.transports import Wire
from tests.conftest import HOSTILE


def cold(*argv: str, junk: str = "") -> subprocess.CompletedProcess[str]:
    server = f"{sys.executable} {HOSTILE}" + (f" --junk {junk}" if junk else "")
    return subprocess.run(
        [sys.executable, "-m", "miroctl", "call", "--stdio", server, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_server_that_writes_20000_pings_before_it_reads_gets_every_answer_and_shutdown_says_nothing():
    done = cold("flood", "count=20000", "--timeout", "60")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "20000 of 20000 pings answered\n"
    assert done.stderr == ""


def test_junk_glued_to_the_first_answer_ends_the_start_at_once_with_the_line_shown_escaped():
    done = cold("echo", "text=hi", "--startup-timeout", "60", junk="\x1b[31mStarting")
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert "server wrote 1 non-JSON line to stdout (first: '\\x1b[31mStarting{" in done.stderr
    assert "\x1b" not in done.stderr
    assert "a stdio server must write only JSON-RPC to stdout" in done.stderr
    assert "no answer to initialize" not in done.stderr


async def _pings(client: lean.LeanClient, count: int) -> None:
    for index in range(count):
        await client.receive({"jsonrpc": "2.0", "id": index, "method": "ping"})


def test_a_server_that_never_reads_its_answers_ends_its_session_at_the_bound_instead_of_filling_memory():
    wire = Wire(ServerSpec("flooder"))
    outbox = lean.Outbox(wire, limit=200)
    client = lean.LeanClient(outbox.put)
    anyio.run(_pings, client, 50)
    assert client.closed and wire.flooded
    assert outbox.queued <= 200
    assert died_during(wire, Step("call", "a call")).message.startswith(
        "server sent requests without reading the answers"
    )
