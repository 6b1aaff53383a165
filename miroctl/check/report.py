"""What `miroctl check` found: phases, one report per server, and the whole run.

`.to_dict()` on these is the JSON contract of `check --json` (`"schema": "miroctl.check/1"`);
the JUnit file is built from that same document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from miroctl.base.errors import ExitCode
from miroctl.base.models import Failure, ServerSpec, ToolInfo, phase_named
from miroctl.check.lint import Finding, lint_pool

if TYPE_CHECKING:
    from miroctl.check.lockfile import LockCheck

DEFAULT_CONCURRENCY = 8  # probes mostly wait on servers, so more than the 2 cores of a small CI runner


@dataclass
class Phase:
    """One step of a probe: how it went, how long it took, and a short note."""

    name: str
    status: str = "not_run"  # ok | failed | skipped | not_run
    ms: float | None = None
    detail: str | None = None

    def to_dict(self) -> dict[str, object]:
        ms = round(self.ms, 1) if self.ms is not None else None
        return {"status": self.status, "ms": ms, "detail": self.detail}

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> Phase:
        return cls(name, data.get("status") or "not_run", data.get("ms"), data.get("detail"))


@dataclass
class SmokeCall:
    """One smoke call a server file asked for, and its answer."""

    tool: str
    arguments: Mapping[str, object]
    ok: bool = False
    duration_ms: float = 0.0
    result: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "ok": self.ok,
            "duration_ms": round(self.duration_ms, 1),
            "result": self.result,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SmokeCall:
        return cls(
            data["tool"],
            dict(data.get("arguments") or {}),
            ok=bool(data.get("ok")),
            duration_ms=data.get("duration_ms") or 0.0,
            result=data.get("result"),
            error=data.get("error"),
        )


@dataclass
class ProbeReport:
    """Everything one probe learned about one server."""

    server: str
    transport: str
    where: str
    source: str | None = None
    phases: dict[str, Phase] = field(default_factory=dict)
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    capabilities: dict[str, object] = field(default_factory=dict)
    tools: tuple[ToolInfo, ...] = ()
    smoke: list[SmokeCall] = field(default_factory=list)
    failure: Failure | None = None
    allowed_failure: bool = False
    duration_ms: float = 0.0
    lint: list[Finding] | None = None  # with check --strict: the tools' portability findings
    python: str | None = None  # the interpreter that ran it, when not miroctl's own

    @classmethod
    def start(cls, spec: ServerSpec) -> ProbeReport:
        first = "spawn" if spec.transport == "stdio" else "connect"
        names = ("config", first, "initialize", "tools", "ping", "smoke")
        return cls(spec.name, spec.transport, spec.where, spec.source, {n: Phase(n) for n in names}, python=spec.python)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def status(self) -> str:
        return "healthy" if self.ok else "unhealthy"

    @property
    def start_phase(self) -> str:
        return "spawn" if "spawn" in self.phases else "connect"

    def passed(self, name: str, ms: float | None, detail: str | None = None) -> None:
        self.phases[name] = Phase(name, "ok", ms, detail)

    def skipped(self, name: str, detail: str) -> None:
        self.phases[name] = Phase(name, "skipped", None, detail)

    def fail(self, name: str, failure: Failure, ms: float | None) -> None:
        self.phases[name] = Phase(name, "failed", ms, failure.kind)
        self.failure = failure

    def to_dict(self) -> dict[str, object]:
        lint = {"lint": [f.to_dict() for f in self.lint]} if self.lint is not None else {}
        python = {"python": self.python} if self.python is not None else {}
        return {
            "name": self.server,
            "status": self.status,
            "ok": self.ok,
            "allowed_failure": self.allowed_failure,
            "transport": self.transport,
            "where": self.where,
            "source": self.source,
            "protocol_version": self.protocol_version,
            "server_name": self.server_name,
            "server_version": self.server_version,
            "capabilities": self.capabilities,
            "tool_count": len(self.tools) if self.phases["tools"].status == "ok" else None,
            "tools": sorted(t.name for t in self.tools),
            "phases": {name: phase.to_dict() for name, phase in self.phases.items()},
            "smoke": [call.to_dict() for call in self.smoke],
            "failure": self.failure.to_dict() if self.failure else None,
            "duration_ms": round(self.duration_ms, 1),
            **python,
            **lint,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], surface: Mapping[str, Any] | None = None) -> ProbeReport:
        """A report back from its `to_dict()`; `surface` (tool -> description, input_schema) fills in the tools."""
        surface = surface or {}
        tools = tuple(
            ToolInfo(
                data["name"],
                name,
                (surface.get(name) or {}).get("description") or "",
                (surface.get(name) or {}).get("input_schema") or {},
            )
            for name in data.get("tools") or ()
        )
        failure = data.get("failure")
        return cls(
            data["name"],
            data.get("transport") or "",
            data.get("where") or "",
            data.get("source"),
            phases={name: Phase.from_dict(name, phase) for name, phase in (data.get("phases") or {}).items()},
            protocol_version=data.get("protocol_version"),
            server_name=data.get("server_name"),
            server_version=data.get("server_version"),
            capabilities=dict(data.get("capabilities") or {}),
            tools=tools,
            smoke=[SmokeCall.from_dict(call) for call in data.get("smoke") or ()],
            failure=_failure(failure) if failure else None,
            allowed_failure=bool(data.get("allowed_failure")),
            duration_ms=data.get("duration_ms") or 0.0,
            lint=[Finding.from_dict(data["name"], f) for f in data["lint"]] if data.get("lint") is not None else None,
            python=data.get("python"),
        )


def _failure(data: Mapping[str, Any]) -> Failure:
    return Failure(
        data.get("kind") or "unavailable",
        data.get("message") or "",
        hint=data.get("hint"),
        phase=phase_named(data.get("phase")),
        stderr_tail=tuple(data.get("stderr_tail") or ()),
    )


@dataclass
class CheckRun:
    """One `miroctl check`: the reports, the lock comparison, and what it all means for the exit code."""

    reports: list[ProbeReport]
    config: str
    duration_ms: float = 0.0
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = None
    smoke: bool = False
    lock: LockCheck | None = None  # when --lock or --against was given
    strict: tuple[str, ...] | None = None  # the providers of check --strict

    def lint_tools(self, providers: Sequence[str]) -> None:
        """Lint the tools of the healthy servers for these providers (duplicates across all of them)."""
        self.strict = tuple(providers)
        healthy = {r.server: r.tools for r in self.reports if r.ok}
        found = lint_pool(healthy, providers)
        for report in self.reports:
            report.lint = found.get(report.server, []) if report.ok else None

    @property
    def findings(self) -> list[Finding]:
        """The lint findings that count: those of healthy servers that the lock file's baseline does not accept."""
        every = [f for r in self.reports if r.ok and r.lint for f in r.lint]
        return [f for f in every if self.lock is None or not self.lock.accepts(f)]

    def allow(self, names: Sequence[str]) -> None:
        for report in self.reports:
            report.allowed_failure = report.server in names and not report.ok

    @property
    def unhealthy(self) -> list[ProbeReport]:
        return [r for r in self.reports if not r.ok and not r.allowed_failure]

    @property
    def exit_code(self) -> int:
        drifted = self.lock is not None and bool(self.lock.changes)
        if self.unhealthy or drifted:
            return int(ExitCode.FAILED)
        return int(ExitCode.LINT) if self.findings else 0

    def summary(self) -> dict[str, int]:
        healthy = sum(r.ok for r in self.reports)
        allowed = sum(r.allowed_failure for r in self.reports)
        counts = {
            "servers": len(self.reports),
            "healthy": healthy,
            "unhealthy": len(self.reports) - healthy,
            "allowed_failures": allowed,
        }
        if self.strict is not None:
            counts["lint_findings"] = len(self.findings)
        return counts

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": "miroctl.check/1",
            "config": self.config,
            "ok": self.exit_code == 0,
            "exit_code": self.exit_code,
            "summary": self.summary(),
            "duration_ms": round(self.duration_ms, 1),
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "smoke": self.smoke,
            "servers": [self._server(report) for report in self.reports],
            "lock": self.lock.to_dict() if self.lock is not None else None,
            **({"strict": list(self.strict)} if self.strict is not None else {}),
        }

    def _server(self, report: ProbeReport) -> dict[str, object]:
        """A report's document; with --strict, each finding says whether the lock's baseline accepts it."""
        document = report.to_dict()
        if report.lint is not None:
            lock = self.lock
            document["lint"] = [{**f.to_dict(), "accepted": lock is not None and lock.accepts(f)} for f in report.lint]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], given: object = None) -> CheckRun:
        """A run back from a `check --json` document (its lock left out); `given` the surface that
        lockfile.surface gives (a gateway's answer, checked where each server's part is read)."""
        surface = given if isinstance(given, Mapping) else {}
        reports = [ProbeReport.from_dict(server, surface.get(server["name"])) for server in data.get("servers") or ()]
        return cls(
            reports,
            data.get("config") or "",
            duration_ms=data.get("duration_ms") or 0.0,
            concurrency=data.get("concurrency") or DEFAULT_CONCURRENCY,
            timeout=data.get("timeout"),
            smoke=bool(data.get("smoke")),
        )
