"""What `miroctl read` and `miroctl prompt` share: their --timeout and --save-dir, the one-server default, and
the fetch on a fresh manager, printed like a tool call's result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import Annotated

import typer

from miroctl.base.errors import UsageError
from miroctl.cli.common import Deferred, manager_for, run
from miroctl.cli.helptext import CALL, OUTPUT
from miroctl.cli.options import seconds
from miroctl.config.loader import Config
from miroctl.core import catalog
from miroctl.core.manager import Manager
from miroctl.render import blobs
from miroctl.render.output import Output
from miroctl.render.results import fetched_result

TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        "-t",
        parser=seconds,
        metavar="SECONDS",
        rich_help_panel=CALL,
        help="Seconds the request may take (default: server, profile, 900).",
    ),
]
SaveDirOpt = Annotated[
    str | None,
    typer.Option(
        "--save-dir",
        metavar="DIR",
        rich_help_panel=OUTPUT,
        help="Where binary contents are saved (default: a new temp dir).",
    ),
]


def only_server(loaded: Config, command: str) -> str:
    """The one server a command without a server name goes to."""
    if len(loaded.default_names) == 1:
        return loaded.default_names[0]
    raise UsageError(
        f"{command} needs a server name: there are {len(loaded.default_names)} servers",
        hint=f"miroctl {command} SERVER ...; miroctl list shows them",
    )


def fetch(
    out: Output,
    loaded: Config,
    save_dir: str | None,
    ask: Callable[[Manager], Awaitable[catalog.Fetched]],
    what: str,
    server: str,
) -> None:
    """Ask on a fresh manager, print the envelope (JSON) or its content (human) as soon as it comes, then stop
    the servers; exit with its code."""
    blobs.check_dir(save_dir)

    deferred = Deferred()
    with out.live(f"{what} on {server}") as view:

        async def work() -> catalog.Fetched:
            async with manager_for(loaded, out, stages=view.on_stage if view else None) as manager:
                fetched = await ask(manager)
                with deferred.catching():
                    _show(out, fetched, save_dir)  # at once: a server may take its time to stop
            deferred.check()
            return fetched

        fetched = run(work)
    raise typer.Exit(int(fetched.exit_code))


def _show(out: Output, fetched: catalog.Fetched, save_dir: str | None) -> None:
    """The envelope (--json) or the content, saved blobs named."""
    out.end_live()
    if out.json_mode:
        out.json(fetched.to_dict())
    else:
        stem = PurePosixPath(fetched.name).stem or fetched.what
        saved = blobs.save(fetched.blocks(), stem, save_dir) if fetched.ok else None
        fetched_result(out, fetched, saved)
