"""`miroctl read` and `miroctl prompt`: a server's resources and prompts, fetched like a tool call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import Annotated

import typer

from miroctl.base.errors import UsageError
from miroctl.cli import boundary, completion, remote
from miroctl.cli.common import load_config, manager_for, run
from miroctl.cli.helptext import CALL, OUTPUT
from miroctl.cli.options import ConfigOpt, EnvOpt, HeaderOpt, JsonOpt, StartupOpt, StdioOpt, UrlOpt, ViaOpt, seconds
from miroctl.config.loader import Config
from miroctl.core import catalog
from miroctl.core.arguments import split_pair
from miroctl.core.manager import Manager
from miroctl.render import blobs
from miroctl.render.output import Output
from miroctl.render.results import fetched_result

TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        "-t",
        parser=seconds,
        metavar="SECONDS",
        rich_help_panel=CALL,
        help="Seconds the request may take (default: server, profile, 900).",
    ),
]
SaveDirOpt = Annotated[
    str | None,
    typer.Option(
        "--save-dir",
        metavar="DIR",
        rich_help_panel=OUTPUT,
        help="Where binary contents are saved (default: a new temp dir).",
    ),
]


def read(
    target: Annotated[
        list[str],
        typer.Argument(
            help="[SERVER] URI: the server (which may be left out when there is only one) and the resource's URI "
            "(miroctl list SERVER --resources lists them).",
            metavar="[SERVER] URI",
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
) -> None:
    """Read one resource of a server: text on stdout, binary contents saved to files."""
    out = boundary.output(json_mode)
    gateway_url = remote.resolve_via(via, bool(config or stdio or url))
    if gateway_url:
        raise typer.Exit(remote.read(gateway_url, target, out=out, timeout=timeout, save_dir=save_dir))
    if len(target) > 2:
        raise UsageError("read takes SERVER and URI (SERVER may be left out when there is only one)")
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env)
    server, uri = (target[0], target[1]) if len(target) == 2 else (_only_server(loaded, "read"), target[0])
    _fetch(
        out,
        loaded,
        json_mode,
        save_dir,
        lambda manager: catalog.read_resource(manager, server, uri, timeout),
        f"reading {uri}",
        server,
    )


def prompt(
    words: Annotated[
        list[str],
        typer.Argument(
            help="[SERVER] NAME [key=value ...]: the server (which may be left out when there is only one), the "
            "prompt's name (miroctl list SERVER --prompts lists them) and its arguments.",
            metavar="[SERVER] NAME [KEY=VALUE]...",
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
) -> None:
    """Get one prompt of a server, filled in with its arguments: its messages, role by role."""
    out = boundary.output(json_mode)
    gateway_url = remote.resolve_via(via, bool(config or stdio or url))
    if gateway_url:
        raise typer.Exit(remote.prompt(gateway_url, words, out=out, timeout=timeout, save_dir=save_dir))
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env)
    server, name, pairs = _prompt_words(loaded, words)
    arguments = {key: value for key, value, _ in map(split_pair, pairs)}  # a prompt's arguments are text
    _fetch(
        out,
        loaded,
        json_mode,
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


def _only_server(loaded: Config, command: str) -> str:
    """The one server a command without a server name goes to."""
    if len(loaded.default_names) == 1:
        return loaded.default_names[0]
    raise UsageError(
        f"{command} needs a server name: there are {len(loaded.default_names)} servers",
        hint=f"miroctl {command} SERVER ...; miroctl list shows them",
    )


def _fetch(
    out: Output,
    loaded: Config,
    json_mode: bool,
    save_dir: str | None,
    ask: Callable[[Manager], Awaitable[catalog.Fetched]],
    what: str,
    server: str,
) -> None:
    """Ask on a fresh manager, print the envelope (JSON) or its content (human), exit with its code."""
    blobs.check_dir(save_dir)

    with out.live(f"{what} on {server}") as view:

        async def work() -> catalog.Fetched:
            async with manager_for(loaded, out, stages=view.on_stage if view else None) as manager:
                return await ask(manager)

        fetched = run(work)
    if json_mode:
        out.json(fetched.to_dict())
    else:
        stem = PurePosixPath(fetched.name).stem or fetched.what
        saved = blobs.save(fetched.blocks(), stem, save_dir) if fetched.ok else None
        fetched_result(out, fetched, saved)
    raise typer.Exit(int(fetched.exit_code))
