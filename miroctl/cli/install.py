"""`miroctl install CLIENT`: put the entry that starts `miroctl serve` into an MCP client's config."""

from __future__ import annotations

import difflib
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from miroctl.base.errors import ConfigError, UsageError
from miroctl.cli import boundary
from miroctl.cli.helptext import OUTPUT, SERVING
from miroctl.config import clients, installing
from miroctl.config.loader import bundled_profile, bundled_profiles
from miroctl.render.sources import install_report


def _clients(incomplete: str) -> list[str]:
    return [name for name in clients.CLIENTS if name.startswith(incomplete)]


def install(
    client: Annotated[
        str,
        typer.Argument(
            metavar="CLIENT",
            help=f"The client: {', '.join(clients.CLIENTS)}.",
            show_default=False,
            autocompletion=_clients,
        ),
    ],
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-P",
            metavar="PROFILE",
            rich_help_panel=SERVING,
            help="The profile to serve (a bundled one such as research, or a yaml file); default: the default one.",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            metavar="NAME",
            rich_help_panel=SERVING,
            help="The server's name in the client (default: miroctl, or miroctl-PROFILE with --profile).",
        ),
    ] = None,
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            metavar="SCOPE",
            rich_help_panel=OUTPUT,
            help="user (HOME), project (this directory) or local (Claude Code's entry for this directory).",
        ),
    ] = "user",
    show: Annotated[
        bool, typer.Option("--print", rich_help_panel=OUTPUT, help="Print the entry to add; change no file.")
    ] = False,
    remove: Annotated[
        bool, typer.Option("--remove", rich_help_panel=OUTPUT, help="Take the entry out of the client's config.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", rich_help_panel=OUTPUT, help="Replace a server of that name set up differently."),
    ] = False,
) -> None:
    """Add `miroctl serve` to an MCP client's config (kept: the rest of it, and a backup as FILE.bak)."""
    out = boundary.output(False)
    if show and remove:
        raise UsageError("--print and --remove do not go together", hint="--print shows what install would add")
    home, project = clients.home_dir(), Path.cwd()
    location = installing.target(client, scope, home, project)
    profile = _profile(profile)
    server_name = name or (f"miroctl-{Path(profile).stem}" if profile else "miroctl")
    command = [*_miroctl(), "serve", *(["--config", profile] if profile else [])]
    body = installing.entry(client, command)
    if show:
        out.text(installing.snippet(location, server_name, body))
        return
    change = installing.plan(location, server_name, body, remove=remove, force=force)
    backup = installing.write(change)
    install_report(
        out,
        change.action,
        server_name,
        f"{clients.shown(location.path, home, project)} ({client}, {scope} scope)",
        " ".join(command),
        clients.shown(backup, home, project) if backup else None,
    )


def _profile(profile: str | None) -> str | None:
    """The profile as the client's `miroctl serve` will find it from any directory: a bundled profile's
    name, or a file's absolute path. ConfigError for neither, with the nearest bundled name."""
    if profile is None or profile == "default":
        return None
    path = Path(profile).expanduser()
    if path.is_file():
        return str(path.resolve())
    if bundled_profile(profile) is not None:
        return profile
    names = bundled_profiles()
    near = difflib.get_close_matches(profile, names, n=1)
    hint = f"did you mean --profile {near[0]}?" if near else f"bundled profiles: {', '.join(names)}"
    raise ConfigError(f"no such profile or file: {profile}", hint=hint)


def _miroctl() -> list[str]:
    """How a client starts this very miroctl whatever its PATH: the console script beside this Python
    (a venv, pipx, `uv tool`), else the one on PATH, else this Python with `-m miroctl`."""
    script = Path(sys.executable).parent / ("miroctl.exe" if os.name == "nt" else "miroctl")
    if script.is_file():
        return [str(script)]
    found = shutil.which("miroctl")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "miroctl"]
