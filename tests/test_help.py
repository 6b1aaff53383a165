"""`--help` of every command: examples that parse, types in words, options grouped in panels."""

from __future__ import annotations

import re
import shlex

import pytest
import typer
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.cli.helptext import EXAMPLES

GROUP = typer.main.get_command(app)
COMMANDS = sorted(GROUP.commands)  # type: ignore[attr-defined]
PYTHON_TYPES = re.compile(r"<[^>\n]*>|\b(list|dict|tuple)\[|\b(str|int|float|bool|NoneType)\b")


def help_of(*words: str) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_covered_by_the_help_examples():
    assert set(EXAMPLES) == {"miroctl", *COMMANDS}


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_names_no_python_type_and_shows_examples_one_per_line(command):
    text = help_of(*filter(None, [command]))
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)
    examples = [line.strip() for line in text.splitlines() if line.strip().startswith("miroctl ")]
    assert len(examples) >= 2
    assert examples == [line for line, _ in EXAMPLES[command or "miroctl"]]  # each on its own line, unwrapped
    assert "Exit codes:" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_help_groups_options_in_panels(command):
    text = help_of(command)
    panels = re.findall(r"╭─ ([A-Za-z ]+?) ─", text)
    assert {"Connection", "Output"} <= set(panels), panels
    assert panels.count("Options") <= 1  # only --help is left ungrouped


def test_help_shows_bracketed_text_as_written():
    text = help_of("call")
    assert "[env: MIROCTL_URL, unless --config/--stdio/--url is given]" in " ".join(text.split()).replace("│ ", "")


@pytest.mark.parametrize(("command", "example"), [(c, line) for c, lines in EXAMPLES.items() for line, _ in lines])
def test_every_help_example_is_a_command_line_miroctl_accepts(command, example):
    words = shlex.split(example)
    assert words[0] == "miroctl"
    name, *args = words[1:]
    sub = GROUP.commands[name]  # type: ignore[attr-defined]
    context = sub.make_context(name, args)  # parses and checks every option, runs nothing
    assert context.command is sub
