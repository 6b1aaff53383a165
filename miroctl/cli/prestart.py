"""Start the stdio servers of a cold `call` or `list` before Typer and the rest of miroctl are loaded.

The console script calls `begin` first: when the command line is a plain `call SERVER TOOL ...` or
`list [SERVER ...]` (no gateway, no ad-hoc servers, no option that changes what a server is started with),
the configuration is loaded and each named stdio server is started at once (sessions/prestart.py), so it
boots on the other core while miroctl loads. The session adopts it only if it would have started exactly
that process; otherwise it is stopped unused. Anything this reader is unsure of starts nothing early:
the command then runs exactly as without it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, load
from miroctl.core.children import child_spec
from miroctl.policy.decisions import Policy
from miroctl.sessions import prestart

# The options of `call` and `list` (tests/test_prestart.py holds these against the Typer app): those that take
# a value, flags, and those after which nothing is started early (they change the servers or their env).
VALUED = frozenset({"--config", "-c", "--timeout", "-t", "--startup-timeout", "--record", "--output", "-o",
                    "--mode", "--log", "--save-dir"})  # fmt: skip
FLAGS = frozenset({"--json", "--no-autocorrect", "--schema", "--yes", "-y"})
REFUSED = frozenset({"--stdio", "--url", "--header", "-H", "--env", "-e", "--task-id", "--via", "--batch", "--jobs",
                     "-j", "--agent", "--resources", "--prompts", "--help", "-h", "--args", "-a"})  # fmt: skip
URL_ENV = "MIROCTL_URL"
_READ: list[tuple[str | None, Config]] = []  # the configuration read here, for the command to take once


def take_config(config: str | None) -> Config | None:
    """The configuration the early start read for this `--config` (reading a profile again costs ~0.2 s),
    once; None when it read none or another."""
    found = _READ.pop() if _READ else None
    return found[1] if found is not None and found[0] == (config or None) else None


def forget() -> None:
    """The command has run: nothing read early is kept for another one in the same process."""
    _READ.clear()


def begin(words: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """Start the servers this command line will use; how many were started (0 when unsure)."""
    environ = os.environ if environ is None else environ
    parsed = _read(words)
    if parsed is None or environ.get(URL_ENV):
        return 0
    command, options, positional = parsed
    try:
        loaded = load(options.get("--config"))
        _READ[:] = [(options.get("--config"), loaded)]
        policy = Policy.from_profile(loaded.profile).with_overrides(mode=options.get("--mode"))
        if command == "call":
            spec = loaded.get(positional[0])
            specs = [spec] if spec is not None and _may_start(policy, spec, positional[1], positional[2:]) else []
        else:
            one_tool = len(positional) == 2 and loaded.get(positional[1]) is None  # list SERVER TOOL
            specs = loaded.select(positional[:1] if one_tool else positional)
    except Exception:  # noqa: BLE001 - whatever is wrong, the command itself will say it
        return 0
    started = 0
    for spec in specs:
        if spec.transport == "stdio" and not spec.config_error(os.environ):
            started += prestart.start(child_spec(spec, loaded, policy))
    return started


def _may_start(policy: Policy, spec: ServerSpec, tool: str, pairs: list[str]) -> bool:
    """Whether the call gets as far as starting its server: the checks the core makes before it does (the URL
    rules on the arguments as given, the server's and tool's deny rules) pass."""
    given = {pair.partition("=")[0].removesuffix(":"): pair.partition("=")[2] for pair in pairs}
    return policy.check_urls(given) is None and policy.decide(spec, tool).state != "deny"


def _read(words: Sequence[str]) -> tuple[str, dict[str, str], list[str]] | None:
    """(command, --config and --mode, positional words) of a plain call or list; None when anything else is
    asked."""
    if not words or words[0] not in ("call", "list"):
        return None
    options = {"--config": os.environ.get("MIROCTL_CONFIG") or ""}
    positional: list[str] = []
    items = iter(words[1:])
    for word in items:
        name, equals, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if word == "--":
            return None
        if name in VALUED:
            given = value if equals else next(items, None)
            if given is None:
                return None
            if name in ("--config", "-c", "--mode"):
                options["-c" if name == "-c" else name] = given
        elif name in FLAGS and not equals:
            continue
        elif word.startswith("-") and word != "-":
            return None  # REFUSED, or an option this reader does not know
        else:
            positional.append(word)
    if words[0] == "call" and len(positional) < 2:
        return None
    if "-c" in options:
        options["--config"] = options.pop("-c")
    return words[0], {key: value for key, value in options.items() if value}, positional
