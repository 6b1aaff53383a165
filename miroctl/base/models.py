"""The data the core hands back: server specs, tools, failures, call outcomes.

`.to_dict()` on these is the JSON contract that `--json` prints; the README pins the shapes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self, get_args

from miroctl.base.errors import ErrorKindName, ExitCode, exit_code_for_kind

Transport = Literal["stdio", "streamable_http", "sse", "memory"]
ProtocolChoice = Literal["auto", "legacy"]
SessionMode = Literal["kept", "per_call"]
DecisionState = Literal["allow", "ask", "deny"]
ListedTransport = Literal["stdio", "streamable_http", "sse", "memory", "unknown"]  # unknown: no such server
FailureKind = Literal[
    "config", "not_found", "exited", "timeout", "protocol", "http", "auth", "crashed", "unavailable", "smoke"
]
FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)
# Where a server failed: its configuration, starting it (spawn for stdio, connect for HTTP), the handshake, a
# request of a phase of its own (tools/list, ping, resources and prompts, completion, logging), a tool call, a
# smoke call of `check`, or its stdout (non-JSON lines, found after everything else worked)
Phase = Literal[
    "config",
    "spawn",
    "connect",
    "initialize",
    "tools",
    "ping",
    "call",
    "smoke",
    "resources",
    "prompts",
    "completion",
    "logging",
    "stdout",
]
PHASES: tuple[Phase, ...] = get_args(Phase)
REQUEST_PHASES: Mapping[str, Phase] = {
    "initialize": "initialize",
    "tools/list": "tools",
    "ping": "ping",
    "tools/call": "call",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "resources/subscribe": "resources",
    "resources/unsubscribe": "resources",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "completion/complete": "completion",
    "logging/setLevel": "logging",
}
LISTED_TRANSPORTS: tuple[ListedTransport, ...] = get_args(ListedTransport)

DEFAULT_CALL_TIMEOUT = 900.0
DEFAULT_STARTUP_TIMEOUT = 30.0


class ProgressFn(Protocol):
    """Hears a call's progress notifications (the SDK's progress callback shape)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


@dataclass(frozen=True)
class OAuthSettings:
    """A server that needs OAuth 2.1 (`auth: oauth` in its file), and how miroctl presents itself to it."""

    scopes: tuple[str, ...] = ()  # empty: what the server's challenge or metadata asks for
    client_id: str | None = None  # a client registered by hand; otherwise dynamic registration
    client_secret: str | None = None
    client_metadata_url: str | None = None  # an HTTPS client ID metadata document, when the server accepts one
    callback_port: int | None = None  # a fixed loopback port (a hand-registered redirect URI); otherwise any free one


@dataclass(frozen=True)
class ServerSpec:
    """One configured MCP server, resolved and ready to start (or broken, with `error` set)."""

    name: str
    transport: Transport = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    startup_timeout: float | None = None
    persistent: bool = False
    # kept: one session for every call made through a Manager; per_call: a fresh process and session for each
    # call (the seeds' way), for servers that rely on starting clean (read by the library's ToolManager)
    session: SessionMode = "kept"
    enabled: bool = True
    tools: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    smoke: object = None  # the file's `smoke:` as written (a mapping or a list of them): check validates it
    source: str | None = None
    error: str | None = None
    secrets: frozenset[str] = frozenset()
    # Variables the server cannot work without: each entry is a set of names, one of which must be non-empty.
    requires_env: tuple[tuple[str, ...], ...] = ()
    target: Any = field(default=None, compare=False, repr=False)  # in-process server (tests)
    oauth: OAuthSettings | None = None  # `auth: oauth`: tokens from `miroctl auth NAME`, never a browser here
    # auto: the newest protocol both sides speak; legacy: the initialize handshake (2025-11-25 and before), for
    # servers whose tools send their client requests of their own (sampling...), which 2026-07-28 forbids
    protocol: ProtocolChoice = "auto"
    # The interpreter `tool_command: python` runs, when it is not miroctl's own (list and check name it)
    python: str | None = None

    def config_error(self, environ: Mapping[str, str]) -> str | None:
        """Why this server cannot be started as configured, or None: a broken file, or a required variable unset
        (or empty) in its environment, which is its `env` over `environ`, miroctl's own."""
        if self.error:
            return self.error
        effective = {**environ, **self.env}
        for names in self.requires_env:
            if not any(effective.get(name) for name in names):
                wanted = names[0] if len(names) == 1 else f"one of {', '.join(names)}"
                return f"{self.source or self.name}: missing environment variable: set {wanted}"
        return None

    @property
    def where(self) -> str:
        """Where the server lives, for humans: its command line or URL."""
        if self.url:
            return self.url
        if self.transport == "memory":
            return "in-process"
        return " ".join([self.command or "", *self.args]).strip()


def phase_named(text: str | None) -> Phase | None:
    """The phase a document names (or the request it names, as a gateway of an earlier build wrote it), or None."""
    return next((phase for phase in PHASES if phase == text), None) or REQUEST_PHASES.get(text or "")


@dataclass(frozen=True)
class Step:
    """What was under way when a server failed: its phase, and how a message names it (the request, the call)."""

    phase: Phase
    what: str | None = None  # "tools/list", "the call to search"; None: the phase's name says it

    def __str__(self) -> str:
        return self.what or self.phase

    @classmethod
    def request(cls, method: str) -> Step:
        """The step of a request miroctl sends (tools/list, resources/read...)."""
        return cls(REQUEST_PHASES[method], method)


@dataclass(frozen=True)
class Failure:
    """Why a server could not be used: a class of failure, a one-line reason, a hint."""

    kind: FailureKind
    message: str
    hint: str | None = None
    phase: Phase | None = None
    stderr_tail: tuple[str, ...] = ()
    during: str | None = None  # the request or call under way, as the message names it (not in the JSON)

    @classmethod
    def at(
        cls,
        step: Step,
        kind: FailureKind,
        message: str,
        *,
        hint: str | None = None,
        stderr_tail: tuple[str, ...] = (),
    ) -> Failure:
        """A failure during `step`: its phase, and the request or call its message names."""
        return cls(kind, message, hint=hint, phase=step.phase, stderr_tail=stderr_tail, during=step.what)

    @property
    def error_kind(self) -> ErrorKindName:
        """The error of a command that could not use the server: a config or auth failure keeps its kind (a
        config failure exits 2, as every config error does), any other is `unavailable` (3)."""
        return "config" if self.kind == "config" else "auth" if self.kind == "auth" else "unavailable"

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for_kind(self.error_kind)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
            "phase": self.phase,
            "stderr_tail": list(self.stderr_tail),
        }


@dataclass(frozen=True)
class ToolInfo:
    """One tool as a server lists it."""

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, object] = field(default_factory=dict)
    title: str | None = None
    output_schema: Mapping[str, object] | None = None
    annotations: Mapping[str, object] = field(default_factory=dict)
    # The tool as the server listed it, every field (`_meta`, `icons`, `execution`...): what a gateway passes on.
    # Empty for a tool known otherwise (a cache, a gateway's answer); never part of the JSON contract.
    raw: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def summary(self) -> str:
        """The first non-empty line of the description."""
        for line in self.description.splitlines():
            if line.strip():
                return line.strip()
        return ""

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "output_schema": dict(self.output_schema) if self.output_schema is not None else None,
            "annotations": dict(self.annotations),
        }


@dataclass(frozen=True)
class RejectedTool:
    """A tool a server listed that the protocol rejects (no name, no usable input schema...): not callable."""

    name: str
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class ServerTools:
    """The answer of one server to "which tools do you have?": tools, or the failure."""

    server: str
    transport: ListedTransport
    tools: tuple[ToolInfo, ...] = ()
    failure: Failure | None = None
    duration_ms: float = 0.0
    protocol_version: str | None = None
    server_version: str | None = None
    # What the server offers besides tools, as it sent them; None when not asked for (list --resources/--prompts)
    resources: tuple[dict[str, object], ...] | None = None
    resource_templates: tuple[dict[str, object], ...] | None = None
    prompts: tuple[dict[str, object], ...] | None = None
    rejected: tuple[RejectedTool, ...] = ()  # listed tools the protocol rejects; the valid ones are in `tools`
    # Sections (resources, resource_templates, prompts) the server failed to list, and why; its tools still count
    list_failures: Mapping[str, Failure] = field(default_factory=dict)
    # How to use the server, as it said in its handshake (what `serve` passes on to hosts); not in the JSON contract
    instructions: str | None = None
    python: str | None = None  # the interpreter that ran it, when not miroctl's own

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def healthy(self) -> bool:
        """Listed, every tool it listed is usable, and every section asked for was listed."""
        return self.ok and not self.rejected and not self.list_failures

    def to_dict(self) -> dict[str, object]:
        body = {
            "name": self.server,
            "ok": self.ok,
            "transport": self.transport,
            "protocol_version": self.protocol_version,
            "server_version": self.server_version,
            "duration_ms": round(self.duration_ms, 1),
            "tools": [tool.to_dict() for tool in self.tools],
            "failure": self.failure.to_dict() if self.failure else None,
        }
        if self.python is not None:
            body["python"] = self.python
        if self.rejected:
            body["rejected_tools"] = [item.to_dict() for item in self.rejected]
        if self.list_failures:
            body["list_failures"] = {key: failure.to_dict() for key, failure in self.list_failures.items()}
        for key in ("resources", "resource_templates", "prompts"):
            if getattr(self, key) is not None:
                body[key] = list(getattr(self, key))
        return body


def list_document(config: str, entries: Sequence[ServerTools]) -> dict[str, object]:
    """The document of `list --json` (and the gateway's /v1/list): exit 1 when any server is not healthy."""
    ok = all(entry.healthy for entry in entries)
    return {
        "schema": "miroctl.list/1",
        "config": config,
        "ok": ok,
        "exit_code": int(ExitCode.OK if ok else ExitCode.FAILED),
        "servers": [entry.to_dict() for entry in entries],
    }


class Record(Mapping[str, object]):
    """A small frozen record of a call's envelope that reads as the JSON it prints (`to_dict`): typed fields
    for code, and `record["key"]` (and `==` with a dict) for what reads the envelope as JSON."""

    def to_dict(self) -> dict[str, object]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> object:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    @classmethod
    def from_json(cls, data: object) -> Self | None:
        """The record of an envelope's JSON (a gateway's answer); None when it is not one."""
        if not isinstance(data, Mapping):
            return None
        names = set(getattr(cls, "__dataclass_fields__", {}))
        try:
            return cls(**{key: value for key, value in data.items() if key in names})
        except TypeError:  # a field it must have is missing
            return None


@dataclass(frozen=True, eq=False)
class Fallback(Record):
    """A failed scrape-type call answered (or not) by converting its URL locally."""

    kind: str
    url: str
    original_error: str | None
    original_error_kind: ErrorKindName | None
    ok: bool
    error: str | None = None  # why the conversion failed too

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {
            "kind": self.kind,
            "url": self.url,
            "original_error": self.original_error,
            "original_error_kind": self.original_error_kind,
            "ok": self.ok,
        }
        if not self.ok:
            body["error"] = self.error
        return body


@dataclass(frozen=True, eq=False)
class Truncated(Record):
    """A result cut to max_result_chars."""

    original_chars: int
    kept_chars: int
    limit: int
    structured_content_dropped: bool = False  # its structured content was too big to keep as well

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {
            "original_chars": self.original_chars,
            "kept_chars": self.kept_chars,
            "limit": self.limit,
        }
        if self.structured_content_dropped:
            body["structured_content_dropped"] = True
        return body


@dataclass(frozen=True, eq=False)
class Written(Record):
    """The whole result text went to `path` (`requested` and `error`: the path asked for could not be written)."""

    path: str
    chars: int
    requested: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {"path": self.path, "chars": self.chars}
        if self.error is not None:
            body.update(requested=self.requested, error=self.error)
        return body


@dataclass(frozen=True, eq=False)
class DecisionRecord(Record):
    """What the policy decided about a call, and who said yes when it asked."""

    allowed: bool
    state: DecisionState
    reason: str
    message: str
    confirmed_by: str | None = None

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {
            "allowed": self.allowed,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
        }
        if self.confirmed_by:
            body["confirmed_by"] = self.confirmed_by
        return body


class Envelope:
    """What an envelope with `error`, `error_kind` and `failure` says of itself: ok, and its exit code."""

    error: str | None
    error_kind: ErrorKindName | None
    failure: Failure | None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def exit_code(self) -> ExitCode:
        if self.failure is not None and self.error_kind == "unavailable":
            return self.failure.exit_code
        return exit_code_for_kind(self.error_kind)


@dataclass
class CallOutcome(Envelope):
    """The envelope of one tool call: exactly one of `result` or `error`, plus metadata."""

    server_name: str | None
    tool_name: str
    result: str | None = None
    error: str | None = None
    error_kind: ErrorKindName | None = None
    is_error: bool = False
    content: list[dict[str, object]] = field(default_factory=list)
    structured_content: object = None
    corrected_from: str | None = None
    fallback: Fallback | None = None
    truncated: Truncated | None = None
    duration_ms: float = 0.0
    hint: str | None = None
    failure: Failure | None = None
    candidates: list[str] = field(default_factory=list)
    decision: DecisionRecord | None = None
    notes: list[str] = field(default_factory=list)
    output: Written | None = None  # the whole result text went to this file
    correction: str | None = None  # the auto-correction note (`result` starts with it and a space); not in JSON

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {
            "schema": "miroctl.call/1",
            "server_name": self.server_name,
            "tool_name": self.tool_name,
        }
        if self.error is None:
            body["result"] = self.result if self.result is not None else ""
        else:
            body["error"] = self.error
            body["error_kind"] = self.error_kind
            body["hint"] = self.hint
        body.update(
            is_error=self.is_error or self.error is not None,  # an error envelope never says it is not one
            content=self.content,
            structured_content=self.structured_content,
            corrected_from=self.corrected_from,
            fallback=self.fallback.to_dict() if self.fallback is not None else None,
            truncated=self.truncated.to_dict() if self.truncated is not None else None,
            duration_ms=round(self.duration_ms, 1),
            exit_code=int(self.exit_code),
        )
        if self.candidates:
            body["candidates"] = self.candidates
        if self.failure is not None:
            body["failure"] = self.failure.to_dict()
        if self.decision is not None:
            body["decision"] = self.decision.to_dict()
        if self.notes:
            body["notes"] = self.notes
        if self.output is not None:
            body["output"] = self.output.to_dict()
        return body


@dataclass
class CallRequest:
    """One call as the user asked for it: names may be wrong, arguments still raw."""

    server: str | None
    tool: str
    arguments: Mapping[str, object] = field(default_factory=dict)
    pairs: Sequence[str] = ()
    timeout: float | None = None
    autocorrect: bool = True
    progress: ProgressFn | None = None
    output: str | None = None  # write the whole result text here (before any max_result_chars cut)
