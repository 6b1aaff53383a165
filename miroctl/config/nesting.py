"""miroctl inside miroctl: a gateway of gateways is fine, a config whose server starts miroctl on that same
config is not (each level would start the next: a swarm of processes). Every miroctl tells its servers which
configs the miroctls above them run, in MIROCTL_NESTING; one that finds its own config there, or too many
levels, refuses to start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from miroctl.base.errors import ConfigError
from miroctl.base.models import ServerSpec

NESTING_ENV = "MIROCTL_NESTING"
MAX_DEPTH = 5  # miroctls above this one; a real gateway of gateways needs one or two


def identity(source: str, servers: Sequence[ServerSpec]) -> str:
    """What a miroctl runs: its config file, or its ad-hoc servers' command lines and URLs."""
    adhoc = [spec.where for spec in servers if spec.source in ("--stdio", "--url")]
    if adhoc:
        return "ad hoc: " + " | ".join(adhoc)
    return os.path.realpath(source) if os.path.exists(source) else source


def above() -> list[str]:
    """The configs of the miroctls above this one (outermost first)."""
    try:
        chain = json.loads(os.environ.get(NESTING_ENV) or "[]")
    except ValueError:
        return []
    return [str(item) for item in chain] if isinstance(chain, list) else []


def check(source: str, servers: Sequence[ServerSpec]) -> None:
    """ConfigError when this miroctl runs a config that a miroctl above it runs already, or nests too deep."""
    chain, mine = above(), identity(source, servers)
    if mine in chain:
        levels = len(chain) - chain.index(mine)
        raise ConfigError(
            f"{mine} starts miroctl on itself: a miroctl {levels} level(s) above this one runs it already",
            hint="a server of this config runs miroctl with the same config; give that server a config of its own",
        )
    if len(chain) >= MAX_DEPTH:
        raise ConfigError(
            f"miroctl is nested {len(chain)} levels deep (servers starting miroctl, starting miroctl...)",
            hint=f"the chain: {' -> '.join(chain)}",
        )


def for_servers(source: str, servers: Sequence[ServerSpec]) -> str:
    """The MIROCTL_NESTING value this miroctl gives its servers: the chain above it, then its own config."""
    return json.dumps([*above(), identity(source, servers)])
