"""The phased probe behind `miroctl check`, used directly on real servers (in-process where the process
is not the point)."""

import sys
import time
from pathlib import Path

import anyio
import pytest

from miroctl.base.errors import ConfigError
from miroctl.base.models import ServerSpec
from miroctl.check.probe import probe_all, smoke_calls
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from tests.conftest import HEALTHY_STARTUP, fixture_spec, refused_port

LEGACY = str(Path(__file__).parent / "servers" / "legacy.py")
SHORT = 2.0  # for things meant to time out; the legacy server starts in well under a second


def legacy_spec(name: str, *args: str, **fields) -> ServerSpec:
    fields.setdefault("startup_timeout", HEALTHY_STARTUP)
    return ServerSpec(name=name, command=sys.executable, args=(LEGACY, "--name", name, *args), **fields)


def memory_spec(name: str = "mem", **fields) -> ServerSpec:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, version="2.0.0")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise ToolError("it broke")

    return ServerSpec(name=name, transport="memory", target=server, **fields)


def probe(*specs: ServerSpec, blacklist=frozenset(), **options):
    config = Config(servers=specs, profile=Profile(blacklist=blacklist), default_names=tuple(s.name for s in specs))

    async def main():
        async with Manager(config) as manager:
            return await probe_all(manager, list(specs), **options)

    return anyio.run(main)


def statuses(report) -> dict[str, str]:
    return {name: phase.status for name, phase in report.phases.items()}


def test_an_in_process_server_is_healthy_and_ping_is_reported_as_not_supported_in_the_modern_protocol():
    [report] = probe(memory_spec())
    assert report.ok and report.status == "healthy"
    assert report.protocol_version == "2026-07-28"
    assert (report.server_name, report.server_version) == ("mem", "2.0.0")
    assert "tools" in report.capabilities
    assert sorted(t.name for t in report.tools) == ["echo", "fail"]
    assert statuses(report) == {
        "config": "ok",
        "connect": "skipped",
        "initialize": "ok",
        "tools": "ok",
        "ping": "skipped",
        "smoke": "skipped",
    }
    assert report.phases["ping"].detail == "not supported: removed in protocol 2026-07-28"


def test_a_legacy_server_is_pinged_and_every_page_of_its_tools_is_read():
    [report] = probe(legacy_spec("old", "--pages", "3"))
    assert report.ok, report.failure
    assert report.protocol_version == "2025-06-18"
    assert [t.name for t in report.tools] == ["echo", "fail", "add"]
    assert report.phases["tools"].detail == "3 tools, 3 pages"
    assert report.phases["ping"].status == "ok" and report.phases["ping"].ms is not None
    assert report.phases["spawn"].detail.startswith("pid ")
    assert all(report.phases[p].ms >= 0 for p in ("spawn", "initialize", "tools"))


def test_a_server_that_exits_when_asked_for_its_tools_is_unhealthy_after_initialize():
    [report] = probe(legacy_spec("quits", "--die-on", "tools/list"))
    assert report.failure.kind == "exited"
    assert report.failure.message == "server exited with code 5 after initialize, during tools/list"
    assert "quits: dying on tools/list" in report.failure.stderr_tail
    assert statuses(report)["initialize"] == "ok" and statuses(report)["tools"] == "failed"
    assert statuses(report)["ping"] == "not_run"


def test_a_ping_that_is_never_answered_times_out_naming_the_phase():
    [report] = probe(legacy_spec("deaf", "--hang-on", "ping"), timeout=SHORT)
    assert report.failure.kind == "timeout"
    assert report.failure.phase == "ping"
    assert report.failure.message == f"no answer to ping within the {SHORT:g}s timeout"
    assert statuses(report)["tools"] == "ok" and statuses(report)["ping"] == "failed"


def test_a_tools_list_that_is_never_answered_costs_the_servers_own_timeout():
    [report] = probe(legacy_spec("mute", "--hang-on", "tools/list"), timeout=SHORT)
    assert report.failure.kind == "timeout" and report.failure.phase == "tools"
    assert report.failure.during == "tools/list"
    assert report.failure.message == f"no answer to tools/list within the {SHORT:g}s timeout"
    assert report.duration_ms >= SHORT * 1000  # and no more: the server never answers, the timeout ends it


def test_an_unsupported_protocol_version_is_a_protocol_failure():
    [report] = probe(legacy_spec("future", "--protocol", "1999-01-01"))
    assert report.failure.kind == "protocol"
    assert report.failure.message == "server answered initialize with unsupported protocol version 1999-01-01"


def test_a_working_server_that_writes_to_stdout_is_still_unhealthy():
    [report] = probe(legacy_spec("chatty", "--noise", "2"))
    assert all(s in ("ok", "skipped") for s in statuses(report).values())
    assert report.failure.kind == "protocol"
    assert report.failure.message.startswith("server wrote 2 non-JSON lines to stdout")


def test_a_smoke_call_that_succeeds_is_recorded_with_its_result():
    [report] = probe(memory_spec(smoke={"tool": "echo", "arguments": {"text": "hello"}}), smoke=True)
    assert report.ok
    assert report.phases["smoke"].status == "ok"
    assert [(c.tool, c.ok, c.result) for c in report.smoke] == [("echo", True, "hello")]


def test_a_smoke_call_that_returns_an_error_makes_a_started_server_unhealthy():
    [report] = probe(memory_spec(smoke={"tool": "fail"}), smoke=True)
    assert report.failure.kind == "smoke"
    assert report.failure.message.startswith("smoke call fail returned an error: ")
    assert report.failure.message.endswith("it broke")
    assert statuses(report)["tools"] == "ok" and statuses(report)["smoke"] == "failed"


def test_smoke_calls_run_only_when_asked_for():
    [report] = probe(memory_spec(smoke={"tool": "fail"}))
    assert report.ok
    assert report.phases["smoke"].detail == "not asked for (--smoke)"


def test_a_smoke_call_to_a_tool_the_server_lacks_names_the_ones_it_has():
    [report] = probe(memory_spec(smoke={"tool": "ecko", "arguments": {"text": "x"}}), smoke=True)
    assert report.failure.kind == "smoke"
    assert "server 'mem' has no tool 'ecko'" in report.failure.message
    assert report.failure.hint == "did you mean 'echo'?"


def test_smoke_arguments_that_do_not_fit_the_schema_are_a_config_failure():
    [report] = probe(memory_spec(smoke={"tool": "echo", "arguments": {}}), smoke=True)
    assert report.failure.kind == "config" and report.failure.phase == "smoke"
    assert report.failure.message.startswith("smoke arguments for echo do not fit its schema")


def test_a_blacklisted_smoke_tool_is_denied_not_called():
    [report] = probe(
        memory_spec(smoke={"tool": "echo", "arguments": {"text": "x"}}),
        smoke=True,
        blacklist=frozenset({("mem", "echo")}),
    )
    assert report.failure.kind == "smoke"
    assert "smoke call echo was denied" in report.failure.message


def test_a_server_with_a_config_error_fails_in_the_config_phase_without_starting():
    [report] = probe(ServerSpec(name="broken", error="tool/broken.yaml: missing environment variable TOKEN"))
    assert report.failure.kind == "config"
    assert report.failure.hint == "export it or put it in ./.env"
    assert statuses(report)["config"] == "failed" and statuses(report)["spawn"] == "not_run"


def test_a_server_missing_a_required_variable_is_reported_before_the_servers_ahead_of_it_in_line(monkeypatch):
    monkeypatch.delenv("MIROCTL_TEST_NEEDED_KEY", raising=False)
    keyless = ServerSpec(
        name="keyless", command="no-such-command-for-miroctl", requires_env=(("MIROCTL_TEST_NEEDED_KEY",),)
    )
    heard: list[str] = []

    async def done(report):
        heard.append(report.server)

    reports = probe(legacy_spec("slow", "--delay", "0.3"), keyless, concurrency=1, on_done=done)
    assert heard == ["keyless", "slow"]  # no slot needed: it never starts
    assert reports[1].failure.kind == "config" and statuses(reports[1])["spawn"] == "not_run"
    assert reports[1].failure.message.endswith("missing environment variable: set MIROCTL_TEST_NEEDED_KEY")


def test_one_report_per_server_in_the_callers_order():
    specs = [legacy_spec("b"), ServerSpec(name="a", command="no-such-command-for-miroctl"), legacy_spec("c")]
    reports = probe(*specs)
    assert [r.server for r in reports] == ["b", "a", "c"]
    assert [r.ok for r in reports] == [True, False, True]
    assert reports[1].failure.kind == "not_found" and statuses(reports[1])["spawn"] == "failed"


def timed_probe(*specs, **options):
    started = time.perf_counter()
    reports = probe(*specs, **options)
    return reports, (time.perf_counter() - started) * 1000


def test_with_a_concurrency_of_one_the_probes_run_one_after_another():
    specs = [legacy_spec(name, "--delay", "0.3") for name in ("a", "b", "c")]
    reports, wall_ms = timed_probe(*specs, concurrency=1)
    assert all(r.ok and r.duration_ms >= 300 for r in reports)
    # Each budget starts when the probe gets its slot: waiting in line is not counted as a server's time.
    assert wall_ms >= sum(r.duration_ms for r in reports)


def test_with_room_for_all_the_probes_overlap():
    specs = [legacy_spec(name, "--delay", "0.3") for name in ("a", "b", "c")]
    reports, wall_ms = timed_probe(*specs, concurrency=3)
    assert all(r.ok and r.duration_ms >= 300 for r in reports)
    assert wall_ms < sum(r.duration_ms for r in reports)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("echo", "smoke must be {tool: NAME, arguments: {...}}"),
        ({"tool": "echo", "args": {}}, "unknown smoke key 'args'"),
        ({"tool": "echo", "arguments": [1]}, "smoke arguments for echo must be a mapping"),
    ],
)
def test_malformed_smoke_settings_are_config_errors(value, message):
    with pytest.raises(ConfigError, match=r"tool/x\.yaml: ") as caught:
        smoke_calls(value, "tool/x.yaml")
    assert message in caught.value.message


def test_smoke_settings_may_list_several_calls():
    calls = smoke_calls([{"tool": "a"}, {"tool": "b", "arguments": {"x": 1}}], "x.yaml")
    assert [(c.tool, c.arguments) for c in calls] == [("a", {}), ("b", {"x": 1})]


def test_fixture_servers_take_their_startup_timeout_as_the_probe_budget():
    [report] = probe(fixture_spec("slowpoke", "--mode", "hang", startup_timeout=1.0))
    assert report.failure.kind == "timeout" and report.failure.phase == "initialize"
    assert report.failure.message == "no answer to initialize within 1s"
    assert "fixture: hanging before initialize" in report.failure.stderr_tail


def test_a_smoke_call_that_never_answers_costs_no_more_than_the_budget():
    spec = legacy_spec("stuck", "--hang-on", "tools/call", smoke={"tool": "echo", "arguments": {"text": "x"}})
    [report] = probe(spec, smoke=True, timeout=SHORT)
    assert report.failure.kind == "timeout" and report.failure.phase == "smoke"
    assert report.failure.message == f"no answer to the smoke call to echo within the {SHORT:g}s timeout"
    assert statuses(report)["ping"] == "ok" and statuses(report)["smoke"] == "failed"


def test_an_http_server_that_is_not_listening_fails_in_the_connect_phase():
    [report] = probe(ServerSpec(name="gone", transport="streamable_http", url=f"http://127.0.0.1:{refused_port()}/mcp"))
    assert report.failure.kind == "http" and report.failure.phase == "connect"
    assert report.failure.message.startswith("cannot connect to http://127.0.0.1:")
    assert statuses(report)["connect"] == "failed" and statuses(report)["initialize"] == "not_run"
