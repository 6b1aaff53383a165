"""A canary secret put in the config and echoed by servers appears in no output, log line or error."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import free_port
from tests.policy_support import webtools_yaml

CANARY = "canary-7f3a9c-DO-NOT-PRINT"
HEADER_CANARY = "header-canary-51b2e8"
PASSWORD = "literal-pw-90210"


@pytest.fixture
def leaky(write_config):
    servers = {
        "broken": webtools_yaml("broken", "--fail-starts", "9", env={"FIXTURE_SECRET": "${oc.env:MIROCTL_CANARY}"}),
        "web": webtools_yaml("web", env={"ECHO": "${oc.env:MIROCTL_CANARY}", "DB_PASSWORD": PASSWORD}),
        "remote": {
            "name": "remote",
            "url": f"http://127.0.0.1:{free_port()}/mcp",
            "headers": {"Authorization": f"Bearer {HEADER_CANARY}"},
        },
    }
    return write_config(servers)


def run(path, *args: str):
    return CliRunner().invoke(app, [*args[:1], "-c", str(path), *args[1:]], env={"MIROCTL_CANARY": CANARY})


def assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in (CANARY, HEADER_CANARY, PASSWORD):
            assert secret not in text


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_list_shows_the_failing_servers_stderr_without_the_secret(leaky, tmp_path, json_flag):
    log = tmp_path / "log.jsonl"
    result = run(leaky, "list", "--log", str(log), *json_flag)
    assert result.exit_code == 1
    assert "on purpose" in result.stdout and "****" in result.stdout  # the stderr tail is shown, masked
    assert_clean(result.stdout, result.stderr, log.read_text())


CALLS = [
    (["web", "env", "name=ECHO"], 0),
    (["web", "fail", f"message=token {HEADER_CANARY}"], 1),
    (["broken", "peek"], 3),
]
MORE_CALLS = [(["web", "env", "name=DB_PASSWORD"], 0), (["web", "scrape", f"url=http://127.0.0.1:9/{CANARY}"], 1)]


@pytest.mark.parametrize(("json_flag", "cases"), [([], CALLS), (["--json"], CALLS + MORE_CALLS)])
def test_results_errors_and_logs_of_calls_never_show_the_secrets(leaky, tmp_path, json_flag, cases):
    log = tmp_path / "log.jsonl"
    outputs = []
    for args, code in cases:
        result = run(leaky, "call", "--log", str(log), *json_flag, *args)
        assert result.exit_code == code, result.stderr
        outputs += [result.stdout, result.stderr]
    assert "****" in outputs[0]
    assert_clean(*outputs, log.read_text())


def test_output_files_are_masked_too(leaky, tmp_path):
    target = tmp_path / "out.txt"
    result = run(leaky, "call", "web", "env", "name=ECHO", "--output", str(target))
    assert result.exit_code == 0, result.stderr
    assert target.read_text() == "****"
