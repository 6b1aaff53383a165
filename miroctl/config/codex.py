"""Codex's `config.toml`: `[mcp_servers.NAME]` tables translated into miroctl server templates.

Codex expands no variables inside strings; it names environment variables instead: `env_vars` forwards
variables by name, `bearer_token_env_var` and `env_http_headers` fill headers from them. Those become
`${oc.env:VAR}` references; `env` and `http_headers` are literal values.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

from miroctl.base.errors import ConfigError
from miroctl.config import ecosystem
from miroctl.config.ecosystem import Template, env_ref, escape


def read_toml(path: Path) -> dict[str, object]:
    """A TOML file's data; ConfigError (one line) when it is unreadable, too big, not TOML or nested too deeply."""
    data = ecosystem.read_capped(path)
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"bad TOML in {path}: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(ecosystem.too_deep(path)) from None
    ecosystem.check_nesting(parsed, path)
    return parsed


def templates(data: Mapping[str, object], path: Path) -> list[Template]:
    """Every `[mcp_servers.NAME]` table as a template; a bad table is its own error."""
    tables = data.get("mcp_servers", {})
    if not isinstance(tables, Mapping):
        raise ConfigError(f"{path}: mcp_servers must be a table of servers")
    return [_template(str(name), table, f"{path}#{name}") for name, table in tables.items()]


def _template(name: str, table: object, where: str) -> Template:
    template = Template(name=name, settings={}, where=where)
    try:
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
        template.settings = _settings(table, where)
    except ConfigError as exc:
        template.error = exc.message
    return template


def _settings(table: Mapping[str, object], where: str) -> dict[str, object]:
    settings: dict[str, object] = {}
    for key in ("command", "url", "cwd"):
        if key in table:
            settings[key] = escape(_string(table[key], key, where))
    if "args" in table:
        args = table["args"]
        if not isinstance(args, list):
            raise ConfigError(f"{where}: args must be an array")
        settings["args"] = [escape(_string(a, "args", where)) for a in args]
    env = {k: escape(_string(v, f"env.{k}", where)) for k, v in _table(table, "env", where).items()}
    for variable in _names(table.get("env_vars"), "env_vars", where):
        env.setdefault(variable, env_ref(variable, ""))  # forwarded when set, as Codex does
    headers = {
        k: escape(_string(v, f"http_headers.{k}", where)) for k, v in _table(table, "http_headers", where).items()
    }
    for header, name in _table(table, "env_http_headers", where).items():
        headers[header] = env_ref(_string(name, f"env_http_headers.{header}", where))
    if table.get("bearer_token_env_var"):
        headers["Authorization"] = "Bearer " + env_ref(
            _string(table["bearer_token_env_var"], "bearer_token_env_var", where)
        )
    settings |= {k: v for k, v in (("env", env), ("headers", headers)) if v}
    if table.get("enabled") is False:
        settings["enabled"] = False
    for source, target in (("startup_timeout_sec", "startup_timeout"), ("tool_timeout_sec", "timeout")):
        seconds = table.get(source)
        if isinstance(seconds, (int, float)) and seconds > 0:
            settings[target] = seconds
    return settings


def _string(value: object, key: str, where: str) -> str:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be a string, got {type(value).__name__}")
    return str(value)


def _table(table: Mapping[str, object], key: str, where: str) -> Mapping[str, object]:
    value = table.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key} must be a table")
    return value


def _names(value: object, key: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be an array of variable names")
    return list(value)
