"""MiroFlow's and MiroThinker's Hydra agent files read as profiles: the servers and blacklist of one agent.

An agent file has `main_agent:` and `sub_agents: {NAME: ...}`, each naming servers under `tool_config`
(MiroFlow: files in config/tool/) or `tools` (MiroThinker: servers its code defines, which miroctl's bundled
mirothinker profile serves under the same names unless a file beside the agent's defines one), with a per-agent
`tool_blacklist`. Its `defaults:` list composes the same group's files first (Hydra's `_self_` order);
other groups (benchmark, llm, hydra overrides) are the agent's business and are not read. Nothing but the
picked agent's server names and blacklist is resolved, so the agent's own `${oc.env:...}` (its LLM keys)
need not be set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path

from miroctl.base.errors import ConfigError
from miroctl.base.text import suggest
from miroctl.config import ecosystem

AGENT_KEYS = ("main_agent", "sub_agents")
MAIN = "main_agent"
OURS = {"tool_config", "tools", "tool_blacklist"}  # what miroctl reads in an agent's section
MISREAD_AT_TOP = {"tool_config", "tool_blacklist", "tools"}  # upstream reads these per agent only
MAX_DEPTH = 8
# The servers MiroThinker's code defines (apps/miroflow-agent/src/config/settings.py), not files: an agent
# file naming them gets the bundled mirothinker profile's servers of those names (its folder, below).
CODE_DEFINED_DIR = "mirothinker"
CODE_DEFINED = frozenset(
    {
        "tool-google-search",
        "tool-sogou-search",
        "tool-python",
        "tool-vqa",
        "tool-vqa-os",
        "tool-transcribe",
        "tool-transcribe-os",
        "tool-reasoning",
        "tool-reasoning-os",
        "tool-reader",
        "tool-reading",
        "search_and_scrape_webpage",
        "jina_scrape_llm_summary",
        "stateless_python",
        "task_planner",
    }
)


@dataclass(frozen=True)
class AgentPick:
    """One agent of an agent file: its server names, whether they are code-defined names, its blacklist."""

    agent: str
    names: tuple[str, ...]
    code_named: bool
    blacklist: tuple[tuple[str, str], ...]
    agents: tuple[str, ...]  # every agent of the file, main first


def is_agent_file(data: Mapping[str, object]) -> bool:
    """Whether a yaml mapping is a Hydra agent file rather than a miroctl profile."""
    return any(key in data for key in (*AGENT_KEYS, "defaults"))


def compose(path: Path, depth: int = 0) -> dict[str, object]:
    """The file merged over the same group's files its `defaults:` names, unresolved (as plain data)."""
    from omegaconf import OmegaConf

    if depth > MAX_DEPTH:
        raise ConfigError(f"{path}: defaults nest more than {MAX_DEPTH} files deep (a cycle?)")
    own = _load(path)
    layers: list[dict[str, object]] = []
    defaults = own.pop("defaults", None) or []
    if not isinstance(defaults, list):
        raise ConfigError(f"{path}: defaults must be a list")
    if "_self_" not in defaults:
        defaults = [*defaults, "_self_"]  # Hydra's place for it when a file does not say
    for entry in defaults:
        if entry == "_self_":
            layers.append(own)
        elif isinstance(entry, str):  # a file of the same group, beside this one
            layers.append(compose(_sibling(path, entry), depth + 1))
        # a mapping names another group (benchmark, llm) or a hydra override: the agent's business
    merged = OmegaConf.to_container(OmegaConf.merge(*[OmegaConf.create(layer) for layer in layers]), resolve=False)
    assert isinstance(merged, dict)
    return {str(key): value for key, value in merged.items()}


def _load(path: Path) -> dict[str, object]:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    try:
        data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except RecursionError:
        raise ConfigError(ecosystem.too_deep(path)) from None
    except (YAMLError, OmegaConfBaseException, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {(str(exc).strip().splitlines() or ['?'])[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return {str(key): value for key, value in data.items()}


def _sibling(path: Path, entry: str) -> Path:
    name = entry.strip().lstrip("/")
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"{path}: defaults entry {entry!r} is not a file of this group")
    found = path.parent / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
    if not found.is_file():
        raise ConfigError(f"{path}: defaults names {entry!r}, but there is no {found}")
    return found


def pick(data: Mapping[str, object], agent: str | None, where: str) -> AgentPick:
    """The servers and blacklist of the agent named (None: the main agent), validated."""
    for key in MISREAD_AT_TOP & set(data):
        raise ConfigError(
            f"{where}: {key} at the top level of an agent file is read by no agent",
            hint=f"put it under {MAIN} or a sub-agent",
        )
    agents = _agents(data, where)
    name = _agent_name(agent, agents, where)
    section = agents[name]
    for key in section:
        near = get_close_matches(str(key), sorted(OURS), n=1, cutoff=0.8)
        if key not in OURS and near:
            hint = f"did you mean {near[0]}?"
            raise ConfigError(f"{where}: {name}.{key}: unknown key (miroctl would skip it)", hint=hint)
    if "tool_config" in section and "tools" in section:
        raise ConfigError(f"{where}: {name} has both tool_config and tools", hint="keep one list of servers")
    code_named = "tools" in section
    names = _names(section.get("tools" if code_named else "tool_config"), f"{where}: {name}")
    return AgentPick(
        agent=name,
        names=names,
        code_named=code_named,
        blacklist=_blacklist(section.get("tool_blacklist"), f"{where}: {name}.tool_blacklist"),
        agents=tuple(agents),
    )


def _agents(data: Mapping[str, object], where: str) -> dict[str, Mapping[str, object]]:
    main = data.get(MAIN)
    if not isinstance(main, Mapping):
        raise ConfigError(f"{where}: an agent file needs a {MAIN} mapping")
    subs = data.get("sub_agents") or {}
    if not isinstance(subs, Mapping) or not all(isinstance(v, Mapping) for v in subs.values()):
        raise ConfigError(f"{where}: sub_agents must map agent names to their settings")
    return {MAIN: main, **{str(k): v for k, v in subs.items()}}


def _agent_name(agent: str | None, agents: Mapping[str, object], where: str) -> str:
    if agent in (None, "", "main", MAIN):
        return MAIN
    for candidate in (agent, f"agent-{agent}"):
        if candidate in agents:
            return str(candidate)
    known = ", ".join(agents)
    hint = suggest(str(agent), list(agents))
    raise ConfigError(f"{where}: no agent named {agent!r} (its agents: {known})", hint=hint)


def _names(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not (isinstance(value, list) and all(isinstance(n, str) and n for n in value)):
        raise ConfigError(f"{where}: its servers must be a list of names, got {value!r}")
    return tuple(dict.fromkeys(value))


def _blacklist(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, (list, type(None))):
        raise ConfigError(f"{where}: must be a list of [server, tool] pairs")
    pairs = []
    for pair in value or []:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise ConfigError(f"{where}: entries must be [server, tool] pairs, got {pair!r}")
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def tool_dir(path: Path, given: object) -> Path:
    """Where an agent's server files are: `tool_dir:` if set; MiroFlow's tool/ beside the agent file; else the
    tool group beside a Hydra agent group (conf/agent/X.yaml -> conf/tool/)."""
    if given:
        return path.parent / str(given)
    beside = path.parent / "tool"
    group = path.parent.parent / "tool"
    return group if not beside.is_dir() and path.parent.name == "agent" else beside


def unresolved(name: str, pick: AgentPick, folder: Path) -> str:
    """Why a server the agent names has no file: said plainly for MiroThinker's code-defined names."""
    if pick.code_named and name in CODE_DEFINED:
        return (
            f"{name!r} is defined in MiroThinker's code (src/config/settings.py), not in a file: "
            f"miroctl has no server for it (add {folder / (name + '.yaml')})"
        )
    return f"no server file for {name!r} in {folder}"
