"""What shell completion knows of each server's tools: names and parameter names, cached on disk.

`list` and `check` store what each healthy server listed; completion reads it and never starts a server
(a Tab press must answer at once, and starting a server can take seconds, need the network or have side
effects). Each server's entry is one file named by a hash of its spec, so a changed command line, URL or
environment is a miss rather than a stale answer. The files hold no secrets (tool and parameter names
only, and the hash, which leaves out secret values), are written atomically with mode 0600, and anything
unreadable or of the wrong shape is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from miroctl.base.cachedir import cache_dir
from miroctl.base.models import ServerSpec, ToolInfo

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


def completable(name: Any) -> bool:
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
    directory = directory or cache_dir()
    key = spec_key(spec)
    body = json.dumps({"version": VERSION, "server": spec.name, "key": key, "tools": surface(tools)})
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tools-", suffix=".tmp")  # mode 0600
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(body)
            os.replace(temporary, directory / f"{key}.json")
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return


def lookup(spec: ServerSpec, directory: Path | None = None) -> Surface | None:
    """A server's cached tools, or None when there are none for this exact spec (or they are unreadable)."""
    key = spec_key(spec)
    try:
        document = json.loads(((directory or cache_dir()) / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or document.get("version") != VERSION or document.get("key") != key:
        return None
    tools = document.get("tools")
    if not isinstance(tools, dict):
        return None
    return {
        name: [p for p in params if completable(p)]
        for name, params in tools.items()
        if completable(name) and isinstance(params, list)
    }
