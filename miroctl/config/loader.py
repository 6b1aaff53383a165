"""Finding the configuration and reading it: profiles, one-server-per-file yaml -> a frozen Config.

The only module that uses OmegaConf. A broken server file becomes that server's `error`; only a
config that cannot be read at all raises ConfigError. Validating one server's settings is
servers.py's job; the ecosystem's JSON files are ecosystem.py's.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from miroctl.base.errors import ConfigError, NotFound
from miroctl.base.models import DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, ServerSpec
from miroctl.base.text import suggest, unknown_server_hint
from miroctl.config import agents, clients, codex, ecosystem, envrefs, interpreters, nesting
from miroctl.config.resolve import interpolated_values
from miroctl.config.sections import Sections
from miroctl.config.servers import adhoc_servers, positive, reject_unknown, server_from_mapping

if TYPE_CHECKING:
    from omegaconf import DictConfig, ListConfig

__all__ = ["Config", "Profile", "find_config", "load", "server_from_file"]

AGENT_ENV = "MIROCTL_AGENT"

PROFILE_KEYS = {
    "tool_config",
    "tool_dir",
    "tool_blacklist",
    "timeout",
    "startup_timeout",
    "concurrency",
    "policy",
    "max_result_chars",
    "fallbacks",
    "url_rules",
    "log",
    "description",
    "python",
    "daemon",
    "daemon_idle",
}
DAEMON_CHOICES = ("persistent", "auto", "never")  # which servers a background daemon keeps (docs/daemon.md)
DEFAULT_DAEMON_IDLE = 600.0  # seconds a daemon with nothing to do lives on


@dataclass(frozen=True)
class Profile:
    """Pool-wide settings: which servers by default, the blacklist, timeouts, policy sections."""

    tool_config: tuple[str, ...] | None = None
    blacklist: frozenset[tuple[str, str]] = frozenset()
    timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    concurrency: int = 4
    python: str | None = None  # what `tool_command: python` runs in this profile's server files (checked)
    sections: Sections = field(default_factory=Sections)  # policy, fallbacks, url_rules, log, max_result_chars
    daemon: str = "persistent"  # persistent: a daemon keeps persistent servers; auto: every server; never
    daemon_idle: float = DEFAULT_DAEMON_IDLE


@dataclass(frozen=True)
class Config:
    """Every server miroctl knows, which of them run by default, and the profile."""

    servers: tuple[ServerSpec, ...]
    profile: Profile = field(default_factory=Profile)
    source: str = "(none)"
    default_names: tuple[str, ...] = ()
    agent: str | None = None  # the agent picked from a Hydra agent file

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
        """The named servers (NotFound for an unknown one, exit 6 as in `call`), or the default set."""
        if not names:
            by_name = {s.name: s for s in self.servers}
            return [by_name[name] for name in self.default_names if name in by_name]  # the profile's order
        chosen = []
        for name in names:
            spec = self.get(name)
            if spec is None:
                raise NotFound(f"no server named {name!r}", hint=unknown_server_hint(name, self.names()))
            chosen.append(spec)
        return chosen

    def secrets(self) -> set[str]:
        return {value for spec in self.servers for value in spec.secrets}


# ---------------------------------------------------------------------------------------------- lookup


def bundled_config_dir() -> Path:
    """The default config shipped with miroctl (package data in a wheel, config/ in a checkout)."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "bundled_config"
    if packaged.is_dir():
        return packaged
    return package.parent / "config"


def find_config(explicit: str | None, cwd: Path | None = None) -> Path:
    """The config file to use: --config, $MIROCTL_CONFIG, ./miroctl.yaml, ./config/miroctl.yaml, bundled.
    A bare name that is no file here (`-c research`) names a profile bundled with miroctl."""
    cwd = cwd or Path.cwd()
    given = explicit or os.environ.get("MIROCTL_CONFIG")
    if given:
        path = Path(given).expanduser()
        if not path.is_absolute():
            path = cwd / path
        if not path.exists():
            bundled = bundled_profile(given)
            if bundled is not None:
                return bundled
            origin = "--config" if explicit else "$MIROCTL_CONFIG"
            names = ", ".join(bundled_profiles())
            near = suggest(given, bundled_profiles())
            hint = f"{near} (a bundled profile)" if near else f"bundled profiles: {names}"
            raise ConfigError(f"config file not found: {given} (from {origin})", hint=hint)
        return path / "miroctl.yaml" if path.is_dir() else path
    for candidate in (cwd / "miroctl.yaml", cwd / "config" / "miroctl.yaml"):
        if candidate.is_file():
            return candidate
    return bundled_config_dir() / "miroctl.yaml"


def bundled_profiles() -> list[str]:
    """The names of the profiles shipped with miroctl (`default` is miroctl.yaml)."""
    stems = sorted(p.stem for p in bundled_config_dir().glob("*.yaml") if p.stem != "miroctl")
    return ["default", *stems]


def bundled_profile(name: str) -> Path | None:
    """The bundled profile a bare name (no path, no suffix) stands for, if there is one."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        return None
    path = bundled_config_dir() / f"{'miroctl' if name == 'default' else name}.yaml"
    return path if path.is_file() else None


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
    env: Sequence[str] = (),
    cwd: Path | None = None,
    agent: str | None = None,
) -> Config:
    """Resolve the whole configuration. Ad-hoc servers (--stdio with --env, --url with --header) replace the
    configured ones. `agent` (or $MIROCTL_AGENT) picks an agent of a Hydra agent file (default: its main agent)."""
    load_dotenv_file(cwd)
    agent, agent_origin = (agent, "--agent") if agent else (os.environ.get(AGENT_ENV) or None, f"${AGENT_ENV}")
    client = _client_named(explicit, cwd)
    config = _client_config(client, cwd) if client else _load_file(find_config(explicit, cwd), agent)
    if agent and not config.agent:
        hint = "--agent picks an agent of a Hydra agent file"
        raise ConfigError(f"{agent_origin} {agent}: {config.source} is no agent file", hint=hint)
    if env and not stdio:
        raise ConfigError("--env sets the environment of --stdio servers", hint="add --stdio, or drop --env")
    if stdio or urls:
        adhoc = adhoc_servers(stdio, urls, headers, env)
        config = replace(config, servers=tuple(adhoc), default_names=tuple(s.name for s in adhoc))
    nesting.check(config.source, config.servers)
    return config


def _client_named(explicit: str | None, cwd: Path | None) -> str | None:
    """`--config cursor` (or $MIROCTL_CONFIG=cursor): a client's own configs, unless a file has that name."""
    given = explicit or os.environ.get("MIROCTL_CONFIG")
    if given in clients.CLIENTS and not ((cwd or Path.cwd()) / given).exists():
        return given
    return None


def _client_config(client: str, cwd: Path | None) -> Config:
    specs, where = clients.client_specs(client, project=cwd)
    return Config(servers=tuple(specs), source=where, default_names=tuple(s.name for s in specs if s.enabled))


def _load_file(path: Path, agent: str | None = None) -> Config:
    if path.suffix == ".json":
        return _servers_only(ecosystem.read_json_servers(path), path)
    if path.suffix == ".toml":
        return _servers_only([t.spec() for t in codex.templates(codex.read_toml(path), path)], path)
    read = _read_yaml(path)
    raw = read.raw
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    if agents.is_agent_file(raw):
        return _load_agent(path, agent)
    data = read.resolved()
    if not isinstance(data, Mapping):  # resolved, the mapping read above stays one
        raise ConfigError(f"{path}: expected a mapping at the top level")
    if "mcpServers" in data or "servers" in data:
        return _servers_only(ecosystem.servers_from(data, path), path)
    if "tool_command" in data or "command" in data or "url" in data:
        return _servers_only([server_from_file(path)], path)
    return _load_profile(data, path)


def _servers_only(specs: Sequence[ServerSpec], path: Path) -> Config:
    """A config that is just servers (no profile): every enabled one is in the default set."""
    return Config(servers=tuple(specs), source=str(path), default_names=tuple(s.name for s in specs if s.enabled))


# ---------------------------------------------------------------------------------------------- yaml


class _Yaml:
    """A yaml file read once: as written (`raw`) and, on demand, with its interpolations resolved.

    OmegaConf's own YAML loader parses it (the loader OmegaConf.load uses: its float rule, its duplicate-key
    and alias-expansion checks), but wrapping a whole file in OmegaConf's nodes costs ten times that parse.
    So a file of plain values is taken as parsed; in a file whose every interpolation is `${oc.env:...}`, each
    string is resolved on its own (a variable means the same wherever it stands in the file); anything else
    (a reference to another key, another resolver, a value OmegaConf has its own type for) is resolved by
    OmegaConf over the whole file, as is a string that fails alone (so its error names its key)."""

    def __init__(self, path: Path, raw: object, node: DictConfig | ListConfig | None = None) -> None:
        self.path, self.raw, self._node = path, raw, node

    def resolved(self) -> object:
        """The values with every ${...} resolved; a variable it needs that is unset, or a value that cannot be
        resolved, is a one-line ConfigError."""
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        _require_env(self.raw, self.path)
        with warnings.catch_warnings():  # `${oc.env:KEY,}` (upstream's files have it) means an empty default
            warnings.filterwarnings("ignore", message="In the sequence", category=UserWarning)
            if self._node is None and _env_only(self.raw):
                try:
                    return _strings_mapped(self.raw, _resolved_alone)
                except OmegaConfBaseException:
                    pass  # resolved over the whole file below, for the error naming its key
            try:
                return OmegaConf.to_container(self._wrapped(), resolve=True)
            except OmegaConfBaseException as exc:
                key = getattr(exc, "full_key", None)
                raise ConfigError(f"{self.path}: cannot resolve {key or 'a value'}: {_first_line(exc)}") from None

    def _wrapped(self) -> DictConfig | ListConfig:
        from omegaconf import OmegaConf

        if self._node is None:  # then the file was plain: a mapping (_plain)
            assert isinstance(self.raw, dict)
            self._node = OmegaConf.create(self.raw)
        return self._node


def _read_yaml(path: Path) -> _Yaml:
    """Read a yaml file as OmegaConf reads it; yaml errors become a one-line ConfigError with the line."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError, load

    loader = _omegaconf_yaml_loader()
    try:
        if loader is None:  # an OmegaConf that keeps its loader elsewhere: it reads and wraps every file
            node = OmegaConf.load(path)
            return _Yaml(path, OmegaConf.to_container(node, resolve=False), node)
        with open(os.path.abspath(path), "rb") as file:
            text = file.read(ecosystem.MAX_FILE_BYTES + 1)
        if len(text) > ecosystem.MAX_FILE_BYTES:
            raise ConfigError(f"{path}: too large for a config (over {ecosystem.too_large()})")
        data = load(text.decode("utf-8"), Loader=loader)
        ecosystem.check_nesting(data, path, ecosystem.MAX_YAML_VALUES)
        if _plain(data):
            return _Yaml(path, data)
        node = OmegaConf.create() if data is None else OmegaConf.create(data)  # as OmegaConf.load goes on
        return _Yaml(path, OmegaConf.to_container(node, resolve=False), node)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except RecursionError:  # a pure-Python yaml parser, or an OmegaConf that reads the file itself
        raise ConfigError(ecosystem.too_deep(path)) from None
    except YAMLError as exc:
        raise ConfigError(_yaml_error_line(path, exc)) from None
    except (OmegaConfBaseException, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {_first_line(exc)}") from None


def _omegaconf_yaml_loader() -> type | None:
    """The YAML loader class OmegaConf.load uses, made as it makes it (OmegaConf 2.4 keeps the function in
    omegaconf._yaml, 2.3 in omegaconf._utils); None for an OmegaConf that has neither."""
    for where in ("omegaconf._yaml", "omegaconf._utils"):
        try:
            maker = getattr(importlib.import_module(where), "get_yaml_loader", None)
        except ImportError:
            continue
        if callable(maker):
            made = maker()
            return made if isinstance(made, type) else None
    return None


_SCALARS = (str, int, float, bool, type(None))


def _plain(data: object, top: bool = True) -> bool:
    """A mapping at the top, of text keys, down to text, numbers, booleans and nulls: what OmegaConf gives
    back unchanged (anything else, such as a date, bytes or a number as a key, is OmegaConf's to convert)."""
    if isinstance(data, dict):
        return all(isinstance(k, str) and _plain(v, top=False) for k, v in data.items())
    if top:
        return False
    if isinstance(data, list):
        return all(_plain(item, top=False) for item in data)
    return isinstance(data, _SCALARS)


def _env_only(data: object) -> bool:
    """Whether every interpolation in the values is `${oc.env:...}` (defaults included) and no key has one."""
    if isinstance(data, str):
        return data.count("${") == data.count("${" + envrefs.ENV)
    if isinstance(data, dict):
        return all("${" not in key and _env_only(value) for key, value in data.items())
    if isinstance(data, list):
        return all(_env_only(item) for item in data)
    return True


def _strings_mapped(data: object, change: Callable[[str], object]) -> object:
    """A copy of plain data with `change` applied to every text value that has an interpolation."""
    if isinstance(data, str):
        return change(data) if "${" in data else data
    if isinstance(data, dict):
        return {key: _strings_mapped(value, change) for key, value in data.items()}
    if isinstance(data, list):
        return [_strings_mapped(item, change) for item in data]
    return data


def _resolved_alone(text: str) -> object:
    """One string's `${oc.env:...}` interpolations resolved as OmegaConf resolves them in a file."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(OmegaConf.create({"value": text}), resolve=True)
    assert isinstance(resolved, dict)
    return resolved["value"]


def _yaml_error_line(path: Path, exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or _first_line(exc)
    if mark is not None:
        return f"bad yaml at {path}:{mark.line + 1}:{mark.column + 1}: {problem}"
    return f"bad yaml in {path}: {problem}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _require_env(raw: object, path: Path) -> None:
    """Name every unset variable a ${oc.env:VAR} needs, nested defaults included (by name, never a value)."""
    missing = sorted(envrefs.missing(raw, os.environ))
    if missing:
        noun = "variable" if len(missing) == 1 else "variables"
        raise ConfigError(
            f"{path}: missing environment {noun} {', '.join(missing)}",
            hint="export it or put it in ./.env",
        )


# ---------------------------------------------------------------------------------------------- profile


def _load_agent(path: Path, agent: str | None) -> Config:
    """A Hydra agent file: the picked agent's servers and blacklist; miroctl's own profile keys at the top level
    (timeout, policy, ...) apply; every other key is the agent's business and is not read."""
    composed = agents.compose(path)
    chosen = agents.pick(composed, agent, str(path))
    ours = {key: value for key, value in composed.items() if key in PROFILE_KEYS - agents.MISREAD_AT_TOP}
    if ours:
        ours = _resolved(ours, path)
    folder = agents.tool_dir(path, ours.get("tool_dir"))
    data = {**ours, "tool_config": list(chosen.names), "tool_blacklist": [list(p) for p in chosen.blacklist]}
    bundled = _code_defined if chosen.code_named else None
    config = _load_profile(data, path, folder, lambda name: agents.unresolved(name, chosen, folder), bundled)
    return replace(config, agent=chosen.agent)


def _code_defined(name: str) -> ServerSpec | None:
    """A server MiroThinker defines in its code, from the bundled mirothinker profile (a file beside wins)."""
    path = bundled_config_dir() / agents.CODE_DEFINED_DIR / f"{name}.yaml"
    return server_from_file(path) if name in agents.CODE_DEFINED and path.is_file() else None


def _resolved(data: Mapping[str, object], path: Path) -> dict[str, object]:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    _require_env(dict(data), path)
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(dict(data)), resolve=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"{path}: cannot resolve {getattr(exc, 'full_key', None) or 'a value'}") from None
    assert isinstance(resolved, dict)
    return {str(k): v for k, v in resolved.items()}


def _load_profile(
    data: Mapping[str, object],
    path: Path,
    tool_dir: Path | None = None,
    why_missing: Callable[[str], str] | None = None,
    elsewhere: Callable[[str], ServerSpec | None] | None = None,
) -> Config:
    reject_unknown(data, PROFILE_KEYS, f"{path}")
    profile = _profile_from(data, path)
    tool_dir = tool_dir or path.parent / str(data.get("tool_dir", "tool"))
    specs: dict[str, ServerSpec] = {}
    for file in sorted(tool_dir.glob("*.y*ml")) if tool_dir.is_dir() else ():
        spec = server_from_file(file, profile.python)
        if spec.name in specs:
            first = specs[spec.name].source
            spec = replace(spec, error=f"server name {spec.name!r} is used by both {first} and {file}")
        specs[spec.name] = spec
    names = profile.tool_config
    for name in names or ():
        found = elsewhere(name) if elsewhere is not None and _lookup(specs, name) is None else None
        if found is not None:
            specs[found.name] = found
        elif _lookup(specs, name) is None:
            error = why_missing(name) if why_missing else f"no server file for {name!r} in {tool_dir}"
            specs[name] = ServerSpec(name=name, error=error, source=str(path))
    # Named in tool_config: used, even when its file says `enabled: false` (that only keeps a file out of the
    # default set when the profile names none, as naming a server on the command line does).
    # every name of tool_config has its spec by now (a broken one was added above)
    selected = (
        [s.name for n in names if (s := _lookup(specs, n))]
        if names is not None
        else [n for n in specs if specs[n].enabled]
    )
    default = tuple(dict.fromkeys(selected))
    return Config(servers=tuple(specs.values()), profile=profile, source=str(path), default_names=default)


def _lookup(specs: Mapping[str, ServerSpec], name: str) -> ServerSpec | None:
    return (
        specs.get(name)
        or specs.get(f"tool-{name}")
        or next((s for s in specs.values() if s.source and Path(s.source).stem == name), None)
    )


def _profile_from(data: Mapping[str, object], path: Path) -> Profile:
    names = data.get("tool_config")
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ConfigError(f"{path}: tool_config must be a list of server names")
    blacklist = set()
    pairs = data.get("tool_blacklist") or []
    if not isinstance(pairs, list):
        raise ConfigError(f"{path}: tool_blacklist entries must be [server, tool] pairs, got {pairs!r}")
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise ConfigError(f"{path}: tool_blacklist entries must be [server, tool] pairs, got {pair!r}")
        blacklist.add((pair[0], pair[1]))
    return Profile(
        tool_config=tuple(names) if names is not None else None,
        blacklist=frozenset(blacklist),
        timeout=positive(data.get("timeout", DEFAULT_CALL_TIMEOUT), "timeout", path),
        startup_timeout=positive(data.get("startup_timeout", DEFAULT_STARTUP_TIMEOUT), "startup_timeout", path),
        concurrency=int(positive(data.get("concurrency", 4), "concurrency", path)),
        python=_profile_python(data.get("python"), path),
        sections=Sections.parse(data, path),
        daemon=_daemon_choice(data.get("daemon", "persistent"), path),
        daemon_idle=positive(data.get("daemon_idle", DEFAULT_DAEMON_IDLE), "daemon_idle", path),
    )


def _daemon_choice(value: object, path: Path) -> str:
    if value not in DAEMON_CHOICES:
        raise ConfigError(f"{path}: daemon must be one of {', '.join(DAEMON_CHOICES)}, got {value!r}")
    return str(value)


def _profile_python(value: object, path: Path) -> str | None:
    if value is None or not str(value).strip():
        return None
    return interpreters.interpreter(value, f"{path}: python", path.parent)


# ---------------------------------------------------------------------------------------------- servers


def server_from_file(path: Path, profile_python: str | None = None) -> ServerSpec:
    """One server yaml -> a spec; any problem becomes the spec's `error` instead of an exception.
    `tool_command: python` runs the file's `python:`, else `profile_python`, $MIROCTL_PYTHON, the active
    virtualenv's python, else miroctl's own; the server files shipped with miroctl run miroctl's own (they run
    its bundled servers)."""
    fallback_name = path.stem
    try:
        read = _read_yaml(path)
        raw = read.raw
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
            fallback_name = raw["name"]
        data = read.resolved()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{path}: expected a mapping of server settings")
        secrets = interpolated_values(raw, data)
        default = (lambda: sys.executable) if _shipped(path) else (lambda: interpreters.default_python(profile_python))
        return server_from_mapping(data, where=str(path), secrets=secrets, default_python=default)
    except ConfigError as exc:  # a did-you-mean stays with the message: a spec's error is one line
        error = f"{exc.message}: {exc.hint}" if exc.hint and exc.hint.startswith("did you mean") else exc.message
        return ServerSpec(name=fallback_name, error=error, source=str(path))


def _shipped(path: Path) -> bool:
    """A server file shipped with miroctl (in its bundled config)."""
    try:
        return path.resolve().is_relative_to(bundled_config_dir().resolve())
    except OSError:
        return False
