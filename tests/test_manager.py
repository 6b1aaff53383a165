"""The manager core used directly, as the commands and other programs use it."""

import sys

import anyio
import pytest

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from tests.conftest import LEGACY, fixture_spec


def run(specs, work, follow_changes=False, **profile):
    config = Config(servers=tuple(specs), profile=Profile(**profile), default_names=tuple(s.name for s in specs))

    async def main():
        async with Manager(config, follow_changes=follow_changes) as manager:
            return await work(manager)

    return anyio.run(main)


def test_progress_notifications_reach_the_callers_callback():
    seen = []

    async def record(progress, total, message):
        seen.append((progress, total, message))

    async def work(manager):
        return await manager.call(CallRequest("p", "progress", pairs=["steps=3"], progress=record))

    outcome = run([fixture_spec("p", "--tools", "progress")], work)
    assert outcome.result == "did 3 steps"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_calls_in_one_process_share_one_session_of_a_persistent_server():
    async def work(manager):
        return [(await manager.call(CallRequest("p", "counter"))).result for _ in range(3)]

    assert run([fixture_spec("p", "--tools", "counter", persistent=True)], work) == ["1", "2", "3"]


@pytest.mark.process
def test_after_a_crash_the_next_call_restarts_the_server_and_says_its_state_is_gone():
    async def work(manager):
        first = await manager.call(CallRequest("p", "counter"))
        crashed = await manager.call(CallRequest("p", "crash"))
        again = await manager.call(CallRequest("p", "counter"))
        return first, crashed, again

    first, crashed, again = run([fixture_spec("p", "--tools", "counter,crash", persistent=True)], work)
    assert first.result == "1" and crashed.error_kind == "unavailable"
    assert again.result == "1"
    assert again.notes == ["p was restarted after its session was lost; its state started afresh"]


def test_listing_fans_out_concurrently_and_keeps_the_callers_order():
    specs = [fixture_spec(name, "--tools", "add") for name in ("c", "a", "b")]

    async def work(manager):
        return await manager.list_tools()

    listed = run(specs, work)
    assert [entry.server for entry in listed] == ["c", "a", "b"]
    assert all(entry.ok and [t.name for t in entry.tools] == ["add"] for entry in listed)


def test_a_server_that_failed_to_start_is_not_started_again_for_every_call():
    spec = fixture_spec("q", "--mode", "exit")

    async def work(manager):
        first = await manager.call(CallRequest("q", "add"))
        second = await manager.call(CallRequest("q", "add"))
        return first, second, manager.handle(spec).starts

    first, second, starts = run([spec], work)
    assert first.failure == second.failure and first.failure.kind == "exited"
    assert starts == 2  # the first start and its one retry, as in the seeds; none for the second call


def test_an_in_process_server_works_like_any_other():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("inproc", log_level="WARNING")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    from miroctl.base.models import ServerSpec

    spec = ServerSpec(name="inproc", transport="memory", target=server)

    async def work(manager):
        return await manager.call(CallRequest("inproc", "shout", pairs=["text=hi"]))

    assert run([spec], work).result == "HI"


async def _tools_before_and_after(manager, server, call):
    """Names listed before `call`, whether a change was announced after it, and the names listed then."""
    before = [t.name for t in (await manager.list_tools())[0].tools]
    outcome = await manager.call(call)
    assert outcome.ok, outcome.error
    announced = await manager.next_change(30)
    after = [t.name for t in (await manager.list_tools())[0].tools]
    return before, announced, after


def test_a_followed_server_announcing_new_tools_on_a_listen_stream_is_listed_again():
    async def work(manager):
        return await _tools_before_and_after(manager, "g", CallRequest("g", "grow", {"tool_name": "fresh"}))

    before, announced, after = run([fixture_spec("g", "--tools", "grow,echo")], work, follow_changes=True)
    assert announced is True
    assert sorted(before) == ["echo", "grow"]
    assert sorted(after) == ["echo", "fresh", "grow"]


def test_a_followed_server_on_an_older_protocol_announcing_changes_unsolicited_is_listed_again():
    spec = ServerSpec(name="old", command=sys.executable, args=(LEGACY, "--upgradable"))

    async def work(manager):
        return await _tools_before_and_after(manager, "old", CallRequest("old", "upgrade", {}))

    before, announced, after = run([spec], work, follow_changes=True)
    assert announced is True
    assert before == ["echo", "fail", "add", "upgrade"]
    assert after == ["echo", "add", "upgrade"]


def test_without_following_changes_the_tool_list_stays_cached_for_the_session():
    async def work(manager):
        before = [t.name for t in (await manager.list_tools())[0].tools]
        await manager.call(CallRequest("g", "grow", {"tool_name": "fresh"}))
        announced = await manager.next_change(0.5)
        return before, announced, [t.name for t in (await manager.list_tools())[0].tools]

    before, announced, after = run([fixture_spec("g", "--tools", "grow,echo")], work)
    assert announced is False
    assert before == after
