"""`miroctl read`: one resource of a server, fetched like a tool call."""

from __future__ import annotations

from typing import Annotated

import typer

from miroctl.base.errors import UsageError
from miroctl.cli import boundary, completion, remote
from miroctl.cli.common import load_config
from miroctl.cli.fetch import SaveDirOpt, TimeoutOpt, fetch, only_server
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
from miroctl.core import catalog


def read(
    ctx: typer.Context,
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
    no_daemon: NoDaemonOpt = False,
) -> None:
    """Read one resource of a server: text on stdout, binary contents saved to files."""
    out = boundary.output(json_mode)
    gateway_url = remote.resolve_via(via, bool(config or stdio or url))
    if gateway_url:
        raise typer.Exit(remote.read(gateway_url, target, out=out, timeout=timeout, save_dir=save_dir))
    if len(target) > 2:
        raise UsageError("read takes SERVER and URI (SERVER may be left out when there is only one)")
    launch = launch_of(ctx)  # the configuration the daemon's decision read
    loaded = load_config(config, stdio, url, header, out, startup_timeout, env, launch=launch)
    server, uri = (target[0], target[1]) if len(target) == 2 else (only_server(loaded, "read"), target[0])
    fetch(
        out,
        loaded,
        save_dir,
        lambda manager: catalog.read_resource(manager, server, uri, timeout),
        f"reading {uri}",
        server,
    )
