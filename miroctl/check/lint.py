"""`check --strict`: tool-schema portability findings for the model providers agents send tools to.

A finding names the server, the tool, the JSON path inside the tool, the problem, a suggested fix and the
providers that would reject it (the rules are in lint_rules). `--strict` checks for every provider as it
takes tools by default, `--strict=openai,gemini` for those only, `--strict=openai-strict` for OpenAI's
strict mode. Findings are data: the check's exit code is 7 when the only thing
wrong is findings (a failing server keeps its own code).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from miroctl.base.errors import UsageError
from miroctl.base.models import ToolInfo
from miroctl.base.text import suggest
from miroctl.check.lint_rules import (
    DEFAULT,
    EVERY,
    PROVIDERS,
    Problem,
    description_problems,
    name_problems,
    root_problems,
    schema_problems,
)

MAX_PER_TOOL = 50  # a schema that breaks every rule is summed up after this many


@dataclass(frozen=True)
class Finding:
    """One portability problem of one tool."""

    server: str
    tool: str
    path: str
    rule: str
    providers: tuple[str, ...]
    problem: str
    fix: str

    @property
    def key(self) -> str:
        """What identifies the finding across runs (the lock file's baseline records these)."""
        return f"{self.tool} {self.path} {self.rule}"

    def to_dict(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "path": self.path,
            "rule": self.rule,
            "providers": list(self.providers),
            "problem": self.problem,
            "fix": self.fix,
        }

    @classmethod
    def from_dict(cls, server: str, data: Mapping[str, object]) -> Finding:
        return cls(
            server,
            str(data.get("tool") or ""),
            str(data.get("path") or ""),
            str(data.get("rule") or ""),
            tuple(str(p) for p in providers) if isinstance(providers := data.get("providers"), list) else (),
            str(data.get("problem") or ""),
            str(data.get("fix") or ""),
        )


def parse_providers(text: str) -> tuple[str, ...]:
    """A comma list of providers, `all` standing for what a bare --strict means (openai, anthropic, gemini);
    UsageError for an unknown name."""
    given = [part.strip().lower() for part in text.split(",") if part.strip()] or ["all"]
    names = [name for part in given for name in (DEFAULT if part == "all" else (part,))]
    for name in names:
        if name not in PROVIDERS:
            hint = suggest(name, PROVIDERS) or f"choose from: all ({', '.join(DEFAULT)}), {', '.join(PROVIDERS)}"
            raise UsageError(f"--strict={text}: {name!r} is not a provider ", hint=hint)
    return tuple(p for p in PROVIDERS if p in names)


def lint_tool(tool: ToolInfo, providers: Sequence[str]) -> list[Finding]:
    """Every finding of one tool for the chosen providers, at most MAX_PER_TOOL (then one that says so)."""
    chosen = frozenset(providers)
    problems: list[Problem] = [
        *name_problems(tool.name),
        *description_problems(tool.description),
        *root_problems(tool.input_schema),
        *schema_problems(tool.input_schema, chosen),
    ]
    found = [_finding(tool, p, chosen) for p in problems if p.providers & chosen]
    if len(found) > MAX_PER_TOOL:
        more = len(found) - MAX_PER_TOOL
        found = found[:MAX_PER_TOOL]
        found.append(
            Finding(
                tool.server, tool.name, "input_schema", "more", tuple(chosen & EVERY), f"{more} more", "fix the above"
            )
        )
    return found


def lint_pool(tools: Mapping[str, Sequence[ToolInfo]], providers: Sequence[str]) -> dict[str, list[Finding]]:
    """Findings per server, with names that two tools of the pool share (an agent given both sees a clash)."""
    found = {server: [f for t in listed for f in lint_tool(t, providers)] for server, listed in tools.items()}
    owners: dict[str, list[str]] = {}
    for server, listed in tools.items():
        for tool in listed:
            owners.setdefault(tool.name, []).append(server)
    for name, servers in owners.items():
        if len(servers) < 2:
            continue
        for server in dict.fromkeys(servers):
            others = sorted({s for s in servers if s != server}) or [server]
            found[server].append(
                Finding(
                    server,
                    name,
                    "name",
                    "duplicate-name",
                    tuple(p for p in PROVIDERS if p in providers),
                    f"tool name {name!r} is also offered by {', '.join(others)}",
                    "rename one of them, or expose the pool through `miroctl serve`, which prefixes server names",
                )
            )
    return found


def _finding(tool: ToolInfo, problem: Problem, chosen: frozenset[str]) -> Finding:
    providers = tuple(p for p in PROVIDERS if p in problem.providers & chosen)
    return Finding(tool.server, tool.name, problem.path, problem.rule, providers, problem.problem, problem.fix)


def keys(findings: Iterable[Finding]) -> list[str]:
    """The sorted, distinct keys of findings: what a lock file records as the accepted baseline."""
    return sorted({f.key for f in findings})
