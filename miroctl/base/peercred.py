"""Who is at the other end of a connected Unix socket, as the kernel says (SO_PEERCRED): for a client, the
process that listens; for a listener, the one that connected."""

from __future__ import annotations

import socket
import struct

CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer(sock: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a connected Unix socket."""
    pid, uid, _ = CREDENTIALS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, CREDENTIALS.size))
    return pid, uid
