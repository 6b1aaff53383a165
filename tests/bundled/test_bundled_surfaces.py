"""The tool surfaces miroctl ships for completion on a fresh machine are what the bundled servers list now
(MIROCTL_SURFACES_UPDATE=1 rewrites miroctl/core/bundled_tools.json from them)."""

from __future__ import annotations

import importlib
import json
import os

import anyio

from miroctl.base.models import ServerSpec, ServerTools
from miroctl.config.loader import Config
from miroctl.core import surfaces
from miroctl.core.manager import Manager
from tests.conftest import HEALTHY_STARTUP, ROOT

# group.py serves no tools of its own: it regroups the other modules' tools under upstream's names.
SERVERS = sorted(p.stem for p in (ROOT / "servers").glob("*.py") if not p.stem.startswith("__") and p.stem != "group")


async def listed(specs: list[ServerSpec]) -> list[ServerTools]:
    async with Manager(Config(servers=tuple(specs), default_names=tuple(s.name for s in specs))) as manager:
        return await manager.list_tools(specs)


def test_the_shipped_tool_surfaces_are_what_the_bundled_servers_list():
    specs = [
        ServerSpec(
            name=name,
            transport="memory",
            target=importlib.import_module(f"miroctl.servers.{name}").mcp,
            startup_timeout=HEALTHY_STARTUP,
        )
        for name in SERVERS
    ]
    entries = anyio.run(listed, specs)
    assert all(entry.ok for entry in entries), [entry.failure for entry in entries if not entry.ok]
    now = {entry.server: surfaces.values_of(entry.tools) for entry in entries}
    if os.environ.get("MIROCTL_SURFACES_UPDATE"):
        surfaces.SHIPPED.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(surfaces.SHIPPED.read_text(encoding="utf-8")) == now
