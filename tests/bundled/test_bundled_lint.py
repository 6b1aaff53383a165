"""miroctl's own servers pass its own lint: every tool of every bundled server, listed as a client lists it,
is portable to every model provider as it takes tools by default (`check --strict`)."""

from __future__ import annotations

import importlib

import anyio
import pytest

from miroctl.base.models import ServerSpec, ServerTools
from miroctl.check.lint import lint_pool
from miroctl.check.lint_rules import DEFAULT
from miroctl.config.loader import Config
from miroctl.core.manager import Manager
from tests.conftest import HEALTHY_STARTUP, ROOT

# group.py serves no tools of its own: it regroups the other modules' tools under upstream's names.
SERVERS = sorted(p.stem for p in (ROOT / "servers").glob("*.py") if not p.stem.startswith("__") and p.stem != "group")


async def listed(spec: ServerSpec) -> ServerTools:
    async with Manager(Config(servers=(spec,), default_names=(spec.name,))) as manager:
        (entry,) = await manager.list_tools([spec])
    return entry


@pytest.mark.parametrize("name", SERVERS)
def test_every_tool_of_the_bundled_server_passes_check_strict(name):
    module = importlib.import_module(f"miroctl.servers.{name}")
    spec = ServerSpec(name=f"tool-{name}", transport="memory", target=module.mcp, startup_timeout=HEALTHY_STARTUP)
    entry = anyio.run(listed, spec)
    assert entry.ok and entry.tools, entry.failure
    found = lint_pool({entry.server: entry.tools}, DEFAULT)[entry.server]
    assert [f"{f.tool} {f.path}" for f in found] == KNOWN.get(name, [])


# Findings kept on purpose (none: scrape_and_extract_info's custom_headers, an object upstream, is declared as
# a JSON string, which every provider can be given).
KNOWN: dict[str, list[str]] = {}
