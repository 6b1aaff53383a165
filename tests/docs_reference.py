"""The option reference of docs/commands.md, made from the Typer app itself (what `--help` shows).

The page holds a cog block (https://nedbatchelder.com/code/cog/) that calls `reference(cog.out)`;
tests/test_docs_reference.py fails when the page and the app disagree, and either of these rewrites it:

    cog -r -I . docs/commands.md
    MIROCTL_DOCS_UPDATE=1 python -m pytest tests/test_docs_reference.py

Every command of the app gets a section: its usage line, then one row per argument and option with the
option's names, its value in words and its help text (defaults, ranges and environment variables included),
grouped as `--help` groups them. `--help` and hidden options are left out, except those hidden in a panel of
their own (serve's HTTP limits): `--help` leaves them to `miroctl help TOPIC`, the reference keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import typer.main
from typer import _click as click
from typer.core import TyperArgument, TyperGroup

APP = "miroctl.cli.app"  # the module whose `app` is the Typer app of the console script
DEFAULT_GROUP = "Options"


def root() -> TyperGroup:
    module = __import__(APP, fromlist=["app"])
    command = typer.main.get_command(module.app)
    assert isinstance(command, TyperGroup), f"{APP}.app is not a group of commands"
    return command


def commands(group: TyperGroup, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every visible command under `group`, in the order `--help` lists them; groups stand for their commands."""
    context = click.Context(group, info_name="miroctl")
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None or command.hidden:
            continue
        if isinstance(command, TyperGroup):
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def cell(text: str) -> str:
    """Help text as a table cell: Rich's escapes undone, pipes escaped, on one line."""
    return " ".join(text.replace("\\[", "[").replace("|", "\\|").split())


def help_record(param: click.Parameter, context: click.Context) -> tuple[str, str] | None:
    """The parameter's (names, meaning), as it would show were it not hidden."""
    hidden = getattr(param, "hidden", False)
    param.hidden = False  # type: ignore[attr-defined]  # click's Option and Argument both have it
    try:
        return param.get_help_record(context)
    finally:
        param.hidden = hidden  # type: ignore[attr-defined]


def rows(command: click.Command, path: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(group, option, meaning) of each visible parameter, arguments first, then options by group."""
    context = command.make_context(" ".join(("miroctl", *path)), [], resilient_parsing=True)
    arguments: list[tuple[str, str, str]] = []
    groups: dict[str, list[tuple[str, str, str]]] = {DEFAULT_GROUP: []}
    for param in command.get_params(context):
        if param.name == "help" or (getattr(param, "hidden", False) and not getattr(param, "rich_help_panel", None)):
            continue
        record = help_record(param, context)
        if record is None:
            continue
        names, meaning = record
        if isinstance(param, TyperArgument):
            names = (param.metavar or param.human_readable_name) + ("..." if param.nargs == -1 else "")
            arguments.append(("Arguments", names, meaning))
            continue
        panel = getattr(param, "rich_help_panel", None) or DEFAULT_GROUP
        groups.setdefault(panel, []).append((panel, names, meaning))
    return arguments + [row for group in groups.values() for row in group]


def section(path: tuple[str, ...], command: click.Command) -> str:
    context = command.make_context(" ".join(("miroctl", *path)), [], resilient_parsing=True)
    usage = " ".join(["miroctl", *path, *command.collect_usage_pieces(context)])
    lines = [f"### `miroctl {' '.join(path)}`", "", f"`{usage}`", "", "| group | option | meaning |", "|---|---|---|"]
    for group, names, meaning in rows(command, path):
        lines.append(f"| {group} | `{cell(names)}` | {cell(meaning)} |")
    return "\n".join(lines) + "\n"


def reference(out: Callable[[str], object]) -> None:
    """Write the whole reference, one section per command, through `out` (cog's `cog.out`)."""
    sections = [section(path, command) for path, command in commands(root())]
    out("\n" + "\n".join(sections) + "\n")
