"""One header style: `NAME  fact · fact`, whatever the view (list, its sections, a tool in detail, check,
daemon status, bench), as plain text when stdout is not a terminal."""

from __future__ import annotations

import io
import re

from rich.console import Console
from typer.testing import CliRunner

from miroctl.base.models import ServerSpec
from miroctl.check.report import CheckRun, ProbeReport
from miroctl.cli.app import app
from miroctl.render.checks import check_table
from miroctl.render.daemons import daemons_table
from miroctl.render.output import Output
from tests.conftest import fixture_yaml

HEADER = re.compile(r"^(?P<name>\S+(?: \S+)?)  (?P<facts>\S.*)$")


def facts(line: str) -> tuple[str, list[str]]:
    """A header line's name and facts (AssertionError if it is not one)."""
    found = HEADER.match(line)
    assert found, f"not a header line: {line!r}"
    return found["name"], found["facts"].split(" · ")


def invoke(*words: str) -> str:
    result = CliRunner().invoke(app, list(words), env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def drawn(render) -> str:
    out = Output()
    out.out = Console(file=io.StringIO(), width=100, color_system=None, markup=False, highlight=False, emoji=False)
    render(out)
    return out.out.file.getvalue()


def test_a_server_in_list_and_each_of_its_sections_are_headed_by_its_name_and_facts(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,add")})
    lines = invoke("list", "alpha", "--resources", "--prompts", "-c", str(path)).splitlines()
    name, shown = facts(lines[0])
    assert name == "alpha" and shown[1:3] == ["2 tools", "alpha 9.9.9"] and re.fullmatch(r"\d+ ms", shown[3])
    sections = [facts(line) for line in lines if line.startswith("alpha  ")][1:]
    assert sections == [("alpha", ["3 resources"]), ("alpha", ["1 resource template"]), ("alpha", ["1 prompt"])]


def test_a_tool_in_detail_is_headed_by_its_name_then_its_server(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,add")})
    lines = invoke("list", "alpha", "add", "-c", str(path)).splitlines()
    assert facts(lines[1]) == ("add", ["(alpha)"])


def test_a_server_check_ran_in_another_python_is_headed_by_its_name_and_that_python():
    report = ProbeReport.start(ServerSpec(name="alpha", command="python"))
    report.passed("config", None)
    report.python = "/opt/venv/bin/python"
    lines = drawn(lambda out: check_table(out, CheckRun([report], "cfg"))).splitlines()
    assert ("alpha", ["python /opt/venv/bin/python"]) in [facts(line) for line in lines if line.startswith("alpha  ")]


def test_a_daemon_in_status_is_headed_by_its_id_then_pid_state_and_idle_time():
    document = {"id": "ab12", "pid": 4242, "state": "running", "idle_seconds": 3.0, "idle_exit_after": 600.0}
    first = drawn(lambda out: daemons_table(out, [document])).splitlines()[0]
    assert facts(first) == ("daemon ab12", ["pid 4242", "running", "idle 3s of 600s"])


def test_a_bench_run_is_headed_by_its_tool_and_its_shape(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add")})
    first = invoke("bench", "alpha", "add", "a=1", "-n", "2", "-c", str(path)).splitlines()[0]
    assert facts(first) == ("alpha.add", ["concurrency 1"])
