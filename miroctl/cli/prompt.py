"""`miroctl prompt`: one prompt of a server, filled in with its arguments."""

from __future__ import annotations

from typing import Annotated

import typer

from miroctl.base.errors import UsageError
from miroctl.cli import boundary, completion, remote
from miroctl.cli.common import load_config
from miroctl.cli.fetch import SaveDirOpt, TimeoutOpt, fetch
from miroctl.cli.options import (
    ConfigOpt,
    EnvOpt,
    HeaderOpt,
    JsonOpt,
    NoDaemonOpt,
    StartupOpt,
    StdioOpt,
    UrlOpt,
    ViaOpt,
    launch_of,
)
from miroctl.config.loader import Config
from miroctl.core import catalog
from miroctl.core.arguments import split_pair


def prompt(
    ctx: typer.Context,
    words: Annotated[
        list[str],
        typer.Argument(
            help="[SERVER] NAME [key=value ...]: the server (which may be left out when there is only one), the "
            "prompt's name (miroctl list SERVER --prompts lists them) and its arguments.",
            metavar="SERVER NAME KEY=VALUE",
            autocompletion=completion.server_first,
            show_default=False,
        ),
    ],
    json_mode: JsonOpt = False,
    timeout: TimeoutOpt = None,
    save_dir: SaveDirOpt = None,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    env: EnvOpt = None,
    startup_timeout: StartupOpt = None,
    via: ViaOpt = None,
    no_daemon: NoDaemonOpt = False,
) -> None:
    """Get one prompt of a server, filled in with its arguments: its messages, role by role."""
    out = boundary.output(json_mode)
    gateway_url = remote.resolve_via(via, bool(config or stdio or url))
    if gateway_url:
        raise typer.Exit(remote.prompt(gateway_url, words, out=out, timeout=timeout, save_dir=save_dir))
    launch = launch_of(ctx)  # the configuration the daemon's decision read
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env, launch=launch)
    server, name, pairs = _prompt_words(loaded, words)
    arguments = {key: value for key, value, _ in map(split_pair, pairs)}  # a prompt's arguments are text
    fetch(
        out,
        loaded,
        save_dir,
        lambda manager: catalog.get_prompt(manager, server, name, arguments, timeout),
        f"prompt {name}",
        server,
    )


def _prompt_words(loaded: Config, words: list[str]) -> tuple[str, str, list[str]]:
    """SERVER NAME [k=v...], or NAME [k=v...] when there is one server and the first word does not name it."""
    if len(loaded.default_names) == 1 and loaded.get(words[0]) is None and "=" not in words[0]:
        return loaded.default_names[0], words[0], words[1:]
    if len(words) < 2 or "=" in words[0] or "=" in words[1]:
        raise UsageError(
            "prompt takes SERVER and NAME, then key=value pairs", hint="SERVER may be left out when there is one"
        )
    return words[0], words[1], words[2:]
