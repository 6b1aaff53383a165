"""One daemon per configuration: the key of what its servers are started with, and who started it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from miroctl.base.rundir import digest, origin_key
from miroctl.base.version import __version__
from miroctl.config.loader import Config
from miroctl.sessions.processes import INHERITED_ENV

__all__ = ["config_key", "origin_key"]

# What a daemon's servers see besides their config: the variables a stdio server inherits, the task id.
KEYED_ENV = (*INHERITED_ENV, "TASK_ID")


def config_key(config: Config, cwd: str, environ: Mapping[str, str]) -> str:
    """The daemon a command of this configuration goes to: the resolved profile, each server's command, args,
    env, cwd, URL and headers, the variables they inherit, the working directory and miroctl's version."""
    servers = [
        [s.name, s.transport, s.command, list(s.args), dict(s.env), s.cwd, s.url, dict(s.headers), s.persistent]
        for s in config.servers
    ]
    required = sorted({name for s in config.servers for names in s.requires_env for name in names})
    document = {
        "version": __version__,
        "cwd": cwd,
        "source": config.source,
        "profile": _plain(asdict(config.profile)),
        "servers": servers,
        "env": {name: environ.get(name) for name in (*KEYED_ENV, *required)},
    }
    return digest(document)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return (
            sorted((_plain(v) for v in value), key=repr)
            if isinstance(value, (set, frozenset))
            else [_plain(v) for v in value]
        )
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
