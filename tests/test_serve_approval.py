"""Mode ask through serve: the question goes to the calling host as an MCP elicitation. Accept runs the tool;
decline, cancel or no answer deny it with reason mode_ask; a host without elicitation is denied as before.
The host is the SDK's client with an elicitation callback; the gateway runs in memory, and once as the real
`miroctl serve` process over stdio."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from miroctl.core.manager import Manager
from miroctl.gateway.server import META_KEY, Gateway, build_server
from tests.conftest import ROOT
from tests.policy_support import calls, memory_spec, pool, webtools_yaml

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def ask_gateway(record: Path, policy: dict[str, Any], **callbacks: Any) -> AsyncIterator[Any]:
    """serve in memory over the webtools fixture with `policy`, and a 2025-11-25 host with `callbacks`."""
    spec = memory_spec(record=record, secrets=frozenset({"hunter2-secret"}))
    async with Manager(pool(spec, policy=policy)) as manager:
        gateway = Gateway(manager, [spec])
        await gateway.refresh()
        async with Client(build_server(gateway), mode="legacy", **callbacks) as host:
            yield host


def answering(action: str, asked: list[str] | None = None) -> Any:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if asked is not None:
            asked.append(params.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    return elicit


async def test_a_host_that_accepts_the_elicitation_runs_the_destructive_tool(tmp_path):
    record, asked = tmp_path / "record.txt", []
    async with ask_gateway(record, {"mode": "ask"}, elicitation_callback=answering("accept", asked)) as host:
        result = await host.call_tool("web__wipe", {})
    assert result.is_error is False
    assert result.content[0].text == "wiped"
    assert calls(record) == ["call wipe {}"]
    assert len(asked) == 1 and asked[0].startswith("Allow web.wipe to run? web.wipe is destructive: mode ask")


@pytest.mark.parametrize(("action", "said"), [("decline", "the host declined"), ("cancel", "the host cancelled")])
async def test_a_host_that_declines_or_cancels_denies_the_call_with_reason_mode_ask(tmp_path, action, said):
    record = tmp_path / "record.txt"
    async with ask_gateway(record, {"mode": "ask"}, elicitation_callback=answering(action)) as host:
        result = await host.call_tool("web__wipe", {})
    assert result.is_error is True
    assert result.content[0].text == (
        f"denied: web.wipe is destructive: mode ask needs a yes, and {said}\nhint: reason: mode_ask"
    )
    assert result.meta[META_KEY]["exit_code"] == 5
    assert calls(record) == []


async def test_a_host_that_never_answers_is_denied_once_the_ask_timeout_passes(tmp_path):
    record = tmp_path / "record.txt"

    async def silent(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await anyio.sleep_forever()  # whether or not the question arrived in time, no answer comes
        raise AssertionError("unreachable")

    policy = {"mode": "ask", "ask_timeout": 0.2}
    async with ask_gateway(record, policy, elicitation_callback=silent) as host:
        with anyio.fail_after(30):  # a hang guard: the gateway gives up after 0.2 s
            result = await host.call_tool("web__wipe", {})
    assert result.is_error is True
    assert "mode ask needs a yes, and the host gave no answer within 0.2 s" in result.content[0].text
    assert calls(record) == []


async def test_a_host_without_elicitation_is_denied_as_without_anyone_to_ask(tmp_path):
    record = tmp_path / "record.txt"
    async with ask_gateway(record, {"mode": "ask"}) as host:
        result = await host.call_tool("web__wipe", {})
    assert result.is_error is True
    assert result.content[0].text.startswith("denied: web.wipe is destructive: mode ask needs a yes, and none was")
    assert calls(record) == []


@asynccontextmanager
async def modern_gateway(record: Path, heard: list[Any] | None = None, **callbacks: Any) -> AsyncIterator[Any]:
    """serve in memory in mode ask, and a host on 2026-07-28 (asked through input_required results); the
    gateway's observers' outcomes (metrics) go to `heard`."""
    spec = memory_spec(record=record)
    async with Manager(pool(spec, policy={"mode": "ask"})) as manager:
        gateway = Gateway(manager, [spec])
        gateway.observers.append((heard if heard is not None else []).append)
        await gateway.refresh()
        async with Client(build_server(gateway), **callbacks) as host:
            assert host.protocol_version == "2026-07-28"
            yield host


@pytest.mark.parametrize(("action", "ran"), [("accept", True), ("decline", False), ("cancel", False)])
async def test_a_host_on_2026_07_28_is_asked_through_input_required_and_its_answer_decides(tmp_path, action, ran):
    record, asked, heard = tmp_path / "record.txt", [], []
    async with modern_gateway(record, heard, elicitation_callback=answering(action, asked)) as host:
        result = await host.call_tool("web__wipe", {})
    assert len(asked) == 1 and asked[0].startswith("Allow web.wipe to run?")
    assert [outcome.ok for outcome in heard] == [ran]  # metrics count the call once, not its held round
    assert result.is_error is (not ran)
    assert calls(record) == (["call wipe {}"] if ran else [])
    if not ran:
        assert f"mode ask needs a yes, and the host {action}" in result.content[0].text


async def test_an_answer_to_another_question_does_not_count_and_the_host_is_asked(tmp_path):
    record = tmp_path / "record.txt"
    forged = {"miroctl-approval-0000000000000000": types.ElicitResult(action="accept", content={})}
    async with modern_gateway(record, elicitation_callback=answering("accept")) as host:
        first = await host.session.call_tool("web__wipe", {}, input_responses=forged, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    (key, request), *_ = first.input_requests.items()
    assert key.startswith("miroctl-approval-") and key not in forged
    assert request.params.message.startswith("Allow web.wipe to run?")
    assert calls(record) == []


async def test_a_host_on_2026_07_28_without_elicitation_is_denied_without_being_asked(tmp_path):
    record = tmp_path / "record.txt"
    async with modern_gateway(record) as host:
        result = await host.call_tool("web__wipe", {})
    assert result.is_error is True
    assert "mode ask needs a yes, and none was given" in result.content[0].text
    assert calls(record) == []


async def test_a_read_only_tool_in_mode_ask_runs_without_asking_the_host(tmp_path):
    record, asked = tmp_path / "record.txt", []
    async with ask_gateway(record, {"mode": "ask"}, elicitation_callback=answering("decline", asked)) as host:
        result = await host.call_tool("web__peek", {})
    assert result.is_error is False
    assert asked == []


async def test_the_question_shows_the_arguments_with_secrets_masked(tmp_path):
    record, asked = tmp_path / "record.txt", []
    async with ask_gateway(record, {"mode": "ask"}, elicitation_callback=answering("decline", asked)) as host:
        result = await host.call_tool("web__fail", {"message": "pw hunter2-secret"})
    assert result.is_error is True
    assert len(asked) == 1 and "hunter2-secret" not in asked[0]
    assert asked[0].endswith('Arguments: {"message": "pw ****"}')


@pytest.mark.process
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025-11-25 (a request back), 2026-07-28 (input_required)
async def test_the_serve_process_over_stdio_asks_its_host_and_runs_the_tool_on_accept(tmp_path, write_config, mode):
    record, asked = tmp_path / "record.txt", []
    config = write_config({"web": webtools_yaml("web", "--record", str(record))}, policy={"mode": "ask"})
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "miroctl", "serve", "--config", str(config)], cwd=str(ROOT)
    )
    with tempfile.TemporaryFile("w+") as errlog:
        transport = stdio_client(params, errlog=errlog)
        client = Client(transport, mode=mode, elicitation_callback=answering("accept", asked))
        async with client as host:
            result = await host.call_tool("web__wipe", {})
    assert result.is_error is False
    assert result.content[0].text == "wiped"
    assert calls(record) == ["call wipe {}"] and len(asked) == 1
