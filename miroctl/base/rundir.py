"""Where the daemons live and who asked for one (standard library only: the console entry reads it before
anything else is loaded, to send a command straight to a running daemon)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Variables a shell changes from one command to the next, which no server sees.
VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "COLUMNS", "LINES"})


def runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_RUNTIME_DIR/miroctl, else the user's state directory ($XDG_STATE_HOME or ~/.local/state)/miroctl/run."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "miroctl"
    state = env.get("XDG_STATE_HOME")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "miroctl" / "run"


def digest(document: Any) -> str:
    """A short, stable name for a JSON-like document."""
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:16]


def origin_key(config_name: str | None, cwd: str) -> str:
    """Who asked: the same --config in the same directory; a newer daemon of one origin replaces the older."""
    return digest({"config": config_name, "cwd": cwd})


def environment_digest(env: Mapping[str, str]) -> str:
    """The environment a command runs in, less what a shell changes between commands."""
    return digest(sorted((k, v) for k, v in env.items() if k not in VOLATILE_ENV))
