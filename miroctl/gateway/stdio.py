"""The gateway's own stdin and stdout for MCP over stdio: reads a cancellation can stop, writes without threads.

The SDK's stdio server reads and writes through worker threads: a read blocked in a thread keeps a
stopping gateway waiting for its next input line, and every message costs two thread hops. These
wait on the file descriptors with the event loop instead. While serving, fd 1 points at stderr, so
stray output from anything in the process can never corrupt the protocol stream.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import anyio

READ_CHUNK = 64 * 1024
WRITE_CHUNK = 4096  # a pipe that polls writable takes this much without blocking (PIPE_BUF)


@contextmanager
def claimed_stdout() -> Iterator[int]:
    """A private duplicate of fd 1 for the protocol; fd 1 itself goes to stderr until the end."""
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    try:
        yield private
    finally:
        os.dup2(private, 1)
        os.close(private)


async def stdin_lines(fd: int = 0) -> AsyncIterator[str]:
    """Lines of stdin, decoded leniently; ends at end of file."""
    buffer = b""
    while chunk := await _read_some(fd):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", errors="replace")
    if buffer.strip():
        yield buffer.decode("utf-8", errors="replace")


async def _read_some(fd: int) -> bytes:
    try:
        await anyio.wait_readable(fd)
    except OSError:  # a regular file or /dev/null cannot be polled, and never blocks for long
        return await anyio.to_thread.run_sync(os.read, fd, READ_CHUNK)
    return os.read(fd, READ_CHUNK)


class StdoutWriter:
    """What the SDK's stdio server writes messages to: whole lines, in chunks the pipe takes at once."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[await _write_some(self.fd, data[:WRITE_CHUNK]) :]

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()


async def _write_some(fd: int, chunk: memoryview) -> int:
    try:
        await anyio.wait_writable(fd)
    except OSError:  # a regular file cannot be polled
        return await anyio.to_thread.run_sync(os.write, fd, chunk)
    return os.write(fd, chunk)
