"""miroctl: run, probe, check and serve pools of MCP servers from the command line, or from Python.

`from miroctl import ToolManager` is the tool layer an agent imports (docs/library.md); `__all__` is the stable
API. Every miroctl command imports this package first, and its cold start is measured in milliseconds, so the
API is loaded on first access (PEP 562 `__getattr__`) rather than here: `import miroctl` stays this file and
miroctl.base.version, where the version number lives for every module below.
"""

from miroctl.base.version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~15 ms); mypy reads this name as it

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
    # Imported here, on first use, not at the top: every command imports this package, and the library layer
    # (the core, the config, the sessions) costs what a cold start must not pay.
    if name in __all__ and name != "__version__":
        import miroctl.library  # noqa: PLC0415 (see above)

        value = getattr(miroctl.library, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'miroctl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
