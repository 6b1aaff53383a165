"""Mode ask on a real terminal: miroctl asks on stderr and runs the tool only after a yes."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

from miroctl.base.models import CallRequest
from miroctl.core.manager import Confirmation, Manager
from tests.conftest import ROOT
from tests.policy_support import calls, memory_spec, pool, webtools_yaml


def run_on_terminal(args: list[str], answer: str, timeout: float = 60) -> tuple[int, str, str]:
    """miroctl with stdin and stderr on a pseudo-terminal; answers the first question with `answer`."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "miroctl.cli", *args],
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    os.close(slave)
    seen, answered = b"", False
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
            if not answered and b"[y/n]" in seen:
                os.write(master, answer.encode() + b"\n")
                answered = True
        stdout, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, stdout.decode(), seen.decode(errors="replace")


@pytest.mark.parametrize(("answer", "code", "called"), [("y", 0, ["call wipe {}"]), ("n", 5, [])])
def test_ask_mode_on_a_terminal_asks_and_obeys_the_answer(write_config, tmp_path, answer, code, called):
    record = tmp_path / "record.txt"
    path = write_config({"web": webtools_yaml("web", "--record", str(record))}, policy={"mode": "ask"})
    returncode, stdout, terminal = run_on_terminal(["call", "-c", str(path), "web", "wipe"], answer)
    assert returncode == code, terminal
    assert "web.wipe is destructive: mode ask needs a yes" in terminal
    assert calls(record) == called
    assert ("wiped" in stdout) == (answer == "y")


def test_a_gateway_can_pass_its_own_confirm_which_sees_masked_arguments(tmp_path):
    questions: list[Confirmation] = []

    async def confirm(question: Confirmation) -> bool:
        questions.append(question)
        return question.tool == "wipe"

    async def main():
        spec = memory_spec(secrets=frozenset({"hunter2-secret"}))
        async with Manager(pool(spec, policy={"mode": "ask"}), confirm=confirm) as manager:
            return [
                await manager.call(CallRequest("web", tool, arguments))
                for tool, arguments in (("wipe", {}), ("fail", {"message": "pw hunter2-secret"}))
            ]

    import anyio

    wiped, refused = anyio.run(main)
    assert wiped.ok and wiped.decision["confirmed_by"] == "prompt"
    assert refused.exit_code == 5 and "the answer was no" in refused.error
    assert [q.tool for q in questions] == ["wipe", "fail"]
    assert questions[1].arguments == {"message": "pw ****"}


def test_a_profile_that_assumes_yes_lets_ask_mode_run_without_anyone_to_ask():
    async def main():
        async with Manager(pool(memory_spec(), policy={"mode": "ask", "assume_yes": True})) as manager:
            return await manager.call(CallRequest("web", "wipe"))

    import anyio

    outcome = anyio.run(main)
    assert outcome.ok and outcome.decision["confirmed_by"] == "yes"
