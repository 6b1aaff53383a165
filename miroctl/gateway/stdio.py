"""The gateway's own stdin and stdout for MCP over stdio: reads a cancellation can stop, writes without threads.

The SDK's stdio server reads and writes through worker threads: a read blocked in a thread keeps a
stopping gateway waiting for its next input line, and every message costs two thread hops. These
wait on the file descriptors with the event loop instead. While serving, fd 1 points at stderr, so
stray output from anything in the process can never corrupt the protocol stream.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress

import anyio

# A host that closes serve's stdin waits 2 s (the Python SDK's hosts) before it signals serve, and kills it soon
# after: each server then gets this long to exit once its own stdin is closed, and SIGTERM half as long, so that
# serve has stopped them all and is gone within about a second.
STOP_GRACE = 0.5
READ_CHUNK = 64 * 1024
MAX_LINE_BYTES = int(os.environ.get("MIROCTL_MAX_MESSAGE_BYTES") or 64 * 1024 * 1024)  # as for servers' stdout
WRITE_CHUNK = 4096  # a pipe that polls writable takes this much without blocking (PIPE_BUF)
ENCODE_CHUNK = 64 * 1024  # characters of a message encoded at a time


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


async def stdin_lines(fd: int = 0, limit: int = MAX_LINE_BYTES) -> AsyncIterator[str]:
    """Lines of stdin, decoded leniently; ends at end of file. Each byte is looked at once (a long line
    costs its length, not its length squared); a line over `limit` bytes is dropped, and said so on stderr."""
    pieces: list[bytes] = []
    size, dropping = 0, False
    while chunk := await _read_some(fd):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not dropping:
                yield b"".join([*pieces, chunk[start:end]]).decode("utf-8", errors="replace")
            pieces, size, dropping = [], 0, False
            start = end + 1
        size += len(chunk) - start
        if not dropping and size > limit:
            dropping, pieces = True, []
            _say(f"miroctl serve: dropped a message of over {limit} bytes from stdin (MIROCTL_MAX_MESSAGE_BYTES)")
        elif not dropping:
            pieces.append(chunk[start:])
    if not dropping and b"".join(pieces).strip():
        yield b"".join(pieces).decode("utf-8", errors="replace")


def host_left(fd: int = 0) -> bool:
    """Whether the host has closed stdin, so that its end is all there is to read (looked at without waiting).

    A host that closes stdin and signals serve at once ended the session normally: that signal only hastens
    the end serve was already making, whether or not serve had read the end of its input yet."""
    try:
        ready, _, _ = select.select([fd], [], [], 0)
        return bool(ready) and os.read(fd, 1) == b""
    except (OSError, ValueError):  # no stdin, or one that cannot be polled
        return False


def _say(message: str) -> None:
    with suppress(OSError):
        os.write(2, (message + "\n").encode())


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
        for start in range(0, len(text), ENCODE_CHUNK):  # a long message is never held as text and bytes whole
            data = memoryview(text[start : start + ENCODE_CHUNK].encode("utf-8"))
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
