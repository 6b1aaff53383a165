"""Shell completion of server names, tool names (`SERVER TOOL` and `SERVER.TOOL`) and `key=` parameters.

Server names come from the config the command line names; tools and parameters from the cache that `list`
and `check` fill (miroctl.core.toolcache). A Tab press never starts a server: a server not listed yet
completes no tools until `miroctl list` has seen it. Nothing here may fail loudly: any problem means
no suggestions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import typer

from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, load
from miroctl.core import toolcache


def _option(ctx: typer.Context, name: str) -> Any:
    """An option's value on this command, else on `miroctl` itself (`miroctl -c research call <Tab>`)."""
    value = ctx.params.get(name)
    if value is None and ctx.parent is not None:
        value = ctx.parent.params.get(name)
    return value


def _config(ctx: typer.Context) -> Config | None:
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


def _names(config: Config) -> list[str]:
    return [spec.name for spec in config.servers]


def _tools(spec: ServerSpec | None) -> toolcache.Surface:
    return (toolcache.lookup(spec) or {}) if spec is not None else {}


@_quiet
def servers(ctx: typer.Context, incomplete: str) -> list[str]:
    """Server names (list, check, serve)."""
    config = _config(ctx)
    return [name for name in _names(config) if name.startswith(incomplete)] if config else []


@_quiet
def server_first(ctx: typer.Context, incomplete: str) -> list[str]:
    """A server name as the first word (read, prompt); nothing after it."""
    words = ctx.params.get("target") or ctx.params.get("words") or []
    return [] if words else servers(ctx, incomplete)


@_quiet
def call_target(ctx: typer.Context, incomplete: str) -> list[str]:
    """`call`'s words: SERVER or SERVER.TOOL, then TOOL, then key= for the tool's parameters not given yet."""
    config = _config(ctx)
    if config is None:
        return []
    words: list[str] = list(ctx.params.get("target") or [])
    if not words:
        if "." in incomplete:
            server, _, _ = incomplete.partition(".")
            return [f"{server}.{tool}" for tool in sorted(_tools(config.get(server)))]
        return _names(config)
    first, spec = words[0], config.get(words[0])
    if spec is not None and len(words) == 1:
        return sorted(_tools(spec))
    if spec is not None:
        tool = words[1]
    elif "." in first:
        server, _, tool = first.partition(".")
        spec = config.get(server)
    else:  # TOOL alone: the server whose cached tools have it
        tool = first
        spec = next((s for s in config.servers if tool in _tools(s)), None)
    if "=" in incomplete:
        return []
    given = {word.split("=", 1)[0].removesuffix(":") for word in words if "=" in word}
    return [f"{name}=" for name in _tools(spec).get(tool, []) if name not in given]
