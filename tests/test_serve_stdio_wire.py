"""The gateway's stdin and stdout plumbing for MCP over stdio."""

from __future__ import annotations

import os
import threading
import tracemalloc

import anyio

from miroctl.gateway.stdio import StdoutWriter, claimed_stdout, stdin_lines


async def _collect(fd: int) -> list[str]:
    return [line async for line in stdin_lines(fd)]


def test_stdin_lines_joins_chunks_splits_lines_and_keeps_a_last_line_without_newline():
    read_end, write_end = os.pipe()

    def feed() -> None:
        for part in (b'{"a":', b' 1}\n{"b": 2}\n\xff', b"tail"):
            os.write(write_end, part)
        os.close(write_end)

    threading.Thread(target=feed).start()
    try:
        assert anyio.run(_collect, read_end) == ['{"a": 1}', '{"b": 2}', "\ufffdtail"]
    finally:
        os.close(read_end)


def test_stdin_lines_reads_a_regular_file_too(tmp_path):
    path = tmp_path / "input.jsonl"
    path.write_text("one\ntwo\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert anyio.run(_collect, fd) == ["one", "two"]
    finally:
        os.close(fd)


def test_stdout_writer_delivers_a_message_larger_than_the_pipe_whole():
    read_end, write_end = os.pipe()
    message = "x" * (1024 * 1024) + "\n"
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()

    async def send() -> None:
        writer = StdoutWriter(write_end)
        await writer.write(message)
        await writer.flush()

    anyio.run(send)
    os.close(write_end)
    reader.join(timeout=30)
    os.close(read_end)
    assert received.decode() == message


def test_stdout_writer_holds_a_long_message_a_piece_at_a_time_never_its_whole_bytes_beside_its_text():
    read_end, write_end = os.pipe()
    message = "é" * 2_000_000 + "\n"  # 4 MB of UTF-8
    received = {"bytes": 0, "é": 0}

    def drain() -> None:
        while chunk := os.read(read_end, 65536):  # whole characters: 65536 is even, each é two bytes
            received["bytes"] += len(chunk)
            received["é"] += chunk.count("é".encode())

    reader = threading.Thread(target=drain)
    reader.start()
    tracemalloc.start()
    try:
        anyio.run(StdoutWriter(write_end).write, message)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        os.close(write_end)
        reader.join(timeout=30)
        os.close(read_end)
    assert received == {"bytes": 4_000_001, "é": 2_000_000}
    assert peak < 1_000_000, f"peak {peak} bytes for a message of 4,000,001 (the whole bytes: over 4,000,000)"


def test_claimed_stdout_sends_stray_output_to_stderr_and_protocol_to_the_real_stdout(capfd):
    with claimed_stdout() as protocol:
        os.write(1, b"stray print\n")
        os.write(protocol, b'{"jsonrpc": "2.0"}\n')
    os.write(1, b"after\n")
    captured = capfd.readouterr()
    assert captured.out == '{"jsonrpc": "2.0"}\nafter\n'
    assert captured.err == "stray print\n"


def _feed_in_background(parts: list[bytes]) -> int:
    """The read end of a pipe that a thread fills with `parts`, then closes."""
    read_end, write_end = os.pipe()

    def feed() -> None:
        for part in parts:
            os.write(write_end, part)
        os.close(write_end)

    threading.Thread(target=feed, daemon=True).start()
    return read_end


def test_a_very_long_line_is_read_in_linear_time():
    size = 48 * 1024 * 1024
    read_end = _feed_in_background([b"x" * size + b"\n", b'{"next": 1}\n'])
    # No clock: re-splitting the buffer on every read takes minutes here, and the per-test timeout fails that.
    try:
        lines = anyio.run(_collect, read_end)
    finally:
        os.close(read_end)
    assert [len(line) for line in lines] == [size, 11]


def test_a_line_over_the_size_cap_is_dropped_and_the_next_line_still_arrives(capfd):
    read_end = _feed_in_background([b"y" * (3 * 1024 * 1024), b"z" * 1000 + b"\n", b'{"next": 1}\n'])

    async def collect() -> list[str]:
        return [line async for line in stdin_lines(read_end, limit=1024 * 1024)]

    try:
        assert anyio.run(collect) == ['{"next": 1}']
    finally:
        os.close(read_end)
    assert "dropped a message of over 1048576 bytes from stdin" in capfd.readouterr().err
