"""The early readers and the Typer app agree on every option: one table (miroctl/launch/options.py) names each
option of call, list, read and prompt, whether it takes a value, and which values the command refuses."""

import json

import pytest
import typer
from typer.testing import CliRunner

from miroctl import remote
from miroctl.cli.app import app
from miroctl.config.sections import Mode
from miroctl.launch import options, reader

COMMAND = typer.main.get_command(app)
TABLED = ("call", "list", "read", "prompt")


def typer_options(params) -> dict[str, tuple[str, str]]:
    """Each option name of a Typer command: (its parameter's name, flag / value / values)."""
    found = {}
    for param in params:
        if param.param_type_name != "option":
            continue
        kind = "flag" if param.is_flag else "values" if param.multiple else "value"
        for name in (*param.opts, *param.secondary_opts):
            found[name] = (param.name, kind)
    return found


def context(command) -> typer.Context:
    return typer.Context(command, **COMMAND.context_settings)  # the app's -h beside --help


def table_options(table) -> dict[str, tuple[str, str]]:
    return {name: (option.dest, option.kind) for option in table for name in option.names}


@pytest.mark.parametrize("name", TABLED)
def test_every_option_of_the_command_is_in_the_table_with_its_parameter_and_arity(name):
    command = COMMAND.commands[name]
    expected = typer_options(command.get_params(context(command)))
    assert table_options(o for o in options.OPTIONS if name in o.commands) == expected


def test_the_root_options_are_in_the_table():
    assert table_options(options.ROOT) == typer_options(COMMAND.get_params(context(COMMAND)))


def test_the_table_spells_the_modes_and_the_gateway_variable_as_the_app_does():
    assert tuple(mode.value for mode in Mode) == options.MODES
    assert options.URL_ENV == remote.URL_ENV


@pytest.fixture
def empty_config(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"mcpServers": {}}))
    return path


def value_cases(tmp_path):
    (tmp_path / "a-file").write_text("")
    seconds = ["abc", "-5", "nan", "inf", "0", "0.0005", "0.001", "5", "1e1", " 7 "]
    files = [str(tmp_path / "missing" / "x.txt"), str(tmp_path / "new.txt"), str(tmp_path), str(tmp_path / "a-file")]
    dirs = [str(tmp_path / "a-file"), str(tmp_path / "new-dir"), str(tmp_path)]
    return {
        "--timeout": seconds,
        "-t": ["abc", "5"],
        "--startup-timeout": seconds,
        "--mode": ["bogus", "ask", "ASK", "read-only", "read_only", "bypass"],
        "--output": files,
        "--record": files,
        "--log": files,
        "--save-dir": dirs,
    }


@pytest.mark.parametrize("name", ["call", "list"])
def test_the_early_start_takes_exactly_the_values_the_command_takes(name, tmp_path, empty_config):
    known = reader.options_of(name)
    for option, values in value_cases(tmp_path).items():
        if option not in known or known[option].early == "refuse":
            continue
        for value in values:
            words = [name, "--config", str(empty_config), *(["fx", "echo"] if name == "call" else []), option, value]
            result = CliRunner().invoke(app, words)
            refused = result.exit_code == 2  # else: no server fx (call, exit 6), or nothing to list (exit 0)
            assert (reader.read(words, "early") is None) == refused, (words, result.exit_code, result.stderr)


@pytest.mark.parametrize("name", ["call", "read"])
def test_the_warm_path_takes_exactly_the_values_the_command_takes(name, tmp_path, empty_config):
    known = reader.options_of(name)
    for option, values in value_cases(tmp_path).items():
        if option not in known or not known[option].warm:
            continue
        for value in values:
            words = [name, "--config", str(empty_config), "fx", "echo", option, value]
            result = CliRunner().invoke(app, words)
            refused = result.exit_code == 2
            warm_words = [name, "fx", "echo", option, value]
            assert (reader.read(warm_words, "warm") is None) == refused, (words, result.exit_code, result.stderr)


@pytest.mark.parametrize(
    "words",
    [
        ["call", "fx", "echo", "--task-id", "t1"],
        ["call", "fx", "echo", "--via", "http://127.0.0.1:9"],
        ["call", "fx", "echo", "--args", "-"],
        ["call", "fx", "echo", "--timeout"],
        ["call", "fx", "echo", "--json=yes"],
        ["call", "fx", "echo", "--timeout", "5", "--timeout", "6"],
        ["call", "fx", "echo", "--", "text=-x"],
        ["call", "fx", "echo", "-t5"],
        ["list", "--resources"],
        ["list", "--timeout", "5"],
        ["list", "--help"],
        ["check", "fx"],
    ],
)
def test_the_early_start_reads_nothing_it_is_unsure_of(words):
    assert reader.read(words, "early") is None
