"""Only the user who owns the daemon gets in: the peer's uid, asked of the kernel (SO_PEERCRED) on every
connection, before a byte of its request is read."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from miroctl.base.peercred import peer


def same_user_only(protocol: type[asyncio.Protocol], refused: Callable[[int, int], None]) -> type[asyncio.Protocol]:
    """`protocol`, closing at once every connection whose peer is not this process's user (`refused(pid, uid)`
    hears of each)."""

    class SameUser(protocol):  # type: ignore[misc,valid-type]  # a class made at run time from uvicorn's protocol
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            try:
                pid, uid = peer(sock) if sock is not None else (0, -1)
            except OSError:
                pid, uid = 0, -1
            if uid != os.getuid():
                refused(pid, uid)
                transport.close()

    return SameUser
