"""Hosts' resource subscriptions (resources/subscribe), passed on to the server behind each resource, and that
server's update notifications relayed back to every host that subscribed, under the URI it subscribed by.

Upstream sessions are shared, so the gateway subscribes upstream once per resource (for its first host) and
unsubscribes when its last host does. A server on the handshake protocol (2025-11-25 and before, or
`protocol: legacy`) takes resources/subscribe; 2026-07-28 removed it, so such a server's resource is
followed on a subscriptions/listen stream instead, one per resource, kept open while a host is subscribed.
"""

from __future__ import annotations

import warnings
import weakref
from contextlib import suppress
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import Client
    from mcp_types import EmptyResult

    from miroctl.gateway.sdk_private import Host

METHOD_NOT_FOUND = -32601
LISTEN_TIMEOUT = 30.0  # seconds a server gets to acknowledge a subscriptions/listen stream


class NotFollowed(Exception):
    """A server's resource cannot be followed (one line saying why)."""


class Subscriptions:
    """(server, upstream URI) -> the hosts subscribed to it, each with the URI it subscribed by."""

    def __init__(self) -> None:
        self.hosts: dict[tuple[str, str], weakref.WeakKeyDictionary[Host, str]] = {}
        self.streams: dict[tuple[str, str], anyio.CancelScope] = {}  # resources followed on a listen stream
        self.group: TaskGroup | None = None  # the task group the listen streams run in, while the gateway serves

    async def follow(self, server: str, upstream: str, client: Client) -> None:
        """Follow a resource of a 2026-07-28 server on a listen stream of its own; NotFollowed when it cannot be."""
        if (server, upstream) in self.streams:  # still followed: its hosts went away without unsubscribing
            return
        if self.group is None:
            raise NotFollowed("the gateway is not serving")
        ready, failures = anyio.Event(), list[str]()
        self.group.start_soon(self._listen, server, upstream, client, ready, failures)
        with anyio.move_on_after(LISTEN_TIMEOUT):
            await ready.wait()
        if failures or not ready.is_set():
            self.unfollow(server, upstream)
            raise NotFollowed(failures[0] if failures else f"{server} did not acknowledge the subscription")

    def unfollow(self, server: str, upstream: str) -> None:
        """Close the listen stream of a resource no host follows any more."""
        scope = self.streams.pop((server, upstream), None)
        if scope is not None:
            scope.cancel()

    async def _listen(
        self, server: str, upstream: str, client: Client, ready: anyio.Event, failures: list[str]
    ) -> None:
        key = (server, upstream)
        with anyio.CancelScope() as scope:
            self.streams[key] = scope
            try:
                async with client.listen(resource_subscriptions=[upstream]) as stream:
                    if upstream not in (stream.honored.resource_subscriptions or ()):
                        failures.append(f"{server} does not follow {upstream!r}")
                        return
                    ready.set()
                    async for _ in stream:  # the session hands each update to the relay (updated) as well
                        pass
            except Exception as exc:  # noqa: BLE001 - told to the host that subscribed, or a stream that ended
                if not ready.is_set():
                    failures.append(f"{server} cannot be subscribed to {upstream!r}: {exc}")
            finally:
                ready.set()
                if self.streams.get(key) is scope:
                    del self.streams[key]

    def add(self, server: str, upstream: str, host: Host, uri: str) -> bool:
        """Remember a host's subscription; True when it is the resource's first (subscribe upstream then)."""
        subscribed = self.hosts.setdefault((server, upstream), weakref.WeakKeyDictionary())
        first = not subscribed
        subscribed[host] = uri
        return first

    def remove(self, server: str, upstream: str, host: Host) -> bool:
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
        """Tell each host subscribed to a server's resource that it changed; a host that went away is skipped,
        and a resource whose hosts all went away without unsubscribing is no longer followed."""
        hosts = list(self.hosts.get((server, upstream), {}).items())
        if not hosts:
            self.hosts.pop((server, upstream), None)
            self.unfollow(server, upstream)
        for host, uri in hosts:
            with suppress(Exception):  # a host that went away misses the news
                await host.send_resource_updated(uri)


async def subscribe(client: Client, uri: str) -> EmptyResult:
    """resources/subscribe on an upstream session (deprecated as of 2026-07-28: older servers still take it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return await client.subscribe_resource(uri)


async def unsubscribe(client: Client, uri: str) -> EmptyResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return await client.unsubscribe_resource(uri)
