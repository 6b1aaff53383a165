"""Hosts' resource subscriptions (resources/subscribe), passed on to the server behind each resource, and that
server's update notifications relayed back to every host that subscribed, under the URI it subscribed by.

Upstream sessions are shared, so the gateway subscribes upstream once per resource (for its first host) and
unsubscribes when its last host does. Only servers on the handshake protocol (2025-11-25 and before, or
`protocol: legacy`) take resources/subscribe; 2026-07-28 removed it, and such a server's resources answer
a subscription with an error that says so.
"""

from __future__ import annotations

import warnings
import weakref
from contextlib import suppress
from typing import Any

METHOD_NOT_FOUND = -32601


class Subscriptions:
    """(server, upstream URI) -> the hosts subscribed to it, each with the URI it subscribed by."""

    def __init__(self) -> None:
        self.hosts: dict[tuple[str, str], weakref.WeakKeyDictionary[Any, str]] = {}

    def add(self, server: str, upstream: str, host: Any, uri: str) -> bool:
        """Remember a host's subscription; True when it is the resource's first (subscribe upstream then)."""
        subscribed = self.hosts.setdefault((server, upstream), weakref.WeakKeyDictionary())
        first = not subscribed
        subscribed[host] = uri
        return first

    def remove(self, server: str, upstream: str, host: Any) -> bool:
        """Forget a host's subscription; True when no host is left (unsubscribe upstream then)."""
        subscribed = self.hosts.get((server, upstream))
        if subscribed is None or host not in subscribed:
            return False
        del subscribed[host]
        if subscribed:
            return False
        del self.hosts[(server, upstream)]
        return True

    async def updated(self, server: str, upstream: str) -> None:
        """Tell each host subscribed to a server's resource that it changed; a host that went away is skipped."""
        for host, uri in list(self.hosts.get((server, upstream), {}).items()):
            with suppress(Exception):  # a host that went away misses the news
                await host.send_resource_updated(uri)


async def subscribe(client: Any, uri: str) -> Any:
    """resources/subscribe on an upstream session (deprecated as of 2026-07-28: older servers still take it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return await client.subscribe_resource(uri)


async def unsubscribe(client: Any, uri: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return await client.unsubscribe_resource(uri)
