"""Masking: plausible credentials and URL credentials are hidden everywhere; common values never corrupt output."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from miroctl.base.masking import Masker, header_secrets, secret_values
from miroctl.cli.app import app
from tests.conftest import fixture_yaml, refused_port
from tests.surface_support import echo, surface_yaml

RESULT = '{"ok": true, "level": "info", "note": "information for Europe/Berlin as application/json, pin 1234"}'
NAMED = "hunter2-pw"
RANDOM = "Zq81xPw0Lm3Tr7Vb5Nc2"
URL_PASSWORD = "p4ss-w0rd-url"
URL_KEY = "k3y-in-query-9"


def invoke(*words: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(words), env=env)


@pytest.fixture
def plain_values(write_config, http_fixture, tmp_path):
    """A server over HTTP whose config is full of common values: header, env and interpolated."""
    url = http_fixture("web", "--tools", "echo")
    server = {
        "name": "web",
        "url": url,
        "headers": {"Accept": "application/json, text/event-stream", "X-Debug": "true", "X-Zone": "${oc.env:ZONE}"},
    }
    local = surface_yaml(tmp_path, [echo()], name="local", env={"LOG_LEVEL": "${oc.env:LEVEL}", "PIN": "1234"})
    return write_config({"web": server, "local": local})


def test_common_values_in_headers_and_env_leave_json_results_intact(plain_values):
    env = {"LEVEL": "info", "ZONE": "Europe/Berlin"}
    for server in ("web", "local"):
        result = invoke("call", "-c", str(plain_values), server, "echo", f"text={RESULT}", "--json", env=env)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["result"] == RESULT


def test_common_values_leave_output_files_and_human_output_intact(plain_values, tmp_path):
    env = {"LEVEL": "info", "ZONE": "Europe/Berlin"}
    target = tmp_path / "out.json"
    result = invoke("call", "-c", str(plain_values), "local", "echo", f"text={RESULT}", "-o", str(target), env=env)
    assert result.exit_code == 0, result.output
    assert target.read_text() == RESULT
    shown = invoke("call", "-c", str(plain_values), "local", "echo", f"text={RESULT}", env=env)
    assert shown.exit_code == 0
    assert json.loads(shown.stdout) == json.loads(RESULT)


def test_named_and_random_looking_credentials_are_still_masked(write_config):
    env = {"DB_PASSWORD": NAMED, "OTHER": "${oc.env:OTHER_VALUE}"}
    path = write_config({"local": fixture_yaml("local", "--tools", "env,echo", env=env)})
    outputs = []
    for name in ("DB_PASSWORD", "OTHER"):
        result = invoke("call", "-c", str(path), "local", "env", f"name={name}", "--json", env={"OTHER_VALUE": RANDOM})
        assert result.exit_code == 0
        outputs.append(json.loads(result.stdout)["result"])
    assert outputs == ["****", "****"]


def test_credentials_in_urls_are_masked_in_tables_json_errors_and_the_log(write_config, tmp_path):
    url = f"http://robot:{URL_PASSWORD}@127.0.0.1:{refused_port()}/mcp?api_key={URL_KEY}&v=2"
    local = surface_yaml(tmp_path, [echo()], name="local")
    path = write_config({"remote": {"name": "remote", "url": url}, "local": local})
    log = tmp_path / "calls.jsonl"
    table = invoke("list", "-c", str(path), "remote", "--log", str(log))
    document = invoke("list", "-c", str(path), "remote", "--json")
    call = invoke("call", "-c", str(path), "remote", "echo", "text=hi")
    text = "see https://bob:b0b-secret-1@example.org/x?token=t0ken-value-2&page=3"
    echoed = invoke("call", "-c", str(path), "local", "echo", f"text={text}", "--json", "--log", str(log))
    assert (table.exit_code, document.exit_code, call.exit_code, echoed.exit_code) == (1, 1, 3, 0)
    seen = [table.stdout, document.stdout, call.stderr, echoed.stdout, log.read_text()]
    for secret in (URL_PASSWORD, URL_KEY, "b0b-secret-1", "t0ken-value-2"):
        assert not any(secret in output for output in seen), secret
    assert "robot:****@127.0.0.1" in document.stdout and "api_key=****&v=2" in document.stdout
    assert json.loads(echoed.stdout)["result"] == "see https://bob:****@example.org/x?token=****&page=3"


def test_a_secret_is_masked_only_where_it_stands_as_a_whole_token():
    masker = Masker(["infoX1", "s3cret-value"])
    assert masker.text("infoX12 infoX1 s3cret-values s3cret-value.") == "infoX12 **** s3cret-values ****."
    assert Masker(["info", "true", "1234"]).text('{"ok": true} information 1234') == '{"ok": true} information 1234'


def test_header_and_env_values_are_secrets_by_name_or_shape_only():
    headers = {"Accept": "application/json", "X-Debug": "true", "Authorization": "Bearer abc-123-def", "X-Id": RANDOM}
    assert header_secrets(headers) == {"Bearer abc-123-def", "abc-123-def", RANDOM}
    env = {"TZ": "Europe/Berlin", "LOG_LEVEL": "info", "GITHUB_TOKEN": "ghp-short1", "TOKEN_URL": "https://x.test/t"}
    assert secret_values(env) == {"ghp-short1"}
