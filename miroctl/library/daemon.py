"""A ToolManager's calls through the background daemon that `miroctl call` uses for the same configuration
(docs/daemon.md), so that a script and a shell share one browser, one sandbox, one planner's list.

The daemon is found, or started under its lock, on each request, and held in use only until its answer: it
still leaves when idle between a script's calls, and the next call starts a new one. The requests are the
gateway's JSON documents, so a call's envelope, a listing's entries and the seeds' shapes made from them are
those of an in-process call. The socket's blocking client runs in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import anyio

from miroctl.base.errors import MiroctlError, UsageError, kind_name
from miroctl.base.models import LISTED_TRANSPORTS, CallOutcome, Failure, ListedTransport, ServerSpec, ServerTools
from miroctl.config.loader import Config
from miroctl.daemonclient.choice import KEPT_TRANSPORTS, LOST, idle_seconds, kept, place_for, setting
from miroctl.daemonclient.keys import origin_key
from miroctl.daemonclient.places import Place
from miroctl.daemonclient.starter import find_or_start, in_use
from miroctl.remote import GatewayClient, list_from_dict, outcome_from_dict, readable

DaemonChoice = bool | Literal["auto"]
CHOICES = (False, True, "auto")
LISTING_WAIT = 120.0  # seconds a listing through the daemon may take (the servers' start included)


def checked_choice(daemon: object, config: object, changed: Mapping[str, object]) -> DaemonChoice:
    """`daemon` as given, or UsageError: it needs a configuration the daemon can read again (a profile, not the
    seeds' list), left as read (the daemon's servers run under the profile's policy, with no callback here)."""
    if daemon is False:
        return False
    if daemon is not True and daemon != "auto":
        raise UsageError(f"daemon must be True, False or 'auto', got {daemon!r}")
    if not isinstance(config, Config):
        raise UsageError(
            "a daemon reads its servers from a config file, not from the seeds' list",
            hint="use ToolManager.from_config(...) with daemon=",
        )
    given = sorted(name for name, value in changed.items() if value)
    if given:
        raise UsageError(
            f"{', '.join(given)} cannot be combined with daemon=: the daemon runs the profile's servers as the "
            "config file says",
            hint="set them in the profile, or leave daemon= out",
        )
    return "auto" if daemon == "auto" else True


class DaemonLink:
    """The daemon of one configuration in one directory, as `miroctl call` finds it; which servers go there."""

    def __init__(self, config: Config, config_name: str | None, choice: DaemonChoice) -> None:
        self.config, self.name, self.choice = config, config_name, choice
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.place: Place | None = None
        self.lost = False  # a dead daemon was replaced: the next call's result says so

    def keeps(self, spec: ServerSpec | None) -> bool:
        """Whether this server's calls go to the daemon (True: every server it can keep; 'auto': the CLI's rule)."""
        if self.choice is False or setting(self.environ) == "never":
            return False
        if spec is None:  # an unknown name: with every server there, the daemon corrects it as here
            return self.choice is True
        if self.choice is True:
            return spec.transport in KEPT_TRANSPORTS
        return kept(spec, self.config, self.environ)

    async def call(
        self, server: str | None, tool: str, arguments: Mapping[str, object], **options: object
    ) -> CallOutcome:
        """One call through the daemon; a failure to reach it is the call's error, as every failure is."""
        body: dict[str, object] = {"server": server, "tool": tool, "arguments": dict(arguments)}
        body.update({key: value for key, value in options.items() if value is not None})
        timeout = options.get("timeout")
        try:
            document = await self._request(lambda client: client.call(body), timeout)
            outcome = readable(self._url, lambda: outcome_from_dict(document))
        except MiroctlError as exc:
            outcome = CallOutcome(server, tool, error=exc.message, error_kind=kind_name(exc.kind), hint=exc.hint)
        except (TypeError, ValueError) as exc:  # arguments that are not JSON
            outcome = CallOutcome(server, tool, error=f"the arguments cannot be sent: {exc}", error_kind="arguments")
        if self.lost:
            self.lost = False
            outcome.notes.append(LOST)
        return outcome

    async def list_tools(self, specs: Sequence[ServerSpec]) -> list[ServerTools]:
        """The servers' tools as the daemon lists them; a daemon that cannot be reached is each one's failure."""
        names = [spec.name for spec in specs]
        try:
            document = await self._request(lambda client: client.list_tools(names), LISTING_WAIT)
            return readable(self._url, lambda: list_from_dict(document))
        except MiroctlError as exc:
            failure = Failure("unavailable", exc.message, hint=exc.hint)
            return [ServerTools(spec.name, _transport(spec), failure=failure) for spec in specs]

    @property
    def _url(self) -> str:
        return f"unix:{self.place.socket}" if self.place is not None else "the daemon"

    async def _request(self, send: Callable[[GatewayClient], dict[str, object]], timeout: object) -> dict[str, object]:
        """The daemon's answer; a cancelled caller closes the request, so the daemon cancels the call too."""
        if self.place is None:
            self.place = place_for(self.config, self.name, self.environ, self.cwd)
        wait = float(timeout) if isinstance(timeout, (int, float)) else None
        client = GatewayClient(self._url, timeout=wait)
        try:
            return await anyio.to_thread.run_sync(self._blocking, self.place, send, client, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            client.abort()
            raise

    def _blocking(
        self, place: Place, send: Callable[[GatewayClient], dict[str, object]], client: GatewayClient
    ) -> dict[str, object]:
        """Find or start the daemon and ask it, holding it in use from before it is found until its answer."""
        idle = idle_seconds(self.config, self.environ)
        with in_use(place):
            attached = find_or_start(place, origin_key(self.name, self.cwd), self.name, idle, self.cwd)
            self.lost = self.lost or attached.replaced_dead
            return send(client)


def _transport(spec: ServerSpec) -> ListedTransport:
    return next((known for known in LISTED_TRANSPORTS if known == spec.transport), "unknown")
