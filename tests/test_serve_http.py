"""`miroctl serve --transport http` as a real process: the SDK's client over streamable HTTP, and its guard."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.sessions import pool
from tests.conftest import FIXTURE, serve_on_a_free_port, tagged_processes, wait_for_no_tagged
from tests.gateway_support import (
    http_gateway_here,
    http_gateway_thread,
    plain_pool_files,
    pool_files,
    post_json,
    request,
    running,
    wait_until,
    write_pool,
)

TOKEN = "gateway-test-token-5d1c0e7f9a2b"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One gateway for the module: alpha and beta (in this process), web over HTTP, a token, a small body
    limit."""
    tag = uuid.uuid4().hex
    web, port = serve_on_a_free_port(
        lambda port: [sys.executable, FIXTURE, "--name", "web", "--http", str(port), "--tools", "headers,echo"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MIROCTL_TEST_TAG": tag},
    )
    try:  # the web server is stopped even when the gateway never comes up
        files = pool_files(web={"name": "web", "url": f"http://127.0.0.1:{port}/mcp"})
        config = write_pool(tmp_path_factory.mktemp("secured"), files)
        with http_gateway_thread(config, token=TOKEN, max_body=20000) as url:
            yield {"url": url}
    finally:
        web.terminate()
        web.wait(timeout=10)
    assert not wait_for_no_tagged(tag)


@asynccontextmanager
async def http_client(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


def test_sdk_client_lists_namespaced_tools_and_calls_them_over_http(secured):
    async def session() -> tuple[set[str], Any, list[float]]:
        seen: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append(value)

        async with http_client(secured["url"], AUTH) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("alpha__progress", {"steps": 2}, progress_callback=progress)
        return names, result, seen

    names, result, seen = anyio.run(session)
    assert {"alpha__echo", "beta__add", "web__headers"} <= names
    assert result.content[0].text == "did 2 steps"
    assert seen == [1, 2]


def test_callers_token_is_never_forwarded_to_an_upstream(secured):
    async def call() -> Any:
        async with http_client(secured["url"], AUTH) as client:
            return await client.call_tool("web__headers", {})

    headers = json.loads(anyio.run(call).content[0].text)
    assert headers["host"].startswith("127.0.0.1:")
    assert "authorization" not in headers
    assert TOKEN not in json.dumps(headers)


def test_request_without_a_token_gets_401_with_www_authenticate(secured):
    status, headers, body = request(secured["url"], "POST", "/v1/call", "{}", {"Content-Type": "application/json"})
    assert status == 401
    assert headers["www-authenticate"] == 'Bearer realm="miroctl"'
    assert json.loads(body)["error"] == "a valid bearer token is required"


def test_request_with_a_wrong_token_gets_401_invalid_token(secured):
    status, headers, _ = request(secured["url"], "POST", "/mcp", "{}", {"Authorization": "Bearer not-the-token"})
    assert status == 401
    assert 'error="invalid_token"' in headers["www-authenticate"]


def test_healthz_needs_the_token_too_and_reports_each_upstream(secured):
    assert request(secured["url"], "GET", "/healthz")[0] == 401
    status, _, body = request(secured["url"], "GET", "/healthz", headers=AUTH)
    health = json.loads(body)
    assert status == 200
    assert health["schema"] == "miroctl.health/1"
    assert {s["name"]: s["state"] for s in health["servers"]} == {
        "alpha": "connected",
        "beta": "connected",
        "web": "connected",
    }
    assert TOKEN not in body.decode()


def test_foreign_origin_gets_403_even_with_the_token(secured):
    status, _, _ = request(secured["url"], "GET", "/healthz", headers={**AUTH, "Origin": "https://evil.example"})
    assert status == 403


def test_local_origin_is_accepted(secured):
    origin = secured["url"].replace("127.0.0.1", "localhost")
    assert request(secured["url"], "GET", "/healthz", headers={**AUTH, "Origin": origin})[0] == 200


def test_foreign_host_header_gets_421(secured):
    status, _, _ = request(secured["url"], "GET", "/healthz", headers={**AUTH, "Host": "attacker.example:80"})
    assert status == 421


def test_oversize_body_gets_413(secured):
    document = {"server": "alpha", "tool": "echo", "arguments": {"text": "x" * 30000}}
    status, answer = post_json(secured["url"], "/v1/call", document, AUTH)
    assert status == 413
    assert answer["error"] == "the request body is larger than 20000 bytes"


def test_json_api_call_answers_the_call_envelope(secured):
    status, envelope = post_json(
        secured["url"], "/v1/call", {"server": "alpha", "tool": "add", "arguments": {"a": 1, "b": 2}}, AUTH
    )
    assert status == 200
    assert envelope["schema"] == "miroctl.call/1"
    assert (envelope["result"], envelope["exit_code"]) == ("3", 0)


def test_json_api_refuses_a_malformed_request_with_400_and_exit_2(secured):
    status, document = post_json(secured["url"], "/v1/call", {"tool": "add", "colour": "red"}, AUTH)
    assert status == 400
    assert document["exit_code"] == 2
    assert "colour" in document["error"]


def test_call_via_a_secured_gateway_uses_miroctl_token(secured, monkeypatch):
    monkeypatch.setenv("MIROCTL_TOKEN", TOKEN)
    result = CliRunner().invoke(app, ["call", "beta", "echo", "text=warm", "--via", secured["url"]])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "warm\n"


def test_call_via_without_the_token_exits_3_and_says_how_to_fix_it(secured, monkeypatch):
    monkeypatch.delenv("MIROCTL_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["call", "beta", "echo", "text=x", "--via", secured["url"], "--json"])
    assert result.exit_code == 3
    assert json.loads(result.stdout)["is_error"] is True  # --json: the error is the one document
    assert "HTTP 401" in result.stderr
    assert "MIROCTL_TOKEN" in result.stderr


def test_listening_beyond_loopback_without_a_token_is_refused_with_exit_2():
    result = CliRunner().invoke(app, ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr


def test_token_env_naming_an_unset_variable_is_refused_with_exit_2(monkeypatch):
    monkeypatch.delenv("NO_SUCH_GATEWAY_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["serve", "--transport", "http", "--token-env", "NO_SUCH_GATEWAY_TOKEN"])
    assert result.exit_code == 2
    assert "NO_SUCH_GATEWAY_TOKEN" in result.stderr


def test_busy_port_is_refused_with_exit_2(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_pool(tmp_path, pool_files())
        result = CliRunner().invoke(app, ["serve", "--transport", "http", "--port", str(port), "-c", str(config)])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


@pytest.mark.process
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_http_gateway_and_leaves_no_server_behind(tmp_path, leak_tag, sig, code):
    config = write_pool(tmp_path, plain_pool_files(tmp_path, leak_tag))
    with running("--config", str(config), "--transport", "http", "--port", "0") as gateway:
        url = gateway.url()
        wait_until(lambda: len(tagged_processes(leak_tag)) == 2, message="both servers running")
        assert post_json(url, "/v1/call", {"server": "alpha", "tool": "echo", "arguments": {"text": "x"}})[0] == 200
        assert gateway.stop(sig) == code


def test_json_api_call_is_cancelled_upstream_when_its_client_goes_away(secured, tmp_path):
    import http.client
    from urllib.parse import urlsplit

    marker = tmp_path / "marker"
    body = json.dumps({"server": "alpha", "tool": "wait_cancel", "arguments": {"seconds": 120, "marker": str(marker)}})
    parts = urlsplit(secured["url"])
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    connection.request("POST", "/v1/call", body, {**AUTH, "Content-Type": "application/json"})
    wait_until(lambda: marker.exists() and marker.read_text() == "started", message="call started upstream")
    connection.close()
    wait_until(lambda: marker.read_text() == "cancelled", message="call cancelled upstream")


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        (f"Bearer {TOKEN}", True),
        (f"bearer {TOKEN}", True),
        (f"Basic {TOKEN}", False),
        (f"Bearer {TOKEN}x", False),
        ("Bearer", False),
        (None, False),
    ],
)
def test_token_check_accepts_only_the_bearer_token(header, ok):
    from miroctl.gateway.guard import token_ok

    assert token_ok(header, TOKEN) is ok


def test_settings_accept_loopback_names_and_any_host_only_beyond_loopback_without_allow_host():
    from miroctl.gateway.guard import HttpSettings, matches

    local = HttpSettings()
    assert matches("localhost:8765", local.hosts) and matches("[::1]:1", local.hosts)
    assert not matches("127.0.0.1.evil.example:80", local.hosts)
    assert not matches("http://localhost.evil.example", local.origins)
    assert HttpSettings(host="0.0.0.0", token="t").hosts == ()
    assert matches("gw.lan:8765", HttpSettings(host="0.0.0.0", token="t", allow_hosts=["gw.lan:*"]).hosts)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--transport", "websocket"], "unknown transport 'websocket'"),
        (["--separator", "/"], "--separator '/' would make invalid tool names"),
    ],
)
def test_serve_refuses_bad_options_with_exit_2_before_starting_anything(args, reason):
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2
    assert reason in result.stderr


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.process
@pytest.mark.anyio
async def test_a_host_listening_over_http_hears_when_a_left_out_server_comes_back(tmp_path, leak_tag, monkeypatch):
    monkeypatch.setattr(pool, "RETRY_AFTER", 0.0)  # the pool's wait before it starts a failed server again
    ready = tmp_path / "ready"
    late = {
        "name": "late",
        "tool_command": "python",
        "args": [FIXTURE, "--name", "late", "--mode", "late"],
        "env": {"FIXTURE_READY_FILE": str(ready), "MIROCTL_TEST_TAG": leak_tag},
    }
    config = write_pool(tmp_path, {"late": late})
    async with http_gateway_here(config, retry_every=0.05) as url, http_client(url, {}) as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as changes:
            ready.touch()
            with anyio.fail_after(30):
                event = await changes.__anext__()
        after = {tool.name for tool in (await client.list_tools()).tools}
    assert type(event).__name__ == "ToolsListChanged"
    assert before == set() and "late__echo" in after
    assert not wait_for_no_tagged(leak_tag)


@pytest.mark.anyio
async def test_a_host_on_an_older_protocol_over_http_is_told_when_the_tools_change(tmp_path, leak_tag):
    config = write_pool(tmp_path, pool_files(leak_tag))
    told = anyio.Event()

    async def messages(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            told.set()

    async with (
        http_gateway_here(config, "alpha") as url,
        httpx2.AsyncClient(timeout=60) as http,
        Client(
            streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy", message_handler=messages
        ) as client,
    ):
        listed = client.server_capabilities.tools.list_changed
        await client.list_tools()
        await client.call_tool("alpha__grow", {"tool_name": "fresh"})
        with anyio.fail_after(30):
            await told.wait()
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert listed is True
    assert "alpha__fresh" in names
