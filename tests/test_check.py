"""`miroctl check`: every server gets its row and its reason, in one run that costs the slowest timeout."""

import sys
import time
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import LEGACY, fixture_yaml, parse_json, run_miroctl, wait_for_no_tagged
from tests.servers.unauthorized import serving

BROKEN_TIMEOUT = 3.0  # only for the servers meant to time out
SECRET = "hunter2-very-secret"
TOKEN = "tok-abc-123-secret"


def legacy_yaml(name: str, *args: str, **fields) -> dict:
    return {"name": name, "tool_command": "python", "args": [LEGACY, "--name", name, *args], **fields}


def seven_servers(tag: str, url: str) -> dict:
    """The issue's seven: healthy, missing env var, not on PATH, exits, hangs, pollutes stdout, HTTP 401."""
    env = {"MIROCTL_TEST_TAG": tag}
    return {
        "healthy": fixture_yaml("healthy", "--tools", "echo,add", env=env),
        "needs-token": fixture_yaml("needs-token", env={"API_TOKEN": "${oc.env:MIROCTL_CHECK_UNSET_TOKEN}"}),
        "missing": {"name": "missing", "tool_command": "miroctl-no-such-server", "args": ["--stdio"]},
        "quitter": fixture_yaml("quitter", "--mode", "exit", env={**env, "FIXTURE_SECRET": SECRET}),
        "sleeper": fixture_yaml("sleeper", "--mode", "hang", env=env, startup_timeout=BROKEN_TIMEOUT),
        "chatty": fixture_yaml("chatty", "--mode", "noise", env=env, startup_timeout=BROKEN_TIMEOUT),
        "locked-out": {"name": "locked-out", "url": url, "headers": {"Authorization": f"Bearer {TOKEN}"}},
    }


def invoke(*args: str):
    return CliRunner().invoke(app, ["check", *args])


def test_one_check_classifies_the_seven_kinds_of_server_and_costs_the_longest_timeout_not_the_sum(
    write_config, leak_tag, tmp_path
):
    import mcp.client.sse
    import mcp.client.streamable_http  # noqa: F401 - loaded already: the check's own load of the SDK is not timed here

    junit = tmp_path / "check.xml"
    with serving() as url:
        path = write_config(seven_servers(leak_tag, url))
        started = time.perf_counter()
        result = invoke("--json", "--junit", str(junit), "--config", str(path))
        wall_ms = (time.perf_counter() - started) * 1000
    assert result.exit_code == 1, result.stderr
    document = parse_json(result.stdout)
    servers = {s["name"]: s for s in document["servers"]}
    failure = {name: (s["failure"] or {}) for name, s in servers.items()}
    assert servers["healthy"]["status"] == "healthy" and servers["healthy"]["tool_count"] == 2
    assert {name: f.get("kind") for name, f in failure.items()} == {
        "healthy": None,
        "needs-token": "config",
        "missing": "not_found",
        "quitter": "exited",
        "sleeper": "timeout",
        "chatty": "protocol",
        "locked-out": "auth",
    }
    assert "missing environment variable MIROCTL_CHECK_UNSET_TOKEN" in failure["needs-token"]["message"]
    assert failure["missing"]["message"] == "command not found: miroctl-no-such-server"
    assert failure["quitter"]["message"] == "server exited with code 3 before initialize finished"
    assert "fixture: giving up" in failure["quitter"]["stderr_tail"]
    assert failure["sleeper"]["phase"] == "initialize"
    assert "5 non-JSON lines" in failure["chatty"]["message"]
    assert failure["locked-out"]["message"].startswith("HTTP 401 Unauthorized")
    assert SECRET not in result.stdout and TOKEN not in result.stdout
    # The probes ran side by side: the run took about its slowest server (plus stopping them all),
    # not its servers' times added up.
    durations = [s["duration_ms"] for s in document["servers"]]
    assert min(servers["sleeper"]["duration_ms"], servers["chatty"]["duration_ms"]) >= BROKEN_TIMEOUT * 1000
    assert max(durations) <= document["duration_ms"] <= wall_ms
    assert document["duration_ms"] < sum(durations)  # a load slows every probe alike: the sum stays above
    cases = ET.parse(junit).getroot().findall("./testsuite/testcase")
    assert sorted(c.get("name") for c in cases) == sorted(servers)
    assert SECRET not in junit.read_text() and TOKEN not in junit.read_text()
    assert not wait_for_no_tagged(leak_tag)


def test_the_json_document_has_the_documented_shape(write_config):
    path = write_config({"one": legacy_yaml("one")})
    result = invoke("--json", "--config", str(path))
    assert result.exit_code == 0, result.stderr
    document = parse_json(result.stdout)
    assert set(document) == {
        "schema",
        "config",
        "ok",
        "exit_code",
        "summary",
        "duration_ms",
        "concurrency",
        "timeout",
        "smoke",
        "servers",
        "lock",
    }
    assert document["schema"] == "miroctl.check/1"
    assert document["summary"] == {"servers": 1, "healthy": 1, "unhealthy": 0, "allowed_failures": 0}
    [server] = document["servers"]
    assert set(server) == {
        "name",
        "status",
        "ok",
        "allowed_failure",
        "transport",
        "where",
        "source",
        "protocol_version",
        "server_name",
        "server_version",
        "capabilities",
        "tool_count",
        "tools",
        "phases",
        "smoke",
        "failure",
        "duration_ms",
    }
    assert list(server["phases"]) == ["config", "spawn", "initialize", "tools", "ping", "smoke"]
    assert server["phases"]["ping"]["status"] == "ok"
    assert set(server["phases"]["tools"]) == {"status", "ms", "detail"}


@pytest.mark.process
def test_the_table_shows_each_server_its_phases_and_the_reason_with_the_stderr_tail(write_config):
    path = write_config(
        {
            "good": fixture_yaml("good", "--tools", "echo"),
            "quitter": fixture_yaml("quitter", "--mode", "exit", env={"FIXTURE_SECRET": SECRET}),
        }
    )
    # as a CI log without COLUMNS gets it (piped output honours COLUMNS, which test workers set to 80)
    result = CliRunner().invoke(app, ["check", "--config", str(path)], env={"COLUMNS": "140"})
    assert result.exit_code == 1
    out = result.stdout
    good = next(line for line in out.splitlines() if " good " in line)
    assert all(cell in good for cell in ("✓ healthy", "2026-07-28", "9.9.9", "n/a"))
    quitter = next(line for line in out.splitlines() if " quitter " in line)
    assert "✗ unhealthy" in quitter and "exited: server exited with code 3" in quitter
    assert "| fixture: giving up" in out
    assert "FIXTURE_SECRET is ****" in out and SECRET not in out
    assert "ping n/a: protocol 2026-07-28 has no ping" in out
    assert "1 of 2 servers healthy" in out


def test_allow_fail_tolerates_a_known_bad_server_but_still_reports_it(write_config, tmp_path):
    path = write_config({"good": legacy_yaml("good"), "quitter": fixture_yaml("quitter", "--mode", "exit")})
    junit = tmp_path / "check.xml"
    result = invoke("--json", "--allow-fail", "quitter", "--junit", str(junit), "--config", str(path))
    assert result.exit_code == 0, result.stdout
    servers = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    assert servers["quitter"]["status"] == "unhealthy" and servers["quitter"]["allowed_failure"] is True
    assert servers["quitter"]["failure"]["kind"] == "exited"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("0", "1")


def test_allow_fail_naming_a_server_that_is_not_checked_is_a_usage_error(write_config):
    path = write_config({"good": legacy_yaml("good")})
    result = invoke("--allow-fail", "godo", "--config", str(path))
    assert result.exit_code == 2
    assert "--allow-fail godo: no such server among those checked" in result.stderr
    assert "did you mean 'good'?" in result.stderr


def test_smoke_runs_each_configured_call_and_a_failing_one_fails_the_check(write_config):
    path = write_config(
        {
            "good": legacy_yaml("good", smoke={"tool": "echo", "arguments": {"text": "hi"}}),
            "bad": legacy_yaml("bad", smoke={"tool": "fail"}),
            "none": legacy_yaml("none"),
        }
    )
    assert invoke("--config", str(path)).exit_code == 0
    result = invoke("--smoke", "--json", "--config", str(path))
    assert result.exit_code == 1
    servers = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    assert servers["good"]["smoke"] == [
        {
            "tool": "echo",
            "arguments": {"text": "hi"},
            "ok": True,
            "result": "hi",
            "error": None,
            "duration_ms": servers["good"]["smoke"][0]["duration_ms"],
        }
    ]
    assert servers["bad"]["failure"]["message"] == "smoke call fail returned an error: it broke"
    assert servers["none"]["phases"]["smoke"] == {
        "status": "skipped",
        "ms": None,
        "detail": "no smoke call in the server's file",
    }


def test_timeout_bounds_each_servers_probe_whatever_its_file_says(write_config):
    path = write_config({"sleeper": fixture_yaml("sleeper", "--mode", "hang", startup_timeout=60)})
    result = invoke("--json", "--timeout", "1", "--config", str(path))
    assert result.exit_code == 1
    [server] = parse_json(result.stdout)["servers"]
    assert server["failure"]["message"] == "no answer to initialize within 1s"
    assert server["duration_ms"] >= 1000  # and it did wait that second (the file's 60 s: the per-test timeout)


def test_lock_then_a_changed_surface_then_against_reports_breaking_changes_and_drift(write_config, tmp_path):
    lock = tmp_path / "tools.lock.json"
    path = write_config({"svc": legacy_yaml("svc")})
    assert invoke("--lock", str(lock), "--config", str(path)).exit_code == 0
    first = lock.read_text()
    assert invoke("--lock", str(lock), "--config", str(path)).exit_code == 0
    assert lock.read_text() == first, "the lock file must be stable from run to run"
    assert invoke("--against", str(lock), "--config", str(path)).exit_code == 0

    path = write_config({"svc": legacy_yaml("svc", "--changed")})
    result = invoke("--json", "--against", str(lock), "--config", str(path))
    assert result.exit_code == 1
    changes = parse_json(result.stdout)["lock"]["changes"]
    assert [(c["tool"], c["severity"], c["detail"]) for c in changes] == [
        ("fail", "breaking", "tool removed"),
        ("add", "drift", 'description changed: "Add two integers." -> "Add two or three integers."'),
        ("add", "drift", "new optional parameter 'c'"),
        ("echo", "breaking", "new required parameter 'times'"),
    ]
    table = invoke("--against", str(lock), "--config", str(path))
    assert table.exit_code == 1
    assert "tool surface differs from" in table.stdout and "2 breaking, 2 drift" in table.stdout
    assert "- svc fail: tool removed  [breaking]" in table.stdout


def test_only_drift_still_fails_the_check(write_config, tmp_path):
    lock = tmp_path / "tools.lock.json"
    path = write_config({"svc": fixture_yaml("svc", "--tools", "echo")})
    assert invoke("--lock", str(lock), "--config", str(path)).exit_code == 0
    path = write_config({"svc": fixture_yaml("svc", "--tools", "echo,add")})
    result = invoke("--json", "--against", str(lock), "--config", str(path))
    assert result.exit_code == 1
    lock_report = parse_json(result.stdout)["lock"]
    assert (lock_report["breaking"], lock_report["drift"]) == (0, 1)
    assert lock_report["changes"][0]["tool"] == "add" and lock_report["changes"][0]["kind"] == "added"


def test_an_unreadable_against_file_is_a_usage_error_before_anything_starts(write_config, tmp_path):
    log = tmp_path / "calls.log"
    path = write_config({"svc": fixture_yaml("svc", env={"FIXTURE_CALL_LOG": str(log)})})
    missing = invoke("--against", str(tmp_path / "nope.json"), "--config", str(path))
    assert missing.exit_code == 2
    assert "lock file not found" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "miroctl.lock/1",\n "servers": }')
    broken = invoke("--against", str(bad), "--config", str(path))
    assert broken.exit_code == 2
    assert f"bad JSON in lock file {bad}:2:" in broken.stderr
    assert not log.exists()


def test_a_junit_file_in_a_missing_directory_is_a_usage_error(write_config, tmp_path):
    path = write_config({"svc": legacy_yaml("svc")})
    result = invoke("--junit", str(tmp_path / "no" / "such" / "dir.xml"), "--config", str(path))
    assert result.exit_code == 2
    assert "its directory does not exist" in result.stderr


def test_check_as_a_real_process_leaves_no_server_behind(write_config, leak_tag):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    path = write_config(
        {
            "good": legacy_yaml("good", env=env),
            "sleeper": fixture_yaml("sleeper", "--mode", "hang", env=env, startup_timeout=BROKEN_TIMEOUT),
            "stubborn": fixture_yaml("stubborn", "--mode", "ignore-term", env=env, startup_timeout=BROKEN_TIMEOUT),
        }
    )
    result = run_miroctl("check", "--json", "--config", str(path))
    assert result.returncode == 1, result.stderr
    kinds = {s["name"]: (s["failure"] or {}).get("kind") for s in parse_json(result.stdout)["servers"]}
    assert kinds == {"good": None, "sleeper": "timeout", "stubborn": "timeout"}
    assert not wait_for_no_tagged(leak_tag)


def test_adhoc_servers_can_be_checked_without_a_config_file():
    result = invoke("--json", "--stdio", f"{sys.executable} {LEGACY}")
    assert result.exit_code == 0, result.stderr
    [server] = parse_json(result.stdout)["servers"]
    assert server["name"] == "legacy" and server["protocol_version"] == "2025-06-18"


def test_an_http_server_is_healthy_with_its_connect_and_initialize_timed_apart(http_fixture):
    result = invoke("--json", "--url", http_fixture("web", "--tools", "echo"))
    assert result.exit_code == 0, result.stdout
    [server] = parse_json(result.stdout)["servers"]
    assert server["transport"] == "streamable_http" and server["tool_count"] == 1
    assert server["phases"]["connect"]["status"] == "ok" and server["phases"]["connect"]["ms"] > 0
    assert server["phases"]["initialize"]["status"] == "ok"


def test_a_server_file_with_bad_yaml_is_a_config_failure_naming_the_line(write_config):
    path = write_config({"good": legacy_yaml("good"), "broken": "name: broken\ntool_command: [unclosed\n"})
    result = invoke("--json", "--config", str(path))
    assert result.exit_code == 1
    servers = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    assert servers["good"]["ok"]
    failure = servers["broken"]["failure"]
    assert failure["kind"] == "config" and failure["phase"] == "config"
    assert "bad yaml at " in failure["message"] and "broken.yaml:3:" in failure["message"]


def test_checking_no_servers_at_all_is_a_usage_error(write_config):
    path = write_config({})
    result = invoke("--config", str(path))
    assert result.exit_code == 2
    assert "no servers to check" in result.stderr


def test_check_counts_and_locks_only_the_tools_the_policy_lets_through(write_config, tmp_path):
    path = write_config(
        {"alpha": fixture_yaml("alpha", "--tools", "add,echo,crash", tools={"echo": {"read_only": True}})},
        tool_blacklist=[["alpha", "crash"]],
    )
    result = invoke("--json", "--config", str(path))
    assert result.exit_code == 0, result.stderr
    [server] = parse_json(result.stdout)["servers"]
    assert sorted(server["tools"]) == ["add", "echo"]
    assert "1 hidden by policy" in server["phases"]["tools"]["detail"]
    read_only = invoke("--json", "--mode", "read_only", "--config", str(path))
    assert read_only.exit_code == 0
    assert parse_json(read_only.stdout)["servers"][0]["tools"] == ["echo"]


@pytest.mark.process
def test_the_runs_time_is_its_wall_time_with_the_sdks_load_and_each_server_has_its_own(write_config, monkeypatch):
    """The check loads the mcp SDK before any server starts (a cold process takes a second or two): the time
    it reports includes that wait, as the user's clock does, and each server's row shows its own wall time."""
    from miroctl.check import probe
    from miroctl.cli import check as check_command

    loading: list[float] = []

    def slow_load(specs):  # the SDK's import, made long enough to see beside an in-memory server's check
        began = time.perf_counter()
        probe.warm_up(specs)
        time.sleep(0.5)  # not a wait for anything: the load's length, which the run's time must include
        loading.append(time.perf_counter() - began)

    monkeypatch.setattr(check_command, "warm_up", slow_load)
    path = write_config({"alpha": fixture_yaml("alpha")})
    result = invoke("--config", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    document = parse_json(result.stdout)
    (server,) = document["servers"]
    assert document["duration_ms"] >= loading[0] * 1000 + server["duration_ms"]
    started = sum(server["phases"][phase]["ms"] or 0 for phase in ("spawn", "initialize", "tools"))
    assert server["duration_ms"] >= started

    table = CliRunner().invoke(app, ["check", "--config", str(path)], env={"COLUMNS": "140"})
    assert table.exit_code == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if "server" in line and "total" in line)
    assert header.rstrip(" ┃").endswith("total")
    row = next(line for line in table.stdout.splitlines() if "alpha" in line)
    assert row.strip(" │").split("│")[-1].strip().isdigit()
