"""miroctl as a library: the tool layer an agent imports (`from miroctl import ToolManager`).

ToolManager speaks the seeds' shapes (get_all_tool_definitions / execute_tool_call) and miroctl's own typed
envelopes (list_tools / call); `connect()` is its synchronous facade. Stable API: what `__all__` names.
"""

from miroctl.base.errors import (
    ArgumentError,
    AuthRequired,
    ConfigError,
    ExitCode,
    MiroctlError,
    NotFound,
    PolicyDenied,
    ServerUnavailable,
    TimedOut,
    UsageError,
)
from miroctl.base.models import CallOutcome, Failure, ServerSpec, ServerTools, ToolInfo
from miroctl.config.loader import Config
from miroctl.library.sync import SyncToolManager, connect
from miroctl.library.taskids import TASK_ID
from miroctl.library.toolmanager import ToolManager

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
    "connect",
]
