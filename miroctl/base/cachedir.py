"""Where miroctl keeps what it may forget: $MIROCTL_CACHE_DIR, else $XDG_CACHE_HOME/miroctl/tools, else
~/.cache/miroctl/tools (standard library only: the console script reads it before anything is loaded)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CACHE_ENV = "MIROCTL_CACHE_DIR"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$MIROCTL_CACHE_DIR, else $XDG_CACHE_HOME/miroctl/tools, else ~/.cache/miroctl/tools."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "miroctl" / "tools"
