"""A canary secret put in the config and echoed by servers appears in no output, log line or error."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.config.loader import load
from miroctl.core.manager import Manager
from miroctl.sessions.tokens import Record, TokenStore
from tests.conftest import refused_port
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
            "url": f"http://127.0.0.1:{refused_port()}/mcp",
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


OAUTH_TOKEN = "oauth-access-3c9d41e7"


@pytest.fixture
def logged_in(write_config, http_fixture, tmp_path):
    """A server over HTTP with an OAuth access token stored for it (as `miroctl auth` leaves it)."""
    url = http_fixture("remote", "--tools", "echo,headers")
    TokenStore(tmp_path / "auth").save(Record(url=url, tokens={"access_token": OAUTH_TOKEN, "token_type": "Bearer"}))
    return write_config({"remote": {"name": "remote", "url": url}})


def run_logged_in(path, tmp_path, *args: str):
    env = {"MIROCTL_AUTH_DIR": str(tmp_path / "auth"), "MIROCTL_AUTH_STORE": "file"}
    return CliRunner().invoke(app, [*args[:1], "-c", str(path), *args[1:]], env=env)


@pytest.mark.parametrize(
    "call", [["remote", "headers"], ["remote", "echo", f"text={OAUTH_TOKEN}"]], ids=["echoed", "argument"]
)
def test_an_oauth_token_masked_on_stdout_is_masked_in_the_record_and_the_log_too(logged_in, tmp_path, call):
    record, log = tmp_path / "record.jsonl", tmp_path / "log.jsonl"
    result = run_logged_in(logged_in, tmp_path, "call", "--record", str(record), "--log", str(log), *call)
    assert result.exit_code == 0, result.stderr
    assert "****" in result.stdout and OAUTH_TOKEN not in result.stdout
    recorded, logged = record.read_text(), log.read_text()
    assert "****" in recorded and OAUTH_TOKEN not in recorded
    assert OAUTH_TOKEN not in logged


def test_a_manager_made_without_a_masker_masks_the_oauth_tokens_stored_for_its_servers(
    write_config, tmp_path, monkeypatch
):
    url = f"http://127.0.0.1:{refused_port()}/mcp"
    TokenStore(tmp_path / "auth").save(Record(url=url, tokens={"access_token": OAUTH_TOKEN, "token_type": "Bearer"}))
    monkeypatch.setenv("MIROCTL_AUTH_DIR", str(tmp_path / "auth"))
    monkeypatch.setenv("MIROCTL_AUTH_STORE", "file")
    manager = Manager(load(str(write_config({"remote": {"name": "remote", "url": url}}))))
    assert manager.masker.text(f"the token is {OAUTH_TOKEN}") == "the token is ****"
