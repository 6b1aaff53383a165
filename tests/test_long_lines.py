"""A long answer on stdio (tens of MB of result text) is held as few times as it can be while it is cut off the
stream and parsed: the line's bytes once beside the buffer it came in, then the bytes beside the parsed message,
never a decoded copy of the whole line as well. Through a gateway, the answer is encoded and sent a piece at a
time, and its client lets the answer's bytes go before it parses them."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import PurePosixPath

import anyio
import httpx2
import pytest

from miroctl.base import escaping
from miroctl.base.models import ServerSpec
from miroctl.remote import GatewayClient
from miroctl.sessions.frames import parse_line, parse_plain
from miroctl.sessions.transports import Wire, read_lines
from tests.conftest import fixture_yaml
from tests.gateway_support import http_gateway_here, write_pool

TEXT_CHARS = 8_000_000
CHUNK = 65536  # what a pipe hands over at a time


def answer_line() -> bytes:
    result = {"content": [{"type": "text", "text": "x" * TEXT_CHARS}]}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": result}).encode()


async def chunks(line: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(line), CHUNK):
        yield line[start : start + CHUNK]
    yield b"\n"


@pytest.mark.parametrize("parse", [parse_line, parse_plain], ids=["sdk", "lean"])
def test_a_long_answer_is_held_at_most_twice_while_it_is_read_off_the_stream_and_parsed(parse):
    line = answer_line()  # made before the count starts: what the server's pipe would hold
    parse(b'{"jsonrpc": "2.0", "id": 1, "result": {}}')  # the parser's imports, before the count too
    texts: list[int] = []

    async def read() -> None:
        async for got in read_lines(chunks(line), Wire(ServerSpec("big"))):
            message = parse(got)
            del got
            result = message.result if hasattr(message, "result") else message["result"]  # type: ignore[index]
            texts.append(len(result["content"][0]["text"]))

    tracemalloc.start()
    try:
        anyio.run(read)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert texts == [TEXT_CHARS]
    # the buffer and the line cut from it, or the line and the parsed text: about 2x, never 3x or 4x
    assert peak < 2.4 * len(line), f"peak {peak / len(line):.2f}x the line"


@pytest.mark.parametrize("parse", [parse_line, parse_plain], ids=["sdk", "lean"])
def test_a_line_of_bytes_that_are_not_utf8_still_parses_with_replacement_characters(parse):
    line = b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "a\xff\xfeb"}]}}'
    message = parse(line)
    result = message.result if hasattr(message, "result") else message["result"]
    assert result["content"][0]["text"] == "a\ufffd\ufffdb"


@pytest.mark.parametrize("parse", [parse_line, parse_plain], ids=["sdk", "lean"])
def test_an_unreadable_answer_given_as_bytes_becomes_an_error_for_its_id(parse):
    message = parse(b'{"jsonrpc": "2.0", "id": 9, "result": {"content": [}')
    error = message.error if hasattr(message, "error") else message["error"]
    code = error.code if hasattr(error, "code") else error["code"]
    assert code == -32700


BIG_RESULT = 4_000_000  # characters of result text; the envelope carries them three times


async def _streamed_call(http: httpx2.AsyncClient, url: str, chars: int) -> tuple[bytes, int]:
    """POST /v1/call of fixture's `big`, read in pieces as they come: the body without its x's, and how many."""
    body = {"server": "fx", "tool": "big", "arguments": {"chars": chars}}
    skeleton, count = bytearray(), 0
    async with http.stream("POST", f"{url}/v1/call", json=body) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_raw():
            count += chunk.count(b"x")
            skeleton += chunk.replace(b"x", b"")
    return bytes(skeleton), count


@pytest.mark.anyio
async def test_the_gateway_sends_a_large_result_holding_its_text_a_few_times_not_once_per_copy_of_its_json(
    tmp_path,
):
    config = write_pool(tmp_path, {"fx": fixture_yaml("fx", "--tools", "big")})
    async with http_gateway_here(config) as url, httpx2.AsyncClient(timeout=60) as http:
        await _streamed_call(http, url, 10)  # the session open and every code path loaded before the count
        tracemalloc.start()
        try:
            skeleton, count = await _streamed_call(http, url, BIG_RESULT)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    envelope = json.loads(skeleton)  # its keys lost their x's with the text's: "eit_code", "tet"
    assert envelope["eit_code"] == 0
    assert (envelope["result"], envelope["content"]) == ("", [{"type": "tet", "tet": ""}])
    assert envelope["structured_content"] == {"result": ""}
    assert count == 3 * BIG_RESULT + 4  # result, content's text, structured_content's; and the keys' four
    # the server's text (in this process), the encoding of one string of the envelope, the pieces on their way:
    # about 2.5x; never the whole answer as JSON text and again as bytes (7x, as it was)
    assert peak < 3.5 * BIG_RESULT, f"peak {peak / BIG_RESULT:.2f}x the text"


@pytest.mark.anyio
async def test_the_warm_client_holds_a_large_answer_as_its_text_and_its_document_never_its_bytes_as_well(tmp_path):
    config = write_pool(tmp_path, {"fx": fixture_yaml("fx", "--tools", "big")})
    async with http_gateway_here(config) as url:
        client = GatewayClient(url)
        await anyio.to_thread.run_sync(client.call, {"target": ["fx", "big", "chars=10"]})  # all loaded first
        tracemalloc.start()
        try:
            envelope = await anyio.to_thread.run_sync(client.call, {"target": ["fx", "big", f"chars={BIG_RESULT}"]})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert envelope["exit_code"] == 0 and envelope["result"] == "x" * BIG_RESULT
    # the answer carries the text three times: its JSON text, then that and the parsed document (6x, the
    # gateway's own part already gone); with its bytes kept beside them while they are parsed, 9x
    assert peak < 7.5 * BIG_RESULT, f"peak {peak / BIG_RESULT:.2f}x the text"


PARSE_PEAK = """
import resource, sys
from miroctl.sessions.frames import parse_line
chars = int(sys.argv[1])
head = b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "'
middle = b'"}], "structuredContent": {"result": "'
line = b"".join([head, b"x" * chars, middle, b"x" * chars, b'"}}}'])
parse_line(b'{"jsonrpc": "2.0", "id": 1, "result": {}}')  # the SDK's types loaded before the count
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
message = parse_line(line)
assert message.result["content"][0]["text"] == message.result["structuredContent"]["result"] == "x" * chars
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)  # KiB
"""


@pytest.mark.process  # the parser's own memory is not Python's: only the process's peak sees it
def test_a_long_answer_read_into_the_sdks_types_costs_its_text_once_more_not_four_times():
    chars = 20_000_000  # the line holds it twice
    done = subprocess.run([sys.executable, "-c", PARSE_PEAK, str(chars)], capture_output=True, text=True, check=True)
    grown = int(done.stdout) * 1024
    # above what making the line took: its parsed strings, about 2x the text (the line holds it twice); read by
    # the SDK's types straight from JSON, with the parser's own tree of it beside the strings: over 7x
    assert grown < 3 * chars, f"peak grew by {grown / chars:.2f}x the text"


def test_an_answer_written_in_pieces_is_the_same_json_as_written_whole():
    document = {
        "result": "long \u202e text, é and 漢字 " * 40,  # cut across pieces of 64 characters
        "nan": float("nan"),
        "nested": [{"inf": float("-inf"), "zero width": "a\u200bb"}, None, True, 3, 2.5],
        "path": PurePosixPath("/tmp/x"),  # what dumps shows with str()
    }
    parts = list(escaping.pieces(document, size=64))
    assert len(parts) > 10 and max(map(len, parts)) < 2 * 64
    assert "".join(parts) == escaping.dumps(document)
    assert "\\u202e" in "".join(parts) and "\u202e" not in "".join(parts)
