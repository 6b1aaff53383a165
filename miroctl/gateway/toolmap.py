"""The names a gateway exposes: SERVER<separator>TOOL, and back; collisions are reported, never shadowed.

Exposed names are ones hosts accept: a tool called `read file` or `fs/read` is exposed as
`server__read_file` or `server__fs_read` (and called upstream by its own name).

Server names drop a leading `tool-` (the seeds' file naming) when no other server has the short
name, so `tool-reading.read_file` is exposed as `reading__read_file`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from miroctl.base.errors import UsageError
from miroctl.base.models import ServerTools, ToolInfo

DEFAULT_SEPARATOR = "__"
_NAME_CHARACTERS = re.compile(r"[A-Za-z0-9_.-]+")  # what MCP allows in a tool name
_NOT_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]")
MAX_NAME = 128


@dataclass(frozen=True)
class Collision:
    """One exposed name that several tools would take: none of them is exposed."""

    name: str
    owners: tuple[str, ...]  # "server.tool" of each claimant
    plain: bool = False  # named without a server prefix (--plain-names)

    @property
    def message(self) -> str:
        cure = "serve only one of those servers" if self.plain else "choose another --separator"
        return f"tool name {self.name!r} would mean {' and '.join(self.owners)}; none of them is exposed ({cure})"

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "owners": list(self.owners), "message": self.message}


@dataclass(frozen=True)
class ToolMap:
    """Exposed name -> the upstream tool, and the names that collided."""

    tools: Mapping[str, ToolInfo] = field(default_factory=dict)
    collisions: tuple[Collision, ...] = ()

    def get(self, name: str) -> ToolInfo | None:
        return self.tools.get(name)


def prefixes(server_names: Iterable[str]) -> dict[str, str]:
    """The prefix for each server: its name without `tool-`, unless another server has that name."""
    names = list(server_names)
    taken = set(names)
    result = {}
    for name in names:
        short = name.removeprefix("tool-")
        result[name] = short if short == name or short not in taken else name
    return result


def build(
    entries: Sequence[ServerTools],
    separator: str = DEFAULT_SEPARATOR,
    server_names: Iterable[str] | None = None,
    plain: bool = False,
) -> ToolMap:
    """Name every tool of the healthy entries; a name claimed twice is left out and reported.
    With `plain`, tools keep their own names (no server prefix)."""
    named = name_items(
        [(entry.server, tool.name) for entry in entries for tool in entry.tools], separator, server_names, plain
    )
    by_key = {(tool.server, tool.name): tool for entry in entries for tool in entry.tools}
    tools = {name: by_key[key] for name, key in named.items.items()}
    return ToolMap(tools, named.collisions)


@dataclass(frozen=True)
class Named:
    """Exposed name -> (server, upstream name), for tools and prompts alike, and the names that collided."""

    items: Mapping[str, tuple[str, str]]
    collisions: tuple[Collision, ...] = ()


def name_items(
    pairs: Sequence[tuple[str, str]],
    separator: str = DEFAULT_SEPARATOR,
    server_names: Iterable[str] | None = None,
    plain: bool = False,
) -> Named:
    """Exposed names for (server, name) pairs: SERVER<separator>NAME, or NAME alone with `plain`."""
    prefix = prefixes(server_names if server_names is not None else dict.fromkeys(server for server, _ in pairs))
    claims: dict[str, list[tuple[str, str]]] = {}
    for server, name in pairs:
        exposed = exposed_name(name if plain else f"{prefix.get(server, server)}{separator}{name}")
        claims.setdefault(exposed, []).append((server, name))
    items = {name: found[0] for name, found in claims.items() if len(found) == 1}
    collisions = tuple(
        Collision(name, tuple(f"{server}.{item}" for server, item in found), plain)
        for name, found in claims.items()
        if len(found) > 1
    )
    return Named(items, collisions)


def check_plain(collisions: Sequence[Collision], what: str = "tool") -> None:
    """--plain-names: two servers offering one name is a start-up error naming both."""
    if collisions:
        first = collisions[0]
        servers = " and ".join(owner.rpartition(".")[0] or owner for owner in first.owners)
        more = f" (and {len(collisions) - 1} more)" if len(collisions) > 1 else ""
        raise UsageError(
            f"--plain-names: {what} {first.name!r} is offered by both {servers}{more}",
            hint="drop --plain-names (names become SERVER__TOOL), or serve only one of them",
        )


def exposed_name(name: str) -> str:
    """A name hosts accept (MCP: 1 to 128 of A-Z a-z 0-9 _ - .): other characters become `_`, and a name
    too long keeps its start and a short hash of the whole. Two tools that come to one name collide."""
    safe = _NOT_NAME_CHARACTERS.sub("_", name) or "_"
    if len(safe) <= MAX_NAME:
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{safe[: MAX_NAME - 9]}-{digest}"


def check_separator(separator: str) -> None:
    """A separator must keep exposed names valid MCP tool names (letters, digits, _ - .)."""
    if not _NAME_CHARACTERS.fullmatch(separator):
        raise UsageError(
            f"--separator {separator!r} would make invalid tool names",
            hint="use letters, digits, _, - or . (the default is __)",
        )
