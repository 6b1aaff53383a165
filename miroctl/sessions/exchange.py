"""One request on a session under a timeout, and every page of a paginated list: the two ways miroctl asks.

`within` never raises for the server's sake: its answer is the value, the exception the request ended
with (innermost, out of any exception group), or `TimedOut`; the caller sorts those into its own envelope.
`every_page` follows `nextCursor` to the end, refusing a cursor the server already gave (a loop) and a
listing longer than MAX_PAGES, each as `PagingError` naming what happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio

from miroctl.sessions.session import leaf
from miroctl.sessions.transports import Wire

T = TypeVar("T")
Item = TypeVar("Item")
MAX_PAGES = 1000  # far beyond any real server's listing; reaching it is reported, never cut silently


@dataclass(frozen=True)
class TimedOut:
    """No answer within `seconds`."""

    seconds: float


async def within(wire: Wire, timeout: float, send: Callable[[], Awaitable[T]]) -> T | BaseException | TimedOut:
    """`send()` under `timeout`: its value, the exception it ended with, or TimedOut."""
    with anyio.move_on_after(timeout):
        try:
            return await send()
        except Exception as exc:  # noqa: BLE001 - the caller classifies what went wrong
            return leaf(exc)
    wire.hurry = True  # a server that stopped answering is not waited for at shutdown
    return TimedOut(timeout)


class Paged(Protocol):
    """A page of a paginated MCP list result (its items are read by the caller)."""

    @property
    def next_cursor(self) -> str | None: ...


class PagingError(Exception):
    """The server's pagination cannot be followed to its end."""


P = TypeVar("P", bound=Paged)


async def every_page(
    fetch: Callable[[str | None], Awaitable[P]], items: Callable[[P], Sequence[Item]], method: str
) -> tuple[list[Item], int]:
    """Every item of a paginated list and the number of pages read."""
    found: list[Item] = []
    seen: set[str] = set()
    cursor: str | None = None
    for pages in range(1, MAX_PAGES + 1):
        page = await fetch(cursor)
        found.extend(items(page))
        cursor = page.next_cursor
        if not cursor:
            return found, pages
        if cursor in seen:
            raise PagingError(f"{method} gave the cursor {cursor[:40]!r} twice after {pages} pages: a loop")
        seen.add(cursor)
    raise PagingError(f"{method} still had more after {MAX_PAGES} pages")
