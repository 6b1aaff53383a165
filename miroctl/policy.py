"""What may be listed and called: pure decisions, no I/O.

Every decision carries a reason type that can be grepped in logs (`blacklist`, `ok`, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from miroctl.config import Profile
from miroctl.models import ServerSpec, ToolInfo


@dataclass(frozen=True)
class Decision:
    """Whether one call may go ahead, and why."""

    allowed: bool
    reason: str = "ok"
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "reason": self.reason, "message": self.message}


ALLOW = Decision(True)


@dataclass(frozen=True)
class Policy:
    """The pool's rules, built from the profile."""

    blacklist: frozenset[tuple[str, str]] = frozenset()
    sections: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_profile(cls, profile: Profile) -> Policy:
        return cls(blacklist=profile.blacklist, sections=profile.sections)

    def blacklisted(self, spec: ServerSpec, tool: str) -> bool:
        names = {spec.name, spec.name.removeprefix("tool-")}
        return any((name, tool) in self.blacklist for name in names)

    def visible(self, spec: ServerSpec, tool: ToolInfo) -> bool:
        """Whether a tool is shown in `list` and exposed by `serve`."""
        return self.decide(spec, tool.name, tool).allowed

    def decide(self, spec: ServerSpec, tool: str, info: ToolInfo | None = None,
               arguments: Mapping[str, Any] | None = None) -> Decision:
        """Whether a call of `tool` on `spec` may go ahead (info and arguments when known)."""
        if self.blacklisted(spec, tool):
            return Decision(False, "blacklist", f"{spec.name}.{tool} is blacklisted by the profile")
        return ALLOW
