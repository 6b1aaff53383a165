"""One server's settings validated into a ServerSpec, wherever they come from (yaml, JSON, command line).

No OmegaConf here: config.py reads yaml and resolves ${oc.env:...}; this module only checks values.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import get_args
from urllib.parse import urlsplit

from miroctl.base.errors import ConfigError
from miroctl.base.masking import argument_secrets, header_secrets, secret_values, url_credentials
from miroctl.base.models import OAuthSettings, ProtocolChoice, ServerSpec, SessionMode, Transport
from miroctl.base.text import suggest
from miroctl.config import interpreters
from miroctl.config import sections as policy_config

SERVER_KEYS = {
    "name",
    "tool_command",
    "command",
    "args",
    "env",
    "url",
    "transport",
    "headers",
    "cwd",
    "timeout",
    "startup_timeout",
    "persistent",
    "enabled",
    "tools",
    "smoke",
    "description",
    "max_result_chars",
    "requires_env",
    "auth",
    "protocol",
    "session",
    "python",
}
PYTHONS = interpreters.PYTHON_COMMANDS
PROTOCOLS: tuple[ProtocolChoice, ...] = ("auto", "legacy")
SESSIONS: tuple[SessionMode, ...] = get_args(SessionMode)
OAUTH_KEYS = {"type", "scopes", "client_id", "client_secret", "client_metadata_url", "callback_port"}
URL_TRANSPORTS: tuple[Transport, ...] = ("streamable_http", "sse")
_TRANSPORT_ALIASES = {
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamableHttp": "streamable_http",
}


def positive(value: object, key: str, where: object) -> float:
    try:
        if not isinstance(value, (int, float, str)):
            raise TypeError(value)
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {key} must be a number of seconds, got {value!r}") from None
    if number <= 0:
        raise ConfigError(f"{where}: {key} must be positive, got {value!r}")
    return number


def reject_unknown(data: Mapping[str, object], known: set[str], where: str) -> None:
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}", hint=suggest(str(key), known))


def server_from_mapping(
    data: Mapping[str, object],
    *,
    where: str,
    name: str | None = None,
    secrets: Iterable[str] = (),
    own_python: bool = True,
    default_python: Callable[[], str] = interpreters.default_python,
) -> ServerSpec:
    """Validate one server's settings (the seeds' shape plus extensions) into a spec. With `own_python` (miroctl's
    own server files, as in the seeds) `python` means `default_python()` (the profile's, $MIROCTL_PYTHON's, the
    active virtualenv's, else the interpreter running miroctl) unless the file names its own `python:`;
    elsewhere the PATH's."""
    reject_unknown(data, SERVER_KEYS, where)
    name = str(data.get("name") or name or Path(where).stem)
    command = data.get("tool_command") or data.get("command")
    url = data.get("url")
    if bool(command) == bool(url):
        raise ConfigError(f"{where}: give exactly one of tool_command or url")
    env = _string_map(data.get("env"), "env", where)
    headers = _string_map(data.get("headers"), "headers", where)
    transport = _transport(data.get("transport"), url, where)
    args = tuple(str(a) for a in _list(data.get("args"), "args", where))
    secret_set = set(secrets) | header_secrets(headers) | secret_values(env) | argument_secrets(args)
    secret_set |= url_credentials(str(url)) if url else set()
    oauth = _oauth(data.get("auth"), transport, where)
    if oauth is not None and oauth.client_secret:
        secret_set.add(oauth.client_secret)
    program = _command(command, where, data.get("python"), default_python if own_python else None) if command else None
    return ServerSpec(
        name=name,
        transport=transport,
        command=program,
        args=args,
        env=MappingProxyType(env),
        cwd=_cwd(data.get("cwd"), where),
        url=str(url) if url else None,
        headers=MappingProxyType(headers),
        timeout=positive(data["timeout"], "timeout", where) if data.get("timeout") is not None else None,
        startup_timeout=(
            positive(data["startup_timeout"], "startup_timeout", where)
            if data.get("startup_timeout") is not None
            else None
        ),
        persistent=bool(data.get("persistent", False)),
        session=_session(data.get("session"), where),
        enabled=bool(data.get("enabled", True)),
        tools=MappingProxyType(policy_config.tool_meta(data.get("tools"), where, data.get("max_result_chars"))),
        smoke=data.get("smoke"),
        source=where,
        secrets=frozenset(s for s in secret_set if s),
        requires_env=_required_env(data.get("requires_env"), where),
        oauth=oauth,
        protocol=_protocol(data.get("protocol"), where),
        python=program if program not in (None, str(command)) and not interpreters.is_own(program) else None,
    )


def _protocol(value: object, where: str) -> ProtocolChoice:
    """`protocol: auto` (the default) or `legacy` (the initialize handshake, 2025-11-25 and before)."""
    if value is None:
        return "auto"
    for known in PROTOCOLS:
        if value == known:
            return known
    raise ConfigError(f"{where}: protocol must be auto or legacy, got {value!r}")


def _oauth(value: object, transport: str, where: str) -> OAuthSettings | None:
    """`auth: oauth`, or `auth: {type: oauth, scopes: [...], client_id: ..., ...}`; None for no auth."""
    if value is None or value == "none":
        return None
    data = {"type": value} if isinstance(value, str) else value
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: auth must be 'oauth' or a mapping with type: oauth")
    reject_unknown(data, OAUTH_KEYS, f"{where}: auth")
    if data.get("type", "oauth") != "oauth":
        raise ConfigError(f"{where}: unknown auth type {data.get('type')!r} (use oauth)")
    if transport == "stdio":
        raise ConfigError(f"{where}: auth: oauth needs a url (stdio servers take credentials from env)")
    raw_scopes = data.get("scopes")
    scopes = raw_scopes.split() if isinstance(raw_scopes, str) else _list(raw_scopes, "auth.scopes", where)
    given = data.get("callback_port")
    port = int(str(given)) if given is not None and str(given).isdigit() else None
    if given is not None and (port is None or not 0 < port < 65536):
        raise ConfigError(f"{where}: auth.callback_port must be a port number, got {given!r}")
    metadata_url = data.get("client_metadata_url")
    if metadata_url and not str(metadata_url).startswith("https://"):
        raise ConfigError(f"{where}: auth.client_metadata_url must be an https URL")
    return OAuthSettings(
        scopes=tuple(str(scope) for scope in scopes),
        client_id=str(data["client_id"]) if data.get("client_id") else None,
        client_secret=str(data["client_secret"]) if data.get("client_secret") else None,
        client_metadata_url=str(metadata_url) if metadata_url else None,
        callback_port=port,
    )


def _required_env(value: object, where: str) -> tuple[tuple[str, ...], ...]:
    """`requires_env`: each entry a variable, or a list of variables one of which must be set (non-empty), so that
    a server that cannot work without a key is a config failure naming what to set, before it is started."""
    required = []
    for entry in _list(value, "requires_env", where):
        names = entry if isinstance(entry, list) else [entry]
        if not names or not all(isinstance(name, str) and name for name in names):
            raise ConfigError(f"{where}: requires_env entries must be variable names or lists of them, got {entry!r}")
        required.append(tuple(names))
    return tuple(required)


def _session(value: object, where: str) -> SessionMode:
    """`session: kept` (the default: one session for every call) or `per_call` (a fresh process per call)."""
    if value is None:
        return "kept"
    for known in SESSIONS:
        if value == known:
            return known
    raise ConfigError(f"{where}: session must be kept or per_call, got {value!r}")


def _command(command: object, where: str, python: object, default: Callable[[], str] | None) -> str:
    """The program to run; `python` (or `python3`) is the file's `python:` interpreter when it names one (a
    server whose dependencies live in another environment), else `default()` (None: the PATH's `python`)."""
    text = str(command)
    if text not in PYTHONS:
        return text
    if python is not None and str(python).strip():
        base = Path(where).parent if Path(where).exists() else None
        return interpreters.interpreter(python, f"{where}: python", base)
    return default() if default is not None else text


def _transport(value: object, url: object, where: str) -> Transport:
    if not url:
        if value not in (None, "stdio"):
            raise ConfigError(f"{where}: transport {value!r} needs a url")
        return "stdio"
    if value is None:
        path = urlsplit(str(url)).path.rstrip("/")
        return "sse" if path.endswith("/sse") else "streamable_http"
    name = _TRANSPORT_ALIASES.get(str(value), str(value))
    for known in URL_TRANSPORTS:
        if name == known:
            return known
    raise ConfigError(f"{where}: unknown transport {name!r} (use sse or streamable_http)")


def _string_map(value: object, key: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key} must be a mapping")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _list(value: object, key: str, where: str) -> Sequence[object]:
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} must be a list")
    return value


def _cwd(value: object, where: str) -> str | None:
    if not value:
        return None
    path = Path(str(value)).expanduser()
    if not path.is_absolute() and Path(where).exists():
        path = Path(where).parent / path
    return str(path)


def adhoc_servers(
    stdio: Sequence[str], urls: Sequence[str], headers: Sequence[str] = (), env: Sequence[str] = ()
) -> list[ServerSpec]:
    """Servers given on the command line: --stdio "CMD ARGS" (with --env K=V) and --url URL (with --header K:V).

    A --stdio command runs as an MCP host would run it: `python` is the PATH's, and the server gets the small
    inherited environment every stdio server gets (HOME, PATH, ...) plus the --env pairs."""
    header_map = _parse_headers(headers)
    env_map = _parse_env(env)
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
        specs.append(
            ServerSpec(
                name=name,
                command=argv[0],
                args=tuple(argv[1:]),
                env=MappingProxyType(env_map),
                source="--stdio",
                secrets=frozenset(argument_secrets(argv[1:]) | secret_values(env_map)),
            )
        )
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"--url {url!r}: expected an http(s) URL")
        name = _unique(parts.hostname or "remote", taken)
        specs.append(
            ServerSpec(
                name=name,
                transport=_transport(None, url, "--url"),
                url=url,
                headers=MappingProxyType(header_map),
                source="--url",
                secrets=frozenset(header_secrets(header_map) | url_credentials(url)),
            )
        )
    return specs


def _parse_env(pairs: Sequence[str]) -> dict[str, str]:
    parsed = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or any(c.isspace() for c in key.strip()):
            raise ConfigError(f"--env {item!r}: expected NAME=value")
        parsed[key.strip()] = value
    return parsed


def _parse_headers(headers: Sequence[str]) -> dict[str, str]:
    parsed = {}
    for item in headers:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ConfigError(f"--header {key.strip() or item!r}: expected 'Name: value'")
        parsed[key.strip()] = value.strip()
    return parsed


_GENERIC_STEMS = {"index", "main", "server", "cli", "app", "__main__", "run", "start", "mcp"}
_BUILD_DIRS = {"dist", "build", "lib", "src", "bin", "out", "target"}


def _name_from_argv(argv: Sequence[str]) -> str:
    """A readable server name from a command line: the module of -m, a script's package or stem, the package
    that npx/uvx run, or the program."""
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1].rsplit(".", 1)[-1]
    for arg in argv[1:]:
        if not arg.startswith("-") and Path(arg).suffix in (".py", ".js", ".mjs", ".cjs", ".ts"):
            return _script_name(Path(arg))
    packages = [a for a in argv[1:] if not a.startswith("-")]
    if Path(argv[0]).name in ("npx", "uvx", "pipx", "bunx", "pnpx") and packages:
        package = packages[-1] if packages[0] in ("run", "exec", "dlx") and len(packages) > 1 else packages[0]
        return package.rsplit("/", 1)[-1].split("@")[0] or "server"
    return Path(argv[0]).stem or "server"


def _script_name(path: Path) -> str:
    """A script's stem, or for `dist/index.js` and the like the package (directory) it belongs to."""
    if path.stem not in _GENERIC_STEMS:
        return path.stem
    for parent in path.parents:
        if parent.name and parent.name not in _BUILD_DIRS:
            return parent.name
    return path.stem


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate
