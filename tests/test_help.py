"""`--help` of every command: examples that parse, types in words, options grouped in panels."""

from __future__ import annotations

import re
import shlex

import pytest
import typer
from typer.testing import CliRunner

from miroctl.cli import root
from miroctl.cli.app import app
from miroctl.cli.helptext import EXAMPLES

GROUP = typer.main.get_command(app)
TOP = GROUP.commands  # type: ignore[attr-defined]
# Every command line a user can ask help of: the commands, the groups and the groups' own commands.
COMMANDS = sorted([*TOP, *(f"{name} {sub}" for name, group in TOP.items() for sub in getattr(group, "commands", {}))])
TALKS_TO_SERVERS = {"list", "call", "read", "prompt", "check", "serve", "bench"}
PYTHON_TYPES = re.compile(r"<[^>\n]*>|\b(list|dict|tuple)\[|\b(str|int|float|bool|NoneType)\b")


def help_of(*words: str) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_covered_by_the_help_examples():
    assert set(EXAMPLES) == {"miroctl", *COMMANDS}


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_names_no_python_type_and_shows_examples_one_per_line(command):
    text = help_of(*command.split())
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)
    examples = [line.strip() for line in text.splitlines() if line.strip().startswith("miroctl ")]
    assert len(examples) >= 2
    assert examples == [line for line, _ in EXAMPLES[command or "miroctl"]]  # each on its own line, unwrapped
    assert "Exit codes:" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_help_groups_options_in_panels(command):
    text = help_of(*command.split())
    panels = re.findall(r"╭─ ([A-Za-z ]+?) ─", text)
    if command in TALKS_TO_SERVERS:
        assert {"Connection", "Output"} <= set(panels), panels
    *path, name = command.split()
    sub = TOP[path[0]].commands[name] if path else TOP[name]
    options = [p for p in sub.params if isinstance(p, typer.core.TyperOption) and not p.hidden]
    assert all(p.rich_help_panel for p in options), [p.name for p in options if not p.rich_help_panel]


def test_help_shows_bracketed_text_as_written():
    text = help_of("call")
    assert "[env: MIROCTL_URL, unless servers are named another way]" in " ".join(text.split()).replace("│ ", "")


@pytest.mark.parametrize(("command", "example"), [(c, line) for c, lines in EXAMPLES.items() for line, _ in lines])
def test_every_help_example_is_a_command_line_miroctl_accepts(command, example):
    words = shlex.split(example)
    assert words[0] == "miroctl"
    if words[1:] == ["--install-completion"]:  # an option of the app itself, not a command
        assert "install_completion" in {p.name for p in GROUP.params}
        return
    name, *args = words[1:]
    sub = TOP[name]
    if hasattr(sub, "commands"):  # a group: the example names one of its commands
        name, *args = args
        sub = sub.commands[name]
    context = sub.make_context(name, args)  # parses and checks every option, runs nothing
    assert context.command is sub


@pytest.mark.parametrize(
    "words",
    [
        ["call", "--help"],
        ["list", "--help"],
        ["call", "--bogus"],
        ["call", "--timeout", "soon", "s", "t"],
        ["list", "--json", "--schema", "--mode", "sideways"],
    ],
)
def test_the_one_command_app_of_a_cold_call_or_list_answers_as_the_whole_app(words):
    whole = CliRunner().invoke(app, words, env={"COLUMNS": "100"})
    alone = CliRunner().invoke(root.only(words[0]), words, env={"COLUMNS": "100"})
    assert alone.exit_code == whole.exit_code
    assert (alone.stdout, alone.stderr) == (whole.stdout, whole.stderr)


# bench's `--max-error-rate` beside its other options needs 61 columns; every other help fits in 60.
FITS_60 = [command for command in ["", *COMMANDS] if command != "bench"]


@pytest.mark.parametrize("command", FITS_60)
def test_help_at_60_columns_cuts_no_option_name_or_word(command):
    result = CliRunner().invoke(app, [*command.split(), "--help"], env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 60


def test_the_root_help_shows_install_completion_whole_among_its_examples():
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "60"}).stdout
    assert "miroctl --install-completion" in [line.strip() for line in shown.splitlines()]
    assert "--show-completion" not in shown
