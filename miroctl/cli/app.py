"""The Typer app: its commands, the version flag, and the error boundary around every command."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer import _click as click

from miroctl import __version__
from miroctl.base.errors import MiroctlError
from miroctl.cli import auth, bench, boundary, check, commands, configs, fetch, replay, serve
from miroctl.cli.helptext import WordedCommand, WordedGroup, epilog


class _Guarded(WordedGroup):
    """Every command runs inside the boundary: its errors become a message and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        boundary.begin()
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # the command line's own exits and usage errors
        except (MiroctlError, KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - the boundary
            raise typer.Exit(boundary.report(exc)) from None


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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"miroctl {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
    traceback: Annotated[
        bool,
        typer.Option(
            "--traceback",
            help="On an error, also show where it came from (anywhere on the command line). [env: MIROCTL_TRACEBACK]",
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


app.command("list", cls=WordedCommand, epilog=epilog("list"))(commands.list_)
app.command(cls=WordedCommand, epilog=epilog("call"))(commands.call)
app.command(cls=WordedCommand, epilog=epilog("read"))(fetch.read)
app.command(cls=WordedCommand, epilog=epilog("prompt"))(fetch.prompt)
app.command(cls=check.CheckCommand, epilog=epilog("check"))(check.check)
app.command(cls=WordedCommand, epilog=epilog("serve"))(serve.serve)
app.command(cls=WordedCommand, epilog=epilog("auth"))(auth.auth)
app.command("bench", cls=WordedCommand, epilog=epilog("bench"))(bench.bench_)
app.add_typer(configs.app)
app.command(cls=WordedCommand, epilog=epilog("replay"))(replay.replay)
