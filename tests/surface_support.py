"""The surface fixture server (tests/servers/surface.py): tools and results a test writes down exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import HEALTHY_STARTUP, ROOT

SURFACE = str(ROOT / "tests" / "servers" / "surface.py")
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
NO_ARGS = {"type": "object", "properties": {}}


def tool(name: str, result: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """One tool of the surface server: listed with its fields, answering `result` when called."""
    return {
        "name": name,
        "description": fields.pop("description", f"The {name} tool."),
        "inputSchema": NO_ARGS,
        "result": result or {"content": [{"type": "text", "text": f"{name} done"}]},
        **fields,
    }


def echo(name: str = "echo", **properties: Any) -> dict[str, Any]:
    """A tool answering its `text` argument; `properties` are its other parameters' schemas."""
    schema = {"type": "object", "properties": {"text": {"type": "string"}, **properties}}
    return {"name": name, "description": "Echo the text.", "inputSchema": schema, "echo": "text"}


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def surface_yaml(
    directory: Path,
    tools: list[dict[str, Any]],
    name: str = "surface",
    server_name: str | None = None,
    record: Path | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A server file for the surface server listing `tools` (answering initialize as `server_name`, recording
    each call's tool name in `record`)."""
    spec = directory / f"{name}-spec.json"
    spec.write_text(json.dumps({"tools": tools}))
    fields.setdefault("startup_timeout", HEALTHY_STARTUP)
    args = [SURFACE, "--spec", str(spec), "--name", server_name or name, *(["--record", str(record)] if record else [])]
    return {"name": name, "tool_command": "python", "args": args, **fields}
