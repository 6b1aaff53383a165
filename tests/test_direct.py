"""The direct path: a plain cold `call` or `list` runs its command without Typer (miroctl/cli/direct.py), with
the values, the output and the exit code the Typer app gives."""

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from miroctl.cli import call as call_command
from miroctl.cli import direct
from miroctl.cli import list as list_command
from miroctl.cli.app import app
from miroctl.launch.handoff import Launch
from tests.conftest import fixture_yaml
from tests.gateway_support import without_timing

PERFORMS = {"call": call_command, "list": list_command}
DEFAULTS = {
    command: {
        name: parameter.default
        for name, parameter in inspect.signature(module.perform).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    for command, module in PERFORMS.items()
}


@pytest.fixture
def pool(write_config: Any) -> Path:
    return write_config({"alpha": fixture_yaml("alpha"), "beta": fixture_yaml("beta", "--tools", "add")})


def recorded(monkeypatch: pytest.MonkeyPatch, command: str) -> list[dict[str, Any]]:
    """Every call of the command's `perform` (its keywords, the defaults filled in), which then exits 0."""
    module, defaults = PERFORMS[command], DEFAULTS[command]
    calls: list[dict[str, Any]] = []

    def perform(launch: Launch | None, **keywords: Any) -> int:
        calls.append({**defaults, **keywords})
        return 0

    monkeypatch.setattr(module, "perform", perform)
    return calls


def lines(tmp_path: Path, config: Path) -> list[list[str]]:
    saved, out = str(tmp_path / "saved"), str(tmp_path / "out.txt")
    return [
        ["call", "alpha", "echo", "text=hi", "n:=1"],
        ["call", "alpha.echo", "text=-x", "-t", "1e1", "--json"],
        [
            *["call", "alpha", "echo", "--json", "--timeout", "5", "--no-autocorrect", "--mode", "ask", "-y"],
            *["--startup-timeout", "2.5", "--save-dir", saved, "--config", str(config), "--log", out],
            *["--output", out, "--record", out, "--no-daemon"],
        ],
        ["list"],
        ["list", "alpha", "beta", "--brief", "--json", "-c", str(config)],
        ["list", "alpha", "echo", "--schema", "--mode", "read_only", "--startup-timeout", "7"],
    ]


def test_a_plain_cold_command_gives_its_command_the_values_the_typer_app_gives(tmp_path, pool, monkeypatch):
    for words in lines(tmp_path, pool):
        calls = recorded(monkeypatch, words[0])
        assert direct.run(Launch(words), environ={}) == 0
        assert CliRunner().invoke(app, words).exit_code == 0
        mine, typers = calls
        assert mine == typers, words
        assert {k: type(v) for k, v in mine.items()} == {k: type(v) for k, v in typers.items()}, words


def test_the_positional_words_fill_the_parameter_the_typer_app_names_for_them():
    command = typer.main.get_command(app)
    for name, parameter in direct.POSITIONAL.items():
        arguments = [p.name for p in command.commands[name].params if p.param_type_name == "argument"]
        assert arguments == [parameter]


@pytest.mark.parametrize(
    ("words", "environ"),
    [
        (["call"], {}),
        (["call", "alpha", "echo", "--help"], {}),
        (["call", "alpha", "echo", "--args", "{}"], {}),
        (["call", "alpha", "echo", "--task-id", "t1"], {}),
        (["call", "alpha", "echo", "--timeout", "soon"], {}),
        (["call", "alpha", "echo", "--", "text=--x"], {}),
        (["call", "--batch", "-"], {}),
        (["list", "--resources"], {}),
        (["list", "--stdio", "python server.py"], {}),
        (["list", "-h"], {}),
        (["list"], {direct.COMPLETION_ENV: "complete_bash"}),
        (["check"], {}),
    ],
)
def test_anything_the_option_table_cannot_read_is_left_to_the_typer_app(words, environ):
    assert direct.reading(words, environ) is None


@pytest.mark.parametrize(
    "words",
    [
        ["call", "alpha", "echo", "text=hi"],
        ["call", "alpha", "echo", "text=hi", "--json"],
        ["call", "alpha", "add", "a=1", "b=x", "--json"],
        ["call", "alpha", "nosuch"],
        ["call", "add", "a=2", "b=3"],
        ["call", "gamma", "echo"],
        ["call", "alpha", "echo", "--mode", "read_only", "--json"],
        ["list", "--json"],
        ["list", "beta", "--brief"],
        ["list", "alpha", "echo", "--schema"],
        ["list", "--brief", "--schema"],
    ],
)
def test_a_plain_cold_command_prints_and_exits_as_through_the_typer_app(words, pool, capsys):
    words = [*words, "--config", str(pool)]
    code = direct.run(Launch(words), environ={})
    mine = capsys.readouterr()
    typers = CliRunner().invoke(app, words)
    assert code == typers.exit_code
    assert without_timing(_documents(mine.out)) == without_timing(_documents(typers.stdout))
    assert mine.err.split() == typers.stderr.split()


def _documents(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
