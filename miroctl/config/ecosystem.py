"""The ecosystem's JSON configs, each in its client's dialect, translated into miroctl server templates.

One family, several dialects: Claude Desktop, Claude Code (`.mcp.json`, `~/.claude.json`), Cursor, VS Code
(`servers` and `inputs`), Gemini CLI (`httpUrl`), Windsurf (`serverUrl`), and a generic one for any other
file. Each client expands variables its own way; every reference to the environment becomes a
`${oc.env:VAR}` in the template, every other variable (the workspace folder, the home directory) its value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from miroctl.base.errors import ConfigError
from miroctl.base.models import ServerSpec
from miroctl.config.resolve import spec_from_template

MAX_FILE_BYTES = 8 * 1024 * 1024  # ~/.claude.json keeps history too; anything bigger is not a config
MAX_NESTING = 64  # levels of mappings and lists in a config file (check_nesting)
MAX_YAML_VALUES = 100_000  # values of a yaml config, its aliases expanded (check_nesting)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_CLAUDE_CODE = re.compile(rf"\$\{{(?P<env>{_NAME})(?::-(?P<default>[^}}]*))?\}}")  # ${VAR}, ${VAR:-default}
_GENERIC = re.compile(rf"\$\{{(?:env:)?(?P<env>{_NAME})\}}")  # ${VAR}, ${env:VAR}
_GEMINI = re.compile(rf"\$\{{(?P<env>{_NAME})\}}|\$(?P<bare>{_NAME})")  # ${VAR}, $VAR
_EDITOR = re.compile(r"\$\{(?:env:(?P<env>[A-Za-z_][A-Za-z0-9_]*)|input:(?P<input>[^}]+)|(?P<var>[^}]+))\}")


@dataclass(frozen=True)
class Context:
    """What a client's variables stand for: the project (workspace) folder and the home directory."""

    home: Path
    project: Path
    inputs: Mapping[str, Mapping[str, object]] = field(default_factory=dict)  # VS Code's `inputs` by id


@dataclass
class Template:
    """One server translated into miroctl's settings, with what its client would have asked for."""

    name: str
    settings: dict[str, object]
    where: str
    inputs: dict[str, str] = field(default_factory=dict)  # variable -> VS Code input id
    error: str | None = None

    def spec(self) -> ServerSpec:
        if self.error:
            return ServerSpec(name=self.name, error=self.error, source=self.where)
        return spec_from_template(self.settings, name=self.name, where=self.where, inputs=self.inputs)


@dataclass(frozen=True)
class Dialect:
    """How one client writes a server: where the URL is, how strings are expanded, which keys it knows."""

    name: str
    pattern: re.Pattern[str] | None
    url_keys: tuple[str, ...] = ("url",)
    expand_everything: bool = False  # Gemini CLI expands variables in every string of settings.json


DIALECTS = {
    "generic": Dialect("generic", _GENERIC),
    "claude-desktop": Dialect("claude-desktop", None),
    "claude-code": Dialect("claude-code", _CLAUDE_CODE),
    "cursor": Dialect("cursor", _EDITOR),
    "vscode": Dialect("vscode", _EDITOR),
    "windsurf": Dialect("windsurf", _EDITOR, url_keys=("serverUrl", "url")),
    "gemini": Dialect("gemini", _GEMINI, url_keys=("httpUrl", "url"), expand_everything=True),
}


def read_capped(path: Path) -> bytes:
    """A config file's bytes; ConfigError (one line) when it is unreadable or too big to be a config."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: too large for a config (over {too_large()})")
    return data


def read_json(path: Path) -> object:
    """A JSON file's data; ConfigError (one line) when it is unreadable, too big, not JSON or nested too deeply."""
    data = read_capped(path)
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"bad JSON at {path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(too_deep(path)) from None
    check_nesting(parsed, path)
    return parsed


def check_nesting(data: object, path: Path, max_values: int | None = None) -> None:
    """ConfigError (one line) when mappings and lists nest more than MAX_NESTING deep: no config does, and
    reading one that does would exhaust Python's stack (OmegaConf's first, at about a hundred). With
    `max_values`, also when there are more values than that, counted as if yaml aliases were copies (a
    few lines of aliases can stand for millions of values; OmegaConf before 2.4 has no limit of its own)."""
    stack: list[tuple[object, int]] = [(data, 1)]
    seen = 0
    while stack:  # not recursive: the data may be as deep as the parser allowed
        value, depth = stack.pop()
        seen += 1
        if max_values is not None and seen > max_values:
            raise ConfigError(f"{path}: too large for a config (over {max_values} values, aliases expanded)")
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_NESTING:
            raise ConfigError(too_deep(path))
        stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))


def too_deep(path: Path) -> str:
    return f"{path}: nested too deeply to be a config (over {MAX_NESTING} levels)"


def too_large() -> str:
    """The size limit of a config file, for a message."""
    return f"{MAX_FILE_BYTES // 1048576} MB" if MAX_FILE_BYTES >= 1048576 else f"{MAX_FILE_BYTES // 1024} KB"


def guess_dialect(path: Path) -> str:
    """The dialect of a JSON file named on the command line, from where such files live."""
    parts = path.expanduser().resolve().parts
    if path.name == "claude_desktop_config.json":
        return "claude-desktop"
    if path.name in (".mcp.json", ".claude.json"):
        return "claude-code"
    if path.name == "mcp_config.json" and "windsurf" in parts:
        return "windsurf"
    if path.name == "settings.json" and ".gemini" in parts:
        return "gemini"
    if path.name == "mcp.json" and ".cursor" in parts:
        return "cursor"
    if path.name == "mcp.json" and (".vscode" in parts or "User" in parts):
        return "vscode"
    return "generic"


def read_json_servers(path: Path, context: Context | None = None) -> list[ServerSpec]:
    """The servers of a JSON config file named on the command line; ConfigError when the file itself is
    unusable."""
    data = read_json(path)
    if not isinstance(data, Mapping) or not ("mcpServers" in data or "servers" in data):
        raise ConfigError(f"{path}: expected an object with mcpServers (or VS Code's servers)")
    return servers_from(data, path, context=context)


def servers_from(data: Mapping[str, object], path: Path, *, context: Context | None = None) -> list[ServerSpec]:
    """The specs of an `mcpServers` (or VS Code `servers`) object; a bad entry is its own error."""
    context = context or Context(home=Path.home(), project=Path.cwd())
    return [t.spec() for t in templates(data, path, guess_dialect(path), context)]


def templates(
    data: Mapping[str, object], path: Path, dialect: str, context: Context, key: str | None = None
) -> list[Template]:
    """Every server of a client's object (`mcpServers`, or VS Code's `servers`) as a template."""
    key = key or ("servers" if "servers" in data and "mcpServers" not in data else "mcpServers")
    entries = data.get(key)
    if not isinstance(entries, Mapping):
        raise ConfigError(f"{path}: {key} must be an object of servers")
    if dialect == "vscode":
        context = Context(context.home, context.project, _inputs(data.get("inputs"), path))
    return [
        translate(str(name), entry, DIALECTS[dialect], context, f"{path}#{name}") for name, entry in entries.items()
    ]


def _inputs(value: object, path: Path) -> dict[str, Mapping[str, object]]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise ConfigError(f"{path}: inputs must be a list")
    return {str(item["id"]): item for item in value if isinstance(item, Mapping) and "id" in item}


def translate(name: str, entry: object, dialect: Dialect, context: Context, where: str) -> Template:
    """One client entry as miroctl settings with `${oc.env:...}` references; a bad entry is the template's error."""
    template = Template(name=name, settings={}, where=where)
    try:
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: expected an object, got {type(entry).__name__}")
        template.settings = _settings(entry, dialect, where)
        expand = _expander(dialect, context, template, where)
        template.settings = {k: _walk(v, expand) for k, v in template.settings.items()}
        if isinstance(entry.get("envFile"), str) and dialect.name in ("cursor", "vscode"):
            _env_file(template, expand(entry["envFile"]), context, where)
    except ConfigError as exc:
        template.error = exc.message
    return template


def _settings(entry: Mapping[str, object], dialect: Dialect, where: str) -> dict[str, object]:
    settings: dict[str, object] = {k: entry[k] for k in ("command", "args", "env", "cwd", "headers") if k in entry}
    for key in dialect.url_keys:
        if entry.get(key):
            settings["url"] = entry[key]
            if dialect.name == "gemini" and "type" not in entry:  # httpUrl is streamable HTTP, url is SSE
                settings["transport"] = "streamable_http" if key == "httpUrl" else "sse"
            break
    kind = entry.get("type") or entry.get("transport")
    if kind and kind != "stdio":
        settings["transport"] = kind
    if entry.get("disabled") is True or entry.get("enabled") is False:
        settings["enabled"] = False
    timeout = entry.get("timeout")
    if dialect.name == "gemini" and isinstance(timeout, (int, float)) and timeout > 0:
        settings["timeout"] = timeout / 1000  # Gemini CLI counts milliseconds
    for key in ("args",):
        if key in settings and not isinstance(settings[key], list):
            raise ConfigError(f"{where}: {key} must be a list, got {type(settings[key]).__name__}")
    for key in ("env", "headers"):
        if key in settings and not isinstance(settings[key], Mapping):
            raise ConfigError(f"{where}: {key} must be an object, got {type(settings[key]).__name__}")
    if not isinstance(settings.get("command", ""), str) or not isinstance(settings.get("url", ""), str):
        raise ConfigError(f"{where}: command and url must be strings")
    return settings


def _env_file(template: Template, path_text: str, context: Context, where: str) -> None:
    """Cursor's and VS Code's `envFile`: its variables join the server's env, where `env` does not set them."""
    from dotenv import dotenv_values

    if "${oc.env:" in path_text:
        raise ConfigError(f"{where}: an envFile path made of environment variables is not supported")
    path = Path(path_text.replace("\\${", "${")).expanduser()
    path = path if path.is_absolute() else context.project / path
    if not path.is_file():
        raise ConfigError(f"{where}: envFile {path} does not exist")
    given = template.settings.get("env")
    env = template.settings["env"] = dict(given) if isinstance(given, Mapping) else {}
    for key, value in dotenv_values(path).items():
        env.setdefault(key, escape(value or ""))


def _walk(value: object, expand: Callable[[str], str]) -> object:
    if isinstance(value, str):
        return expand(value)
    if isinstance(value, Mapping):
        return {str(k): _walk(v, expand) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, expand) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    raise ConfigError(f"unexpected value of type {type(value).__name__}")


def _expander(dialect: Dialect, context: Context, template: Template, where: str) -> Callable[[str], str]:
    """A function turning one of the client's strings into a template string."""
    pattern = dialect.pattern

    def expand(text: str) -> str:
        if pattern is None:
            return escape(text)
        out, last = [], 0
        for match in pattern.finditer(text):
            literal = escape(text[last : match.start()])
            # A backslash right before an interpolation would escape it: double it to keep it literal.
            out.append(literal + "\\" if literal.endswith("\\") else literal)
            out.append(_replacement(match, dialect, context, template, where))
            last = match.end()
        out.append(escape(text[last:]))
        return "".join(out)

    return expand


def _replacement(match: re.Match[str], dialect: Dialect, context: Context, template: Template, where: str) -> str:
    groups = match.groupdict()
    if groups.get("env") or groups.get("bare"):
        default = groups.get("default")
        return env_ref(groups.get("env") or groups["bare"], default)
    if groups.get("input"):
        input_id = groups["input"]
        if input_id not in context.inputs:
            raise ConfigError(f"{where}: ${{input:{input_id}}} has no entry in inputs")
        variable = input_variable(input_id)
        template.inputs[variable] = input_id
        return env_ref(variable)
    variables = {
        "workspaceFolder": str(context.project),
        "workspaceRoot": str(context.project),
        "workspaceFolderBasename": context.project.name,
        "userHome": str(context.home),
        "pathSeparator": "/",
        "/": "/",
        "cwd": str(context.project),
    }
    value = variables.get(groups.get("var") or "")
    if value is None:
        raise ConfigError(f"{where}: {dialect.name} variable {match.group(0)} is not supported")
    return escape(value)


def input_variable(input_id: str) -> str:
    """The environment variable that answers VS Code's `${input:ID}` prompt: `github-token` -> GITHUB_TOKEN."""
    return re.sub(r"[^A-Za-z0-9]+", "_", input_id).strip("_").upper() or "INPUT"


def env_ref(name: str, default: str | None = None) -> str:
    """`${oc.env:NAME}` (with a quoted default when the client gave one)."""
    if default is None:
        return f"${{oc.env:{name}}}"
    quoted = default.replace("\\", "\\\\").replace("'", "\\'")
    return f"${{oc.env:{name},'{quoted}'}}"


def escape(text: str) -> str:
    """A literal string as OmegaConf reads it back unchanged (`${` is not an interpolation)."""
    return text.replace("${", "\\${")
