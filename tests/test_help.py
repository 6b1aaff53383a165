"""`--help` of every command: examples that parse, types in words, options grouped in panels."""

from __future__ import annotations

import functools
import json
import re
import shlex

import pytest
import typer
from typer.testing import CliRunner

from miroctl.cli import root
from miroctl.cli.app import app
from miroctl.cli.helptext import CONNECTED, EXAMPLES

GROUP = typer.main.get_command(app)
TOP = GROUP.commands  # type: ignore[attr-defined]
# Every command line a user can ask help of: the commands, the groups and the groups' own commands.
COMMANDS = sorted([*TOP, *(f"{name} {sub}" for name, group in TOP.items() for sub in getattr(group, "commands", {}))])
TALKS_TO_SERVERS = set(CONNECTED)
PYTHON_TYPES = re.compile(r"<[^>\n]*>|\b(list|dict|tuple)\[|\b(str|int|float|bool|NoneType)\b")


@functools.cache
def rendered(words: tuple[str, ...], columns: int) -> tuple[int, str, str]:
    """`miroctl WORDS --help` at COLUMNS columns: its exit code, stdout and whole output. A help changes
    nothing, so each is rendered once for every test of this module that reads it."""
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.output


def help_of(*words: str, columns: int = 100) -> str:
    code, stdout, output = rendered(words, columns)
    assert code == 0, output
    return stdout


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
    if "Output" in panels:  # --help stands in it, not in a panel of its own
        assert "Options" not in panels, panels
    *path, name = command.split()
    sub = TOP[path[0]].commands[name] if path else TOP[name]
    options = [p for p in sub.params if isinstance(p, typer.core.TyperOption) and not p.hidden]
    assert all(p.rich_help_panel for p in options), [p.name for p in options if not p.rich_help_panel]


def test_help_shows_bracketed_text_as_written():
    text = help_of("call")
    assert "[env: MIROCTL_URL]" in " ".join(text.split()).replace("│ ", "")


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


def names_in_help(command: str) -> set[str]:
    """What a user types and so must read whole: option names, metavars, env var names, subcommands."""
    sub = GROUP
    for word in command.split():
        sub = sub.commands[word]  # type: ignore[attr-defined]
    names = set(getattr(sub, "commands", {}))
    for param in sub.get_params(typer.Context(sub)):  # as the help shows them (some are hidden there)
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, typer.core.TyperOption):
            names.update([*param.opts, *param.secondary_opts])
        envvars = param.envvar if isinstance(param.envvar, (list, tuple)) else [param.envvar]
        names.update(name for name in (param.metavar, *envvars) if name)
    return names


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_at_60_columns_cuts_no_option_name_or_word(command):
    text = help_of(*command.split(), columns=60)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 60


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_at_60_columns_breaks_no_name_metavar_or_example_across_lines(command):
    lines = [line.strip(" │") for line in help_of(*command.split(), columns=60).splitlines()]
    for name in names_in_help(command):
        whole = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        assert any(whole.search(line) for line in lines), f"{name!r} is broken across lines"
    for example, what in EXAMPLES[command or "miroctl"]:
        assert example in lines and f"# {what}" in lines, f"{example!r} or its comment wraps"


def test_the_root_help_shows_install_completion_whole_among_its_examples():
    shown = help_of(columns=60)
    assert "miroctl --install-completion" in [line.strip() for line in shown.splitlines()]
    assert "--show-completion" not in shown


def panel(text: str, title: str) -> list[str]:
    """The rows of one option panel of a help, without its borders."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    return lines[start + 1 : end]


@pytest.mark.parametrize("command", sorted(CONNECTED))
def test_connection_options_take_one_line_each_and_point_to_their_topic(command):
    text = help_of(command)
    rows = panel(text, "Connection")
    assert all(row.startswith("│ -") for row in rows), rows  # no row continues the one before
    assert {"--config", "--stdio", "--url"} <= {row.split()[1] for row in rows}
    assert "Connection options in full: miroctl help connection" in text


@pytest.mark.parametrize("topic", ["connection", "http"])
def test_help_topic_explains_every_option_of_its_group_at_length(topic):
    result = CliRunner().invoke(app, ["help", topic])
    assert result.exit_code == 0, result.output
    command = GROUP.commands["list" if topic == "connection" else "serve"]
    group = "Connection" if topic == "connection" else "HTTP limits"
    names = {p.opts[0] for p in command.params if getattr(p, "rich_help_panel", None) == group}
    if topic == "connection":
        names.add("--no-daemon")
    headings = [line for line in result.stdout.splitlines() if line.startswith("-")]
    assert names <= {word.rstrip(",") for line in headings for word in line.split()}
    assert len(result.stdout.splitlines()) > 2 * len(names)  # more than a line per option


def test_help_without_a_topic_lists_the_topics():
    result = CliRunner().invoke(app, ["help"])
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["connection", "http"]


def test_help_of_an_unknown_topic_exits_2_naming_the_topics():
    result = CliRunner().invoke(app, ["help", "conection"])
    assert result.exit_code == 2
    assert "no help topic 'conection'" in result.stderr
    assert "topics: connection, http" in result.stderr


def test_serve_help_fits_one_screen_and_shows_a_host_config_that_parses():
    text = help_of("serve")
    assert len(text.splitlines()) <= 52
    start = next(i for i, line in enumerate(text.splitlines()) if '{"mcpServers"' in line)
    config = json.loads("".join(text.splitlines()[start : start + 2]))
    assert config == {"mcpServers": {"miroctl": {"command": "miroctl", "args": ["serve"]}}}
    assert "miroctl help http" in text


def test_serve_http_limits_are_hidden_from_its_help_yet_still_accepted():
    text = help_of("serve")
    assert "--max-body" in text  # named in the pointer only
    assert "--session-idle" not in text
    command = GROUP.commands["serve"]
    context = command.make_context("serve", ["--transport", "http", "--max-body", "10", "--session-idle", "5"])
    assert (context.params["max_body"], context.params["session_idle"]) == (10, 5.0)
