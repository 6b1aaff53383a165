"""Pooled sessions behind serve: restart at once after a crash, back off when crashes repeat, bounded calls."""

from __future__ import annotations

import sys

import anyio
import pytest

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from miroctl.sessions import pool
from tests.conftest import HEALTHY_STARTUP
from tests.gateway_support import CRASHING
from tests.servers.fixture import build

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def crashing(leak_tag: str) -> ServerSpec:
    """alpha as tests/servers/crashing.py, a process that exits mid-call when asked (its implementation is
    incidental: the standard library's starts fastest)."""
    return ServerSpec(
        name="alpha",
        command=sys.executable,
        args=(CRASHING,),
        env={"MIROCTL_TEST_TAG": leak_tag},
        startup_timeout=HEALTHY_STARTUP,
    )


def config_of(*specs: ServerSpec) -> Config:
    return Config(servers=specs, profile=Profile(startup_timeout=30), default_names=tuple(s.name for s in specs))


@pytest.mark.process
async def test_crash_fails_that_call_and_the_next_call_restarts_the_server_at_once(leak_tag):
    spec = crashing(leak_tag)
    async with Manager(config_of(spec)) as manager:
        crashed = await manager.call(CallRequest("alpha", "crash"))
        after = await manager.call(CallRequest("alpha", "echo", {"text": "again"}))
        handle = manager.handle(spec)
    assert (crashed.error_kind, crashed.exit_code) == ("unavailable", 3)
    assert after.result == "again"
    assert (handle.starts, handle.crashes) == (2, 0)


@pytest.mark.process
async def test_second_crash_in_a_row_backs_off_before_the_next_restart(leak_tag, monkeypatch):
    monkeypatch.setattr(pool, "CRASH_BACKOFF", 60.0)
    spec = crashing(leak_tag)
    async with Manager(config_of(spec)) as manager:
        await manager.call(CallRequest("alpha", "crash"))
        await manager.call(CallRequest("alpha", "crash"))
        waiting = await manager.call(CallRequest("alpha", "echo", {"text": "too soon"}))
        handle = manager.handle(spec)
        state = handle.state
    assert waiting.exit_code == 3
    assert "crashed 2 times in a row; next restart in" in waiting.error
    assert (handle.starts, state) == (2, "backoff")


async def test_calls_to_one_server_beyond_its_bound_wait_for_a_slot(monkeypatch):
    monkeypatch.setattr(pool, "CALLS_PER_SERVER", 2)
    spec = ServerSpec(name="alpha", transport="memory", target=build("alpha", {"sleep", "echo"}))
    async with Manager(config_of(spec)) as manager:
        slots = manager.handle(spec).call_slots
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(manager.call, CallRequest("alpha", "sleep", {"seconds": 60}))
            with anyio.fail_after(30):
                while slots.statistics().tasks_waiting < 3:
                    await anyio.sleep(0.01)
            assert slots.borrowed_tokens == 2
            tg.cancel_scope.cancel()


@pytest.mark.process
async def test_a_call_that_notices_a_loss_late_never_closes_the_fresh_session(leak_tag):
    spec = crashing(leak_tag)
    async with Manager(config_of(spec)) as manager:
        handle = manager.handle(spec)
        await manager.call(CallRequest("alpha", "crash"))
        fresh = await manager.call(CallRequest("alpha", "echo", {"text": "new session"}))
        await handle.lost()  # what a second call in flight on the crashed session does, noticing only now
        connected_after = handle.connected
        after = await manager.call(CallRequest("alpha", "echo", {"text": "same session"}))
    assert fresh.result == "new session"
    assert connected_after
    assert after.result == "same session"
    assert handle.starts == 2
