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

    @property
    def message(self) -> str:
        return (
            f"tool name {self.name!r} would mean {' and '.join(self.owners)}; none of them is exposed "
            f"(choose another --separator)"
        )

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
    entries: Sequence[ServerTools], separator: str = DEFAULT_SEPARATOR, server_names: Iterable[str] | None = None
) -> ToolMap:
    """Name every tool of the healthy entries; a name claimed twice is left out and reported."""
    prefix = prefixes(server_names if server_names is not None else [e.server for e in entries])
    claims: dict[str, list[ToolInfo]] = {}
    for entry in entries:
        for tool in entry.tools:
            name = exposed_name(f"{prefix.get(entry.server, entry.server)}{separator}{tool.name}")
            claims.setdefault(name, []).append(tool)
    tools = {name: found[0] for name, found in claims.items() if len(found) == 1}
    collisions = tuple(
        Collision(name, tuple(f"{t.server}.{t.name}" for t in found))
        for name, found in claims.items()
        if len(found) > 1
    )
    return ToolMap(tools, collisions)


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
