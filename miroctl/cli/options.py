"""The options the commands share, declared once as Typer annotations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from miroctl.cli.helptext import CONNECTION, OUTPUT, POLICY
from miroctl.config.sections import Mode
from miroctl.launch import options
from miroctl.launch.handoff import Launch

ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        metavar="PROFILE",
        rich_help_panel=CONNECTION,
        help="Profile, config file or client. [env: MIROCTL_CONFIG]",
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="NAME",
        rich_help_panel=CONNECTION,
        help="Which agent's servers, with an agent file as --config.",
    ),
]
StdioOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--stdio",
        metavar="COMMAND",
        rich_help_panel=CONNECTION,
        help='An ad-hoc stdio server: "CMD ARGS" (repeatable).',
    ),
]
UrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--url",
        metavar="URL",
        rich_help_panel=CONNECTION,
        help="An ad-hoc HTTP server, or SSE at /sse (repeatable).",
    ),
]
HeaderOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        "-H",
        metavar="HEADER",
        rich_help_panel=CONNECTION,
        help="A header for --url servers: 'Name: value' (repeatable).",
    ),
]
EnvOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        "-e",
        metavar="NAME=VALUE",
        rich_help_panel=CONNECTION,
        help="NAME=value for --stdio servers (repeatable).",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        rich_help_panel=OUTPUT,
        help="Print one JSON document on stdout, errors too.",
    ),
]


def seconds(text: str) -> float:
    """A positive, finite number of seconds: the option table's check (miroctl.launch.options), as Typer's."""
    try:
        return options.seconds(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


StartupOpt = Annotated[
    float | None,
    typer.Option(
        "--startup-timeout",
        parser=seconds,
        metavar="SECONDS",
        rich_help_panel=CONNECTION,
        help="Seconds a server may take to start and list its tools.",
    ),
]
ViaOpt = Annotated[
    str | None,
    typer.Option(
        "--via",
        metavar="URL",
        rich_help_panel=CONNECTION,
        help="Through a running `miroctl serve`. [env: MIROCTL_URL]",
    ),
]
NoDaemonOpt = Annotated[
    bool,
    typer.Option(
        "--no-daemon",
        rich_help_panel=CONNECTION,
        help="Run in this process, without the background daemon.",
    ),
]
ModeOpt = Annotated[
    Mode | None,
    typer.Option(
        "--mode",
        metavar="MODE",
        rich_help_panel=POLICY,
        help="Permission mode: bypass, read_only, normal or ask.",
        show_default=False,
    ),
]
YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        rich_help_panel=POLICY,
        help="Answer yes to mode ask's questions (destructive and high-risk tools).",
    ),
]
TaskIdOpt = Annotated[
    str | None,
    typer.Option(
        "--task-id",
        metavar="ID",
        rich_help_panel=POLICY,
        help="Passed to every server as TASK_ID. [env: TASK_ID]",
    ),
]
LogOpt = Annotated[
    str | None,
    typer.Option(
        "--log",
        metavar="FILE",
        rich_help_panel=OUTPUT,
        help="Append one JSON line per step to FILE.",
    ),
]
RecordOpt = Annotated[
    str | None,
    typer.Option(
        "--record",
        metavar="FILE",
        rich_help_panel=OUTPUT,
        help="Record JSON-RPC traffic to FILE (`miroctl replay FILE`).",
    ),
]


def launch_of(ctx: typer.Context) -> Launch | None:
    """What the console entry handed over (the configuration its early start read), when it ran the command."""
    return ctx.obj if isinstance(ctx.obj, Launch) else None


def performed(perform: Callable[..., int], ctx: typer.Context, parameters: Mapping[str, Any]) -> typer.Exit:
    """A command's exit once Typer has read its line: `perform` (what cli/direct.py runs without Typer) with
    the Launch the console entry handed over and every parameter (the command's `locals()`) but the context."""
    values = {name: value for name, value in parameters.items() if name != "ctx"}
    return typer.Exit(perform(launch_of(ctx), **values))
