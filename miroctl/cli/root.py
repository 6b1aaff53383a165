"""The root of the Typer app: the error boundary around every command, the version flag, the global options;
and an app with one command only (`only`), which the console script uses for a cold call or list: Typer
reads every command's signature when it runs, and a call should not pay for the thirty others."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer import _click as click

from miroctl.base.errors import MiroctlError
from miroctl.base.version import __version__
from miroctl.cli import boundary
from miroctl.cli import call as call_command
from miroctl.cli import list as list_command
from miroctl.cli.helptext import WordedCommand, WordedGroup, epilog
from miroctl.launch.handoff import Launch


class _Guarded(WordedGroup):
    """Every command runs inside the boundary: its errors become a message and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        boundary.begin()
        if isinstance(ctx.obj, Launch):
            ctx.obj.release_interrupts()
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # the command line's own exits and usage errors
        except (MiroctlError, KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - the boundary
            raise typer.Exit(boundary.report(exc)) from None


def new_app() -> typer.Typer:
    """The app with its global options and no commands yet."""
    app = typer.Typer(
        name="miroctl",
        cls=_Guarded,
        help="Run, probe, check and serve pools of MCP servers.",
        epilog=epilog("miroctl"),
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(main)
    return app


def _version(value: bool) -> None:
    if value:
        typer.echo(f"miroctl {__version__}")
        raise typer.Exit()


def main(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
    traceback: Annotated[
        bool,
        typer.Option(
            "--traceback",
            help="On an error, also show where it came from (anywhere on the command line).",
        ),
    ] = False,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            metavar="PROFILE",
            help="Profile for every command (`research`, a bundled one, or a file); a command's own --config wins.",
        ),
    ] = None,
) -> None:
    """Run, probe, check and serve pools of MCP servers."""
    if traceback:
        boundary.show_tracebacks()
    if config is not None:  # `miroctl -c research list`: the default of each command's --config
        commands = getattr(ctx.command, "commands", {})
        ctx.default_map = {name: {**(ctx.default_map or {}).get(name, {}), "config": config} for name in commands}


SIMPLE: dict[str, Callable[..., Any]] = {"list": list_command.list_, "call": call_command.call}


def add_simple(app: typer.Typer, name: str) -> None:
    """Register `list` or `call` (the commands `only` can serve alone)."""
    app.command(name, cls=WordedCommand, epilog=epilog(name))(SIMPLE[name])


def only(name: str) -> typer.Typer:
    """An app with the one command `name` (list or call): what `miroctl NAME ...` runs, at a fraction of the
    start-up cost of the whole app (tests/test_help.py holds its help and errors to the whole app's)."""
    app = new_app()
    add_simple(app, name)
    return app
