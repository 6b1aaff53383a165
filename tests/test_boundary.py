"""The one error boundary: every error is one line with its hint and exit code, whichever way miroctl is entered."""

import json
import signal

import pytest
from typer.testing import CliRunner

from miroctl.base.errors import EXIT_CODES, ErrorKind, ExitCode, exit_code_for_kind
from miroctl.cli import list as list_command
from miroctl.cli import prestart
from miroctl.cli.app import app
from miroctl.launch import entry
from miroctl.launch.handoff import Stopped


def test_every_error_kind_has_one_exit_code_and_an_unknown_kind_fails_loudly():
    assert set(EXIT_CODES) == set(ErrorKind)
    assert exit_code_for_kind(None) == ExitCode.OK
    assert exit_code_for_kind("denied") == ExitCode.DENIED
    with pytest.raises(ValueError, match="bogus"):
        exit_code_for_kind("bogus")


@pytest.fixture
def defect(monkeypatch):
    """A defect inside miroctl: loading the config raises something no code path expects."""

    def broken(*args, **kwargs):
        raise RuntimeError("the frobnicator is missing")

    monkeypatch.setattr(list_command, "load_config", broken)
    monkeypatch.delenv("MIROCTL_TRACEBACK", raising=False)


def test_a_defect_is_one_line_with_exit_70_and_the_way_to_see_more(defect):
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 70
    assert result.stderr.splitlines()[0] == "miroctl: internal: RuntimeError: the frobnicator is missing"
    assert "--traceback" in result.stderr
    assert "Traceback (most recent call last)" not in result.stderr


def test_traceback_anywhere_on_the_command_line_shows_where_a_defect_came_from(defect, capsys):
    code = entry.run(["list", "--traceback"])
    assert code == 70
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "the frobnicator is missing" in err
    assert "miroctl: internal: RuntimeError: the frobnicator is missing" in err


def test_the_traceback_variable_does_the_same_for_the_typer_app(defect, monkeypatch):
    monkeypatch.setenv("MIROCTL_TRACEBACK", "1")
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 70
    assert "Traceback (most recent call last)" in result.stderr


def test_a_usage_error_of_the_command_line_is_one_line_with_a_hint(capsys):
    code = entry.run(["call", "--timeout", "soon", "x", "y"])
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("miroctl: usage: Invalid value for '--timeout'")
    assert lines[1].strip() == "hint: see: miroctl call --help"


def test_an_error_of_miroctl_reaches_the_user_once_through_either_way_in(tmp_path, capsys):
    missing = str(tmp_path / "nowhere.yaml")
    code = entry.run(["list", "-c", missing])
    err = capsys.readouterr().err
    result = CliRunner().invoke(app, ["list", "-c", missing])
    assert code == result.exit_code == 2
    assert err == result.stderr
    assert err.count("config file not found") == 1


class _SignalWhileMade:
    """A descriptor whose `__set_name__` meets a signal, as any dataclass field can while its module is imported."""

    def __init__(self, stop: BaseException) -> None:
        self.stop = stop

    def __set_name__(self, owner: type, name: str) -> None:
        raise self.stop


def signal_while_a_class_is_made(stop: BaseException):
    """A stand-in for a step of miroctl that imports a module just as a signal lands (Python 3.11 wraps
    the signal in a RuntimeError; later versions let it through as it is)."""

    def step(*args, **kwargs):
        type("Made", (), {"field": _SignalWhileMade(stop)})

    return step


@pytest.mark.parametrize(
    ("stop", "code", "line"),
    [
        (Stopped(signal.SIGHUP), 129, "miroctl: interrupted: interrupted by SIGHUP"),
        (Stopped(signal.SIGTERM), 143, "miroctl: interrupted: interrupted by SIGTERM"),
        (KeyboardInterrupt(), 130, "miroctl: interrupted: interrupted by SIGINT"),
    ],
)
def test_a_signal_that_lands_while_the_early_start_imports_ends_the_run_as_that_signal(
    monkeypatch, capfd, stop, code, line
):
    monkeypatch.setattr(prestart, "begin", signal_while_a_class_is_made(stop))
    assert entry.run(["call", "some-server", "some-tool"]) == code
    err = capfd.readouterr().err  # written to the descriptor: the early start has no Rich yet
    assert err.splitlines()[0].startswith(line), err
    assert "Traceback" not in err and "RuntimeError" not in err


def test_a_signal_that_lands_while_a_command_imports_ends_the_run_as_that_signal(monkeypatch, capsys):
    monkeypatch.setattr(list_command, "load_config", signal_while_a_class_is_made(Stopped(signal.SIGHUP)))
    assert entry.run(["list", "--json"]) == 129
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0].startswith("miroctl: interrupted: interrupted by SIGHUP"), captured.err
    assert json.loads(captured.out)["error_kind"] == "interrupted"
    assert "RuntimeError" not in captured.err


def test_a_defect_wrapped_by_python_is_still_a_defect_not_an_interruption(monkeypatch):
    monkeypatch.setattr(prestart, "begin", signal_while_a_class_is_made(ValueError("not a signal")))
    with pytest.raises(RuntimeError):
        entry.run(["call", "some-server", "some-tool"])


def test_a_signal_inside_a_task_groups_exception_group_ends_the_run_as_that_signal(monkeypatch, capfd):
    def step(*args, **kwargs):
        raise BaseExceptionGroup("a task group's", [Stopped(signal.SIGTERM)])

    monkeypatch.setattr(prestart, "begin", step)
    assert entry.run(["call", "some-server", "some-tool"]) == 143
    err = capfd.readouterr().err
    assert err.splitlines()[0].startswith("miroctl: interrupted: interrupted by SIGTERM"), err
