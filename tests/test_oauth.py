"""OAuth 2.1 end to end: `miroctl auth` against a local authorization server + protected MCP server (the test
plays the browser), then list/call/check on the stored tokens, without a browser, never hanging."""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
import yaml

from tests.conftest import parse_json, refused_port
from tests.oauth_support import (
    Protected,
    age_record,
    authorize_in_process,
    login,
    protected_server,
    record,
    run,
    run_process,
)

# The authorization server and the protected MCP server are real HTTP servers on 127.0.0.1 (one process for
# the module); miroctl runs in this process, except where a later process must find the login on its own.
pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]

HINT = "auth required: run miroctl auth demo"


@pytest.fixture(scope="module")
def protected() -> Iterator[Protected]:
    with protected_server() as server:
        yield server


def config(tmp_path: Path, url: str, **fields: object) -> Path:
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump({"name": "demo", "url": url, "auth": "oauth", **fields}))
    return path


def secrets_of(auth_dir: Path) -> list[str]:
    tokens = record(auth_dir)[1]["tokens"]
    return [tokens["access_token"], tokens["refresh_token"]]


def assert_no_secret(secrets: list[str], *texts: str) -> None:
    for secret in secrets:
        for text in texts:
            assert secret not in text


def test_a_login_stores_the_tokens_in_a_private_file_and_a_later_call_needs_no_browser(protected, tmp_path):
    auth_dir = tmp_path / "auth"
    cfg = config(tmp_path, protected.url)
    code, out, err = login(auth_dir, cfg)
    assert code == 0, err
    assert "demo: authorized; tokens stored in the file store (scope: tools, expires in" in out
    path, stored = record(auth_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_dir.stat().st_mode) == 0o700
    assert stored["url"] == protected.url and stored["client_info"]["token_endpoint_auth_method"] == "none"
    assert stored["oauth_metadata"]["token_endpoint"] == f"{protected.base}/token"
    called = run_process(auth_dir, "call", "demo", "whoami", "--json", "--config", str(cfg))  # a new process
    assert called.returncode == 0, called.stderr
    assert parse_json(called.stdout)["result"] == "authorized"
    listed = run(auth_dir, "list", "--json", "--config", str(cfg))
    assert listed.returncode == 0, listed.stderr
    leaked = run(auth_dir, "call", "demo", "leak", "--config", str(cfg))  # a server echoing the token back
    assert leaked.returncode == 0, leaked.stderr
    assert leaked.stdout.strip() == "your token is ****"
    texts = (out, err, called.stdout, called.stderr, listed.stdout, listed.stderr, leaked.stdout, leaked.stderr)
    assert_no_secret(secrets_of(auth_dir), *texts)


def test_an_expired_access_token_is_refreshed_without_a_browser(protected, tmp_path):
    auth_dir = tmp_path / "auth"
    cfg = config(tmp_path, protected.url)
    assert login(auth_dir, cfg)[0] == 0
    old = secrets_of(auth_dir)
    refreshes = protected.control("stats").get("refreshes", 0)
    protected.control("expire")  # the server no longer takes the old access token ...
    age_record(auth_dir)  # ... and miroctl sees it as expired, as an hour later
    called = run(auth_dir, "call", "demo", "whoami", "--json", "--config", str(cfg))
    assert called.returncode == 0, called.stderr
    assert parse_json(called.stdout)["result"] == "authorized"
    assert protected.control("stats")["refreshes"] == refreshes + 1
    assert secrets_of(auth_dir)[0] != old[0] and record(auth_dir)[1]["expires_at"] > time.time()
    assert_no_secret(old + secrets_of(auth_dir), called.stdout, called.stderr)


def test_a_revoked_refresh_token_exits_3_with_the_hint_and_never_waits_for_a_browser(protected, tmp_path):
    auth_dir = tmp_path / "auth"
    cfg = config(tmp_path, protected.url)
    assert login(auth_dir, cfg)[0] == 0
    secrets = secrets_of(auth_dir)
    protected.control("expire")
    protected.control("revoke")
    age_record(auth_dir)
    # A call that waited for a browser would wait for one forever (nobody comes): the per-test timeout fails it.
    called = run(auth_dir, "call", "demo", "whoami", "--json", "--config", str(cfg))
    assert called.returncode == 3, called.stderr
    envelope = parse_json(called.stdout)
    assert envelope["error"] == HINT and envelope["error_kind"] == "auth"
    human = run(auth_dir, "call", "demo", "whoami", "--config", str(cfg))
    assert human.returncode == 3
    assert f"miroctl: auth: {HINT}" in human.stderr
    assert_no_secret(secrets, called.stdout, called.stderr, human.stdout, human.stderr)


def test_reset_forgets_the_stored_login(protected, tmp_path):
    auth_dir = tmp_path / "auth"
    cfg = config(tmp_path, protected.url)
    assert login(auth_dir, cfg)[0] == 0
    nobody = authorize_in_process(auth_dir, lambda url: None, "demo", "--config", str(cfg), "--reset", "-t", "0.2")
    result = nobody[0]  # the URL was shown, and nobody came back
    assert result.returncode == 4, result.stderr
    assert "no authorization arrived within 0.2s" in result.stderr
    assert "tokens" not in record(auth_dir)[1]  # only the client registered anew
    called = run(auth_dir, "call", "demo", "whoami", "--config", str(cfg))
    assert called.returncode == 3 and HINT in called.stderr


@pytest.mark.parametrize(
    ("command", "code"),
    [(["call", "demo", "whoami"], 3), (["list"], 1), (["check"], 1)],  # list and check report failing servers: 1
)
def test_a_ci_run_without_tokens_fails_at_once_without_touching_the_network(tmp_path, command, code):
    # Nothing listens at this URL: an answer other than "auth required" would mean miroctl tried to connect.
    # A login would wait 300 s for a browser: far past the per-test timeout, which fails a command that waits.
    cfg = config(tmp_path, f"http://127.0.0.1:{refused_port()}/mcp")
    result = run(tmp_path / "auth", *command, "--json", "--config", str(cfg))
    assert result.returncode == code, result.stderr
    document = parse_json(result.stdout)
    failure = document["failure"] if command[0] == "call" else document["servers"][0]["failure"]
    assert failure["kind"] == "auth" and failure["message"] == HINT
    assert "no token is stored" in failure["hint"]


def test_a_callback_with_the_wrong_state_is_refused_and_nothing_is_stored(protected, tmp_path):
    auth_dir = tmp_path / "auth"

    def forge(url: str) -> tuple[int, int]:
        answer = httpx2.get(url, timeout=60)  # the authorization server's redirect
        callback = urlsplit(answer.headers["location"])
        query = {key: values[0] for key, values in parse_qs(callback.query).items()}
        forged = callback._replace(query=urlencode({**query, "state": "forged-state"})).geturl()
        return answer.status_code, httpx2.get(forged, timeout=30).status_code

    result, (redirected, page) = authorize_in_process(
        auth_dir, forge, "demo", "--config", str(config(tmp_path, protected.url))
    )
    assert redirected in (302, 303, 307) and page == 400
    assert result.returncode == 3, result.stderr
    assert "the callback's state does not match the login miroctl started" in result.stderr
    assert not list(auth_dir.glob("*.json")) or "tokens" not in record(auth_dir)[1]


def test_check_classifies_a_missing_login_as_auth(protected, tmp_path):
    cfg = config(tmp_path, protected.url)
    result = run(tmp_path / "auth", "check", "--json", "--config", str(cfg))
    assert result.returncode == 1, result.stderr
    (server,) = parse_json(result.stdout)["servers"]
    assert server["failure"]["kind"] == "auth"
    assert server["failure"]["message"] == HINT


def test_a_401_with_a_bearer_challenge_says_to_log_in_even_without_auth_in_the_file(protected, tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump({"name": "demo", "url": protected.url}))
    result = run(tmp_path / "auth", "call", "demo", "whoami", "--json", "--config", str(path))
    assert result.returncode == 3, result.stderr
    envelope = parse_json(result.stdout)
    assert envelope["error"] == HINT and envelope["error_kind"] == "auth"
    assert "asks for an OAuth login" in envelope["hint"]


def test_a_login_to_a_server_without_auth_in_its_file_is_then_used_by_call(protected, tmp_path):
    auth_dir = tmp_path / "auth"
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump({"name": "demo", "url": protected.url}))
    assert login(auth_dir, path)[0] == 0
    called = run(auth_dir, "call", "demo", "whoami", "--json", "--config", str(path))
    assert called.returncode == 0, called.stderr
    assert parse_json(called.stdout)["result"] == "authorized"


def test_a_login_over_sse_then_a_call_over_sse(tmp_path):
    auth_dir = tmp_path / "auth"
    with protected_server("--sse") as server:
        cfg = config(tmp_path, server.url)
        code, out, err = login(auth_dir, cfg, "demo", "--json")
        assert code == 0, err
        document = parse_json(out.splitlines()[-1])
        assert document["schema"] == "miroctl.auth/1" and document["authorized"] is True
        assert document["refreshable"] is True and "access_token" not in out
        called = run(auth_dir, "call", "demo", "whoami", "--json", "--config", str(cfg))
    assert called.returncode == 0, called.stderr
    assert parse_json(called.stdout)["result"] == "authorized"


def test_with_a_system_keyring_the_tokens_go_there_and_the_file_keeps_only_public_metadata(protected, tmp_path):
    auth_dir = tmp_path / "auth"
    keyring_file = tmp_path / "keyring.json"
    keyring_file.write_text("{}")  # tests/fakes/keyring_backend.py becomes the system keyring
    cfg = config(tmp_path, protected.url)
    code, out, err = login(auth_dir, cfg)
    assert code == 0, err
    assert "tokens stored in the keyring store" in out
    _, stored = record(auth_dir)
    assert stored["store"] == "keyring" and "tokens" not in stored and "client_info" not in stored
    assert "access_token" in keyring_file.read_text()
    called = run(auth_dir, "call", "demo", "whoami", "--json", "--config", str(cfg))
    assert called.returncode == 0, called.stderr
    assert parse_json(called.stdout)["result"] == "authorized"


def test_a_login_to_a_server_that_asks_for_none_stores_nothing(http_fixture, tmp_path):
    path = tmp_path / "open.yaml"
    path.write_text(yaml.safe_dump({"name": "open", "url": http_fixture("open")}))
    result = run(tmp_path / "auth", "auth", "open", "--no-browser", "--config", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "open: the server did not ask for a login; nothing stored"
    assert not list((tmp_path / "auth").glob("*.json"))


def test_a_login_to_a_stdio_server_is_a_usage_error(tmp_path):
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump({"name": "local", "tool_command": "python", "args": ["-c", "pass"]}))
    result = run(tmp_path / "auth", "auth", "local", "--config", str(path))
    assert result.returncode == 2
    assert "local is a stdio server: OAuth is for HTTP and SSE servers" in result.stderr
