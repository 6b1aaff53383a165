"""Task context and the call log: TASK_ID reaches every server; every step is one parseable JSON line."""

from __future__ import annotations

import anyio
import pytest
from typer.testing import CliRunner

from miroctl.base.models import CallRequest
from miroctl.cli.app import app
from miroctl.core.manager import Manager
from tests.conftest import parse_json
from tests.policy_support import log_lines, memory_spec, pool, webtools_spec, webtools_yaml


@pytest.mark.process  # the server process's environment is the point
def test_task_id_from_the_command_line_reaches_the_server_as_TASK_ID(write_config):
    path = write_config({"web": webtools_yaml("web")})
    result = CliRunner().invoke(
        app, ["call", "-c", str(path), "--json", "--task-id", "task-42", "web", "env", "name=TASK_ID"]
    )
    assert result.exit_code == 0, result.stderr
    assert parse_json(result.stdout)["result"] == "task-42"


def test_task_id_from_miroctls_environment_reaches_the_server(write_config):
    path = write_config({"web": webtools_yaml("web")})
    result = CliRunner().invoke(
        app, ["call", "-c", str(path), "--json", "web", "env", "name=TASK_ID"], env={"TASK_ID": "from-env-7"}
    )
    assert result.exit_code == 0, result.stderr
    assert parse_json(result.stdout)["result"] == "from-env-7"


def test_servers_receive_the_url_rules_for_their_own_search_results():
    async def main():
        async with Manager(pool(webtools_spec("web"), url_rules={"block": ["a.example/x", "b.example"]})) as manager:
            return await manager.call(CallRequest("web", "env", {"name": "MIROCTL_URL_BLOCK"}))

    assert anyio.run(main).result == "a.example/x\nb.example"


def test_the_call_log_has_one_json_line_per_step_with_masked_arguments(write_config, tmp_path):
    log = tmp_path / "calls.jsonl"
    server = webtools_yaml("web", env={"API_TOKEN": "tok-abcdef-123"})
    path = write_config({"web": server}, policy={"mode": "read_only"})
    runner = CliRunner()
    ok = runner.invoke(
        app,
        [
            "call",
            "-c",
            str(path),
            "--log",
            str(log),
            "--task-id",
            "t1",
            "web.fetch",
            "url=https://example.org/?key=tok-abcdef-123",
        ],
    )
    assert ok.exit_code == 0, ok.stderr
    denied = runner.invoke(app, ["call", "-c", str(path), "--log", str(log), "web", "wipe"])
    assert denied.exit_code == 5
    lines = log_lines(log)
    assert [line["event"] for line in lines] == [
        "call_start",
        "decision",
        "call_success",
        "call_start",
        "decision",
        "call_error",
    ]
    assert all({"ts", "event", "server", "tool"} <= line.keys() for line in lines)
    start, decision, success = lines[:3]
    assert start["arguments"] == {"url": "https://example.org/?key=****"}
    assert start["task_id"] == "t1"
    assert decision["reason"] == "ok" and decision["allowed"] is True
    assert success["duration_ms"] > 0 and success["exit_code"] == 0
    assert lines[4]["reason"] == "mode_read_only"
    assert lines[5]["error_kind"] == "denied"
    assert "tok-abcdef-123" not in log.read_text()


def test_the_log_records_autocorrection_fallback_and_retry_steps(tmp_path):
    log = tmp_path / "calls.jsonl"
    flaky = webtools_spec("flaky", "--record", str(tmp_path / "r.txt"), "--fail-starts", "1")

    async def main():
        async with Manager(pool(memory_spec("web")), log_path=str(log)) as manager:
            await manager.call(CallRequest("nosuch", "visit", {"pages": []}))
            await manager.call(CallRequest("web", "scrape", {"url": "http://127.0.0.1:9/none"}))
        async with Manager(pool(flaky), log_path=str(log)) as manager:
            await manager.call(CallRequest("flaky", "peek"))

    anyio.run(main)
    lines = log_lines(log)
    events = [line["event"] for line in lines]
    assert "autocorrect" in events and "fallback" in events and "server_retry" in events
    fallback = next(line for line in lines if line["event"] == "fallback")
    assert fallback["ok"] is False and "cannot reach" in fallback["error"]
    retry = next(line for line in lines if line["event"] == "server_retry")
    assert retry["server"] == "flaky" and retry["failure"]["kind"] == "exited"


def test_a_log_that_cannot_be_opened_is_a_usage_error(write_config, tmp_path):
    path = write_config({"web": webtools_yaml("web")})
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["list", "-c", str(path), "--log", str(blocker / "log.jsonl")])
    assert result.exit_code == 2
    assert "cannot open the call log" in result.stderr


def test_the_profile_can_name_the_log_relative_to_itself(write_config, tmp_path):
    path = write_config({"web": webtools_yaml("web")}, log="logs/miroctl.jsonl")
    result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "peek"])
    assert result.exit_code == 0, result.stderr
    assert [line["event"] for line in log_lines(tmp_path / "logs" / "miroctl.jsonl")][-1] == "call_success"


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["call", "--batch", "-", "--via", "http://127.0.0.1:9/"], "does not reach a gateway's --batch calls"),
        (
            ["bench", "alpha", "echo", "-n", "5", "--via", "http://127.0.0.1:9/"],
            "--task-id does not reach the calls of a bench",
        ),
    ],
)
def test_a_task_id_that_a_gateway_would_drop_is_refused_before_anything_is_sent(words, said):
    result = CliRunner().invoke(app, [*words, "--task-id", "t1"], input='{"server": "alpha", "tool": "echo"}\n')
    assert result.exit_code == 2, result.output
    assert said in result.stderr
