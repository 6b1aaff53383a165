"""A command that goes to the background daemon (cli/prestart.py decided it): find or start this
configuration's daemon (miroctl.daemon), then run the command through it as the warm path runs one through a
gateway, so that a persistent server's state lasts from one command to the next."""

from __future__ import annotations

import os

from miroctl.cli import boundary, warm
from miroctl.config.loader import Config
from miroctl.daemon.routes import write_route
from miroctl.daemonclient.choice import LOST, idle_seconds, keeps_every, place_for
from miroctl.daemonclient.keys import origin_key
from miroctl.daemonclient.starter import Attached, attach
from miroctl.launch import early
from miroctl.launch.handoff import Launch
from miroctl.launch.reader import Reading
from miroctl.render.output import Output


def run(launch: Launch, reading: Reading, loaded: Config) -> int:
    """The exit code of the command, run through the daemon of its configuration."""
    boundary.show_tracebacks(launch.traceback)
    out = boundary.output(json_mode=reading.flag("json_mode"))
    out.masker = out.masker.with_secrets(loaded.secrets())

    def work() -> int:
        name = reading.text("config")
        place = place_for(loaded, name, os.environ)
        attached = attach(place, origin_key(name, os.getcwd()), name, idle_seconds(loaded, os.environ))
        write_route(place, loaded, name, keeps_every(loaded, os.environ), os.environ)  # the next command's short way
        if attached.started:
            early.erase()
            _tell(out, attached, loaded, reading)
        return warm.work(reading, attached.url, out)()

    return boundary.guarded(work)


def _tell(out: Output, attached: Attached, loaded: Config, reading: Reading) -> None:
    """Once, when this command started the daemon: that one now keeps the servers, and how to stop it."""
    if attached.replaced_dead:
        out.note(f"miroctl: {LOST}")
    named = loaded.get(reading.words[0]) if reading.words else None
    names = named.name if named is not None else "these servers"
    idle = f"{idle_seconds(loaded, os.environ):g}"
    out.note(
        f"miroctl: a background daemon now keeps {names} running between commands; "
        f"`miroctl daemon stop` ends it, --no-daemon skips it (idle exit after {idle}s)"
    )
