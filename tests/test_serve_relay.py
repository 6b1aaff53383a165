"""serve relays what an upstream asks during a call (sampling, elicitation, roots) and its log messages to the
host that made the call, and passes completions and logging/setLevel through. The upstream is
tests/servers/asking.py, in this process (and once as a stdio process); the host is the SDK's client with
callbacks."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from miroctl.gateway.server import Gateway, build_server
from tests.servers import asking

pytestmark = pytest.mark.anyio
ASKING = str(Path(__file__).parent / "servers" / "asking.py")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def gateway_host(**callbacks: Any) -> AsyncIterator[Any]:
    """A gateway over the asking server (in this process), and a host on protocol 2025-11-25 with `callbacks`."""
    spec = ServerSpec(name="ask", transport="memory", target=asking.build("ask"))
    config = Config(servers=(spec,), profile=Profile(startup_timeout=60), default_names=("ask",))
    async with Manager(config) as manager:
        gateway = Gateway(manager, [spec])
        await gateway.refresh()
        async with Client(build_server(gateway), mode="legacy", **callbacks) as client:
            yield client


def text(result: Any) -> str:
    return result.content[0].text


async def test_sampling_during_a_call_is_asked_of_the_host_that_made_it():
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="42"), model="m")

    async with gateway_host(sampling_callback=sampling) as host:
        result = await host.call_tool("ask__ask_model", {"question": "six times seven?"})
    assert result.is_error is False
    assert text(result) == "model said: 42"
    assert asked == ["six times seven?"]


async def test_elicitation_during_a_call_is_answered_by_the_host():
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.message == "Proceed?"
        return types.ElicitResult(action="accept", content={"answer": "yes please"})

    async with gateway_host(elicitation_callback=elicit) as host:
        result = await host.call_tool("ask__ask_user", {"question": "Proceed?"})
    assert text(result) == "user accept: yes please"


async def test_roots_are_asked_of_the_host():
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project")])

    async with gateway_host(list_roots_callback=roots) as host:
        result = await host.call_tool("ask__ask_roots", {})
    assert text(result) == "roots: file:///work/project"


async def test_a_host_without_sampling_gets_a_clear_error_instead_of_a_hang():
    async with gateway_host() as host:
        result = await host.call_tool("ask__ask_model", {"question": "anyone?"})
    assert result.is_error is True
    assert "the host that called ask does not support sampling (sampling/createMessage)" in text(result)


async def test_a_hosts_error_answer_reaches_the_upstream_as_an_error():
    async def sampling(context: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=-1, message="the user said no")

    async with gateway_host(sampling_callback=sampling) as host:
        result = await host.call_tool("ask__ask_model", {"question": "q"})
    assert result.is_error is True
    assert "the host answered sampling/createMessage with: the user said no" in text(result)


async def test_log_messages_during_a_call_reach_its_host_naming_the_server():
    logs: list[tuple[str, str | None, Any]] = []

    async def logged(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.logger, params.data))

    async with gateway_host(logging_callback=logged) as host:
        result = await host.call_tool("ask__chatty", {})
    assert text(result) == "chatted"
    assert logs == [("info", "ask", "starting the chat"), ("warning", "ask", "almost done")]


async def test_completions_of_a_prompt_argument_come_from_its_server():
    async with gateway_host() as host:
        prompts = [p.name for p in (await host.list_prompts()).prompts]
        found = await host.complete(
            types.PromptReference(type="ref/prompt", name="ask__greet"), {"name": "person", "value": "al"}
        )
        with pytest.raises(MCPError) as raised:
            await host.complete(types.PromptReference(type="ref/prompt", name="ask__nope"), {"name": "x", "value": ""})
    assert prompts == ["ask__greet"]
    assert found.completion.values == ["alice", "albert"]
    assert "no prompt named 'ask__nope'" in raised.value.message


async def test_set_level_is_accepted_and_passed_on():
    import warnings

    async with gateway_host() as host:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert await host.set_logging_level("warning") is not None


@pytest.mark.process  # the one relay from a server process over stdio
async def test_a_host_whose_connection_has_no_way_back_gets_a_clear_error(leak_tag):
    """A 2026-07-28 host in-process has no back-channel for requests from the server during a call."""

    async def sampling(context: Any, params: Any) -> types.CreateMessageResult:
        raise AssertionError("never asked")

    spec = ServerSpec(
        name="ask", command=sys.executable, args=(ASKING,), env={"MIROCTL_TEST_TAG": leak_tag}, startup_timeout=60
    )
    config = Config(servers=(spec,), profile=Profile(startup_timeout=60), default_names=("ask",))
    async with Manager(config) as manager:
        gateway = Gateway(manager, [spec])
        await gateway.refresh()
        async with Client(build_server(gateway), sampling_callback=sampling) as host:
            result = await host.call_tool("ask__ask_model", {"question": "q"})
    assert result.is_error is True
    assert "cannot be asked sampling/createMessage: its connection has no way back" in text(result)
