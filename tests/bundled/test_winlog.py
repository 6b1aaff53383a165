"""The winlog server from config/tool/tool-winlog.yaml, on .evtx files the tests write (tests/bundled/evtxfile.py)
and parsed by pyevtx-rs; the live path on a stand-in `wevtutil` that answers as Windows' does."""

from __future__ import annotations

import json
import os
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from miroctl.servers import winlog
from tests.bundled.conftest import bundled_config, bundled_spec, cli_call, listed_tools, memory_spec, session
from tests.bundled.evtxfile import Event, write_evtx

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def system_log(path: Path) -> Path:
    """30 service state changes, a service crash, an unexpected reboot and a disk warning, over 3 chunks."""
    events = [
        Event(7036, 4, "Service Control Manager", T0 + timedelta(minutes=i), data={"param1": f"svc{i}"})
        for i in range(30)
    ]
    events += [
        Event(7031, 2, "Service Control Manager", T0 + timedelta(hours=1), data={"param1": "Spooler"}),
        Event(41, 1, "Microsoft-Windows-Kernel-Power", T0 + timedelta(hours=2), data={"BugcheckCode": "0"}),
        Event(153, 3, "disk", T0 + timedelta(hours=3), data={"": "The IO operation at logical block 0x2 was retried"}),
    ]
    return write_evtx(path, events, per_chunk=12)


@pytest.fixture
def logs(tmp_path, monkeypatch):
    system = system_log(tmp_path / "System.evtx")
    logon = Event(4624, 0, "Microsoft-Windows-Security-Auditing", T0, channel="Security", data={"User": "alice"})
    write_evtx(tmp_path / "Security.evtx", [logon])
    monkeypatch.setenv("WINLOG_DIR", str(tmp_path))
    return {"dir": tmp_path, "system": str(system)}


def call(tool: str, **arguments):
    return session(memory_spec("tool-winlog"), (tool, arguments))[0]


def test_a_query_without_filters_summarises_every_event_and_lists_the_newest_first(logs):
    got = call("query_events", source=logs["system"], limit=3)
    assert got.exit_code == 0, got.error
    data = got.structured_content
    assert (data["scanned"], data["matched"], data["truncated"]) == (33, 33, True)
    assert data["by_level"] == {"information": 30, "error": 1, "critical": 1, "warning": 1}
    assert data["by_provider"]["Service Control Manager"] == 31
    assert (data["first_time"], data["last_time"]) == ("2024-05-01T10:00:00Z", "2024-05-01T13:00:00Z")
    assert [e["record_id"] for e in data["events"]] == [33, 32, 31]
    lines = got.result.splitlines()
    assert lines[0] == f"33 of 33 events in {logs['system']} match (no filter)."
    assert lines[-1] == "... 30 older matches not shown: narrow the query or raise limit"
    assert "2024-05-01T12:00:00Z critical Microsoft-Windows-Kernel-Power event 41 (record 32): BugcheckCode=0" in lines


@pytest.mark.parametrize(
    ("arguments", "records"),
    [
        ({"levels": ["error", "critical"]}, [32, 31]),
        ({"providers": ["kernel-power"]}, [32]),
        ({"event_ids": [7031, 153]}, [33, 31]),
        ({"since": "2024-05-01T10:28:00Z", "until": "2024-05-01T11:00:00+00:00"}, [31, 30, 29]),
        ({"contains": "logical block"}, [33]),
        ({"levels": ["warning"], "providers": ["service"]}, []),
    ],
)
def test_filters_by_level_provider_event_id_time_and_text_select_the_matching_events(logs, arguments, records):
    got = call("query_events", source=logs["system"], **arguments)
    assert got.exit_code == 0, got.error
    assert [e["record_id"] for e in got.structured_content["events"]] == records
    assert got.structured_content["scanned"] == 33


def test_get_event_shows_one_event_in_full_with_its_xml(logs):
    got = call("get_event", source=logs["system"], record_id=31)
    assert got.exit_code == 0, got.error
    assert got.result.splitlines() == [
        "2024-05-01T11:00:00Z error Service Control Manager event 7031 (record 31)",
        "Channel System, computer host1.example",
        "  param1: Spooler",
    ]
    assert '<Data Name="param1">Spooler</Data>' in got.structured_content["xml"]
    missing = call("get_event", source=logs["system"], record_id=99)
    assert missing.exit_code == 1 and "no event with record id 99" in missing.error


def test_list_channels_shows_each_exported_log_with_its_channel_and_record_count(logs):
    got = call("list_channels")  # WINLOG_DIR
    assert got.exit_code == 0, got.error
    rows = {row["file"]: row for row in got.structured_content["files"]}
    assert (rows["System.evtx"]["channel"], rows["System.evtx"]["records"]) == ("System", 33)
    assert (rows["Security.evtx"]["channel"], rows["Security.evtx"]["first_time"]) == (
        "Security",
        "2024-05-01T10:00:00Z",
    )
    assert got.result.splitlines()[0] == f"2 .evtx files in {logs['dir']}:"
    only = call("list_channels", name="secur")
    assert [row["file"] for row in only.structured_content["files"]] == ["Security.evtx"]


def test_a_relative_source_is_found_in_winlog_dir(logs):
    got = call("query_events", source="Security.evtx")
    assert got.exit_code == 0 and got.structured_content["by_level"] == {"information": 1}


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"source": "nowhere/Application.evtx"}, "no such file: nowhere/Application.evtx"),
        ({"source": "System"}, "'System' is not an .evtx file, and live event logs can only be read on Windows"),
        ({"source": "{system}", "levels": ["fatal"]}, "unknown level 'fatal': use critical, error, warning"),
        ({"source": "{system}", "since": "yesterday"}, "since must be an ISO 8601 time"),
        ({"source": "{system}", "since": "2024-05-02", "until": "2024-05-01"}, "since (2024-05-02T00:00:00Z) is after"),
    ],
)
def test_bad_input_is_a_one_line_tool_error(logs, arguments, reason):
    if sys.platform == "win32" and arguments["source"] == "System":
        pytest.skip("System is a live channel on Windows")
    arguments = {k: v.format(**logs) if isinstance(v, str) else v for k, v in arguments.items()}
    got = call("query_events", **arguments)
    assert got.exit_code == 1 and got.error_kind == "tool_error"
    assert reason in got.error


def test_a_file_that_is_not_an_event_log_is_refused_with_the_reason(logs):
    fake = logs["dir"] / "notes.evtx"
    fake.write_text("just text")
    got = call("query_events", source=str(fake))
    assert got.exit_code == 1 and "notes.evtx is not an EVTX file (no ElfFile header)" in got.error


def test_a_damaged_record_is_skipped_and_counted(logs):
    path = Path(logs["system"])
    data = bytearray(path.read_bytes())
    first_record = 4096 + 512
    data[first_record + 24 : first_record + 40] = b"\xee" * 16  # inside the first record's binary XML
    path.write_bytes(bytes(data))
    got = call("query_events", source=str(path))
    assert got.exit_code == 0, got.error
    assert got.structured_content["skipped"] >= 1
    assert got.structured_content["scanned"] == 33 - got.structured_content["skipped"]
    assert "could not be parsed and were skipped" in got.result


def test_without_the_parser_the_tool_names_the_extra_to_install(logs, monkeypatch):
    monkeypatch.setitem(sys.modules, "evtx", None)
    got = call("query_events", source=logs["system"])
    assert got.exit_code == 1
    assert got.error.endswith("reading .evtx files needs pyevtx-rs: pip install 'miroctl[winlog]'")


def test_live_channels_elsewhere_than_windows_get_a_clear_reason(monkeypatch):
    monkeypatch.delenv("WINLOG_DIR", raising=False)
    monkeypatch.setattr(winlog, "is_windows", lambda: False)
    got = call("list_channels")
    assert got.exit_code == 1 and "live event logs can only be listed on Windows" in got.error


LIVE = """<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System>
<Provider Name="Service Control Manager"/><EventID Qualifiers="16384">7036</EventID><Level>4</Level>
<TimeCreated SystemTime="2024-05-01T10:00:00.1234567Z"/><EventRecordID>501</EventRecordID><Channel>System</Channel>
<Computer>win1</Computer></System><EventData><Data Name="param1">Print Spooler</Data></EventData>
<RenderingInfo Culture="en-US"><Message>The Print Spooler service entered the running state.</Message></RenderingInfo>
</Event>
<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System><Provider Name="disk"/>
<EventID>7</EventID><Level>2</Level><TimeCreated SystemTime="2024-05-01T09:00:00Z"/><EventRecordID>500</EventRecordID>
<Channel>System</Channel><Computer>win1</Computer></System><EventData><Data>\\Device\\Harddisk0</Data></EventData></Event>
"""


@pytest.fixture
def windows(tmp_path, monkeypatch):
    """A stand-in wevtutil on PATH that records its arguments and answers as Windows' does; is_windows()."""
    bin_dir, argv = tmp_path / "bin", tmp_path / "argv.json"
    bin_dir.mkdir()
    script = bin_dir / "wevtutil"
    answers = {"el": "Application\nSecurity\nSystem\nMicrosoft-Windows-PowerShell/Operational\n", "qe": LIVE}
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump(sys.argv[1:], open({str(argv)!r}, 'w'))\n"
        f"sys.stdout.write({answers!r}[sys.argv[1]])\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("WINLOG_DIR", raising=False)
    monkeypatch.setattr(winlog, "is_windows", lambda: True)
    return argv


def test_on_windows_a_live_channel_is_queried_with_wevtutil_and_summarised(windows):
    got = call("query_events", source="System", levels=["error", "information"], since="2024-05-01T08:00:00Z")
    assert got.exit_code == 0, got.error
    assert json.loads(windows.read_text()) == [
        "qe",
        "System",
        "/q:*[System[(Level=0 or Level=2 or Level=4) and TimeCreated[@SystemTime>='2024-05-01T08:00:00Z']]]",
        "/f:RenderedXml",
        "/rd:true",
        "/c:10000",
    ]
    assert got.structured_content["by_level"] == {"information": 1, "error": 1}
    assert got.structured_content["events"][0]["event_id"] == 7036  # the Qualifiers attribute aside
    lines = got.result.splitlines()
    query = "level error/information, since 2024-05-01T08:00:00Z"
    assert lines[0] == f"2 of 2 events in live channel System (newest 2 read) match ({query})."
    assert "(record 501): The Print Spooler service entered the running state." in lines[-2]
    assert lines[-1].endswith("(record 500): Data1=\\Device\\Harddisk0")


def test_on_windows_the_newest_matches_are_kept_though_wevtutil_reads_newest_first(windows):
    got = call("query_events", source="System", limit=1)
    assert got.exit_code == 0, got.error
    assert [e["record_id"] for e in got.structured_content["events"]] == [501]
    assert got.result.splitlines()[-1] == "... 1 older match not shown: narrow the query or raise limit"


def test_on_windows_a_source_that_would_be_an_option_of_wevtutil_is_refused_unrun(windows):
    got = call("query_events", source="/q:*")
    assert got.exit_code == 1 and "'/q:*' is neither an .evtx file nor a channel name" in got.error
    assert not windows.exists()


def test_on_windows_list_channels_lists_the_live_channels(windows):
    got = call("list_channels", name="power")
    assert got.exit_code == 0, got.error
    assert got.result.splitlines() == ["1 live channel:", "Microsoft-Windows-PowerShell/Operational"]
    assert json.loads(windows.read_text()) == ["el"]


def test_the_winlog_server_is_off_by_default_and_every_tool_is_read_only_as_its_annotations_say():
    config = bundled_config()
    assert "tool-winlog" not in config.default_names
    spec = bundled_spec("tool-winlog")
    entry = listed_tools([memory_spec("tool-winlog")])[0]
    assert {t.name for t in entry.tools} == set(spec.tools) == {"list_channels", "query_events", "get_event"}
    for tool in entry.tools:
        assert spec.tools[tool.name]["read_only"] is True and tool.annotations["readOnlyHint"] is True


@pytest.mark.process
def test_miroctl_call_winlog_over_stdio_answers_a_query(logs):
    code, envelope = cli_call("winlog", "query_events", f"source={logs['system']}", "event_ids=41")
    assert code == 0, envelope
    assert envelope["structured_content"]["matched"] == 1
    assert envelope["result"].splitlines()[0].startswith("1 of 33 events in ")
