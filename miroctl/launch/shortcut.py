"""A command straight to a running daemon, before the configuration is read (standard library only).

When a command went to a daemon, the CLI leaves a route next to the daemon's socket (miroctl/daemon/routes.py):
for this --config in this directory, the servers the daemon keeps, the files the configuration was read from
(with their sizes and times), and a digest of the environment. A later command of one of those servers,
with the same files and environment, goes to that daemon through the warm path without reading the
configuration again (OmegaConf, the core): that is what makes a call through a daemon cheap. Anything that
differs, or a daemon that does not answer, sends the command the long way (cli/prestart.py), which decides
again and replaces a dead daemon.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from miroctl.base.rundir import environment_digest, origin_key, runtime_dir
from miroctl.launch.options import DAEMON_ENV
from miroctl.launch.reader import Reading, read

ROUTE = ".route"


def route_path(directory: Path, config_name: str | None, cwd: str) -> Path:
    return directory / f"{origin_key(config_name, cwd)}{ROUTE}"


def file_state(path: str) -> list[int] | None:
    """What a watched file is now: [mtime in ns, size], or None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size]


def daemon_route(words: Sequence[str], environ: Mapping[str, str]) -> tuple[Reading, str] | None:
    """The command line and the daemon's unix: URL when a route says where it goes; None: the long way."""
    if environ.get(DAEMON_ENV, "").strip().lower() == "never":
        return None
    reading = read(words, "daemon")
    if reading is None:
        return None
    try:
        route = json.loads(route_path(runtime_dir(environ), reading.text("config"), os.getcwd()).read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(route, dict) and _same(route, environ) and _served(route, reading)):
        return None
    return (reading, f"unix:{route['socket']}") if _answers_held(route) else None


def _same(route: Mapping[str, Any], environ: Mapping[str, str]) -> bool:
    files = route.get("files")
    return (
        route.get("environment") == environment_digest(environ)
        and isinstance(files, dict)
        and all(file_state(path) == state for path, state in files.items())
    )


def _served(route: Mapping[str, Any], reading: Reading) -> bool:
    """Whether the command names only servers the route's daemon keeps (a bare list: only with daemon: auto)."""
    kept, known = set(route.get("servers") or ()), set(route.get("names") or ())
    words = list(reading.words)
    if reading.command == "list":
        if not words:
            return route.get("every") is True
        names = words[:1] if len(words) == 2 and words[1] not in known else words
        return all(name in kept for name in names)
    least = {"call": 2, "read": 2, "prompt": 1}.get(reading.command, 99)  # read's lone URI: the long way
    return len(words) >= least and words[0] in kept


def _answers_held(route: Mapping[str, Any]) -> bool:
    """Hold the daemon in use for the rest of this process (it then cannot leave for idleness before it
    answers; miroctl/daemon/starter.py), and whether it listens."""
    path, in_use = str(route.get("socket") or ""), str(route.get("in_use") or "")
    if not path or not in_use:
        return False
    import fcntl  # noqa: PLC0415 - only a command that goes to a daemon

    try:
        fcntl.flock(os.open(in_use, os.O_RDWR), fcntl.LOCK_SH)  # the descriptor stays open until the exit
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5.0)
            sock.connect(path)
    except OSError:
        return False
    return True
