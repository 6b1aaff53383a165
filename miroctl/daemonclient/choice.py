"""Which servers a daemon keeps and where the daemon of a configuration lives: MIROCTL_DAEMON, the profile's
`daemon` and `daemon_idle`, the same for a command and for a script's ToolManager."""

from __future__ import annotations

import os
from collections.abc import Mapping

from miroctl.base.errors import UsageError
from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config
from miroctl.daemonclient.keys import config_key
from miroctl.daemonclient.places import Place, runtime_dir
from miroctl.launch.options import DAEMON_ENV, DAEMON_IDLE_ENV, seconds

# Servers a daemon can keep: a process it starts or a URL it reaches (not an in-memory server of one process).
KEPT_TRANSPORTS = ("stdio", "http", "sse", "streamable_http")
LOST = "the daemon that kept these servers had died: their state (pages, files, lists) was lost"


def setting(environ: Mapping[str, str]) -> str:
    """$MIROCTL_DAEMON: always, never, or "" (the profile's `daemon` decides)."""
    return environ.get(DAEMON_ENV, "").strip().lower()


def keeps_every(loaded: Config, environ: Mapping[str, str]) -> bool:
    """Whether the daemon keeps every server (MIROCTL_DAEMON=always or `daemon: auto`), not only persistent ones."""
    return setting(environ) == "always" or loaded.profile.daemon == "auto"


def kept(spec: ServerSpec, loaded: Config, environ: Mapping[str, str]) -> bool:
    """Whether a call of this server goes to the daemon, by the rule the CLI follows: a `persistent: true`
    server (every server with `daemon: auto` or MIROCTL_DAEMON=always); none with MIROCTL_DAEMON=never or
    `daemon: never`."""
    if setting(environ) == "never" or spec.transport not in KEPT_TRANSPORTS:
        return False
    if keeps_every(loaded, environ):
        return True
    return loaded.profile.daemon != "never" and spec.persistent


def place_for(loaded: Config, config_name: str | None, environ: Mapping[str, str], cwd: str | None = None) -> Place:
    """Where the daemon of this configuration in this directory lives (its directory made private)."""
    return Place(runtime_dir(dict(environ)), config_key(loaded, cwd or os.getcwd(), environ)).checked()


def idle_seconds(loaded: Config, environ: Mapping[str, str]) -> float:
    """$MIROCTL_DAEMON_IDLE, else the profile's `daemon_idle` (default 600)."""
    given = environ.get(DAEMON_IDLE_ENV, "").strip()
    if not given:
        return loaded.profile.daemon_idle
    try:
        return seconds(given)
    except ValueError as exc:
        raise UsageError(f"{DAEMON_IDLE_ENV}: {exc}", hint="a number of seconds, e.g. 600") from None
