"""The ecosystem's JSON configs: `mcpServers` (Claude Desktop, Cursor, .mcp.json) and VS Code's `servers`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from miroctl.base.errors import ConfigError
from miroctl.base.masking import could_be_secret
from miroctl.base.models import ServerSpec
from miroctl.config.servers import server_from_mapping

_JSON_ENV_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


def read_json_servers(path: Path) -> list[ServerSpec]:
    """The servers of a JSON config file; ConfigError when the file itself cannot be used."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"bad JSON at {path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    if not isinstance(data, Mapping) or not ("mcpServers" in data or "servers" in data):
        raise ConfigError(f"{path}: expected an object with mcpServers (or VS Code's servers)")
    return servers_from(data, path)


def servers_from(data: Mapping[str, Any], path: Path) -> list[ServerSpec]:
    """Claude Desktop / Cursor / .mcp.json `mcpServers`, or VS Code's `servers`; a bad entry is its own error."""
    entries = data.get("mcpServers", data.get("servers"))
    if not isinstance(entries, Mapping):
        raise ConfigError(f"{path}: mcpServers must be an object of servers")
    return [_ecosystem_server(name, entry, f"{path}#{name}") for name, entry in entries.items()]


def _ecosystem_server(name: str, entry: Any, where: str) -> ServerSpec:
    try:
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: expected an object")
        expanded, secrets = _expand_json_env(dict(entry), where)
        settings: dict[str, Any] = {
            k: expanded[k] for k in ("command", "args", "env", "cwd", "url", "headers") if k in expanded
        }
        kind = expanded.get("type") or expanded.get("transport")
        if kind and kind != "stdio":
            settings["transport"] = kind
        settings["enabled"] = not expanded.get("disabled", False)
        return server_from_mapping(settings, where=where, name=name, secrets=secrets)
    except ConfigError as exc:
        return ServerSpec(name=name, error=exc.message, source=where)


def _expand_json_env(entry: dict[str, Any], where: str) -> tuple[dict[str, Any], set[str]]:
    """Expand ${VAR} and ${env:VAR} (Cursor, VS Code) in strings; expanded values count as secrets."""
    missing: set[str] = set()
    secrets: set[str] = set()

    def expand(value: Any) -> Any:
        if isinstance(value, str):
            refs = _JSON_ENV_REF.findall(value)
            missing.update(r for r in refs if r not in os.environ)
            out = _JSON_ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), value)
            if refs and could_be_secret(out):
                secrets.add(out)
            return out
        if isinstance(value, Mapping):
            return {k: expand(v) for k, v in value.items()}
        if isinstance(value, list):
            return [expand(v) for v in value]
        return value

    expanded = expand(entry)
    if missing:
        noun = "variable" if len(missing) == 1 else "variables"
        raise ConfigError(f"{where}: missing environment {noun} {', '.join(sorted(missing))}")
    return expanded, secrets
