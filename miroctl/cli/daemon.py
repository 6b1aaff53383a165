"""`miroctl daemon status|stop|logs`: the background daemons that keep persistent servers between commands."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from miroctl.base.errors import TimedOut
from miroctl.cli import boundary
from miroctl.cli.common import load_config
from miroctl.cli.helptext import OUTPUT, WordedCommand, WordedGroup, epilog
from miroctl.cli.options import ConfigOpt, JsonOpt
from miroctl.daemon import control
from miroctl.daemonclient.choice import place_for
from miroctl.daemonclient.places import Place, places, runtime_dir
from miroctl.render.daemons import daemons_table, log_lines
from miroctl.render.output import Output
from miroctl.sessions.processes import wait_dead

STOP_WAIT = 60.0  # seconds a stopped daemon may take to drain its calls and stop its servers

app = typer.Typer(
    name="daemon",
    help="See, stop and read the logs of the background daemons that keep persistent servers between commands.",
    no_args_is_help=True,
    cls=WordedGroup,
    epilog=epilog("daemon"),
)
AllOpt = Annotated[
    bool, typer.Option("--all", "-a", rich_help_panel=OUTPUT, help="Every daemon of this user, not only this config's.")
]


@app.command(cls=WordedCommand, epilog=epilog("daemon status"))
def status(json_mode: JsonOpt = False) -> None:
    """Show each daemon: pid, config, directory, servers and their state, sessions, idle time, socket."""
    out = boundary.output(json_mode)
    documents = control.statuses(runtime_dir())
    if json_mode:
        out.json({"schema": "miroctl.daemons/1", "daemons": documents})
    else:
        daemons_table(out, documents)
    raise typer.Exit(0 if all(d["state"] == "running" for d in documents) else 1)


@app.command(cls=WordedCommand, epilog=epilog("daemon stop"))
def stop(every: AllOpt = False, config: ConfigOpt = None) -> None:
    """Stop this configuration's daemon (or every one): calls in flight finish, then every server is stopped."""
    out = boundary.output(False)
    targets = places(runtime_dir()) if every else [_this(out, config)]
    records = {place.key: place.read_record() for place in targets}
    stopped = [(place, pid) for place in targets if (pid := control.stop_daemon(place)) is not None]
    if not stopped:
        out.note("no daemon was running" + ("" if every else " for this configuration here"))
    _wait_gone([pid for _, pid in stopped])
    for place, _ in stopped:
        out.note(f"stopped the daemon of {records[place.key].get('source') or place.key} and its servers")


@app.command(cls=WordedCommand, epilog=epilog("daemon logs"))
def logs(
    every: AllOpt = False,
    config: ConfigOpt = None,
    lines: Annotated[
        int, typer.Option("--lines", "-n", min=0, metavar="N", rich_help_panel=OUTPUT, help="Last N lines; 0: all.")
    ] = 50,
) -> None:
    """Print the log of this configuration's daemon (or every one's), secrets masked."""
    out = boundary.output(False)
    targets = sorted(runtime_dir().glob("*.log")) if every else [_this(out, config).log]
    found = [path for path in targets if path.exists()]
    if not found:
        out.note("no daemon log" + ("" if every else " for this configuration here"))
    for path in found:
        log_lines(out, path, path.read_text(errors="replace").splitlines(), lines, heading=len(found) > 1)


def _this(out: Output, config: str | None) -> Place:
    """The daemon place of the configuration this directory and --config name."""
    loaded = load_config(config, None, None, None, out)
    return place_for(loaded, config, dict(os.environ))


def _wait_gone(pids: list[int], seconds: float = STOP_WAIT) -> None:
    """Until every stopped daemon has exited (its servers stopped before it); a hang is a timeout. A daemon
    that has exited but is not yet reaped (a zombie: it is not this process's child) has stopped."""
    import psutil

    alive = []
    for pid in pids:
        try:
            alive.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    left = wait_dead(alive, seconds)
    if left:
        raise TimedOut(
            f"daemon pid {', '.join(str(p.pid) for p in left)} did not exit within {seconds:g}s",
            hint="`kill` it; its servers stop when it does",
        )
