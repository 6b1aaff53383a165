"""Shell completion of server names, tool names (`SERVER TOOL` and `SERVER.TOOL`) and `key=` parameters.

Server names come from the config the command line names (and `reading` for `tool-reading`, as the docs
write them); tools and parameters from the cache that `list` and `check` fill (miroctl.core.toolcache), and
for the bundled servers from the surfaces miroctl ships (miroctl.core.surfaces), which also give the values
an enum allows after `key=`. A Tab press never starts a server: another server not listed yet completes no
tools until `miroctl list` has seen it. Nothing here may fail loudly: any problem means
no suggestions. A completed `key=` is followed by no space in bash (see miroctl.cli.typer_private).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import typer

from miroctl.base.models import ServerSpec
from miroctl.cli.typer_private import bash_without_space_after_equals
from miroctl.config.loader import Config, load
from miroctl.core import surfaces, toolcache
from miroctl.remote import URL_ENV

bash_without_space_after_equals()  # before any script is shown, installed or sourced


CONFIG_KEY = "miroctl.completion.config"  # ctx.meta: the configuration a completion has read


def _option(ctx: typer.Context, name: str) -> Any:
    """An option's value on this command, else on `miroctl` itself (`miroctl -c research call <Tab>`)."""
    value = ctx.params.get(name)
    if value is None and ctx.parent is not None:
        value = ctx.parent.params.get(name)
    return value


def _config(ctx: typer.Context) -> Config | None:
    """The configuration the command line names, read once per completion (a Tab after `key=` asks twice)."""
    if CONFIG_KEY not in ctx.meta:
        ctx.meta[CONFIG_KEY] = _read_config(ctx)
    found = ctx.meta[CONFIG_KEY]
    return found if isinstance(found, Config) else None


def _read_config(ctx: typer.Context) -> Config | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load(
                _option(ctx, "config"),
                stdio=ctx.params.get("stdio") or (),
                urls=ctx.params.get("url") or (),
                headers=ctx.params.get("header") or (),
                env=ctx.params.get("env") or (),
            )
    except Exception:  # noqa: BLE001 - a broken config completes nothing; the command itself will say why
        return None


def _quiet(complete: Callable[[typer.Context, str], list[str]]) -> Callable[[typer.Context, str], list[str]]:
    """A completion that answers nothing instead of raising into the user's shell."""

    def completion(ctx: typer.Context, incomplete: str) -> list[str]:
        try:
            return complete(ctx, incomplete)
        except Exception:  # noqa: BLE001 - see above
            return []

    return completion


def _words(ctx: typer.Context) -> list[str]:
    """The positional words given so far (call's target, prompt's words, list's servers)."""
    for name in ("target", "words", "servers"):
        if ctx.params.get(name):
            return list(ctx.params[name])
    return []


def _via(ctx: typer.Context) -> tuple[str | None, list[str]]:
    """The gateway the command line goes through (--via, else $MIROCTL_URL unless servers are named
    otherwise), and the positional words after it.

    Bash splits a word at each `:` (COMP_WORDBREAKS), so `--via http://127.0.0.1:8080` arrives as `http`
    and the words `:`, `//127.0.0.1`, `:`, `8080`: they are joined back into the URL."""
    via, words = _option(ctx, "via"), _words(ctx)
    if via:
        via = str(via)
        while words and (words[0] == ":" or via.endswith(":")):
            via += words.pop(0)
        return via, words
    if _option(ctx, "config") or ctx.params.get("stdio") or ctx.params.get("url"):
        return None, words
    return os.environ.get(URL_ENV) or None, words


def _known(ctx: typer.Context) -> tuple[list[str], Callable[[str], toolcache.Surface], list[str]] | None:
    """The server names to offer, each one's cached tools (a gateway's with --via, else the config's), and
    the positional words given so far."""
    via, words = _via(ctx)
    if via:
        listed = toolcache.lookup_gateway(via) or {}
        return list(listed), lambda name: listed.get(name, {}), words
    config = _config(ctx)
    if config is None:
        return None
    return _names(config), lambda name: _tools(config.get(name)), words


def _names(config: Config) -> list[str]:
    """Every server's name, and after them the short names (`reading` for `tool-reading`) that name one."""
    names = [spec.name for spec in config.servers]
    short = [n.removeprefix("tool-") for n in names if n.startswith("tool-") and n.removeprefix("tool-") not in names]
    return names + short


def _tools(spec: ServerSpec | None) -> toolcache.Surface:
    if spec is None:
        return {}
    cached = toolcache.lookup(spec)
    if cached is not None:
        return cached
    return {tool: list(parameters) for tool, parameters in surfaces.shipped(spec).items()}


def _values(config: Config | None, server: str, tool: str, key: str) -> list[str]:
    """The values an enum allows for a bundled server's parameter (as shipped), for `key=<Tab>`."""
    spec = config.get(server) if config is not None else None
    return surfaces.shipped(spec).get(tool, {}).get(key, [])


@_quiet
def servers(ctx: typer.Context, incomplete: str) -> list[str]:
    """Server names (list, check, serve)."""
    known = _known(ctx)
    return [name for name in known[0] if name.startswith(incomplete)] if known else []


@_quiet
def server_first(ctx: typer.Context, incomplete: str) -> list[str]:
    """A server name as the first word (read, prompt); nothing after it."""
    known = _known(ctx)
    if known is None or known[2]:
        return []
    return [name for name in known[0] if name.startswith(incomplete)]


@_quiet
def call_target(ctx: typer.Context, incomplete: str) -> list[str]:
    """`call`'s words: SERVER or SERVER.TOOL, then TOOL, then key= for the tool's parameters not given yet."""
    known = _known(ctx)
    if known is None:
        return []
    names, tools_of, words = known
    if not words:
        if "." in incomplete:
            prefix = incomplete.partition(".")[0]
            return [f"{prefix}.{tool}" for tool in sorted(tools_of(prefix))]
        return names
    first = words[0]
    server: str | None
    if first in names and len(words) == 1:
        return sorted(tools_of(first))
    if first in names:
        server, tool = first, words[1]
    elif "." in first:
        server, _, tool = first.partition(".")
    else:  # TOOL alone: the server whose cached tools have it
        tool = first
        server = next((name for name in names if tool in tools_of(name)), None)
    if server is None:
        return []
    if "=" in incomplete:
        key, _, partial = incomplete.partition("=")
        values = _values(None if _via(ctx)[0] else _config(ctx), server, tool, key)
        return [f"{key}={value}" for value in values if value.startswith(partial)]
    given = {word.split("=", 1)[0].removesuffix(":") for word in words if "=" in word}
    return [f"{name}=" for name in tools_of(server).get(tool, []) if name not in given]
