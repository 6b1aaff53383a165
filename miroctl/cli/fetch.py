"""`miroctl read` and `miroctl prompt`: a server's resources and prompts, fetched like a tool call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import Annotated

import typer

from miroctl.cli import boundary
from miroctl.cli.common import load_config, manager_for, run
from miroctl.cli.options import ConfigOpt, HeaderOpt, JsonOpt, StartupOpt, StdioOpt, UrlOpt, seconds
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
        help="Seconds the request may take (default: server, profile, 900).",
    ),
]
SaveDirOpt = Annotated[
    str | None, typer.Option("--save-dir", help="Where binary contents are saved (default: a new temp dir).")
]


def read(
    server: Annotated[str, typer.Argument(help="The server that offers the resource.", show_default=False)],
    uri: Annotated[
        str, typer.Argument(help="The resource's URI (miroctl list SERVER --resources lists them).", show_default=False)
    ],
    json_mode: JsonOpt = False,
    timeout: TimeoutOpt = None,
    save_dir: SaveDirOpt = None,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    startup_timeout: StartupOpt = None,
) -> None:
    """Read one resource of a server: text on stdout, binary contents saved to files."""
    out = boundary.output(json_mode)
    loaded = load_config(config, stdio, url, header, out, startup_timeout)
    _fetch(out, loaded, json_mode, save_dir, lambda manager: catalog.read_resource(manager, server, uri, timeout))


def prompt(
    server: Annotated[str, typer.Argument(help="The server that offers the prompt.", show_default=False)],
    name: Annotated[
        str, typer.Argument(help="The prompt's name (miroctl list SERVER --prompts lists them).", show_default=False)
    ],
    pairs: Annotated[
        list[str] | None, typer.Argument(help="The prompt's arguments as key=value pairs.", show_default=False)
    ] = None,
    json_mode: JsonOpt = False,
    timeout: TimeoutOpt = None,
    save_dir: SaveDirOpt = None,
    config: ConfigOpt = None,
    stdio: StdioOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
    startup_timeout: StartupOpt = None,
) -> None:
    """Get one prompt of a server, filled in with its arguments: its messages, role by role."""
    out = boundary.output(json_mode)
    arguments = {key: value for key, value, _ in map(split_pair, pairs or [])}  # a prompt's arguments are text
    loaded = load_config(config, stdio, url, header, out, startup_timeout)
    _fetch(
        out, loaded, json_mode, save_dir, lambda manager: catalog.get_prompt(manager, server, name, arguments, timeout)
    )


def _fetch(
    out: Output,
    loaded: Config,
    json_mode: bool,
    save_dir: str | None,
    ask: Callable[[Manager], Awaitable[catalog.Fetched]],
) -> None:
    """Ask on a fresh manager, print the envelope (JSON) or its content (human), exit with its code."""
    blobs.check_dir(save_dir)

    async def work() -> catalog.Fetched:
        async with manager_for(loaded, out) as manager:
            return await ask(manager)

    fetched = run(work)
    if json_mode:
        out.json(fetched.to_dict())
    else:
        stem = PurePosixPath(fetched.name).stem or fetched.what
        saved = blobs.save(fetched.blocks(), stem, save_dir) if fetched.ok else None
        fetched_result(out, fetched, saved)
    raise typer.Exit(int(fetched.exit_code))
