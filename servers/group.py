"""group: tools of several bundled servers served as one, under another server's name and tool names.

MiroFlow and MiroThinker group their tools otherwise than miroctl does (MiroFlow's tool-searching holds
search, Wikipedia, the Wayback Machine and scraping), and an agent prompted with their names calls them by
those names. A server file runs `python -P -m miroctl.servers group` with these settings (environment):

- GROUP_NAME: the name the server gives itself (upstream's server name).
- GROUP_TOOLS: the tools, separated by commas or spaces, each `module.function` or `module.function=name`:
  a tool function of a bundled server module (search, wiki, scrape, ...), served as `name` (default: its own).
  A function its module serves as a tool keeps that tool's description and annotations; one it marks
  `@groupable(...)` (upstream's form of a tool, with other names or parameters) has its docstring and those
  annotations. Other functions are refused.
- TOOL_ERRORS: `error` (default) answers a failed tool with an error result, as every bundled server does;
  `text` answers it as upstream's own servers do: a result that is not marked an error, whose text is
  `[ERROR]: why` (MiroThinker's orchestrator rolls a turn back on an error result, not on this text).
  Arguments that do not fit the tool's schema and unknown tools stay errors either way, as upstream's are.

The settings are part of the environment, so the quick start (helpers/quickstart.py) keeps one snapshot
of each grouping's tool list.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent

from .helpers.common import GROUPABLE, setting

ERROR_PREFIX = "[ERROR]: "
ENTRY = re.compile(r"([a-z_][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)(?:=([A-Za-z0-9_-]{1,64}))?")
SERVERS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Entry:
    """One tool of the group: where its function is, and the name it is served as."""

    module: str
    function: str
    name: str


def parse(spec: str) -> list[Entry]:
    """GROUP_TOOLS read: every entry checked, or a ValueError naming the first bad one."""
    entries = []
    for word in spec.replace(",", " ").split():
        match = ENTRY.fullmatch(word)
        if match is None:
            raise ValueError(f"GROUP_TOOLS entry {word!r} is not module.function or module.function=name")
        module, function, name = match.groups()
        if module == "group" or not (SERVERS / f"{module}.py").is_file():
            raise ValueError(f"GROUP_TOOLS entry {word!r}: {module!r} is not a bundled server module")
        entries.append(Entry(module, function, name or function))
    if not entries:
        raise ValueError("GROUP_TOOLS is empty: name the tools of this server")
    names = [entry.name for entry in entries]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"GROUP_TOOLS names {', '.join(twice)} more than once")
    return entries


class Grouped(MCPServer):
    """An MCPServer whose tools' own failures can be answered as upstream's servers answer them."""

    def __init__(self, name: str, *, failures_as_text: bool) -> None:
        super().__init__(name, version="0.1.0", log_level="WARNING")
        self.failures_as_text = failures_as_text

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            answer = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not self.failures_as_text or isinstance(exc, UnexpectedToolError):
                raise
            if not isinstance(cause, ToolError | ResourceError):  # arguments refused, or no such tool
                raise
            return as_text(str(cause))
        if self.failures_as_text and isinstance(answer, CallToolResult) and answer.is_error:
            said = " ".join(c.text for c in answer.content if isinstance(c, TextContent))
            return as_text(said)
        return answer


def as_text(why: str) -> CallToolResult:
    """A failure as upstream's servers return it: plain text, not marked an error."""
    return CallToolResult(content=[TextContent(type="text", text=ERROR_PREFIX + why)])


def build(name: str, tools: str, errors: str = "error") -> Grouped:
    """The server GROUP_NAME, GROUP_TOOLS and TOOL_ERRORS describe."""
    if errors not in ("error", "text"):
        raise ValueError(f"TOOL_ERRORS must be error or text, got {errors!r}")
    server = Grouped(name, failures_as_text=errors == "text")
    for entry in parse(tools):
        module = importlib.import_module(f"{__package__}.{entry.module}")
        function = getattr(module, entry.function, None)
        served = _served(module).get(entry.function)
        if not callable(function) or (served is None and function not in GROUPABLE):
            raise ValueError(f"GROUP_TOOLS entry {entry.module}.{entry.function}: the module has no such tool")
        description = served.description if served is not None else None
        annotations = served.annotations if served is not None else GROUPABLE[function]
        server.add_tool(
            function, name=entry.name, description=description, annotations=annotations, structured_output=False
        )
    return server


def _served(module: Any) -> Mapping[str, Any]:
    """The tools a bundled server module serves itself, by function name (its description and annotations)."""
    own = getattr(module, "mcp", None)
    if not isinstance(own, MCPServer):
        return {}
    return {tool.fn.__name__: tool for tool in own._tool_manager.list_tools()}  # the SDK has no public view of fn


def from_env() -> Grouped:
    try:
        return build(setting("GROUP_NAME") or "group", setting("GROUP_TOOLS") or "", setting("TOOL_ERRORS") or "error")
    except ValueError as exc:
        sys.exit(f"group: {exc}")


if __name__ == "__main__":
    from_env().run("stdio")
