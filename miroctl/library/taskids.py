"""Which task a call belongs to, as the seeds' TASK_CONTEXT_VAR says: its value reaches the server as TASK_ID.

MiroFlow sets a ContextVar named CURRENT_TASK_ID around each task and copies it into every server's env at
spawn; a ContextVar is found here by that name in the caller's context, so such an agent needs no change.
"""

from __future__ import annotations

import contextvars
from contextvars import ContextVar
from typing import Any

TASK_ID: ContextVar[str | None] = ContextVar("miroctl_task_id", default=None)
UPSTREAM_NAME = "CURRENT_TASK_ID"


def current_task_id(explicit: str | None = None, given: ContextVar[Any] | None = None) -> str | None:
    """The task id of this call: the keyword argument, miroctl's TASK_ID, the ContextVar the ToolManager was
    given, or any ContextVar named CURRENT_TASK_ID set in the caller's context; None when there is none."""
    if explicit:
        return str(explicit)
    for var in (TASK_ID, given):
        value = var.get(None) if var is not None else None
        if value:
            return str(value)
    for var, value in contextvars.copy_context().items():
        if var.name == UPSTREAM_NAME and value:
            return str(value)
    return None
