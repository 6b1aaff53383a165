"""The profile's policy sections as typed values, and the servers' per-tool metadata, validated.

Each check raises ConfigError with a one-line reason naming the file and key. `Sections` is what
`Policy.from_profile`, the fallbacks and the call log read; per-tool metadata stays a plain mapping of
normalised values (it is merged with the tools' own annotations at call time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from miroctl.base.errors import ConfigError
from miroctl.base.text import suggest

SECTIONS = ("policy", "fallbacks", "url_rules", "log", "max_result_chars")


class Mode(StrEnum):
    """The permission modes (`policy.mode` in the profile, `--mode` on the command line)."""

    bypass = "bypass"
    read_only = "read_only"
    normal = "normal"
    ask = "ask"


MODES = tuple(mode.value for mode in Mode)
RISKS = ("low", "normal", "high")
POLICY_KEYS = {"mode", "allowlist", "allow_high", "allow_notify", "assume_yes", "ask_timeout"}
MARKITDOWN_KEYS = {"enabled", "tools", "docintel_endpoint", "timeout", "max_bytes"}
TOOL_BOOLS = {"read_only", "destructive", "idempotent", "open_world", "concurrency_safe"}
CATEGORIES = ("notify",)
TOOL_KEYS = TOOL_BOOLS | {"risk", "category", "max_result_chars"}
ASK_TIMEOUT = 120.0  # seconds a gateway's host has to answer mode ask's question


@dataclass(frozen=True)
class PolicySection:
    """`policy:` who may call what: the permission mode, allowlists, and whether ask mode assumes yes."""

    mode: Mode = Mode.normal
    allowlist: tuple[str, ...] = ()
    allow_high: tuple[str, ...] = ()
    allow_notify: tuple[str, ...] = ()
    assume_yes: bool = False
    ask_timeout: float = ASK_TIMEOUT


@dataclass(frozen=True)
class MarkItDownSection:
    """`fallbacks.markitdown:` the local conversion of a page when a scrape-type tool fails."""

    enabled: bool = True
    tools: tuple[str, ...] | None = None  # None: the built-in scrape tool names
    docintel_endpoint: str | None = None
    timeout: float | None = None
    max_bytes: float | None = None


@dataclass(frozen=True)
class Sections:
    """The profile's policy sections; absent ones have their defaults."""

    policy: PolicySection = field(default_factory=PolicySection)
    markitdown: MarkItDownSection = field(default_factory=MarkItDownSection)
    url_block: tuple[str, ...] | None = None  # None: the built-in URL rules
    log: str | None = None
    max_result_chars: int | None = None

    @classmethod
    def parse(cls, data: Mapping[str, object], path: Path | None = None) -> Sections:
        """The sections of a profile's data (other keys ignored), validated; paths relative to its file."""
        where = str(path) if path is not None else "profile"
        base = path.parent if path is not None else Path.cwd()
        checked = {key: f"{where}: {key}" for key in SECTIONS if key in data}
        return cls(
            policy=_policy(data["policy"], checked["policy"]) if "policy" in checked else PolicySection(),
            markitdown=_fallbacks(data["fallbacks"], checked["fallbacks"])
            if "fallbacks" in checked
            else MarkItDownSection(),
            url_block=_url_rules(data["url_rules"], checked["url_rules"]) if "url_rules" in checked else None,
            log=_log(data["log"], checked["log"], base) if "log" in checked else None,
            max_result_chars=_limit(data["max_result_chars"], checked["max_result_chars"])
            if "max_result_chars" in checked
            else None,
        )


def _policy(value: object, where: str) -> PolicySection:
    value = _mapping(value, where, POLICY_KEYS)
    mode = value.get("mode", "normal")
    if mode not in MODES:
        raise ConfigError(f"{where}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    return PolicySection(
        mode=Mode(mode),
        allowlist=_patterns(value.get("allowlist"), f"{where}.allowlist"),
        allow_high=_patterns(value.get("allow_high"), f"{where}.allow_high"),
        allow_notify=_patterns(value.get("allow_notify"), f"{where}.allow_notify"),
        assume_yes=_bool(value.get("assume_yes", False), f"{where}.assume_yes"),
        ask_timeout=_positive_number(value.get("ask_timeout", ASK_TIMEOUT), f"{where}.ask_timeout"),
    )


def _fallbacks(value: object, where: str) -> MarkItDownSection:
    value = _mapping(value, where, {"markitdown"})
    markitdown = value.get("markitdown", True)
    if isinstance(markitdown, bool):
        return MarkItDownSection(enabled=markitdown)
    inner = f"{where}.markitdown"
    markitdown = _mapping(markitdown, inner, MARKITDOWN_KEYS)
    return MarkItDownSection(
        enabled=_bool(markitdown.get("enabled", True), f"{inner}.enabled"),
        tools=_patterns(markitdown["tools"], f"{inner}.tools") if "tools" in markitdown else None,
        docintel_endpoint=str(markitdown["docintel_endpoint"]) if markitdown.get("docintel_endpoint") else None,
        timeout=_optional_number(markitdown, "timeout", inner),
        max_bytes=_optional_number(markitdown, "max_bytes", inner),
    )


def _url_rules(value: object, where: str) -> tuple[str, ...] | None:
    value = _mapping(value, where, {"block"})
    return _patterns(value["block"], f"{where}.block") if "block" in value else None


def _log(value: object, where: str, base: Path) -> str | None:
    if isinstance(value, Mapping):
        value = _mapping(value, where, {"path"}).get("path")
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a file path, got {value!r}")
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _limit(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}: expected a positive number of characters, got {value!r}")
    return value


def tool_meta(value: object, where: str, server_limit: object = None) -> dict[str, dict[str, object]]:
    """A server's `tools:` mapping (tool name or glob -> metadata), validated; `*` holds server-wide values."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise ConfigError(f"{where}: tools must map tool names to settings")
    tools = {str(name): _one_tool(settings, f"{where}: tools.{name}") for name, settings in value.items()}
    if server_limit is not None:
        tools.setdefault("*", {}).setdefault("max_result_chars", _limit(server_limit, f"{where}: max_result_chars"))
    return tools


def _one_tool(settings: Mapping[str, object], where: str) -> dict[str, object]:
    settings = _mapping(settings, where, TOOL_KEYS)
    result: dict[str, object] = {}
    for key, item in settings.items():
        if key in TOOL_BOOLS:
            result[key] = _bool(item, f"{where}.{key}")
        elif key == "risk":
            if item not in RISKS:
                raise ConfigError(f"{where}.risk must be one of {', '.join(RISKS)}, got {item!r}")
            result[key] = item
        elif key == "category":
            if item not in CATEGORIES:
                raise ConfigError(f"{where}.category must be one of {', '.join(CATEGORIES)}, got {item!r}")
            result[key] = item
        else:
            result[key] = _limit(item, f"{where}.{key}")
    return result


def _mapping(value: object, where: str, known: set[str]) -> dict[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {value!r}")
    for key in value:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}", hint=suggest(str(key), known))
    return dict(value)


def _patterns(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: expected a list of patterns")
    return tuple(v.strip() for v in value)


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    return value


def _optional_number(settings: Mapping[str, object], key: str, where: str) -> float | None:
    value = settings.get(key)
    return None if value is None else _positive_number(value, f"{where}.{key}")


def _positive_number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where}: expected a positive number, got {value!r}")
    return float(value)
