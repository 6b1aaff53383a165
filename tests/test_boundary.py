"""The one error boundary: every error is one line with its hint and exit code, whichever way miroctl is entered."""

import pytest
from typer.testing import CliRunner

from miroctl.base.errors import EXIT_CODES, ErrorKind, ExitCode, exit_code_for_kind
from miroctl.cli import list as list_command
from miroctl.cli.app import app
from miroctl.launch import entry


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
