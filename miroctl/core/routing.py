"""Which server and tool a call goes to: lookup, auto-correction of server names, did-you-mean.

As in the seeds, a server name is corrected only when exactly one server has the tool; with several
candidates the caller is asked to choose, and a misspelled tool is never replaced by another tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from miroctl.base.errors import NotFound, PolicyDenied, UsageError
from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.base.text import suggest, unknown_server_hint
from miroctl.config.loader import Config
from miroctl.policy.decisions import Decision, Policy

FindTool = Callable[[str, Sequence[str]], Awaitable[list[ToolInfo]]]
ListTools = Callable[[ServerSpec], Awaitable[tuple[ToolInfo, ...]]]


class Denied(PolicyDenied):
    """The policy refused a tool before its server was asked for its tools; `decision` says why."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.message, hint=f"reason: {decision.reason}")
        self.decision = decision


@dataclass(frozen=True)
class Route:
    spec: ServerSpec
    tool: ToolInfo
    corrected_from: str | None = None


@dataclass
class Router:
    config: Config
    policy: Policy
    tools_of: ListTools  # raises pool.Unavailable
    find_tool: FindTool  # every visible tool of that name on the default servers, except the excluded

    async def resolve(self, server: str | None, tool: str, autocorrect: bool = True) -> Route:
        spec = self.config.get(server) if server else None
        if spec is None:
            return await self._without_server(server, tool, autocorrect)
        if not tool:
            return await self._missing_tool(spec)
        self._check_blacklist(spec, tool)
        tools = await self.tools_of(spec)
        found = next((t for t in tools if t.name == tool), None)
        if found is not None:
            return Route(spec, found)
        names = [t.name for t in tools]
        if autocorrect:  # a tool of exactly that name elsewhere beats a near miss of one of its own
            holders = await self.find_tool(tool, [spec.name])
            if len(holders) == 1:
                return self._corrected(holders[0], spec.name)
            if holders:
                raise _ambiguous(tool, holders, f"server {spec.name!r} has no tool {tool!r}")
        typo = suggest(tool, names)
        if typo is not None:  # a near miss of one of its own tools, and no other server has the tool itself
            raise NotFound(f"server {spec.name!r} has no tool {tool!r}", hint=typo)
        raise NotFound(f"server {spec.name!r} has no tool {tool!r}", hint=f"its tools: {', '.join(names) or '(none)'}")

    async def _missing_tool(self, spec: ServerSpec) -> Route:
        """`miroctl call SERVER` without a tool: that server alone is asked for its tools, to name them. A
        server with a tool of its own name takes the word as that tool."""
        tools = [t for t in await self.tools_of(spec) if self.policy.visible(spec, t)]
        own = next((t for t in tools if t.name == spec.name), None)
        if own is not None:
            self._check_blacklist(spec, own.name)
            return Route(spec, own)
        names = ", ".join(t.name for t in tools) or "(none)"
        example = f"miroctl call {spec.name} {tools[0].name} [key=value ...]" if tools else f"miroctl list {spec.name}"
        raise UsageError(f"missing tool name; tools of {spec.name}: {names}", hint=example)

    async def reroute(self, route: Route) -> Route | None:
        """The server answered "Unknown tool": the one other server that has it, if exactly one."""
        holders = await self.find_tool(route.tool.name, [route.spec.name])
        return self._corrected(holders[0], route.spec.name) if len(holders) == 1 else None

    async def _without_server(self, server: str | None, tool: str, autocorrect: bool) -> Route:
        if server and not autocorrect:
            raise NotFound(f"no server named {server!r}", hint=unknown_server_hint(server, self.config.names()))
        holders = await self.find_tool(tool, [])
        if len(holders) == 1:
            return self._corrected(holders[0], server)
        if holders:
            prefix = f"no server named {server!r}; " if server else ""
            raise _ambiguous(tool, holders, f"{prefix}tool {tool!r} is on several servers")
        raise NotFound(self._nowhere(server, tool), hint=self._mixup_hint(server, tool))

    def _corrected(self, tool: ToolInfo, given: str | None) -> Route:
        spec = self.config.get(tool.server)
        assert spec is not None
        self._check_blacklist(spec, tool.name)
        return Route(spec, tool, corrected_from=given)

    def _check_blacklist(self, spec: ServerSpec, tool: str) -> None:
        decision = self.policy.decide(spec, tool)
        if decision.state == "deny":  # "ask" is settled once the tool's annotations are known
            raise Denied(decision)

    def _nowhere(self, server: str | None, tool: str) -> str:
        if server:
            return f"no server named {server!r}, and no server has a tool named {tool!r}"
        return f"no server has a tool named {tool!r}"

    def _mixup_hint(self, server: str | None, tool: str) -> str | None:
        if server and self.config.get(tool) is not None:
            return f"server and tool swapped? try: miroctl call {tool} {server}"
        if server:
            return suggest(server, self.config.names()) or "check the server and tool names with: miroctl list"
        return "check the tool names with: miroctl list"


def _ambiguous(tool: str, holders: Sequence[ToolInfo], lead: str) -> NotFound:
    servers = sorted(t.server for t in holders)
    return NotFound(
        f"{lead}: {', '.join(servers)}", hint=f"name one: miroctl call {servers[0]} {tool}", candidates=servers
    )
