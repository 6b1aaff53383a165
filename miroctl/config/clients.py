"""Where MCP clients keep the servers their users configured, and reading them all as sources.

HOME (and APPDATA, XDG_CONFIG_HOME, CODEX_HOME) come from the environment and the project is the current
directory, so what is found is what the user's own clients would find from here. A source that cannot be
read is a one-line problem of that source; the others are read all the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from miroctl.base.errors import ConfigError
from miroctl.base.models import ServerSpec
from miroctl.config import codex, ecosystem
from miroctl.config.ecosystem import Context, Template


@dataclass(frozen=True)
class Location:
    """One file a client reads: which client, which scope, the path, and how to find its servers in it."""

    client: str
    scope: str  # user | project | local (Claude Code's per-project entries in ~/.claude.json)
    path: Path
    format: str  # a JSON dialect name, or "codex-toml"
    key: tuple[str, ...] = ()  # where the servers object sits in the file (default: mcpServers / servers)


@dataclass
class Source:
    """What one location held: its servers as templates, and what was wrong."""

    location: Location
    templates: list[Template] = field(default_factory=list)
    problem: str | None = None  # the file as a whole could not be used

    def specs(self) -> list[ServerSpec]:
        return [t.spec() for t in self.templates]

    def to_dict(self, home: Path, project: Path | None = None) -> dict[str, object]:
        specs = self.specs()
        problems = (
            [self.problem] if self.problem else [f"{s.name}: {_short(s.error, s.source)}" for s in specs if s.error]
        )
        return {
            "client": self.location.client,
            "scope": self.location.scope,
            "path": shown(self.location.path, home, project),
            "format": self.location.format,
            "servers": [s.name for s in specs],
            "problems": problems,
        }


CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "codex", "gemini", "windsurf")


def home_dir() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def locations(home: Path, project: Path) -> list[Location]:
    """Every file each client reads, most specific scope last (it wins a name clash when merged)."""
    app = _app_support(home)
    codex_home = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else home / ".codex"
    claude_json = home / ".claude.json"
    return [
        Location("claude-desktop", "user", app / "Claude" / "claude_desktop_config.json", "claude-desktop"),
        Location("claude-code", "user", claude_json, "claude-code"),
        Location("claude-code", "project", project / ".mcp.json", "claude-code"),
        Location("claude-code", "local", claude_json, "claude-code", ("projects", str(project), "mcpServers")),
        Location("cursor", "user", home / ".cursor" / "mcp.json", "cursor"),
        Location("cursor", "project", project / ".cursor" / "mcp.json", "cursor"),
        Location("vscode", "user", app / "Code" / "User" / "mcp.json", "vscode"),
        Location("vscode", "project", project / ".vscode" / "mcp.json", "vscode"),
        Location("codex", "user", codex_home / "config.toml", "codex-toml"),
        Location("codex", "project", project / ".codex" / "config.toml", "codex-toml"),
        Location("gemini", "user", home / ".gemini" / "settings.json", "gemini"),
        Location("gemini", "project", project / ".gemini" / "settings.json", "gemini"),
        Location("windsurf", "user", home / ".codeium" / "windsurf" / "mcp_config.json", "windsurf"),
    ]


def _app_support(home: Path) -> Path:
    """Where desktop apps keep their settings on this OS (Claude Desktop, VS Code's user folder)."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def discover(home: Path | None = None, project: Path | None = None, client: str | None = None) -> list[Source]:
    """Every location that exists (of one client, when named), read; problems kept per source."""
    home, project = home or home_dir(), project or Path.cwd()
    context = Context(home=home, project=project)
    found = []
    for location in locations(home, project):
        if (client is None or location.client == client) and location.path.is_file():
            source = read(location, context)
            if source is not None:
                found.append(source)
    return found


def read(location: Location, context: Context) -> Source | None:
    """One location's servers; None when the file holds no servers for it (a settings file without any)."""
    source = Source(location)
    try:
        if location.format == "codex-toml":
            toml = codex.read_toml(location.path)
            if "mcp_servers" not in toml:
                return None
            source.templates = codex.templates(toml, location.path)
            return source
        data = ecosystem.read_json(location.path)
        servers = _dig(data, location.key) if location.key else data
        if servers is None:
            return None
        if not isinstance(servers, Mapping):
            raise ConfigError(f"{location.path}: expected an object, got {type(servers).__name__}")
        if location.key:
            servers = {"mcpServers": servers}
        if not ("mcpServers" in servers or "servers" in servers):
            return None
        source.templates = ecosystem.templates(servers, location.path, location.format, context)
    except ConfigError as exc:
        source.problem = exc.message
    return source


def read_file(path: Path, home: Path | None = None, project: Path | None = None) -> Source:
    """A config file named on the command line, in the dialect its name and place suggest."""
    fmt = "codex-toml" if path.suffix == ".toml" else ecosystem.guess_dialect(path)
    location = Location("file", "file", path, fmt)
    source = read(location, Context(home=home or home_dir(), project=project or Path.cwd()))
    if source is None:
        return Source(location, problem=f"{path}: no MCP servers in it (mcpServers, servers or mcp_servers)")
    return source


def _dig(data: object, keys: tuple[str, ...]) -> object:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def client_specs(name: str, home: Path | None = None, project: Path | None = None) -> tuple[list[ServerSpec], str]:
    """The servers a client would run from here, its scopes merged (the most specific wins a name), and a
    description of where they came from. ConfigError when the client has no readable config here."""
    sources = discover(home, project, client=name)
    usable = [s for s in sources if s.problem is None]
    if not usable:
        problems = "; ".join(s.problem for s in sources if s.problem)
        looked = ", ".join(
            shown(loc.path, home or home_dir())
            for loc in locations(home or home_dir(), project or Path.cwd())
            if loc.client == name
        )
        raise ConfigError(problems or f"no {name} config with MCP servers found", hint=f"looked in {looked}")
    merged: dict[str, ServerSpec] = {}
    for source in usable:
        for spec in source.specs():
            merged[spec.name] = spec
    paths = dict.fromkeys(str(s.location.path) for s in usable)  # the files, so two projects differ
    return list(merged.values()), f"{name} ({', '.join(paths)})"


def shown(path: Path, home: Path, project: Path | None = None) -> str:
    """A path as a user reads it: in the project relative to it, under HOME as ~/... (the nearer one wins)."""
    bases = [(base, prefix) for base, prefix in ((project, ""), (home, "~/")) if base and path.is_relative_to(base)]
    if not bases:
        return str(path)
    base, prefix = max(bases, key=lambda item: len(item[0].parts))
    return prefix + str(path.relative_to(base))


def _short(error: str | None, where: str | None) -> str:
    """An error without the `path#server: ` prefix the table already shows."""
    text = error or ""
    prefix = f"{where}: " if where else ""
    return text[len(prefix) :] if prefix and text.startswith(prefix) else text
