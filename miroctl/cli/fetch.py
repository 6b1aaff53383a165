"""`miroctl read` and `miroctl prompt`: a server's resources and prompts, fetched like a tool call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import Annotated, Any

import typer

from miroctl.cli.base import (
    ConfigOpt,
    HeaderOpt,
    JsonOpt,
    StartupOpt,
    StdioOpt,
    UrlOpt,
    app,
    fail,
    load_config,
    make_output,
    manager_for,
    run,
)
from miroctl.errors import UsageError

TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", "-t", min=0.001, help="Seconds the request may take (default: server, profile, 900).")]
SaveDirOpt = Annotated[str | None, typer.Option(
    "--save-dir", help="Where binary contents are saved (default: a new temp dir).")]


@app.command()
def read(
    server: Annotated[str, typer.Argument(help="The server that offers the resource.", show_default=False)],
    uri: Annotated[str, typer.Argument(help="The resource's URI (miroctl list SERVER --resources lists them).",
                                       show_default=False)],
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
    from miroctl import catalog

    out = make_output(json_mode)
    loaded = load_config(config, stdio, url, header, out, startup_timeout)
    _fetch(out, loaded, json_mode, save_dir, lambda manager: catalog.read_resource(manager, server, uri, timeout))


@app.command()
def prompt(
    server: Annotated[str, typer.Argument(help="The server that offers the prompt.", show_default=False)],
    name: Annotated[str, typer.Argument(help="The prompt's name (miroctl list SERVER --prompts lists them).",
                                        show_default=False)],
    pairs: Annotated[list[str] | None, typer.Argument(help="The prompt's arguments as key=value pairs.",
                                                      show_default=False)] = None,
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
    from miroctl import catalog
    from miroctl.args import split_pair

    out = make_output(json_mode)
    try:
        arguments = {key: value for key, value, _ in map(split_pair, pairs or [])}  # a prompt's arguments are text
    except UsageError as exc:
        fail(out, exc)
    loaded = load_config(config, stdio, url, header, out, startup_timeout)
    _fetch(out, loaded, json_mode, save_dir,
           lambda manager: catalog.get_prompt(manager, server, name, arguments, timeout))


def _fetch(out: Any, loaded: Any, json_mode: bool, save_dir: str | None,
           ask: Callable[[Any], Awaitable[Any]]) -> None:
    """Ask on a fresh manager, print the envelope (JSON) or its content (human), exit with its code."""
    from miroctl import blobs
    from miroctl.render import fetched_result

    async def work() -> Any:
        async with manager_for(loaded, out) as manager:
            return await ask(manager)

    fetched = run(out, work)
    if json_mode:
        out.json(fetched.to_dict())
    else:
        stem = PurePosixPath(fetched.name).stem or fetched.what
        saved = blobs.save(fetched.blocks(), stem, save_dir) if fetched.ok else []
        fetched_result(out, fetched, saved)
    raise typer.Exit(int(fetched.exit_code))
