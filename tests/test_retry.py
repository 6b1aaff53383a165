"""Retries: a failed start is tried once more after 0.5 s; a call is repeated only when that can do no harm."""

from __future__ import annotations

import anyio

from miroctl.base.models import CallRequest
from miroctl.core.manager import Manager
from tests.policy_support import calls, pool, webtools_spec


def starts(record) -> int:
    return record.read_text().splitlines().count("start")


def test_a_server_that_fails_to_start_is_retried_once_then_reported(tmp_path, leak_tag):
    record = tmp_path / "record.txt"
    spec = webtools_spec("web", "--record", str(record), "--fail-starts", "5", env={"MIROCTL_TEST_TAG": leak_tag})
    events = []

    async def main():
        async with Manager(pool(spec), on_event=lambda e, f: events.append(e)) as manager:
            return await manager.call(CallRequest("web", "peek"))

    outcome = anyio.run(main)
    assert outcome.exit_code == 3
    assert outcome.failure.kind == "exited"
    assert "failing start 2 on purpose" in "\n".join(outcome.failure.stderr_tail)
    assert starts(record) == 2
    assert events.count("server_retry") == 1


def test_a_server_whose_first_start_fails_works_after_the_retry(tmp_path, leak_tag):
    record = tmp_path / "record.txt"
    spec = webtools_spec("web", "--record", str(record), "--fail-starts", "1", env={"MIROCTL_TEST_TAG": leak_tag})

    async def main():
        async with Manager(pool(spec)) as manager:
            return await manager.call(CallRequest("web", "peek"))

    outcome = anyio.run(main)
    assert outcome.exit_code == 0, outcome.error
    assert outcome.result == "peeked"
    assert starts(record) == 2


def test_a_missing_command_is_not_retried(tmp_path):
    from miroctl.base.models import ServerSpec

    spec = ServerSpec("ghost", command=str(tmp_path / "no-such-server"), startup_timeout=20)
    events = []

    async def main():
        async with Manager(pool(spec), on_event=lambda e, f: events.append(e)) as manager:
            return await manager.call(CallRequest("ghost", "peek"))

    outcome = anyio.run(main)
    assert outcome.exit_code == 3 and outcome.failure.kind == "not_found"
    assert "server_retry" not in events


def test_a_call_that_may_have_had_effects_is_not_repeated_after_the_server_dies(tmp_path, leak_tag):
    record = tmp_path / "record.txt"
    spec = webtools_spec("web", "--record", str(record), env={"MIROCTL_TEST_TAG": leak_tag})

    async def main():
        async with Manager(pool(spec)) as manager:
            return await manager.call(CallRequest("web", "crash_once"))

    outcome = anyio.run(main)
    assert outcome.exit_code == 3
    assert calls(record) == ["call crash_once {}"]


def test_an_idempotent_call_is_repeated_once_on_a_fresh_server_after_the_first_died(tmp_path, leak_tag):
    record = tmp_path / "record.txt"
    spec = webtools_spec("web", "--record", str(record), env={"MIROCTL_TEST_TAG": leak_tag})
    events = []

    async def main():
        async with Manager(pool(spec), on_event=lambda e, f: events.append(e)) as manager:
            return await manager.call(CallRequest("web", "crash_once_idempotent"))

    outcome = anyio.run(main)
    assert outcome.exit_code == 0, outcome.error
    assert outcome.result == "answered"
    assert calls(record) == ["call crash_once_idempotent {}"] * 2
    assert starts(record) == 2
    assert events.count("call_retry") == 1


def test_config_can_declare_an_unannotated_tool_idempotent_but_not_overrule_a_server_saying_no(tmp_path, leak_tag):
    record = tmp_path / "record.txt"
    tools = {"crash_once_unannotated": {"idempotent": True}, "crash_once": {"idempotent": True}}
    spec = webtools_spec("web", "--record", str(record), env={"MIROCTL_TEST_TAG": leak_tag}, tools=tools)

    async def main():
        async with Manager(pool(spec)) as manager:
            declared = await manager.call(CallRequest("web", "crash_once_unannotated"))
            overruled = await manager.call(CallRequest("web", "crash_once"))
            return declared, overruled

    declared, overruled = anyio.run(main)
    assert declared.result == "answered"
    assert overruled.exit_code == 3  # its idempotentHint: false is less trusting than the config
    assert calls(record).count("call crash_once {}") == 1
