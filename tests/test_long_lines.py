"""A long answer on stdio (tens of MB of result text) is held as few times as it can be while it is cut off the
stream and parsed: the line's bytes once beside the buffer it came in, then the bytes beside the parsed message,
never a decoded copy of the whole line as well."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator

import anyio
import pytest

from miroctl.base.models import ServerSpec
from miroctl.sessions.frames import parse_line, parse_plain
from miroctl.sessions.transports import Wire, read_lines

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
