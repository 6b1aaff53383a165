"""What a ToolManager is built from: the seeds' server configs, a profile, a path or a Config.

The seeds' shape is `[{"name": str, "params": P}, ...]` with P a StdioServerParameters-like object (anything
with `command`, `args`, `env`, optionally `cwd`: mcp 1.x's and 2.x's classes both) or an http(s) URL string.
Nothing here starts anything: a ToolManager is built in plain synchronous code, before any event loop runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from miroctl.base.errors import ConfigError
from miroctl.base.models import ServerSpec
from miroctl.config import interpreters, loader
from miroctl.config.loader import Config, Profile
from miroctl.config.servers import server_from_mapping

PYTHON_ENV = interpreters.PYTHON_ENV  # the interpreter that replaces the agent's own in its servers' commands
SOURCE = "(ToolManager server_configs)"


def config_from_seeds(server_configs: Iterable[Mapping[str, object]], blacklist: Iterable[tuple[str, str]]) -> Config:
    """The seeds' server configs and blacklist as a Config: every server in the default set, in order; a
    config that cannot be used becomes that server's error (it lists as `{"error": ...}`)."""
    specs = [_seed_spec(index, entry) for index, entry in enumerate(server_configs)]
    pairs = frozenset((str(server), str(tool)) for server, tool in blacklist)
    return Config(
        servers=tuple(specs),
        profile=Profile(blacklist=pairs),
        source=SOURCE,
        default_names=tuple(dict.fromkeys(spec.name for spec in specs)),
    )


def config_from_source(source: str | os.PathLike[str] | Config | None) -> Config:
    """A Config as given, or loaded as the CLI loads `--config SOURCE` (a bundled profile's name, a path)."""
    if isinstance(source, Config):
        return source
    return loader.load(os.fspath(source) if source is not None else None)


def with_python(config: Config, python: str | os.PathLike[str] | None) -> Config:
    """Servers whose command is this interpreter run `python` instead (or $MIROCTL_PYTHON): an agent's
    environment has miroctl's mcp, its servers may need another (mcp 1.x's `mcp.server.fastmcp`). One that
    is missing or not executable is the error of each server it would have run."""
    mine = {i for i, s in enumerate(config.servers) if s.transport == "stdio" and interpreters.is_own(s.command)}
    if not mine:
        return config
    try:
        given = os.fspath(python) if python is not None else ""
        chosen = interpreters.interpreter(given, "server_python") if given.strip() else interpreters.env_python()
    except ConfigError as exc:
        failed = exc.message
        return _each(config, mine, lambda s: s if s.error else replace(s, error=failed))
    if chosen is None or interpreters.is_own(chosen):
        return config
    return _each(config, mine, lambda s: replace(s, command=chosen, python=chosen))


def _each(config: Config, indices: set[int], change: Callable[[ServerSpec], ServerSpec]) -> Config:
    servers = tuple(change(s) if i in indices else s for i, s in enumerate(config.servers))
    return replace(config, servers=servers)


def _seed_spec(index: int, entry: Mapping[str, object]) -> ServerSpec:
    name = str(entry.get("name") or f"server-{index + 1}") if isinstance(entry, Mapping) else f"server-{index + 1}"
    where = f"server {name!r}"
    try:
        if not isinstance(entry, Mapping) or "params" not in entry:
            raise ConfigError(f"{where}: expected a mapping with name and params")
        return server_from_mapping(_settings(entry["params"], where), where=where, name=name, own_python=False)
    except ConfigError as exc:
        return ServerSpec(name=name, error=exc.message, source=where)


def _settings(params: object, where: str) -> dict[str, object]:
    """A server file's mapping for one seed `params`: a URL, or a StdioServerParameters-like object."""
    if isinstance(params, str):
        if not params.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: params must be an http(s) URL or stdio parameters, got {params!r}")
        return {"url": params}
    command = getattr(params, "command", None)
    if not command:
        raise ConfigError(f"{where}: unknown server params type {type(params).__name__} (no command)")
    cwd = getattr(params, "cwd", None)
    return {
        "command": str(command),
        "args": [str(arg) for arg in _sequence(getattr(params, "args", None))],
        "env": dict(getattr(params, "env", None) or {}),
        "cwd": os.fspath(cwd) if cwd else None,  # None: the agent's own working directory
    }


def _sequence(value: object) -> Sequence[object]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        return (value,)
    return list(value)
