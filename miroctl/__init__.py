"""miroctl: run, probe, check and serve pools of MCP servers from the command line, or from Python.

`from miroctl import ToolManager` is the tool layer an agent imports (docs/library.md); `__all__` is the stable
API. Every miroctl command imports this package first, and its cold start is measured in milliseconds, so the
API is loaded on first access (PEP 562 `__getattr__`) rather than here: `import miroctl` stays this file, and
the modules below it (which import `__version__` from here) never pull the library layer in with it.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~15 ms); mypy reads this name as it

__version__ = "0.1.0"

__all__ = [
    "TASK_ID",
    "ArgumentError",
    "AuthRequired",
    "CallOutcome",
    "Config",
    "ConfigError",
    "ExitCode",
    "Failure",
    "MiroctlError",
    "NotFound",
    "PolicyDenied",
    "ServerSpec",
    "ServerTools",
    "ServerUnavailable",
    "SyncToolManager",
    "TimedOut",
    "ToolInfo",
    "ToolManager",
    "UsageError",
    "__version__",
    "connect",
]

if TYPE_CHECKING:
    from typing import Any

    from miroctl.library import (
        TASK_ID,
        ArgumentError,
        AuthRequired,
        CallOutcome,
        Config,
        ConfigError,
        ExitCode,
        Failure,
        MiroctlError,
        NotFound,
        PolicyDenied,
        ServerSpec,
        ServerTools,
        ServerUnavailable,
        SyncToolManager,
        TimedOut,
        ToolInfo,
        ToolManager,
        UsageError,
        connect,
    )


def __getattr__(name: str) -> "Any":
    # __import__ rather than an import statement: the import graph (lint-imports) then keeps the layers below,
    # which import __version__ from this package, apart from the library layer above them, as they are at run
    # time; and rather than importlib, which `import miroctl` would pay for (~1 ms) on every command.
    if name in __all__ and name != "__version__":
        value = getattr(__import__("miroctl.library", fromlist=[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'miroctl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
