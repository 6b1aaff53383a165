"""The bundled servers' tool surfaces as shipped with miroctl: what completion offers on a fresh machine.

`list` fills the completion cache (miroctl.core.toolcache) only once it has run; the bundled servers' tools,
their parameters and the values an enum allows are known before that, from bundled_tools.json, which a test
keeps equal to what the servers list (tests/bundled/test_bundled_surfaces.py; MIROCTL_SURFACES_UPDATE=1
rewrites it). A server is bundled when its command runs `-m miroctl.servers NAME`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.core import schemas

SHIPPED = Path(__file__).with_name("bundled_tools.json")
MAX_VALUES = 50

Values = dict[str, dict[str, list[str]]]  # tool -> parameter -> the values its enum allows (as typed)


def bundled_name(spec: ServerSpec) -> str | None:
    """NAME when the server is miroctl's own `miroctl.servers NAME`, else None."""
    args = list(spec.args)
    for index in range(len(args) - 2):
        if args[index : index + 2] == ["-m", "miroctl.servers"]:
            return args[index + 2]
    return None


@functools.cache
def _shipped() -> dict[str, Values]:
    try:
        data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def shipped(spec: ServerSpec | None) -> Values:
    """A bundled server's tools as shipped (empty for any other server)."""
    name = bundled_name(spec) if spec is not None else None
    found = _shipped().get(name) if name else None
    return found if isinstance(found, dict) else {}


def values_of(tools: Iterable[ToolInfo]) -> Values:
    """Each tool's parameters and their enum values, written as `key=VALUE` takes them."""
    found: Values = {}
    for tool in tools:
        schema = tool.input_schema
        found[tool.name] = {
            str(name): _typed(schemas.resolve(prop, schema)) for name, prop in schemas.properties(schema).items()
        }
    return found


def _typed(prop: Mapping[str, Any]) -> list[str]:
    enum = prop.get("enum")
    if not isinstance(enum, list):
        return []
    return [value if isinstance(value, str) else json.dumps(value) for value in enum[:MAX_VALUES]]
