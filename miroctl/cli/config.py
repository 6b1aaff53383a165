"""`miroctl config sources` and `miroctl config import`: the servers users configured in their MCP clients."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from miroctl.base.errors import ConfigError
from miroctl.cli import boundary
from miroctl.cli.helptext import OUTPUT, WordedCommand, WordedGroup, epilog
from miroctl.cli.options import JsonOpt
from miroctl.config import clients, importing
from miroctl.config.ecosystem import Template
from miroctl.render.sources import import_report, sources_table

app = typer.Typer(
    name="config",
    help="Find the MCP servers configured in Claude, Cursor, VS Code, Codex, Gemini CLI and Windsurf; import them.",
    no_args_is_help=True,
    cls=WordedGroup,
    epilog=epilog("config"),
)


@app.command(cls=WordedCommand, epilog=epilog("config sources"))
def sources(
    json_mode: JsonOpt = False,
    client: Annotated[
        str | None,
        typer.Option("--client", rich_help_panel=OUTPUT, help=f"Only this client ({', '.join(clients.CLIENTS)})."),
    ] = None,
) -> None:
    """List every client config found here and in HOME: path, servers, problems (exit 1 when any)."""
    out = boundary.output(json_mode)
    if client is not None and client not in clients.CLIENTS:
        raise ConfigError(f"unknown client {client!r}", hint=f"one of {', '.join(clients.CLIENTS)}")
    home = clients.home_dir()
    rows = [source.to_dict(home, Path.cwd()) for source in clients.discover(home, client=client)]
    if json_mode:
        out.json({"schema": "miroctl.sources/1", "sources": rows})
    else:
        sources_table(out, rows)
    raise typer.Exit(1 if any(row["problems"] for row in rows) else 0)


@app.command("import", cls=WordedCommand, epilog=epilog("config import"))
def import_(
    source: Annotated[str, typer.Argument(help=f"A client ({', '.join(clients.CLIENTS)}) or a config file.")],
    into: Annotated[
        str, typer.Option("--into", metavar="DIR", rich_help_panel=OUTPUT, help="Directory for the server yaml files.")
    ] = "config/tool",
    force: Annotated[
        bool, typer.Option("--force", rich_help_panel=OUTPUT, help="Replace server files that already exist.")
    ] = False,
) -> None:
    """Write one miroctl server yaml per server of a client (or file); never overwrites without --force."""
    out = boundary.output(False)
    templates = _templates(source)
    plan = importing.plan(templates, Path(into), force=force)
    importing.write(plan)
    import_report(out, [(p.name, str(p.path), p.literal_secrets) for p in plan.files], plan.skipped)
    raise typer.Exit(0 if plan.files else 1)


def _templates(source: str) -> list[Template]:
    """The servers of a client (its scopes, most specific last) or of one file; ConfigError when none."""
    path = Path(source).expanduser()
    if source in clients.CLIENTS and not path.exists():
        found = clients.discover(client=source)
        if not found:
            raise ConfigError(f"no {source} config with MCP servers found")
    elif path.is_file():
        found = [clients.read_file(path)]
    else:
        raise ConfigError(f"no such client or file: {source}", hint=f"clients: {', '.join(clients.CLIENTS)}")
    problems = [s.problem for s in found if s.problem]
    if problems and len(problems) == len(found):
        raise ConfigError(problems[0])
    return [t for s in found if s.problem is None for t in s.templates]
