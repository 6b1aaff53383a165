"""The HTTP gateway on each of uvicorn's HTTP/1.1 parsers (httptools, the default, and h11 without it): a slow
head, or a kept connection that sends only blank lines, is cut off; a call whose client leaves is cancelled
upstream; an answer goes out in one piece. And the metrics' labels follow the tool map without a walk per call."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from miroctl.config import loader
from miroctl.core.manager import Manager
from miroctl.gateway.guard import HttpSettings
from miroctl.gateway.http import address_of, bind, serve_http
from miroctl.gateway.server import Gateway
from miroctl.gateway.uvicorn_private import header_timed_protocol, protocol_name
from tests.conftest import fixture_yaml
from tests.gateway_support import wait_until

pytestmark = pytest.mark.anyio
PARSERS = ["httptools", "h11"]
CALL = {"server": "alpha", "tool": "echo", "arguments": {"text": "hi"}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def gateway_on(parser: str, config: Path) -> AsyncIterator[tuple[str, int]]:
    """`serve --transport http --read-timeout 1` on `parser`, in this process: its host and port."""
    loaded = loader.load(str(config))
    settings = HttpSettings(port=0, read_timeout=1.0, parser=parser)
    sock = bind(settings)
    stop = anyio.Event()
    async with Manager(loaded) as manager:
        gateway = Gateway(manager, list(loaded.servers))
        await gateway.refresh()
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_http, gateway, settings, sock, 1.0, stop)
            try:
                host, port = address_of(sock).removeprefix("http://").rsplit(":", 1)
                yield host, int(port)
            finally:
                stop.set()


def _closed_by_peer(sock: socket.socket, deadline: float) -> bool:
    """Whether the gateway closes the connection before `deadline` (after whatever it answers first)."""
    while True:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True


def _call(address: tuple[str, int]) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection(*address, timeout=30)
    try:
        connection.request("POST", "/v1/call", json.dumps(CALL), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_the_fastest_installed_parser_is_the_default_and_either_can_be_chosen():
    assert protocol_name(header_timed_protocol(1.0)) == "httptools"  # a dependency of miroctl's
    assert [protocol_name(header_timed_protocol(1.0, parser)) for parser in PARSERS] == PARSERS


@pytest.mark.parametrize("parser", PARSERS)
async def test_slow_heads_are_closed_within_seconds_while_a_caller_is_served(parser, write_config):
    config = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo")})
    async with gateway_on(parser, config) as address:

        def abuse() -> tuple[int, dict[str, Any], list[bool]]:
            slow = []
            for index in range(20):
                sock = socket.create_connection(address, timeout=10)
                if index % 2:  # half send part of a head, half nothing at all
                    sock.sendall(b"POST /v1/call HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                slow.append(sock)
            try:
                status, document = _call(address)
                deadline = time.monotonic() + 15  # a hang guard: the read timeout is 1 s
                return status, document, [_closed_by_peer(sock, deadline) for sock in slow]
            finally:
                for sock in slow:
                    sock.close()

        status, document, closed = await anyio.to_thread.run_sync(abuse)
    assert status == 200 and document["result"] == "hi"
    assert all(closed)


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_kept_connection_that_only_sends_blank_lines_after_an_answer_is_closed(parser, write_config):
    config = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo")})
    request = _raw_call()
    async with gateway_on(parser, config) as address:

        def drip() -> tuple[bytes, bool]:
            with socket.create_connection(address, timeout=30) as sock:
                sock.sendall(request)
                answer = sock.recv(1 << 20)
                sock.sendall(b"\r\n")  # no request begins, but the keep-alive timer is stopped by any byte
                return answer, _closed_by_peer(sock, time.monotonic() + 15)  # a hang guard: the timeout is 1 s

        answer, closed = await anyio.to_thread.run_sync(drip)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert closed


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_call_is_cancelled_upstream_when_its_client_leaves(parser, write_config, tmp_path):
    config = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,wait_cancel")})
    marker = tmp_path / "marker"
    body = {"server": "alpha", "tool": "wait_cancel", "arguments": {"seconds": 120, "marker": str(marker)}}
    async with gateway_on(parser, config) as address:

        def leave() -> tuple[int, dict[str, Any]]:
            connection = http.client.HTTPConnection(*address, timeout=30)
            connection.request("POST", "/v1/call", json.dumps(body), {"Content-Type": "application/json"})
            wait_until(lambda: marker.exists() and marker.read_text() == "started", message="call started upstream")
            connection.close()
            wait_until(lambda: marker.read_text() == "cancelled", message="call cancelled upstream")
            return _call(address)  # the gateway and its session live on

        status, document = await anyio.to_thread.run_sync(leave)
    assert status == 200 and document["result"] == "hi"


@pytest.mark.parametrize("parser", PARSERS)
async def test_each_answer_arrives_in_one_piece_head_and_body_together(parser, write_config):
    config = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo")})
    request = _raw_call()
    async with gateway_on(parser, config) as address:

        def first_reads() -> list[bytes]:
            with socket.create_connection(address, timeout=30) as sock:
                pieces = []
                for _ in range(30):  # one keep-alive connection; each answer read with one recv
                    sock.sendall(request)
                    pieces.append(sock.recv(1 << 20))
                return pieces

        pieces = await anyio.to_thread.run_sync(first_reads)
    for piece in pieces:
        answer_head, _, answer_body = piece.partition(b"\r\n\r\n")
        assert answer_head.startswith(b"HTTP/1.1 200 ")
        assert json.loads(answer_body)["result"] == "hi"


async def test_metrics_labels_follow_the_tool_map_a_listing_makes(write_config):
    from miroctl.gateway import toolmap
    from miroctl.gateway.metrics import Metrics

    loaded = loader.load(str(write_config({"alpha": fixture_yaml("alpha", "--tools", "echo")})))
    async with Manager(loaded) as manager:
        gateway = Gateway(manager, list(loaded.servers))
        await gateway.refresh()
        metrics = Metrics(gateway, lambda: 0, lambda: 0)
        before = [metrics.labels("alpha", "echo"), metrics.labels("alpha", "nope"), metrics.labels("zeta", "echo")]
        gateway.map = toolmap.build([], gateway.separator, ["alpha"], gateway.plain)  # alpha listed no tools
        after = metrics.labels("alpha", "echo")
    assert before == [("alpha", "echo"), ("alpha", "other"), ("other", "other")]
    assert after == ("alpha", "other")


def _raw_call() -> bytes:
    """POST /v1/call of CALL as the bytes a client writes: its head and its JSON body."""
    body = json.dumps(CALL).encode()
    head = b"POST /v1/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
