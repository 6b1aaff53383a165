"""`miroctl install`: the entry that starts `miroctl serve`, put into one MCP client's own config file.

The file is the one `config sources` reads for that client and scope (clients.locations), written in the
client's documented shape: `mcpServers` (Claude Desktop, Claude Code, Cursor, Gemini CLI, Windsurf), VS
Code's `servers` with a `type`, Codex's `[mcp_servers.NAME]` table (its comments and layout kept). Every
other key of the file stays as it was; the file as it stood is kept beside it as FILE.bak; the new text is
written to a temporary file in the same folder and renamed onto the old one, and a symlink is never
written through.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from miroctl.base.errors import ConfigError, NotFound, UsageError
from miroctl.config import codex, ecosystem
from miroctl.config.clients import CLIENTS, Location, locations, shown

TYPED = ("claude-code", "vscode")  # clients whose documented stdio entries carry "type": "stdio"


@dataclass(frozen=True)
class Change:
    """What installing (or removing) one entry does to one client file."""

    location: Location
    name: str
    action: str  # added | replaced | unchanged | removed
    entry: dict[str, Any]
    text: str | None  # the file's new text; None when nothing changes
    original: bytes | None  # the file before (None when there was none): the backup

    def shown_path(self, home: Path, project: Path) -> str:
        return shown(self.location.path, home, project)


def scopes(client: str, home: Path, project: Path) -> list[str]:
    """The scopes a client has a file for (user first)."""
    return [loc.scope for loc in locations(home, project) if loc.client == client]


def target(client: str, scope: str, home: Path, project: Path) -> Location:
    """The file of a client's scope; UsageError for an unknown client or a scope the client does not have."""
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}", hint=f"one of {', '.join(CLIENTS)}")
    for location in locations(home, project):
        if location.client == client and location.scope == scope:
            return location
    have = ", ".join(scopes(client, home, project))
    raise UsageError(f"{client} has no {scope} scope", hint=f"--scope {have.replace(', ', ' or ')}")


def entry(client: str, command: Sequence[str]) -> dict[str, Any]:
    """The client's entry for a stdio server started by `command` (the program, then its arguments)."""
    body: dict[str, Any] = {"command": command[0], "args": list(command[1:])}
    return {"type": "stdio", **body} if client in TYPED else body


def snippet(location: Location, name: str, body: Mapping[str, Any]) -> str:
    """What a user would paste into the file by hand: the entry under its keys, in the file's format."""
    if location.format == "codex-toml":
        import tomlkit

        document = tomlkit.document()
        servers = tomlkit.table(is_super_table=True)
        servers[name] = _toml_table(body)
        document["mcp_servers"] = servers
        return tomlkit.dumps(document)
    nested: Any = {name: dict(body)}
    for key in reversed(_keys(location)):
        nested = {key: nested}
    return json.dumps(nested, indent=2, ensure_ascii=False) + "\n"


def plan(
    location: Location, name: str, body: Mapping[str, Any], *, remove: bool = False, force: bool = False
) -> Change:
    """The change to the client's file; nothing is written. NotFound when removing an entry that is not
    there; UsageError when another server of that name is there (unless forced); ConfigError when the file
    cannot be read as its client's format."""
    original = _read(location.path)
    if location.format == "codex-toml":
        action, text = _plan_toml(location.path, original, name, body, remove=remove, force=force)
    else:
        action, text = _plan_json(location, original, name, body, remove=remove, force=force)
    return Change(location, name, action, dict(body), text, original)


def write(change: Change) -> Path | None:
    """Apply a change: the old file to FILE.bak, then the new text renamed onto the file. The backup's path,
    or None when there was no file before (or nothing changed)."""
    path = change.location.path
    if change.text is None:
        return None
    if path.is_symlink():
        raise ConfigError(
            f"{path} is a symbolic link: miroctl does not write through it",
            hint="add the entry by hand where the link points (--print shows it)",
        )
    mode = 0o644 if change.location.scope == "project" else 0o600  # a project's file is shared; HOME's is not
    backup = None
    if change.original is not None:
        mode = path.stat().st_mode & 0o777
        backup = path.with_name(path.name + ".bak")
        _replace(backup, change.original, mode)
    _replace(path, change.text.encode("utf-8"), mode)
    return backup


def _read(path: Path) -> bytes | None:
    if not os.path.lexists(path):
        return None
    return ecosystem.read_capped(path)


def _keys(location: Location) -> tuple[str, ...]:
    return location.key or (("servers",) if location.format == "vscode" else ("mcpServers",))


def _decided(current: Any, body: Mapping[str, Any], name: str, path: Path, *, remove: bool, force: bool) -> str:
    """added, replaced, unchanged or removed; the errors of an entry that is missing or someone else's."""
    if remove:
        if current is None:
            raise NotFound(f"no server named {name} in {path}", hint="`miroctl config sources` shows what is there")
        return "removed"
    if current is None:
        return "added"
    if current == body:
        return "unchanged"
    if not force:
        raise UsageError(
            f"{path} already has a server named {name} that is set up differently",
            hint="add --force to replace it, or --name to add this one under another name",
        )
    return "replaced"


def _plan_json(
    location: Location, original: bytes | None, name: str, body: Mapping[str, Any], *, remove: bool, force: bool
) -> tuple[str, str | None]:
    path = location.path
    data: Any = {} if original is None else ecosystem.read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    servers = data
    for key in _keys(location):
        inner = servers.get(key)
        if inner is None:
            inner = servers[key] = {}
        if not isinstance(inner, dict):
            raise ConfigError(f"{path}: {key} must be an object, got {type(inner).__name__}")
        servers = inner
    action = _decided(servers.get(name), body, name, path, remove=remove, force=force)
    if action == "unchanged":
        return action, None
    if remove:
        del servers[name]
    else:
        servers[name] = dict(body)
    return action, json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _plan_toml(
    path: Path, original: bytes | None, name: str, body: Mapping[str, Any], *, remove: bool, force: bool
) -> tuple[str, str | None]:
    import tomlkit
    from tomlkit.exceptions import ParseError

    if original is None:
        document = tomlkit.document()
    else:
        codex.read_toml(path)  # the reader's own one-line errors for a file that is not TOML
        try:
            document = tomlkit.parse(original.decode("utf-8"))
        except ParseError as exc:
            raise ConfigError(f"bad TOML in {path}: {exc}") from None
    servers = document.get("mcp_servers")
    if servers is None:
        servers = document["mcp_servers"] = tomlkit.table(is_super_table=True)
    if not isinstance(servers, MutableMapping):
        raise ConfigError(f"{path}: mcp_servers must be a table of servers")
    current = servers.get(name)
    unwrapped = getattr(current, "unwrap", lambda: current)()  # tomlkit's items, as plain data
    action = _decided(unwrapped, body, name, path, remove=remove, force=force)
    if action == "unchanged":
        return action, None
    if remove:
        del servers[name]
    else:
        servers[name] = _toml_table(body)
    return action, tomlkit.dumps(document)


def _toml_table(body: Mapping[str, Any]) -> Any:
    import tomlkit

    table = tomlkit.table()
    for key, value in body.items():
        table[key] = value
    return table


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to a new file beside `path` and rename it onto `path` (a symlink there is replaced)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
