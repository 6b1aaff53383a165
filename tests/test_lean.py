"""The lean client of a cold list and call: the SDK's wire behaviour and checks, without importing the SDK."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.config.loader import Config
from miroctl.core.manager import Manager
from miroctl.sessions import connectors, lean, toolcheck
from tests.conftest import FIXTURE, HEALTHY_STARTUP, ROOT, fixture_spec

PLAIN = str(ROOT / "tests" / "servers" / "plainrpc.py")


def plain_spec(log: Path, *args: str) -> ServerSpec:
    return ServerSpec(
        name="plain",
        command=sys.executable,
        args=(PLAIN, "--log", str(log), *args),
        startup_timeout=HEALTHY_STARTUP,
    )


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def _call(spec: ServerSpec, tool: str, timeout: float = 20, arguments: dict[str, Any] | None = None) -> Any:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async with Manager(Config(servers=(spec,)), connector=connectors.LEAN) as manager:
        outcome = await manager.call(CallRequest(spec.name, tool, arguments or {}, timeout=timeout, progress=progress))
        connection = manager.handle(spec).connection
        client = connection.session if connection is not None else None
    return outcome, heard, client


def test_a_legacy_server_gets_the_handshake_after_discover_is_refused_as_the_sdk_does_it(tmp_path):
    log = tmp_path / "log"
    outcome, _, client = anyio.run(_call, plain_spec(log), "echo", 20, {"text": "hi"})
    assert outcome.exit_code == 0, outcome.error
    assert outcome.result == "hi" and outcome.structured_content == {"text": "hi"}
    assert isinstance(client, lean.LeanClient) and client.protocol_version == "2025-06-18"
    methods = [m.get("method") for m in received(log)]
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/list", "tools/call"]
    discover, initialize = received(log)[:2]
    assert discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == lean.LATEST_MODERN
    assert initialize["params"] == {
        "protocolVersion": lean.LATEST_HANDSHAKE,
        "capabilities": {},
        "clientInfo": {"name": "miroctl", "version": lean.__version__},
    }
    call = received(log)[-1]["params"]  # a handshake session is not stamped (its _meta has the progress token only)
    assert call["_meta"] == {"progressToken": received(log)[-1]["id"]}


def test_a_modern_server_is_adopted_from_discover_and_every_request_carries_the_stamp(tmp_path):
    log = tmp_path / "log"
    outcome, _, client = anyio.run(_call, plain_spec(log, "--era", "modern"), "echo", 20, {"text": "hi"})
    assert outcome.exit_code == 0, outcome.error
    assert client.protocol_version == "2026-07-28" and client.server_info == lean.ServerInfo("plain", "2")
    messages = received(log)
    assert [m["method"] for m in messages] == ["server/discover", "tools/list", "tools/call"]
    for message in messages:
        meta = message["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "miroctl"


def test_a_server_file_that_asks_for_the_legacy_protocol_gets_the_handshake_without_discover(tmp_path):
    log = tmp_path / "log"
    spec = replace(plain_spec(log, "--era", "modern"), protocol="legacy")
    outcome, _, client = anyio.run(_call, spec, "echo", 20, {"text": "hi"})
    assert outcome.exit_code == 0, outcome.error
    assert client.protocol_version == "2025-06-18"
    assert [m.get("method") for m in received(log)][:2] == ["initialize", "notifications/initialized"]


def test_an_unsupported_version_answer_naming_a_mutual_version_is_probed_once_more(tmp_path):
    log = tmp_path / "log"
    outcome, _, client = anyio.run(_call, plain_spec(log, "--era", "retry"), "echo", 20, {"text": "hi"})
    assert outcome.exit_code == 0, outcome.error
    assert client.protocol_version == "2026-07-28"
    assert [m["method"] for m in received(log)][:2] == ["server/discover", "server/discover"]


def test_progress_notifications_reach_the_callers_progress_function(tmp_path):
    outcome, heard, _ = anyio.run(_call, plain_spec(tmp_path / "log"), "progress", 20)
    assert outcome.exit_code == 0, outcome.error
    assert heard == [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]


def test_a_servers_own_requests_get_the_sdks_answers_ping_yes_sampling_and_roots_refused(tmp_path):
    outcome, _, _ = anyio.run(_call, plain_spec(tmp_path / "log"), "asks", 20)
    assert outcome.exit_code == 0, outcome.error
    answers = dict(part.split("=", 1) for part in outcome.result.split("; "))
    assert json.loads(answers["ping"]) == {}
    assert json.loads(answers["sampling/createMessage"]) == {"code": -32600, "message": "Sampling not supported"}
    assert json.loads(answers["roots/list"]) == {"code": -32600, "message": "List roots not supported"}


def test_a_call_that_times_out_is_cancelled_on_the_wire(tmp_path):
    log = tmp_path / "log"
    outcome, _, _ = anyio.run(_call, plain_spec(log), "slow", 1.0)
    assert outcome.error_kind == "timeout"
    call = next(m for m in received(log) if m.get("method") == "tools/call")
    cancelled = [m for m in received(log) if m.get("method") == "notifications/cancelled"]
    assert [m["params"] for m in cancelled] == [{"requestId": call["id"], "reason": "caller cancelled"}]  # the SDK's


def test_structured_content_that_breaks_the_output_schema_is_refused_as_the_sdk_refuses_it(tmp_path):
    outcome, _, _ = anyio.run(_call, plain_spec(tmp_path / "log", "--bad-structured"), "echo", 20, {"text": "hi"})
    assert outcome.error_kind == "failed"
    assert "Invalid structured content returned by tool echo: 5 is not of type 'string'" in outcome.error


def test_a_cold_call_and_list_import_neither_the_sdk_nor_its_types_nor_typers_parser(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable, "args": [FIXTURE]}}}))
    for argv, expected in ((["call", "fx", "echo", "text=hi"], "hi\n"), (["list", "fx", "--json"], '"echo"')):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "miroctl", *argv, "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert expected in done.stdout
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "import time" in line}
        assert not {name for name in imported if name.split(".")[0] in ("mcp", "mcp_types")}
        assert "typer._adapters" not in imported  # the direct path (cli/direct.py): Typer converts nothing


def test_the_protocol_versions_are_the_sdks():
    from mcp_types import version

    assert lean.HANDSHAKE_VERSIONS == version.HANDSHAKE_PROTOCOL_VERSIONS
    assert lean.MODERN_VERSIONS == version.MODERN_PROTOCOL_VERSIONS


GOOD = {"name": "t", "inputSchema": {"type": "object"}}
TOOLS = [
    GOOD,
    {**GOOD, "title": "T", "description": "d", "annotations": {"readOnlyHint": True, "title": "x"}},
    {"inputSchema": {"type": "object"}},
    {"name": 5, "inputSchema": {"type": "object"}},
    {"name": "t"},
    {"name": "t", "inputSchema": None},
    {"name": "t", "inputSchema": "object"},
    {"name": "t", "inputSchema": {"type": "array"}},
    {"name": "t", "inputSchema": {}},
    {"name": "t", "inputSchema": {"type": "object", "properties": []}},
    {"name": "t", "inputSchema": {"type": "object", "properties": {"a": 3}}},
    {"name": "t", "inputSchema": {"type": "object", "required": "a"}},
    {"name": "t", "inputSchema": {"type": "object", "$schema": 4}},
    {**GOOD, "outputSchema": {"type": "array"}},
    {**GOOD, "outputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
    {**GOOD, "outputSchema": "x"},
    {**GOOD, "description": 3},
    {**GOOD, "title": ["x"]},
    {**GOOD, "annotations": {"readOnlyHint": "yes"}},
    {**GOOD, "annotations": {"readOnlyHint": "maybe"}},
    {**GOOD, "annotations": {"destructiveHint": 2}},
    {**GOOD, "annotations": "ro"},
    {**GOOD, "icons": [{"src": "a.png", "theme": "dark"}]},
    {**GOOD, "icons": [{"mimeType": "image/png"}]},
    {**GOOD, "icons": [{"src": "a.png", "theme": "blue"}]},
    {**GOOD, "icons": {"src": "a.png"}},
    {**GOOD, "execution": {"taskSupport": "optional"}},
    {**GOOD, "execution": {"taskSupport": "always"}},
    {**GOOD, "_meta": []},
    {**GOOD, "unknown": {"anything": 1}},
    [],
    "tool",
]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("item", TOOLS, ids=range(len(TOOLS)))
def test_a_listed_tool_is_taken_or_rejected_exactly_as_the_sdk_takes_or_rejects_it(item, version):
    from mcp.types import Tool
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    page: dict[str, Any] = (
        {"cacheScope": "private", "resultType": "complete", "ttlMs": 0} if version == "2026-07-28" else {}
    )
    try:
        validate_server_result("tools/list", version, {**page, "tools": [item]})
        Tool.model_validate(item, by_name=False)
        sdk = None
    except ValidationError as exc:
        sdk = exc
    ours = toolcheck.tool_problem(item, version)
    assert (ours is None) == (sdk is None), f"sdk: {sdk}; miroctl: {ours}"


PAGES = [
    {"cacheScope": "private", "resultType": "complete", "ttlMs": 0},
    {"cacheScope": "public", "resultType": "complete", "ttlMs": 5, "nextCursor": "x"},
    {"resultType": "complete", "ttlMs": 0},
    {"cacheScope": "shared", "resultType": "complete", "ttlMs": 0},
    {"cacheScope": "private", "ttlMs": 0},
    {"cacheScope": "private", "resultType": "complete"},
    {"cacheScope": "private", "resultType": "complete", "ttlMs": "soon"},
    {"cacheScope": "private", "resultType": "complete", "ttlMs": 0, "nextCursor": 3},
    {"nextCursor": 3},
    {"nextCursor": "c", "_meta": {"k": 1}},
    {},
]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("page", PAGES, ids=range(len(PAGES)))
def test_a_listing_pages_own_fields_are_taken_or_rejected_exactly_as_the_sdk_does(page, version):
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    try:
        validate_server_result("tools/list", version, {**page, "tools": []})
        sdk = None
    except ValidationError as exc:
        sdk = exc
    ours = toolcheck.page_problem(page, version)
    assert (ours is None) == (sdk is None), f"sdk: {sdk}; miroctl: {ours}"


async def _recorded(spec: ServerSpec, path: Path, lean_client: bool) -> list[dict[str, Any]]:
    async def progress(done: float, total: float | None, message: str | None) -> None:
        pass

    connector = connectors.LEAN if lean_client else connectors.SDK
    async with Manager(Config(servers=(spec,)), connector=connector, record_path=str(path)) as manager:
        request = CallRequest(spec.name, "echo", {"text": "hi"}, timeout=20, progress=progress)
        outcome = await manager.call(request)
        assert outcome.exit_code == 0, outcome.error
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [line["message"] for line in lines if line["direction"] == "to_server"]


@pytest.mark.process
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_lean_client_sends_what_the_sdk_client_sends(tmp_path, era):
    spec = fixture_spec("fx") if era == "modern" else replace(fixture_spec("fx"), protocol="legacy")
    sdk = anyio.run(_recorded, spec, tmp_path / "sdk.ndjson", False)
    ours = anyio.run(_recorded, spec, tmp_path / "lean.ndjson", True)
    assert [m["method"] for m in ours] == [m["method"] for m in sdk]
    assert "tools/call" in [m["method"] for m in ours]
    assert ours == sdk


# ------------------------------------------------------------------------------------- tool-list changes


def changing_spec(log: Path, era: str, *args: str) -> ServerSpec:
    """plainrpc.py with a tool list that changes (grow) and listen streams it can end (end_streams)."""
    return plain_spec(log, "--era", era, "--changes", *args)


def complete_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines written so far (a line still being written is left out)."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]


async def until_in(path: Path, method: str, key: str | None = None) -> None:
    """Wait until a message of `method` is written to `path` (a server's log; a record's `key` entries)."""
    while not any((line.get(key) or {} if key else line).get("method") == method for line in complete_lines(path)):
        await anyio.sleep(0.01)


async def _follow(spec: ServerSpec, connector: connectors.Connector, log: Path) -> tuple[list[str], list[str]]:
    """List; have the server add a tool and announce it; list again; have it end its listen streams."""
    modern = "modern" in spec.args
    config = Config(servers=(spec,), default_names=(spec.name,))
    with anyio.fail_after(60):
        async with Manager(config, connector=connector, follow_changes=True) as manager:
            before = [t.name for t in (await manager.list_tools())[0].tools]
            if modern:
                await until_in(log, "subscriptions/listen")  # its acknowledgement precedes grow's answer
            grown = await manager.call(CallRequest(spec.name, "grow", {"tool_name": "fresh"}))
            assert grown.ok, grown.error
            assert await manager.next_change(30)
            after = [t.name for t in (await manager.list_tools())[0].tools]
            ended = await manager.call(CallRequest(spec.name, "end_streams", {}))
            assert ended.ok, ended.error
            if modern:
                await until_in(log, "notifications/cancelled")  # the client's cancel of the ended stream's request
    return before, after


def _listen_apart(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages but the listen requests (sent beside the first listing, in either order), and those; the
    stream's id ("listen-N" counts a process's streams) as "listen-*"."""
    text = re.sub(r'"listen-\d+"', '"listen-*"', json.dumps(messages))
    normalised = json.loads(text)
    listens = [m for m in normalised if m.get("method") == "subscriptions/listen"]
    return [m for m in normalised if m.get("method") != "subscriptions/listen"], listens


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_lean_client_follows_tool_changes_with_the_messages_the_sdk_client_sends(tmp_path, era):
    lists = {}
    for name, connector in (("sdk", connectors.SDK), ("lean", connectors.LEAN)):
        log = tmp_path / name
        lists[name] = anyio.run(_follow, changing_spec(log, era), connector, log)
    before, after = lists["lean"]
    assert "fresh" not in before and after == [*before, "fresh"]
    assert lists["lean"] == lists["sdk"]
    ours, sdk = received(tmp_path / "lean"), received(tmp_path / "sdk")
    assert [m.get("method") for m in ours].count("tools/list") == 2
    assert _listen_apart(ours) == _listen_apart(sdk)
    if era == "modern":
        (listen,) = [m for m in ours if m.get("method") == "subscriptions/listen"]
        assert listen["params"]["notifications"] == {"toolsListChanged": True}
        assert ours[-1]["params"] == {"requestId": listen["id"], "reason": "caller cancelled"}
    else:
        assert "subscriptions/listen" not in [m.get("method") for m in ours]


@pytest.mark.process
def test_a_real_sdk_servers_tool_changes_reach_the_lean_client_on_its_listen_stream(tmp_path):
    spec = fixture_spec("g", "--tools", "grow,echo")
    record = tmp_path / "record.ndjson"

    async def main() -> tuple[list[str], list[str], Any]:
        config = Config(servers=(spec,), default_names=("g",))
        with anyio.fail_after(60):
            async with Manager(config, connector=connectors.LEAN, follow_changes=True, record_path=str(record)) as m:
                before = [t.name for t in (await m.list_tools())[0].tools]
                await until_in(record, "notifications/subscriptions/acknowledged", key="message")
                grown = await m.call(CallRequest("g", "grow", {"tool_name": "fresh"}))
                assert grown.ok, grown.error
                assert await m.next_change(30)
                after = [t.name for t in (await m.list_tools())[0].tools]
                connection = m.handle(spec).connection
                return before, after, connection.session if connection else None

    before, after, session = anyio.run(main)
    assert isinstance(session, lean.LeanClient) and session.protocol_version == "2026-07-28"
    assert sorted(before) == ["echo", "grow"]
    assert sorted(after) == ["echo", "fresh", "grow"]


CHANGE_PARAMS = [None, {}, {"_meta": {}}, {"_meta": None}, {"_meta": 5}, {"_meta": "x"}, {"_meta": []}, {"other": 1}]


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
@pytest.mark.parametrize("params", CHANGE_PARAMS, ids=range(len(CHANGE_PARAMS)))
def test_an_unsolicited_tool_list_change_is_heeded_or_ignored_exactly_as_the_sdk_does(params, version):
    from mcp_types.methods import parse_server_notification
    from pydantic import ValidationError

    try:
        parse_server_notification(lean.TOOLS_CHANGED, version, params)
        sdk = True
    except ValidationError:
        sdk = False
    heard: list[str] = []
    client = lean.LeanClient(lambda message: None, on_tools_changed=lambda: heard.append("changed"))
    client.protocol_version = version
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": lean.TOOLS_CHANGED}
    if params is not None:
        message["params"] = params
    anyio.run(client.receive, message)
    assert bool(heard) == sdk


async def _stream(honoured: object, event_before_ack: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """A listen stream acknowledged with `honoured`, then a tool change on it, then its end (the server's
    answer): what `changed` heard, and what the client sent."""
    sent: list[dict[str, Any]] = []
    heard: list[str] = []
    client = lean.LeanClient(sent.append)
    client.protocol_version = "2026-07-28"
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.follow_tool_changes, lambda: heard.append("changed"))
            await anyio.wait_all_tasks_blocked()
            (listen,) = sent
            stamp = {"_meta": {lean.META_SUBSCRIPTION: listen["id"]}}
            change = {"jsonrpc": "2.0", "method": lean.TOOLS_CHANGED, "params": stamp}
            if event_before_ack:
                await client.receive(change)
            ack = {"jsonrpc": "2.0", "method": lean.LISTEN_ACKNOWLEDGED, "params": {**stamp, "notifications": honoured}}
            await client.receive(ack)
            if not event_before_ack:
                await client.receive(change)
            await client.receive({"jsonrpc": "2.0", "id": listen["id"], "result": {}})
    return heard, sent


FILTERS = [
    {"toolsListChanged": True},
    {"toolsListChanged": "yes"},
    {"toolsListChanged": 1},
    {"toolsListChanged": False},
    {"toolsListChanged": None},
    {"toolsListChanged": "maybe"},
    {"toolsListChanged": 2},
    {"tools_list_changed": True},
    {"toolsListChanged": False, "tools_list_changed": True},
    {"promptsListChanged": True},
    {"toolsListChanged": True, "promptsListChanged": "x"},
    {"toolsListChanged": True, "resourceSubscriptions": ["a://b"]},
    {"toolsListChanged": True, "resourceSubscriptions": "a://b"},
    {"toolsListChanged": True, "resourceSubscriptions": [3]},
    {"toolsListChanged": True, "taskIds": ["t"]},
    {},
    None,
    [],
]


@pytest.mark.parametrize("honoured", FILTERS, ids=range(len(FILTERS)))
def test_a_listen_acknowledgement_is_taken_and_honoured_exactly_as_the_sdk_takes_it(honoured):
    from mcp.types import SubscriptionFilter
    from pydantic import ValidationError

    try:
        sdk = SubscriptionFilter.model_validate(honoured).tools_list_changed is True
    except ValidationError:
        sdk = False  # not taken: the stream stays unacknowledged, its events dropped
    heard, sent = anyio.run(_stream, honoured)
    assert heard == (["changed"] if sdk else [])
    assert [m.get("method") for m in sent] == ["subscriptions/listen"]  # ended by the server: nothing to cancel


def test_a_tool_change_on_a_stream_before_its_acknowledgement_is_dropped_as_the_sdk_drops_it():
    heard, _ = anyio.run(_stream, {"toolsListChanged": True}, True)
    assert heard == []


@pytest.mark.parametrize("announced", [True, False, "true", "no", 1, 0, None, "maybe", 2, "absent"])
def test_whether_a_server_announces_tool_changes_is_read_as_the_sdk_reads_it(announced):
    from mcp.types import ServerCapabilities
    from pydantic import ValidationError

    capabilities: dict[str, Any] = {"tools": {} if announced == "absent" else {"listChanged": announced}}
    try:
        tools = ServerCapabilities.model_validate(capabilities).tools
        sdk = bool(tools is not None and tools.list_changed)
    except ValidationError:
        sdk = False  # the SDK refuses the whole handshake; the lean client does not follow such a server
    client = lean.LeanClient(lambda message: None)
    client.capabilities = capabilities
    assert client.announces_tool_changes() == sdk


def test_a_session_before_2026_07_28_opens_no_listen_stream():
    sent: list[dict[str, Any]] = []
    client = lean.LeanClient(sent.append)
    client.protocol_version = "2025-11-25"
    anyio.run(client.follow_tool_changes, lambda: None)
    assert sent == []
