"""The errors miroctl reports, each of one kind, each kind tied to one exit code.

    MiroctlError                 1  the thing asked about failed
    ├── UsageError               2  bad command line; nothing was started or sent
    │   ├── ConfigError          2  unreadable or invalid configuration
    │   └── ArgumentError        2  arguments that do not fit the tool's input schema
    ├── ServerUnavailable        3  could not start, connect or initialize; died
    ├── AuthRequired             3  an OAuth server without a usable token, or a login that failed
    ├── TimedOut                 4  no answer in time (a gateway that accepts and never answers)
    ├── PolicyDenied             5  blacklist, permission mode, URL rule
    ├── NotFound                 6  no such server or tool
    ├── (lint findings)          7  `check --strict`: healthy servers whose tool schemas are not portable
    └── Interrupted            130  SIGINT (128 + the signal's number for SIGTERM, SIGHUP)

Outcomes that the core returns instead of raising (a call's envelope) carry the same `ErrorKind`;
`EXIT_CODES` maps every kind once, so every command exits alike. A call's timeout is an outcome; only the
warm client, which has no envelope to put it in, raises TimedOut.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from enum import IntEnum, StrEnum
from typing import Literal, get_args


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    UNAVAILABLE = 3
    TIMEOUT = 4
    DENIED = 5
    NOT_FOUND = 6
    LINT = 7  # check --strict: tool schemas that some model provider would reject; servers otherwise healthy
    INTERNAL = 70  # a defect in miroctl itself (EX_SOFTWARE): run again with --traceback
    INTERRUPTED = 130


class ErrorKind(StrEnum):
    """What went wrong, as `error_kind` in every JSON document and as the label of every message."""

    TOOL_ERROR = "tool_error"
    FAILED = "failed"
    USAGE = "usage"
    CONFIG = "config"
    ARGUMENTS = "arguments"
    UNAVAILABLE = "unavailable"
    AUTH = "auth"
    TIMEOUT = "timeout"
    DENIED = "denied"
    NOT_FOUND = "not_found"
    LINT = "lint"
    INTERRUPTED = "interrupted"
    INTERNAL = "internal"


# ErrorKind's values, as the type of an envelope's `error_kind` (a string in JSON; tests hold the two equal)
ErrorKindName = Literal[
    "tool_error",
    "failed",
    "usage",
    "config",
    "arguments",
    "unavailable",
    "auth",
    "timeout",
    "denied",
    "not_found",
    "lint",
    "interrupted",
    "internal",
]

ERROR_KIND_NAMES: tuple[ErrorKindName, ...] = get_args(ErrorKindName)


def kind_name(kind: str) -> ErrorKindName:
    """An error kind (an ErrorKind, or the text of one) as the name an envelope carries; ValueError if none."""
    for name in ERROR_KIND_NAMES:
        if name == kind:
            return name
    raise ValueError(f"not an error kind: {kind!r}")


EXIT_CODES: dict[ErrorKind, ExitCode] = {
    ErrorKind.TOOL_ERROR: ExitCode.FAILED,
    ErrorKind.FAILED: ExitCode.FAILED,
    ErrorKind.USAGE: ExitCode.USAGE,
    ErrorKind.CONFIG: ExitCode.USAGE,
    ErrorKind.ARGUMENTS: ExitCode.USAGE,
    ErrorKind.UNAVAILABLE: ExitCode.UNAVAILABLE,
    ErrorKind.AUTH: ExitCode.UNAVAILABLE,
    ErrorKind.TIMEOUT: ExitCode.TIMEOUT,
    ErrorKind.DENIED: ExitCode.DENIED,
    ErrorKind.NOT_FOUND: ExitCode.NOT_FOUND,
    ErrorKind.LINT: ExitCode.LINT,
    ErrorKind.INTERRUPTED: ExitCode.INTERRUPTED,
    ErrorKind.INTERNAL: ExitCode.INTERNAL,
}


def exit_code_for_kind(kind: str | None) -> ExitCode:
    """The exit code of an error kind (None means success); an unknown kind raises ValueError."""
    if kind is None:
        return ExitCode.OK
    return EXIT_CODES[ErrorKind(kind)]


class MiroctlError(Exception):
    """Base of every error miroctl reports to its user: a one-line message, a hint, a kind."""

    kind = ErrorKind.FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def exit_code(self) -> int:
        return int(EXIT_CODES[self.kind])


class UsageError(MiroctlError):
    kind = ErrorKind.USAGE


class ConfigError(UsageError):
    kind = ErrorKind.CONFIG


class ArgumentError(UsageError):
    kind = ErrorKind.ARGUMENTS


class ServerUnavailable(MiroctlError):
    kind = ErrorKind.UNAVAILABLE


class AuthRequired(MiroctlError):
    """A server needs OAuth and miroctl holds no usable token for it, or `miroctl auth` could not get one."""

    kind = ErrorKind.AUTH


class TimedOut(MiroctlError):
    kind = ErrorKind.TIMEOUT


class PolicyDenied(MiroctlError):
    kind = ErrorKind.DENIED


class NotFound(MiroctlError):
    """No such server or tool; `candidates` are the servers that could be meant (an ambiguous tool name)."""

    kind = ErrorKind.NOT_FOUND

    def __init__(self, message: str, *, hint: str | None = None, candidates: Sequence[str] = ()) -> None:
        super().__init__(message, hint=hint)
        self.candidates = tuple(candidates)


class Interrupted(MiroctlError):
    """A signal stopped the run (after every server was stopped); exit 130, or 128 + the signal's number."""

    kind = ErrorKind.INTERRUPTED

    def __init__(self, signum: int = signal.SIGINT, *, stopped: bool = True) -> None:
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}; every server was stopped" if stopped else f"interrupted by {name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return int(ExitCode.INTERRUPTED) if self.signum == signal.SIGINT else 128 + self.signum


class OutputLost(MiroctlError):
    """stdout could not be written: its reader left (a closed pipe: `| head -1`), or the disk is full. A
    closed pipe is said nowhere (the reader asked for no more); another failure in one line. Exit 1."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write the output: {exc.strerror or exc}")
        self.quiet = isinstance(exc, BrokenPipeError)


def behind(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception behind it, each once: an exception group's members (each with what is behind
    it; a task group wraps what its tasks raise), then its cause or the exception it interrupted."""
    seen: set[int] = set()

    def walk(current: BaseException | None) -> Iterator[BaseException]:
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            yield current
            if isinstance(current, BaseExceptionGroup):
                for member in current.exceptions:
                    yield from walk(member)
            current = current.__cause__ or current.__context__

    return walk(exc)


ERROR_SCHEMA = "miroctl.error/1"


def error_document(message: str, kind: str, hint: str | None, exit_code: int) -> dict[str, object]:
    """The JSON of an error that ended a command before it had a document of its own (`miroctl.error/1`).

    Its fields are named as in every envelope that carries an error: `error` (the one-line reason),
    `error_kind`, `hint`, `exit_code`, and `is_error`, which is true."""
    return {
        "schema": ERROR_SCHEMA,
        "is_error": True,
        "error": message,
        "error_kind": str(kind),
        "hint": hint,
        "exit_code": int(exit_code),
    }
