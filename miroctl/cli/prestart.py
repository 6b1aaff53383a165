"""Start the stdio servers of a cold `call` or `list` before Typer and the rest of miroctl are loaded.

The cold path calls `begin` first: when the option table's early reader takes the command line (a plain
`call SERVER TOOL ...` or `list [SERVER ...]`: no gateway, no ad-hoc servers, no option that changes what a
server is started with, and every value one the command accepts), the configuration is loaded and each
named stdio server is started at once (sessions/prestart.py), so it boots on the other core while miroctl
loads. The session adopts it only if it would have started exactly that process (the command's connector,
cli/common.py's `lean_connector`); otherwise it is stopped unused when the command has run. The
configuration read and the servers started go to the command in the `Launch` object.
Anything the reader is unsure of starts nothing early: the command then runs exactly as without it.

Before that, `for_daemon` decides whether the command goes to a background daemon instead (miroctl.daemon):
a plain `call`, `list`, `read` or `prompt` of a `persistent: true` server (of any server with the profile's
`daemon: auto` or MIROCTL_DAEMON=always), unless --no-daemon or MIROCTL_DAEMON=never. Such a command starts
no server itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, load
from miroctl.core.children import child_spec
from miroctl.launch.handoff import Launch
from miroctl.launch.options import DAEMON_ENV, URL_ENV
from miroctl.launch.reader import Reading, read
from miroctl.policy.decisions import Policy
from miroctl.sessions.prestart import EarlyServers


def begin(launch: Launch, environ: Mapping[str, str] | None = None) -> int:
    """Start the servers this command line will use; how many were started (0 when unsure)."""
    environ = os.environ if environ is None else environ
    reading = read(launch.words, "early")
    if reading is None or environ.get(URL_ENV) or (reading.command == "call" and len(reading.words) < 2):
        return 0
    try:
        loaded = _config(launch, reading)
        policy = Policy.from_profile(loaded.profile).with_overrides(mode=reading.text("mode"))
        specs = _specs(reading, loaded, policy)
    except Exception:  # noqa: BLE001 - whatever is wrong, the command itself will say it
        return 0
    launch.early, launch.config, launch.config_name = reading, loaded, reading.text("config")
    servers = launch.early_servers = EarlyServers()
    launch.at_exit(servers.discard)
    for spec in specs:
        if spec.transport == "stdio" and not spec.config_error(os.environ):
            with launch.holding_signals():  # a signal now waits until the server is known, to be stopped
                launch.started += servers.start(child_spec(spec, loaded, policy))
    return launch.started


def _specs(reading: Reading, loaded: Config, policy: Policy) -> list[ServerSpec]:
    words = list(reading.words)
    if reading.command == "call":
        spec = loaded.get(words[0])
        return [spec] if spec is not None and _may_start(policy, spec, words[1], words[2:]) else []
    one_tool = len(words) == 2 and loaded.get(words[1]) is None  # list SERVER TOOL
    return loaded.select(words[:1] if one_tool else words)


def _may_start(policy: Policy, spec: ServerSpec, tool: str, pairs: list[str]) -> bool:
    """Whether the call gets as far as starting its server: the checks the core makes before it does (the URL
    rules on the arguments as given, the server's and tool's deny rules) pass."""
    given = {pair.partition("=")[0].removesuffix(":"): pair.partition("=")[2] for pair in pairs}
    return policy.check_urls(given) is None and policy.decide(spec, tool).state != "deny"


def for_daemon(launch: Launch, environ: Mapping[str, str] | None = None) -> tuple[Reading, Config] | None:
    """The command line and its configuration when the command goes to a daemon; None: it runs in-process."""
    environ = os.environ if environ is None else environ
    setting = environ.get(DAEMON_ENV, "").strip().lower()
    reading = read(launch.words, "daemon")
    if setting == "never" or reading is None or environ.get(URL_ENV):
        return None
    try:
        loaded = _config(launch, reading)
        wanted = _daemon_servers(reading, loaded)
    except Exception:  # noqa: BLE001 - whatever is wrong, the command itself will say it
        return None
    choice = "auto" if setting == "always" else loaded.profile.daemon
    if reading.command == "list" and not reading.words and choice != "auto":
        return None  # listing every server needs no state kept
    if choice == "never" or not wanted or not (choice == "auto" or any(spec.persistent for spec in wanted)):
        return None
    if any(spec.transport not in ("stdio", "http", "sse", "streamable_http") for spec in wanted):
        return None  # a server of this process alone (tests' in-memory ones)
    return reading, loaded


def _config(launch: Launch, reading: Reading) -> Config:
    """The configuration the command line names, read once for the daemon's decision and the early start."""
    name = reading.text("config")
    if isinstance(launch.config, Config) and launch.config_name == name:
        return launch.config
    loaded = load(name)
    launch.config, launch.config_name = loaded, name
    return loaded


def _daemon_servers(reading: Reading, loaded: Config) -> list[ServerSpec]:
    """The servers the command needs (a `list` of every server only goes to a daemon with `daemon: auto`)."""
    words = list(reading.words)
    if reading.command == "list":
        return loaded.select(words[:1] if len(words) == 2 and loaded.get(words[1]) is None else words)
    if reading.command == "read" and len(words) == 1:
        return loaded.select() if len(loaded.select()) == 1 else []
    spec = loaded.get(words[0]) if len(words) >= (2 if reading.command == "call" else 1) else None
    if spec is not None and reading.command == "call":  # a call the policy stops starts nothing anywhere
        spec = spec if _may_start(Policy.from_profile(loaded.profile), spec, words[1], words[2:]) else None
    return [spec] if spec is not None else []
