"""Manager details of the policy layer: one-at-a-time tools, servers that died between calls."""

from __future__ import annotations

import os
import signal
import time

import anyio

from miroctl.base.models import CallRequest
from miroctl.core.manager import Manager
from tests.policy_support import calls, memory_spec, pool, webtools_spec


def holds(record, tools: dict) -> list[str]:
    async def main():
        async with Manager(pool(memory_spec("web", record, tools=tools))) as manager, anyio.create_task_group() as tg:
            for tag in ("a", "b"):
                tg.start_soon(manager.call, CallRequest("web", "hold", {"seconds": 0.3, "tag": tag}))

    anyio.run(main)
    return [line[0] for line in record.read_text().split("\n") if line and not line.startswith("call")]


def test_tools_marked_not_concurrency_safe_run_one_at_a_time_per_server(tmp_path):
    assert holds(tmp_path / "one.txt", {"hold": {"concurrency_safe": False}}) == ["e", "l", "e", "l"]
    assert holds(tmp_path / "two.txt", {}) == ["e", "e", "l", "l"]


def test_a_server_that_died_between_calls_is_restarted_before_the_next_call_is_sent(tmp_path, leak_tag):
    record = tmp_path / "record.txt"
    spec = webtools_spec("web", "--record", str(record), env={"MIROCTL_TEST_TAG": leak_tag})

    async def main():
        async with Manager(pool(spec)) as manager:
            first = await manager.call(CallRequest("web", "plain"))
            wire = manager.handle(spec).wire
            os.kill(wire.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while not wire.stdout_eof and time.monotonic() < deadline:
                await anyio.sleep(0.01)
            second = await manager.call(CallRequest("web", "plain"))
            return first, second

    first, second = anyio.run(main)
    assert first.result == second.result == "plain"
    assert calls(record) == ["call plain {}", "call plain {}"]
    assert record.read_text().splitlines().count("start") == 2
