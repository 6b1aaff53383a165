"""The errors miroctl reports, each tied to one exit code.

    MiroctlError                 1  the thing asked about failed
    ├── UsageError               2  bad command line; nothing was started or sent
    │   ├── ConfigError          2  unreadable or invalid configuration
    │   └── ArgumentError        2  arguments that do not fit the tool's input schema
    ├── ServerUnavailable        3  could not start, connect or initialize; died
    ├── CallTimeout              4  a step outlived its timeout
    ├── PolicyDenied             5  blacklist, permission mode, URL rule
    └── NotFound                 6  no such server or tool

Outcomes that the core returns instead of raising carry an error *kind* (a string);
`exit_code_for_kind` maps those kinds onto the same table, so every command exits alike.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    UNAVAILABLE = 3
    TIMEOUT = 4
    DENIED = 5
    NOT_FOUND = 6
    INTERRUPTED = 130


class MiroctlError(Exception):
    """Base of every error miroctl reports to its user."""

    exit_code = ExitCode.FAILED
    kind = "failed"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(MiroctlError):
    exit_code = ExitCode.USAGE
    kind = "usage"


class ConfigError(UsageError):
    kind = "config"


class ArgumentError(UsageError):
    kind = "arguments"


class ServerUnavailable(MiroctlError):
    exit_code = ExitCode.UNAVAILABLE
    kind = "unavailable"


class CallTimeout(MiroctlError):
    exit_code = ExitCode.TIMEOUT
    kind = "timeout"


class PolicyDenied(MiroctlError):
    exit_code = ExitCode.DENIED
    kind = "denied"


class NotFound(MiroctlError):
    exit_code = ExitCode.NOT_FOUND
    kind = "not_found"


_KIND_EXIT = {
    "tool_error": ExitCode.FAILED,
    "failed": ExitCode.FAILED,
    "usage": ExitCode.USAGE,
    "config": ExitCode.USAGE,
    "arguments": ExitCode.USAGE,
    "unavailable": ExitCode.UNAVAILABLE,
    "timeout": ExitCode.TIMEOUT,
    "denied": ExitCode.DENIED,
    "not_found": ExitCode.NOT_FOUND,
    "interrupted": ExitCode.INTERRUPTED,
}


def exit_code_for_kind(kind: str | None) -> ExitCode:
    """The exit code for an outcome's error kind (None means success)."""
    if kind is None:
        return ExitCode.OK
    return _KIND_EXIT.get(kind, ExitCode.FAILED)
