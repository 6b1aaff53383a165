"""What shell completion knows of each server's tools: names and parameter names, cached on disk.

`list` and `check` store what each healthy server listed; completion reads it and never starts a server
(a Tab press must answer at once, and starting a server can take seconds, need the network or have side
effects). Each server's entry is one file named by a hash of its spec, so a changed command line, URL or
environment is a miss rather than a stale answer. A gateway's servers (`list --via URL`, `call --via URL`)
share one file named by a hash of the gateway's address. The files hold no secrets (tool and parameter
names only, and the hash, which leaves out secret values and a URL's user info and query), are written
atomically with mode 0600, and anything unreadable or of the wrong shape is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from miroctl.base.cachedir import cache_dir
from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.remote import base_url

VERSION = 1
MAX_TOOLS = 2000  # a server listing more is cut: completion offers names, not an inventory
MAX_PARAMETERS = 200
MAX_NAME = 200

Surface = dict[str, list[str]]  # tool name -> its parameter names


def spec_key(spec: ServerSpec) -> str:
    """A hash of what decides a server's tools: name, transport, command, args, URL, cwd and environment,
    with every secret value of the spec left out (so the hash cannot be used to guess one), headers by name."""
    fields = {
        "name": spec.name,
        "transport": spec.transport,
        "command": spec.command,
        "args": list(spec.args),
        "url": spec.url,
        "cwd": spec.cwd,
        "env": dict(spec.env),
        "headers": sorted(spec.headers),
    }
    text = json.dumps(fields, sort_keys=True, default=str)
    for secret in sorted(spec.secrets, key=len, reverse=True):
        text = text.replace(json.dumps(secret)[1:-1], "<secret>")
    return hashlib.sha256(text.encode()).hexdigest()


def completable(name: object) -> bool:
    """A name a shell can be offered: printable text without spaces (a server's names are untrusted)."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= MAX_NAME
        and name.isprintable()
        and not any(c.isspace() for c in name)
    )


def surface(tools: Iterable[ToolInfo]) -> Surface:
    """Tool name -> parameter names (the input schema's properties), completable names only."""
    found: Surface = {}
    for tool in tools:
        if len(found) >= MAX_TOOLS:
            break
        if completable(tool.name):
            properties = tool.input_schema.get("properties")
            names = list(properties)[:MAX_PARAMETERS] if isinstance(properties, Mapping) else []
            found[tool.name] = [name for name in names if completable(name)]
    return found


def store(spec: ServerSpec, tools: Iterable[ToolInfo], directory: Path | None = None) -> None:
    """Remember a server's tools; a cache that cannot be written is silently left as it is."""
    key = spec_key(spec)
    _write(directory, key, {"version": VERSION, "server": spec.name, "key": key, "tools": surface(tools)})


def lookup(spec: ServerSpec, directory: Path | None = None) -> Surface | None:
    """A server's cached tools, or None when there are none for this exact spec (or they are unreadable)."""
    key = spec_key(spec)
    tools = (_read(directory, key) or {}).get("tools")
    return _surface(tools) if isinstance(tools, dict) else None


# ---------------------------------------------------------------------------------------------- gateways


def gateway_key(url: str) -> str:
    """A hash of a gateway's root URL, without user info, query and fragment (they can hold credentials)."""
    parts = urlsplit(base_url(url))
    host = parts.netloc.rpartition("@")[2].lower()
    return hashlib.sha256(urlunsplit((parts.scheme.lower(), host, parts.path, "", "")).encode()).hexdigest()


def store_gateway(
    url: str, listed: Mapping[str, Iterable[ToolInfo]], *, every: bool, directory: Path | None = None
) -> None:
    """Remember what a gateway's servers listed; `every`: these are all its servers (others are forgotten)."""
    known = {} if every else lookup_gateway(url, directory) or {}
    known.update({server: surface(tools) for server, tools in listed.items() if completable(server)})
    _store_servers(url, known, directory)


def note_gateway_tool(url: str, server: str, tool: str, directory: Path | None = None) -> None:
    """Remember that a gateway's server has a tool (a call reached it), unless that is known already."""
    known = lookup_gateway(url, directory) or {}
    if not (completable(server) and completable(tool)) or tool in known.get(server, {}):
        return
    known.setdefault(server, {})[tool] = []
    _store_servers(url, known, directory)


def lookup_gateway(url: str, directory: Path | None = None) -> dict[str, Surface] | None:
    """Each server of a gateway with its cached tools, or None when the gateway was never listed."""
    document = _read(directory, gateway_key(url))
    servers = document.get("servers") if document is not None else None
    if not isinstance(servers, dict):
        return None
    return {name: _surface(tools) for name, tools in list(servers.items())[:MAX_TOOLS] if completable(name)}


def _store_servers(url: str, servers: Mapping[str, Surface], directory: Path | None) -> None:
    key = gateway_key(url)
    _write(directory, key, {"version": VERSION, "key": key, "servers": dict(servers)})


# ---------------------------------------------------------------------------------------------- files


def _write(directory: Path | None, key: str, document: Mapping[str, object]) -> None:
    """Write one entry atomically, private to the user; a cache that cannot be written is left as it is."""
    directory = directory or cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tools-", suffix=".tmp")  # mode 0600
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(json.dumps(document))
            os.replace(temporary, directory / f"{key}.json")
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return


def _read(directory: Path | None, key: str) -> dict[str, object] | None:
    """One entry, or None when it is missing, unreadable, of another version or of another key."""
    try:
        document = json.loads(((directory or cache_dir()) / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or document.get("version") != VERSION or document.get("key") != key:
        return None
    return document


def _surface(tools: object) -> Surface:
    """A stored surface, completable names only (the file may have been edited)."""
    if not isinstance(tools, dict):
        return {}
    return {
        name: [p for p in params if completable(p)]
        for name, params in tools.items()
        if completable(name) and isinstance(params, list)
    }
