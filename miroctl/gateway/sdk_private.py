"""The one place miroctl reaches into the mcp SDK's private attributes (tests/test_private_apis.py watches it).

A request handler's session lives as long as the request; a gateway that tells hosts on protocols before
2026-07-28 about tool-list changes needs the connection behind it, which the SDK (2.3) keeps as the
private `ServerSession._connection`. If a new SDK moves it, the test fails loudly and those hosts are
simply not told meanwhile.
"""

from __future__ import annotations

from typing import Any


def request_connection(session: Any) -> Any:
    """The long-lived connection behind a request's session, or None when the SDK does not expose it."""
    return getattr(session, "_connection", None)
