"""The warm path (`--via` a running gateway) and `call --batch` for the list and call commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from miroctl.cli.base import guard, run
from miroctl.errors import ExitCode


def resolve_via(via: str | None, config: str | None, stdio: list[str] | None, url: list[str] | None,
                 out: Any) -> str | None:
    """The gateway URL to go through (miroctl.warm decides); a usage error exits 2 here."""
    from miroctl import warm

    return guard(out, lambda: warm.resolve_via(via, bool(config or stdio or url)))


def call_via(gateway_url: str, target: list[str], args: str | None, timeout: float | None,
              no_autocorrect: bool, save_dir: str | None, json_mode: bool, out: Any) -> None:
    from miroctl import warm

    raise typer.Exit(warm.call(gateway_url, target, out=out, args=args, timeout=timeout,
                               no_autocorrect=no_autocorrect, save_dir=save_dir, json_mode=json_mode))


def list_via(gateway_url: str, servers: list[str], json_mode: bool, schema: bool, out: Any) -> None:
    from miroctl import warm

    raise typer.Exit(warm.list_servers(gateway_url, servers, out=out, json_mode=json_mode, schema=schema))


def call_batch(source: str, target: list[str] | None, args: str | None, jobs: int, timeout: float | None,
               no_autocorrect: bool, gateway_url: str | None, out: Any, make_manager: Callable[[], Any]) -> None:
    """--batch: JSON lines in, one envelope per line out (always JSON lines), in input order."""
    from miroctl import batch

    if target or args:
        out.error("--batch reads every call from its lines", "drop SERVER TOOL, key=value and --args",
                  label="usage")
        raise typer.Exit(int(ExitCode.USAGE))
    text = guard(out, lambda: batch.read_source(source))
    if gateway_url:
        from miroctl import warm

        raise typer.Exit(warm.batch(gateway_url, text, out=out, jobs=jobs, timeout=timeout,
                                    no_autocorrect=no_autocorrect))
    manager = make_manager()
    lines = batch.with_defaults(batch.parse_lines(text), timeout, not no_autocorrect)

    async def work() -> list[Any]:
        async with manager:
            return await batch.run(lines, manager.call, lambda outcome: out.json(outcome.to_dict()), jobs)

    raise typer.Exit(batch.exit_code(run(out, work)))
