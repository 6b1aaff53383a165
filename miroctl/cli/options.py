"""The options the commands share, declared once as Typer annotations."""

from __future__ import annotations

from typing import Annotated

import typer

from miroctl.cli.helptext import CONNECTION, OUTPUT, POLICY
from miroctl.config.sections import Mode
from miroctl.launch import options

ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        metavar="PROFILE",
        rich_help_panel=CONNECTION,
        help="A profile's name (research), a profile yaml, one server yaml, an mcpServers JSON or Codex TOML file, "
        "or a client's own configs (claude-desktop, claude-code, cursor, vscode, codex, gemini, windsurf). "
        "[env: MIROCTL_CONFIG]",
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="NAME",
        rich_help_panel=CONNECTION,
        help="With a MiroFlow or MiroThinker agent file as --config: whose servers to use, a sub-agent's name "
        "(default: the main agent). [env: MIROCTL_AGENT]",
    ),
]
StdioOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--stdio",
        metavar="COMMAND",
        rich_help_panel=CONNECTION,
        help='An ad-hoc stdio server: "CMD ARGS" (repeatable; replaces the configured servers).',
    ),
]
UrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--url",
        metavar="URL",
        rich_help_panel=CONNECTION,
        help="An ad-hoc HTTP server: streamable HTTP, or SSE when the path ends in /sse (repeatable).",
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
        help="NAME=value in the environment of --stdio servers, which inherit only a few variables (PATH, "
        "HOME, ...: see the docs) (repeatable).",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        rich_help_panel=OUTPUT,
        help="Print one JSON document on stdout, errors included (exit code unchanged).",
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
        help="Go through a running `miroctl serve --transport http` at this URL (fast: no SDK, warm "
        "servers). [env: MIROCTL_URL, unless servers are named another way]",
    ),
]
NoDaemonOpt = Annotated[
    bool,
    typer.Option(
        "--no-daemon",
        rich_help_panel=CONNECTION,
        help="Run in this process, without the background daemon that keeps `persistent: true` servers "
        "(docs/daemon.md). [env: MIROCTL_DAEMON set to never]",
    ),
]
ModeOpt = Annotated[
    Mode | None,
    typer.Option(
        "--mode",
        metavar="MODE",
        rich_help_panel=POLICY,
        help="Permission mode: bypass, read_only, normal or ask (default: the profile's policy.mode, else normal).",
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
        help="Passed to every server as TASK_ID, so per-task state stays apart. [env: TASK_ID]",
    ),
]
LogOpt = Annotated[
    str | None,
    typer.Option(
        "--log",
        metavar="FILE",
        rich_help_panel=OUTPUT,
        help="Append one JSON line per step (start, decision, retry, fallback, end) to this file.",
    ),
]
RecordOpt = Annotated[
    str | None,
    typer.Option(
        "--record",
        metavar="FILE",
        rich_help_panel=OUTPUT,
        help="Write every server's JSON-RPC traffic to FILE, one JSON line per message (secrets masked); "
        "`miroctl replay FILE` serves it back.",
    ),
]
