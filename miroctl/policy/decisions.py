"""What may be listed and called: tool metadata, permission modes, allowlists, URL rules, result limits.

Pure decisions, no I/O. Every decision carries a reason type that can be grepped in logs:

    blacklist       the profile's tool_blacklist names the tool
    allowlist       the profile has an allowlist, the tool is not on it and is not read-only
    url_blocked     an argument holds a URL that the url_rules block
    mode_read_only  mode read_only, and the tool is not read-only
    guardrail_high  the config marks the tool `risk: high` and policy.allow_high does not name it
    guardrail_notify the config marks the tool `category: notify` and policy.allow_notify does not name it
    mode_ask        mode ask: a destructive, high-risk or notify tool needs a yes (given, or missing)
    ok              nothing stands in the way

Decisions have three states, as in the seeds: allow, ask (allowed only with a yes) and deny.
Denied tools are invisible in `list` and `serve`; tools that need a yes stay visible.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase

from miroctl.base.models import DecisionState, ServerSpec, ToolInfo
from miroctl.config.loader import Profile
from miroctl.config.sections import ASK_TIMEOUT, Mode
from miroctl.policy.urls import UrlRules

__all__ = ["ALLOW", "Decision", "Mode", "Policy", "ToolMeta", "matches", "merge_meta", "tool_settings"]


SCRAPE_TOOLS = ("scrape", "scrape_website")
DEMO_SCRAPE_CHARS = 20_000  # the seeds' DEMO_MODE cut for scrape results
# Config keys of per-tool metadata, and the MCP annotation each one can be lowered by.
ANNOTATION_OF = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}
TRUSTED_VALUE = {"read_only": True, "destructive": False, "idempotent": True, "open_world": False}
# When info is not known yet (before connecting), assume the most trusting annotations: an early
# decision may then only deny what no annotation could make allowed.
OPTIMISTIC = {ANNOTATION_OF[k]: v for k, v in TRUSTED_VALUE.items()}


@dataclass(frozen=True)
class Decision:
    """Whether one call may go ahead, and why."""

    allowed: bool
    reason: str = "ok"
    message: str = ""
    needs_confirmation: bool = False  # the "ask" state: allowed only with a yes
    confirmed_by: str | None = None  # "prompt", "--yes" or "profile" once a yes was given

    @property
    def state(self) -> DecisionState:
        return "allow" if self.allowed else "ask" if self.needs_confirmation else "deny"

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

    def confirmed(self, by: str) -> Decision:
        return replace(self, allowed=True, needs_confirmation=False, confirmed_by=by)

    def refused(self, message: str) -> Decision:
        return replace(self, allowed=False, needs_confirmation=False, message=message)


ALLOW = Decision(True)


@dataclass(frozen=True)
class ToolMeta:
    """What miroctl believes about a tool: config over annotations, annotations only ever lowering trust."""

    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True
    risk: str = "normal"
    category: str | None = None  # "notify": it reaches people (mail, chat, pager)
    max_result_chars: int | None = None
    concurrency_safe: bool = True

    @property
    def retry_safe(self) -> bool:
        """Whether repeating a call that may have reached the server can do no harm."""
        return self.read_only or self.idempotent

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def merge_meta(config: Mapping[str, object], annotations: Mapping[str, object] | None) -> ToolMeta:
    """The tool's metadata: each config value, lowered by a less trusting annotation; else the hint."""
    hints = annotations or {}

    def believed(key: str) -> bool | None:
        configured = config.get(key)  # a bool, as the config checked it
        return _less_trusted(key, configured if isinstance(configured, bool) else None, hints.get(ANNOTATION_OF[key]))

    read_only = bool(believed("read_only"))
    destructive = believed("destructive")
    if destructive is None:  # MCP: destructiveHint defaults to true, meaningful if not read-only
        destructive = not read_only
    open_world = believed("open_world")
    return ToolMeta(
        read_only=read_only,
        destructive=destructive and not read_only,
        idempotent=bool(believed("idempotent")),
        open_world=True if open_world is None else open_world,
        risk=str(config.get("risk", "normal")),
        category=category if isinstance(category := config.get("category"), str) else None,
        max_result_chars=_whole(config.get("max_result_chars")),
        concurrency_safe=bool(config.get("concurrency_safe", True)),
    )


def _whole(value: object) -> int | None:
    """A count the config checked (max_result_chars), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _less_trusted(key: str, configured: bool | None, hinted: object) -> bool | None:
    if not isinstance(hinted, bool):
        return configured
    if configured is None:
        return hinted
    trusted = TRUSTED_VALUE[key]
    return trusted if configured == trusted and hinted == trusted else not trusted


def tool_settings(spec: ServerSpec, tool: str) -> dict[str, object]:
    """The server yaml's settings for one tool: glob entries (least specific first), then its own."""
    settings: dict[str, object] = {}
    patterns = sorted((p for p in spec.tools if p != tool and _is_glob(p) and fnmatchcase(tool, p)), key=len)
    for pattern in patterns:
        settings.update(spec.tools[pattern])
    settings.update(spec.tools.get(tool) or {})
    return settings


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def matches(patterns: Iterable[str], spec: ServerSpec, tool: str) -> str | None:
    """The first pattern naming the tool: `TOOL`, `SERVER.TOOL` or a glob of either (`reading.*`)."""
    names = {f"{spec.name}.{tool}", f"{spec.name.removeprefix('tool-')}.{tool}"}
    for pattern in patterns:
        if "." in pattern and any(fnmatchcase(name, pattern) for name in names):
            return pattern
        if "." not in pattern and fnmatchcase(tool, pattern):
            return pattern
    return None


@dataclass(frozen=True)
class Policy:
    """The pool's rules, built from the profile (and the command line's --mode / --yes)."""

    blacklist: frozenset[tuple[str, str]] = frozenset()
    mode: str = "normal"
    allowlist: tuple[str, ...] = ()
    allow_high: tuple[str, ...] = ()
    allow_notify: tuple[str, ...] = ()
    assume_yes: bool = False
    ask_timeout: float = ASK_TIMEOUT  # how long a gateway's host has to answer mode ask's question
    url_rules: UrlRules = field(default_factory=UrlRules)
    max_result_chars: int | None = None
    demo_mode: bool = False
    scrape_tools: tuple[str, ...] = SCRAPE_TOOLS

    @classmethod
    def from_profile(cls, profile: Profile, environ: Mapping[str, str] | None = None) -> Policy:
        """The profile's rules; `DEMO_MODE=1` in the environment cuts scrape results as in the seeds."""
        sections = profile.sections
        rules = sections.policy
        return cls(
            blacklist=profile.blacklist,
            mode=rules.mode.value,
            allowlist=rules.allowlist,
            allow_high=rules.allow_high,
            allow_notify=rules.allow_notify,
            assume_yes=rules.assume_yes,
            ask_timeout=rules.ask_timeout,
            url_rules=UrlRules(sections.url_block) if sections.url_block is not None else UrlRules(),
            max_result_chars=sections.max_result_chars,
            demo_mode=(environ if environ is not None else os.environ).get("DEMO_MODE") == "1",
            scrape_tools=sections.markitdown.tools or SCRAPE_TOOLS,
        )

    def with_overrides(self, mode: str | None = None, assume_yes: bool | None = None) -> Policy:
        """The same rules with the command line's --mode and --yes on top."""
        return replace(self, mode=mode or self.mode, assume_yes=self.assume_yes if assume_yes is None else assume_yes)

    # ------------------------------------------------------------------------------------------ metadata

    def meta(self, spec: ServerSpec, tool: str, info: ToolInfo | None = None) -> ToolMeta:
        """The tool's merged metadata; without `info` the most trusting annotations are assumed."""
        annotations = info.annotations if info is not None else OPTIMISTIC
        return merge_meta(tool_settings(spec, tool), annotations)

    def result_limit(self, spec: ServerSpec, tool: str) -> int | None:
        """max_result_chars for the tool: its own, else its server's (`*`), else the profile's."""
        limit = _whole(tool_settings(spec, tool).get("max_result_chars"))
        if limit is None:
            limit = self.max_result_chars
        if limit is None and self.demo_mode and self.is_scrape(tool):
            limit = DEMO_SCRAPE_CHARS
        return limit

    def is_scrape(self, tool: str) -> bool:
        return any(fnmatchcase(tool, pattern) for pattern in self.scrape_tools)

    # ------------------------------------------------------------------------------------------ decisions

    def blacklisted(self, spec: ServerSpec, tool: str) -> bool:
        names = {spec.name, spec.name.removeprefix("tool-")}
        return any(fnmatchcase(name, s) and fnmatchcase(tool, t) for s, t in self.blacklist for name in names)

    def visible(self, spec: ServerSpec, tool: ToolInfo) -> bool:
        """Whether a tool is shown in `list` and exposed by `serve` (tools that need a yes are)."""
        return self.decide(spec, tool.name, tool).state != "deny"

    def decide(
        self, spec: ServerSpec, tool: str, info: ToolInfo | None = None, arguments: Mapping[str, object] | None = None
    ) -> Decision:
        """Whether a call of `tool` on `spec` may go ahead (info and arguments when known)."""
        where = f"{spec.name}.{tool}"
        if self.blacklisted(spec, tool):
            return Decision(False, "blacklist", f"{where} is blacklisted by the profile")
        meta = self.meta(spec, tool, info)
        if self.allowlist and not meta.read_only and matches(self.allowlist, spec, tool) is None:
            return Decision(False, "allowlist", f"{where} is not on the profile's allowlist and is not read-only")
        if arguments:
            blocked = self.check_urls(arguments)
            if blocked is not None:
                return blocked
        return self._by_mode(where, meta, spec, tool)

    def check_urls(self, arguments: object) -> Decision | None:
        """A url_blocked decision when any argument holds a blocked URL."""
        found = self.url_rules.first_blocked(arguments)
        if found is None:
            return None
        url, pattern = found
        if not url:
            return Decision(False, "url_blocked", f"the arguments hold {pattern.strip('<>')}: refused unchecked")
        shown = url if len(url) <= 200 else url[:200] + "..."
        return Decision(False, "url_blocked", f"URL {shown} is blocked by the url rule {pattern!r}")

    def _by_mode(self, where: str, meta: ToolMeta, spec: ServerSpec, tool: str) -> Decision:
        if self.mode == "bypass":
            return ALLOW
        if self.mode == "read_only" and not meta.read_only:
            return Decision(False, "mode_read_only", f"{where} is not read-only, and the mode is read_only")
        notify = meta.category == "notify" and matches(self.allow_notify, spec, tool) is None
        if self.mode == "ask" and (meta.destructive or meta.risk == "high" or notify):
            kind = "high-risk" if meta.risk == "high" else "destructive" if meta.destructive else "a notify tool"
            return Decision(False, "mode_ask", f"{where} is {kind}: mode ask needs a yes", needs_confirmation=True)
        if meta.risk == "high" and matches(self.allow_high, spec, tool) is None:
            return Decision(
                False, "guardrail_high", f"{where} is marked risk: high and policy.allow_high does not name it"
            )
        if notify:
            return Decision(
                False,
                "guardrail_notify",
                f"{where} is marked category: notify and policy.allow_notify does not name it",
            )
        return ALLOW
