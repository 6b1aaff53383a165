"""How a check is shown: the table at any terminal width, and JUnit XML that CI systems can parse."""

import io
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console
from typer.testing import CliRunner

from miroctl.base.models import Failure, ServerSpec, ToolInfo
from miroctl.check import junit
from miroctl.check.lockfile import Change, LockCheck
from miroctl.check.report import CheckRun, ProbeReport
from miroctl.cli.app import app
from miroctl.render.checks import check_table
from miroctl.render.output import Output
from tests.conftest import fixture_yaml

REASON = "server exited with code 3 before initialize finished"


def healthy(name="good", protocol="2026-07-28"):
    report = ProbeReport.start(ServerSpec(name=name, command="python"))
    report.protocol_version, report.server_version = protocol, "1.0.0"
    report.tools = (ToolInfo(name, "echo"),)
    for phase, ms in (("config", None), ("spawn", 5.0), ("initialize", 900.0), ("tools", 3.0)):
        report.passed(phase, ms)
    report.skipped("ping", "not supported: removed in protocol 2026-07-28")
    report.skipped("smoke", "not asked for (--smoke)")
    report.duration_ms = 910.0
    return report


def failing(name="quitter", stderr=("fixture: giving up",)):
    report = ProbeReport.start(ServerSpec(name=name, command="python"))
    report.passed("config", None)
    report.passed("spawn", 4.0)
    report.fail(
        "initialize",
        Failure("exited", REASON, hint="its stderr ends: fixture: giving up", phase="initialize", stderr_tail=stderr),
        40.0,
    )
    report.duration_ms = 44.0
    return report


def rendered(run, width, terminal=True):
    out = Output()
    out.out = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=terminal,
        color_system=None,
        markup=False,
        highlight=False,
        emoji=False,
    )
    check_table(out, run)
    return out.out.file.getvalue()


def test_a_wide_terminal_shows_the_reason_in_the_row():
    text = rendered(CheckRun([healthy(), failing()], "cfg"), 140)
    row = next(line for line in text.splitlines() if "quitter" in line)
    assert "✗ unhealthy" in row and "exited: server exited with code 3" in row
    assert "  | fixture: giving up" in text
    assert "ping n/a: protocol 2026-07-28 has no ping" in text
    assert text.rstrip().endswith("1 of 2 servers healthy (0.0 s)")


def test_an_80_column_terminal_keeps_every_line_within_80_and_puts_reasons_under_the_table():
    run = CheckRun([healthy(), failing(), healthy("a-rather-long-server-name")], "cfg", smoke=True)
    text = rendered(run, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "✓ good" in text and "✗ quitter" in text
    assert f"✗ quitter  exited: {REASON}" in text
    assert "a-rather-long-server-name" in text


def test_output_that_is_not_a_terminal_is_laid_out_wide_for_ci_logs(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    text = rendered(CheckRun([failing()], "cfg"), 80, terminal=False)
    row = next(line for line in text.splitlines() if "quitter" in line)
    assert "✗ unhealthy" in row and "exited: server exited with code 3" in row


def test_output_that_is_not_a_terminal_keeps_the_width_columns_gives(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = rendered(CheckRun([failing()], "cfg"), 80, terminal=False)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "✗ quitter" in text and "exited: server exited with code 3" in text


LONG_SERVER = "a-rather-long-server-name"
PHASES = ("spawn", "init", "list", "ping", "smoke")


def pool():
    return CheckRun([healthy(), failing(), healthy(LONG_SERVER)], "cfg", smoke=True)


@pytest.mark.parametrize("columns", [60, 100, 200])
@pytest.mark.parametrize("terminal", [True, False])
def test_check_at_60_100_and_200_columns_keeps_to_the_screen_and_never_breaks_a_name_or_a_number(
    monkeypatch, columns, terminal
):
    monkeypatch.setenv("COLUMNS", str(columns))
    text = rendered(pool(), columns, terminal=terminal)
    assert max(len(line) for line in text.splitlines()) <= columns
    assert "…" not in text
    assert re.search(rf"(?<![\w-]){LONG_SERVER}(?![\w-])", text) and "2026-07-28" in text and "1.0.0" in text
    words = set(text.split())
    assert set(PHASES) <= words | {w.rstrip(",") for w in words}
    assert "900" in words | {w.rstrip(",") for w in words}


def test_check_on_a_60_column_screen_gives_each_server_a_line_with_its_facts_under_it(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    lines = rendered(pool(), 60, terminal=False).splitlines()
    at = lines.index(f"✓ {LONG_SERVER}")
    assert lines[at + 1 : at + 3] == [
        "    protocol 2026-07-28, version 1.0.0, tools 1",
        "    spawn 5, init 900, list 3, ping n/a, smoke –",
    ]
    assert "    spawn 4, init ✗ 40" in lines  # the phases a failed start never reached are left out
    assert f"✗ quitter exited: {REASON}" in " ".join(" ".join(lines).split())  # under them, wrapped


def test_check_at_100_columns_is_one_table_with_every_phase_in_its_own_column(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    text = rendered(pool(), 100, terminal=False)
    header = next(line for line in text.splitlines() if line.split()[:1] == ["server"])
    assert header.split() == ["server", "protocol", "version", "tools", *PHASES]
    row = next(line for line in text.splitlines() if LONG_SERVER in line)
    assert row.split() == ["✓", LONG_SERVER, "2026-07-28", "1.0.0", "1", "5", "900", "3", "n/a", "–"]


def test_check_at_200_columns_gives_the_reason_the_room_the_other_columns_leave(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    text = rendered(pool(), 200, terminal=False)
    row = next(line for line in text.splitlines() if "quitter" in line)
    assert "✗ unhealthy" in row and f"exited: {REASON}" in row  # whole, on the server's own line
    narrower = rendered(pool(), 140, terminal=False)
    cells = [line.split("│")[-2].strip() for line in narrower.splitlines() if line.count("│") == 13]
    assert " ".join(cell for cell in cells if cell) == f"exited: {REASON}"  # wrapped between words, not cut


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_check_of_real_servers_into_a_pipe_fits_60_100_and_200_columns(write_config, columns):
    path = write_config({"alpha": fixture_yaml("alpha"), LONG_SERVER: fixture_yaml(LONG_SERVER)})
    result = CliRunner().invoke(app, ["check", "-c", str(path)], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "…" not in result.stdout
    assert any(re.search(rf"(^|\s)(✓ )?{LONG_SERVER}(\s|$)", line) for line in lines)
    assert lines[-1].startswith("2 of 2 servers healthy")


def test_server_text_in_the_table_is_shown_literally():
    report = failing(stderr=("\x1b[31mred\x1b[0m [bold]x[/bold]",))
    text = rendered(CheckRun([report], "cfg"), 140)
    assert "\x1b" not in text and "\\x1b[31mred" in text and "[bold]x[/bold]" in text


def test_lock_changes_are_listed_with_their_severity():
    lock = LockCheck(
        against="tools.lock.json",
        changes=[
            Change("svc", "fail", "removed", "breaking", "tool removed"),
            Change("svc", "add", "changed", "drift", "new optional parameter 'c'"),
        ],
    )
    run = CheckRun([healthy("svc")], "cfg", lock=lock)
    text = rendered(run, 140)
    assert "tool surface differs from tools.lock.json: 1 breaking, 1 drift" in text
    assert "  - svc fail: tool removed  [breaking]" in text
    assert "  ~ svc add: new optional parameter 'c'  [drift]" in text
    assert run.exit_code == 1


def junit_root(run):
    return ET.fromstring(ET.tostring(junit.build(run.to_dict()).getroot()))


def test_junit_has_one_testcase_per_server_with_failures_carrying_reason_and_stderr():
    root = junit_root(CheckRun([healthy(), failing()], "cfg"))
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "1", "0")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["good"].find("failure") is None
    failure = cases["quitter"].find("failure")
    assert failure.get("type") == "exited" and failure.get("message") == f"exited: {REASON}"
    assert "| fixture: giving up" in failure.text and "phases: config ok, spawn ok 4 ms" in failure.text
    assert "protocol: 2026-07-28" in cases["good"].find("system-out").text


def test_junit_marks_allowed_failures_as_skipped_and_drift_as_a_failure_of_that_server():
    allowed = failing()
    lock = LockCheck(against="l.json", changes=[Change("good", "x", "added", "drift", "tool added")])
    run = CheckRun([healthy(), allowed], "cfg", lock=lock)
    run.allow(["quitter"])
    cases = {case.get("name"): case for case in junit_root(run).iter("testcase")}
    assert cases["quitter"].find("skipped").get("message") == f"allowed to fail: exited: {REASON}"
    drift = cases["good"].find("failure")
    assert drift.get("type") == "drift" and drift.text == "drift: x: tool added"


def test_junit_survives_control_characters_in_server_text(tmp_path):
    path = tmp_path / "check.xml"
    junit.write(path, CheckRun([failing(stderr=("bell \x07 and nul \x00",))], "cfg").to_dict())
    failure = ET.parse(path).getroot().find("./testsuite/testcase/failure")
    assert "bell \\x07 and nul \\x00" in failure.text
