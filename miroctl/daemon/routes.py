"""The route a command leaves for the next ones (read by miroctl/launch/shortcut.py): which daemon keeps which
servers for this --config in this directory, and what the configuration was read from."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from miroctl.base import escaping
from miroctl.base.rundir import environment_digest
from miroctl.config.loader import Config
from miroctl.daemonclient.places import Place
from miroctl.launch.shortcut import file_state, route_path


def write_route(place: Place, loaded: Config, config_name: str | None, every: bool, environ: Mapping[str, str]) -> None:
    """Leave the route; none where a ./.env is read into the environment (its values are not in the digest)."""
    cwd = os.getcwd()
    watched = _watched(loaded, cwd)
    if watched is None or Path(cwd, ".env").exists():
        return
    kept = [spec for spec in loaded.servers if every or spec.persistent]
    route = {
        "socket": str(place.socket),
        "in_use": str(place.in_use),
        "servers": sorted({alias for spec in kept for alias in _aliases(spec.name)}),
        "names": sorted({alias for spec in loaded.servers for alias in _aliases(spec.name)}),
        "every": every,
        "files": {path: file_state(path) for path in watched},
        "environment": environment_digest(environ),
    }
    target = route_path(place.directory, config_name, cwd)
    # A temporary file of this writer's own (0600): two commands started at once each write theirs and the last
    # replace wins; a route that cannot be written is only a shortcut the next command does without.
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(escaping.dumps(route))
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _aliases(name: str) -> tuple[str, ...]:
    """The names a command may give a server (`reading` for `tool-reading`, as Config.get finds it)."""
    return (name, name.removeprefix("tool-")) if name.startswith("tool-") else (name,)


def _watched(loaded: Config, cwd: str) -> set[str] | None:
    """The files the configuration was read from and the directories holding them (a file added or removed),
    and the files a configuration is looked for in here when none is named; None when one is not a file."""
    sources = [Path(cwd, source).resolve() for source in (loaded.source, *(s.source or "" for s in loaded.servers))]
    if not all(path.is_file() for path in sources):
        return None
    paths = {str(path) for path in sources}
    found = {os.path.join(cwd, "miroctl.yaml"), os.path.join(cwd, "config", "miroctl.yaml"), os.path.join(cwd, ".env")}
    return paths | {os.path.dirname(p) for p in paths} | found
