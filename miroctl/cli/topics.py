"""`miroctl help TOPIC`: the full explanation of options whose `--help` line is kept short."""

from __future__ import annotations

from typing import Annotated

import typer

from miroctl.base.errors import UsageError

CONNECTION = """\
Connection options: which servers a command talks to, and how.
Each command that talks to servers takes those that apply to it
(its --help lists them, one line each).

-c, --config PROFILE
    A profile's name (research, or any bundled one), a profile
    yaml, one server yaml, an mcpServers JSON file (Claude Desktop,
    Cursor, .mcp.json), a VS Code servers JSON, a Codex TOML file,
    or a client's own configs by name: claude-desktop, claude-code,
    cursor, vscode, codex, gemini, windsurf.
    [env: MIROCTL_CONFIG]
--agent NAME
    With a MiroFlow or MiroThinker agent file as --config: whose
    servers to use, a sub-agent's name (default: the main agent).
    [env: MIROCTL_AGENT]
--stdio COMMAND
    An ad-hoc stdio server: "CMD ARGS", split as a shell would.
    Repeatable; replaces the configured servers.
--url URL
    An ad-hoc HTTP server: streamable HTTP, or SSE when the path
    ends in /sse. Repeatable.
-H, --header HEADER
    A header for --url servers: 'Name: value'. Repeatable.
-e, --env NAME=VALUE
    A variable in the environment of --stdio servers. They inherit
    only a few of miroctl's (PATH, HOME, ...: see
    docs/configuration.md); pass any other they need here.
    Repeatable.
--startup-timeout SECONDS
    Seconds a server may take to start and list its tools.
--via URL
    Go through a running `miroctl serve --transport http` at this
    URL: no SDK is loaded and its servers are already warm. With
    check, the gateway probes its servers afresh.
    [env: MIROCTL_URL, unless servers are named another way:
    --config, --stdio or --url]
--no-daemon
    Run in this process, without the background daemon that keeps
    `persistent: true` servers alive between commands
    (docs/daemon.md). [env: MIROCTL_DAEMON set to never]
"""

HTTP = """\
HTTP limits of `miroctl serve --transport http` (docs/serving.md).
Each applies to http only; stdio has no use for them.

--allow-host HOST[:PORT]
    Another Host header to accept, e.g. gateway.lan:8765 or
    gateway.lan:* (repeatable).
--allow-origin ORIGIN
    Another browser Origin to accept, e.g. https://app.example
    (repeatable). Requests without Origin (scripts) are accepted.
--max-body BYTES
    Largest request body in bytes; larger ones get 413
    (default: 4194304, 4 MiB).
--read-timeout SECONDS
    Seconds a client may take to send a request's headers, and
    three times that for its body; then the connection is closed
    (408). Default: 10.
--max-sessions N
    MCP sessions open at once; more get 503 (default: 256).
--session-idle SECONDS
    An MCP session with no request for this long is closed
    (default: 600).
"""

TOPICS = {"connection": CONNECTION, "http": HTTP}


def help_(
    topic: Annotated[
        str | None,
        typer.Argument(metavar="TOPIC", help="connection or http (default: the list of topics).", show_default=False),
    ] = None,
) -> None:
    """Explain a group of options in full: their `--help` lines are kept short."""
    if topic is None:
        typer.echo("Topics (miroctl help TOPIC):")
        for name, text in TOPICS.items():
            typer.echo(f"  {name:<12}{text.splitlines()[0]}")
        return
    if topic.lower() not in TOPICS:
        raise UsageError(f"no help topic {topic!r}", hint=f"topics: {', '.join(TOPICS)}")
    typer.echo(TOPICS[topic.lower()], nl=False)
