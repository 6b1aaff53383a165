"""Configuration: profiles, one-server-per-file yaml, mcpServers JSON and ad-hoc servers -> frozen specs.

The only module that uses OmegaConf. A broken server file becomes that server's `error`;
only a config that cannot be read at all raises ConfigError.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from miroctl import policy_config
from miroctl.errors import ConfigError
from miroctl.masking import could_be_secret, header_secrets, secret_values
from miroctl.models import DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, ServerSpec

SERVER_KEYS = {
    "name", "tool_command", "command", "args", "env", "url", "transport", "headers", "cwd", "timeout",
    "startup_timeout", "persistent", "enabled", "tools", "smoke", "description", "max_result_chars",
}
PROFILE_KEYS = {
    "tool_config", "tool_dir", "tool_blacklist", "timeout", "startup_timeout", "concurrency", "policy",
    "max_result_chars", "fallbacks", "url_rules", "log", "description",
}
TRANSPORTS = {"stdio", "streamable_http", "sse"}
_TRANSPORT_ALIASES = {"http": "streamable_http", "streamable-http": "streamable_http", "streamableHttp": "streamable_http"}
_ENV_REF = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(,[^}]*)?\}")
_JSON_ENV_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Profile:
    """Pool-wide settings: which servers by default, the blacklist, timeouts, policy sections."""

    tool_config: tuple[str, ...] | None = None
    blacklist: frozenset[tuple[str, str]] = frozenset()
    timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    concurrency: int = 4
    sections: Mapping[str, Any] = field(default_factory=dict)  # policy, fallbacks, url_rules, ...


@dataclass(frozen=True)
class Config:
    """Every server miroctl knows, which of them run by default, and the profile."""

    servers: tuple[ServerSpec, ...]
    profile: Profile = field(default_factory=Profile)
    source: str = "(none)"
    default_names: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return [spec.name for spec in self.servers]

    def get(self, name: str) -> ServerSpec | None:
        """The spec for a server name; `reading` also finds `tool-reading`."""
        for candidate in (name, f"tool-{name}"):
            for spec in self.servers:
                if spec.name == candidate:
                    return spec
        return None

    def select(self, names: Sequence[str] = ()) -> list[ServerSpec]:
        """The named servers (ConfigError for an unknown one), or the default set."""
        if not names:
            return [s for s in self.servers if s.name in self.default_names]
        chosen = []
        for name in names:
            spec = self.get(name)
            if spec is None:
                raise ConfigError(f"no server named {name!r}", hint=suggest(name, self.names()))
            chosen.append(spec)
        return chosen

    def secrets(self) -> set[str]:
        return {value for spec in self.servers for value in spec.secrets}


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """A "did you mean" hint, or None."""
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


# ---------------------------------------------------------------------------------------------- lookup


def bundled_config_dir() -> Path:
    """The default config shipped with miroctl (package data in a wheel, config/ in a checkout)."""
    packaged = Path(__file__).parent / "bundled_config"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "config"


def find_config(explicit: str | None, cwd: Path | None = None) -> Path:
    """The config file to use: --config, $MIROCTL_CONFIG, ./miroctl.yaml, ./config/miroctl.yaml, bundled."""
    cwd = cwd or Path.cwd()
    given = explicit or os.environ.get("MIROCTL_CONFIG")
    if given:
        path = Path(given).expanduser()
        if not path.is_absolute():
            path = cwd / path
        if not path.exists():
            origin = "--config" if explicit else "$MIROCTL_CONFIG"
            raise ConfigError(f"config file not found: {given} (from {origin})")
        return path / "miroctl.yaml" if path.is_dir() else path
    for candidate in (cwd / "miroctl.yaml", cwd / "config" / "miroctl.yaml"):
        if candidate.is_file():
            return candidate
    return bundled_config_dir() / "miroctl.yaml"


def load_dotenv_file(cwd: Path | None = None) -> None:
    """Load ./.env into the environment without overriding variables already set."""
    path = (cwd or Path.cwd()) / ".env"
    if path.is_file():
        from dotenv import load_dotenv

        load_dotenv(path, override=False)


def load(
    explicit: str | None = None,
    *,
    stdio: Sequence[str] = (),
    urls: Sequence[str] = (),
    headers: Sequence[str] = (),
    cwd: Path | None = None,
) -> Config:
    """Resolve the whole configuration. Ad-hoc servers (--stdio, --url) replace the configured ones."""
    load_dotenv_file(cwd)
    path = find_config(explicit, cwd)
    config = _load_file(path)
    if stdio or urls:
        adhoc = adhoc_servers(stdio, urls, headers)
        config = replace(config, servers=tuple(adhoc), default_names=tuple(s.name for s in adhoc))
    return config


def _load_file(path: Path) -> Config:
    if path.suffix == ".json":
        return _load_json_config(path)
    data = _read_yaml(path)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    if "mcpServers" in data or "servers" in data:
        return _config_from_ecosystem(data, path)
    if "tool_command" in data or "command" in data or "url" in data:
        spec = server_from_file(path)
        return Config(servers=(spec,), source=str(path), default_names=(spec.name,))
    return _load_profile(data, path)


# ---------------------------------------------------------------------------------------------- yaml


def _read_yaml(path: Path, *, resolve: bool = True) -> Any:
    """Read a yaml file through OmegaConf; yaml errors become a one-line ConfigError with the line."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    try:
        node = OmegaConf.load(path)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except YAMLError as exc:
        raise ConfigError(_yaml_error_line(path, exc)) from None
    except (OmegaConfBaseException, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {_first_line(exc)}") from None
    if not resolve:
        return OmegaConf.to_container(node, resolve=False)
    _require_env(OmegaConf.to_container(node, resolve=False), path)
    try:
        return OmegaConf.to_container(node, resolve=True)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None)
        raise ConfigError(f"{path}: cannot resolve {key or 'a value'}: {_first_line(exc)}") from None


def _yaml_error_line(path: Path, exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or _first_line(exc)
    if mark is not None:
        return f"bad yaml at {path}:{mark.line + 1}:{mark.column + 1}: {problem}"
    return f"bad yaml in {path}: {problem}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _require_env(raw: Any, path: Path) -> None:
    """Name every ${oc.env:VAR} without a default that is unset (by name only, never a value)."""
    missing = sorted({m.group(1) for m in _iter_env_refs(raw) if m.group(2) is None and m.group(1) not in os.environ})
    if missing:
        noun = "variable" if len(missing) == 1 else "variables"
        raise ConfigError(
            f"{path}: missing environment {noun} {', '.join(missing)}",
            hint="export it or put it in ./.env",
        )


def _iter_env_refs(value: Any) -> Iterable[re.Match[str]]:
    if isinstance(value, str):
        yield from _ENV_REF.finditer(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _iter_env_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _iter_env_refs(item)


def _interpolated_values(raw: Any, resolved: Any) -> set[str]:
    """Resolved values of the strings that came from interpolation: these are treated as secrets."""
    found: set[str] = set()
    if isinstance(raw, str) and "${" in raw and isinstance(resolved, str) and could_be_secret(resolved):
        found.add(resolved)
    elif isinstance(raw, Mapping) and isinstance(resolved, Mapping):
        for key, item in raw.items():
            found |= _interpolated_values(item, resolved.get(key))
    elif isinstance(raw, list) and isinstance(resolved, list):
        for item, res in zip(raw, resolved):
            found |= _interpolated_values(item, res)
    return found


# ---------------------------------------------------------------------------------------------- profile


def _load_profile(data: Mapping[str, Any], path: Path) -> Config:
    _reject_unknown(data, PROFILE_KEYS, f"{path}")
    profile = _profile_from(data, path)
    tool_dir = path.parent / str(data.get("tool_dir", "tool"))
    specs: dict[str, ServerSpec] = {}
    for file in sorted(tool_dir.glob("*.y*ml")) if tool_dir.is_dir() else ():
        spec = server_from_file(file)
        if spec.name in specs:
            first = specs[spec.name].source
            spec = replace(spec, error=f"server name {spec.name!r} is used by both {first} and {file}")
        specs[spec.name] = spec
    names = profile.tool_config
    for name in names or ():
        if _lookup(specs, name) is None:
            specs[name] = ServerSpec(name=name, error=f"no server file for {name!r} in {tool_dir}", source=str(path))
    selected = [_lookup(specs, n).name for n in names] if names is not None else list(specs)  # type: ignore[union-attr]
    default = tuple(dict.fromkeys(n for n in selected if specs[n].enabled))
    return Config(servers=tuple(specs.values()), profile=profile, source=str(path), default_names=default)


def _lookup(specs: Mapping[str, ServerSpec], name: str) -> ServerSpec | None:
    return specs.get(name) or specs.get(f"tool-{name}") or next(
        (s for s in specs.values() if s.source and Path(s.source).stem == name), None
    )


def _profile_from(data: Mapping[str, Any], path: Path) -> Profile:
    names = data.get("tool_config")
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ConfigError(f"{path}: tool_config must be a list of server names")
    blacklist = set()
    for pair in data.get("tool_blacklist") or []:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise ConfigError(f"{path}: tool_blacklist entries must be [server, tool] pairs, got {pair!r}")
        blacklist.add((pair[0], pair[1]))
    sections = policy_config.sections(data, path)
    return Profile(
        tool_config=tuple(names) if names is not None else None,
        blacklist=frozenset(blacklist),
        timeout=_positive(data.get("timeout", DEFAULT_CALL_TIMEOUT), "timeout", path),
        startup_timeout=_positive(data.get("startup_timeout", DEFAULT_STARTUP_TIMEOUT), "startup_timeout", path),
        concurrency=int(_positive(data.get("concurrency", 4), "concurrency", path)),
        sections=MappingProxyType(sections),
    )


def _positive(value: Any, key: str, where: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {key} must be a number of seconds, got {value!r}") from None
    if number <= 0:
        raise ConfigError(f"{where}: {key} must be positive, got {value!r}")
    return number


def _reject_unknown(data: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}", hint=suggest(str(key), known))


# ---------------------------------------------------------------------------------------------- servers


def server_from_file(path: Path) -> ServerSpec:
    """One server yaml -> a spec; any problem becomes the spec's `error` instead of an exception."""
    fallback_name = path.stem
    try:
        raw = _read_yaml(path, resolve=False)
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
            fallback_name = raw["name"]
        data = _read_yaml(path)
        if not isinstance(data, Mapping):
            raise ConfigError(f"{path}: expected a mapping of server settings")
        return server_from_mapping(data, where=str(path), secrets=_interpolated_values(raw, data))
    except ConfigError as exc:
        return ServerSpec(name=fallback_name, error=exc.message, source=str(path))


def server_from_mapping(data: Mapping[str, Any], *, where: str, name: str | None = None,
                        secrets: Iterable[str] = ()) -> ServerSpec:
    """Validate one server's settings (the seeds' shape plus extensions) into a spec."""
    _reject_unknown(data, SERVER_KEYS, where)
    name = str(data.get("name") or name or Path(where).stem)
    command = data.get("tool_command") or data.get("command")
    url = data.get("url")
    if bool(command) == bool(url):
        raise ConfigError(f"{where}: give exactly one of tool_command or url")
    env = _string_map(data.get("env"), "env", where)
    headers = _string_map(data.get("headers"), "headers", where)
    transport = _transport(data.get("transport"), url, where)
    secret_set = set(secrets) | header_secrets(headers) | secret_values(env)
    return ServerSpec(
        name=name,
        transport=transport,
        command=_command(command) if command else None,
        args=tuple(str(a) for a in _list(data.get("args"), "args", where)),
        env=MappingProxyType(env),
        cwd=_cwd(data.get("cwd"), where),
        url=str(url) if url else None,
        headers=MappingProxyType(headers),
        timeout=_positive(data["timeout"], "timeout", where) if data.get("timeout") is not None else None,
        startup_timeout=(
            _positive(data["startup_timeout"], "startup_timeout", where)
            if data.get("startup_timeout") is not None else None
        ),
        persistent=bool(data.get("persistent", False)),
        enabled=bool(data.get("enabled", True)),
        tools=MappingProxyType(policy_config.tool_meta(data.get("tools"), where, data.get("max_result_chars"))),
        smoke=data.get("smoke"),
        source=where,
        secrets=frozenset(s for s in secret_set if s),
    )


def _command(command: Any) -> str:
    text = str(command)
    return sys.executable if text in ("python", "python3") else text


def _transport(value: Any, url: Any, where: str) -> str:
    if not url:
        if value not in (None, "stdio"):
            raise ConfigError(f"{where}: transport {value!r} needs a url")
        return "stdio"
    if value is None:
        path = urlsplit(str(url)).path.rstrip("/")
        return "sse" if path.endswith("/sse") else "streamable_http"
    value = _TRANSPORT_ALIASES.get(str(value), str(value))
    if value not in TRANSPORTS - {"stdio"}:
        raise ConfigError(f"{where}: unknown transport {value!r} (use sse or streamable_http)")
    return value


def _string_map(value: Any, key: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key} must be a mapping")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _list(value: Any, key: str, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} must be a list")
    return value


def _cwd(value: Any, where: str) -> str | None:
    if not value:
        return None
    path = Path(str(value)).expanduser()
    if not path.is_absolute() and Path(where).exists():
        path = Path(where).parent / path
    return str(path)


# ---------------------------------------------------------------------------------------------- ecosystem JSON


def _load_json_config(path: Path) -> Config:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {_first_line(exc)}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"bad JSON at {path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    if not isinstance(data, Mapping) or not ("mcpServers" in data or "servers" in data):
        raise ConfigError(f"{path}: expected an object with mcpServers (or VS Code's servers)")
    return _config_from_ecosystem(data, path)


def _config_from_ecosystem(data: Mapping[str, Any], path: Path) -> Config:
    """Claude Desktop / Cursor / .mcp.json `mcpServers`, or VS Code's `servers`."""
    entries = data.get("mcpServers", data.get("servers"))
    if not isinstance(entries, Mapping):
        raise ConfigError(f"{path}: mcpServers must be an object of servers")
    specs = [_ecosystem_server(name, entry, f"{path}#{name}") for name, entry in entries.items()]
    default = tuple(s.name for s in specs if s.enabled)
    return Config(servers=tuple(specs), source=str(path), default_names=default)


def _ecosystem_server(name: str, entry: Any, where: str) -> ServerSpec:
    try:
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: expected an object")
        expanded, secrets = _expand_json_env(dict(entry), where)
        settings = {k: expanded[k] for k in ("command", "args", "env", "cwd", "url", "headers") if k in expanded}
        kind = expanded.get("type") or expanded.get("transport")
        if kind and kind != "stdio":
            settings["transport"] = kind
        settings["enabled"] = not expanded.get("disabled", False)
        return server_from_mapping(settings, where=where, name=name, secrets=secrets)
    except ConfigError as exc:
        return ServerSpec(name=name, error=exc.message, source=where)


def _expand_json_env(entry: dict[str, Any], where: str) -> tuple[dict[str, Any], set[str]]:
    """Expand ${VAR} and ${env:VAR} (Cursor, VS Code) in strings; expanded values count as secrets."""
    missing: set[str] = set()
    secrets: set[str] = set()

    def expand(value: Any) -> Any:
        if isinstance(value, str):
            refs = _JSON_ENV_REF.findall(value)
            missing.update(r for r in refs if r not in os.environ)
            out = _JSON_ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), value)
            if refs and could_be_secret(out):
                secrets.add(out)
            return out
        if isinstance(value, Mapping):
            return {k: expand(v) for k, v in value.items()}
        if isinstance(value, list):
            return [expand(v) for v in value]
        return value

    expanded = expand(entry)
    if missing:
        noun = "variable" if len(missing) == 1 else "variables"
        raise ConfigError(f"{where}: missing environment {noun} {', '.join(sorted(missing))}")
    return expanded, secrets


# ---------------------------------------------------------------------------------------------- ad hoc


def adhoc_servers(stdio: Sequence[str], urls: Sequence[str], headers: Sequence[str] = ()) -> list[ServerSpec]:
    """Servers given on the command line: --stdio "CMD ARGS" and --url URL (with --header K:V)."""
    header_map = _parse_headers(headers)
    specs: list[ServerSpec] = []
    taken: set[str] = set()
    for line in stdio:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise ConfigError(f"--stdio {line!r}: {exc}") from None
        if not argv:
            raise ConfigError("--stdio needs a command")
        name = _unique(_name_from_argv(argv), taken)
        specs.append(ServerSpec(name=name, command=_command(argv[0]), args=tuple(argv[1:]), source="--stdio"))
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"--url {url!r}: expected an http(s) URL")
        name = _unique(parts.hostname or "remote", taken)
        specs.append(ServerSpec(
            name=name, transport=_transport(None, url, "--url"), url=url,
            headers=MappingProxyType(header_map), source="--url", secrets=frozenset(header_secrets(header_map)),
        ))
    return specs


def _parse_headers(headers: Sequence[str]) -> dict[str, str]:
    parsed = {}
    for item in headers:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ConfigError(f"--header {key.strip() or item!r}: expected 'Name: value'")
        parsed[key.strip()] = value.strip()
    return parsed


def _name_from_argv(argv: Sequence[str]) -> str:
    """A readable server name from a command line: the module of -m, a script's stem, or the program."""
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1].rsplit(".", 1)[-1]
    for arg in argv[1:]:
        if not arg.startswith("-") and Path(arg).suffix in (".py", ".js", ".mjs", ".ts"):
            return Path(arg).stem
    packages = [a for a in argv[1:] if not a.startswith("-")]
    if Path(argv[0]).name in ("npx", "uvx", "pipx", "bunx") and packages:
        return packages[0].rsplit("/", 1)[-1].split("@")[0] or "server"
    return Path(argv[0]).stem or "server"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate
