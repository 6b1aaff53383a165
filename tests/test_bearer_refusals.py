"""A server that wants a bearer token (and asks for no OAuth login) refuses with 401: the hint says how to
send the token, or which one it refused, and never sends the user to a login that cannot work."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.sessions.tokens import Record, TokenStore
from tests.servers.unauthorized import serving

BARE = 'Bearer realm="mcp", error="invalid_token"'
OAUTH = 'Bearer resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"'


def failure_of(tmp_path, *args: str) -> dict:
    env = {"MIROCTL_AUTH_DIR": str(tmp_path / "auth"), "MIROCTL_AUTH_STORE": "file"}
    result = CliRunner().invoke(app, ["list", "--json", *args], env=env)
    assert result.exit_code == 1, result.output
    (server,) = json.loads(result.stdout)["servers"]
    return server["failure"]


def server_file(tmp_path, url: str, **fields) -> str:
    path = tmp_path / "tracker.yaml"
    path.write_text(yaml.safe_dump({"name": "tracker", "url": url, **fields}))
    return str(path)


@pytest.mark.parametrize("challenge", [BARE, None], ids=["bare-bearer-challenge", "no-challenge"])
def test_a_401_without_an_oauth_challenge_says_to_send_the_token_with_h_not_to_log_in(tmp_path, challenge):
    with serving(challenge=challenge) as url:
        failure = failure_of(tmp_path, "--url", url)
    assert failure["kind"] == "auth"
    assert failure["message"] == f"HTTP 401 Unauthorized from {url}"
    assert failure["hint"] == "the server wants a token: send it with -H 'Authorization: Bearer ...'"


def test_a_401_to_a_server_file_without_headers_says_to_put_the_token_in_its_headers(tmp_path):
    with serving() as url:
        path = server_file(tmp_path, url)
        failure = failure_of(tmp_path, "--config", path)
    assert failure["message"] == f"HTTP 401 Unauthorized from {url}"
    assert failure["hint"] == f"the server wants a token: send it in the headers: of {path} (Authorization: Bearer ...)"


def test_a_refused_token_of_the_header_option_is_named_as_the_one_refused(tmp_path):
    with serving() as url:
        failure = failure_of(tmp_path, "--url", url, "-H", "Authorization: Bearer tok-3f9a7c21b5")
    assert failure["message"] == f"HTTP 401 Unauthorized from {url}"
    assert failure["hint"].startswith("the server refused the Authorization header from the -H option")


def test_a_refused_token_of_the_server_files_headers_is_named_as_the_one_refused(tmp_path):
    with serving() as url:
        path = server_file(tmp_path, url, headers={"Authorization": "Bearer tok-3f9a7c21b5"})
        failure = failure_of(tmp_path, "--config", path)
    assert failure["hint"].startswith(f"the server refused the Authorization header from the headers: of {path}")


def test_refused_stored_oauth_tokens_are_named_and_no_login_is_suggested(tmp_path):
    with serving() as url:
        TokenStore(tmp_path / "auth").save(
            Record(url=url, tokens={"access_token": "stored-7d2e9b", "token_type": "Bearer"})
        )
        path = server_file(tmp_path, url)
        failure = failure_of(tmp_path, "--config", path)
    assert failure["message"] == f"HTTP 401 Unauthorized from {url}"
    assert failure["hint"] == (
        "the server refused the stored OAuth tokens (from miroctl auth) and asks for no OAuth login: "
        f"send the token it expects in the headers: of {path} (Authorization: Bearer ...)"
    )


def test_a_401_with_an_oauth_challenge_still_says_to_log_in(tmp_path):
    with serving(challenge=OAUTH) as url:
        failure = failure_of(tmp_path, "--url", url)
    assert failure["message"] == f"auth required: run miroctl auth --url {url}"


@pytest.mark.parametrize("challenge", [BARE, None], ids=["bare-bearer-challenge", "no-challenge"])
def test_a_login_to_a_server_that_asks_for_no_oauth_login_says_to_send_its_token_instead(tmp_path, challenge):
    env = {"MIROCTL_AUTH_DIR": str(tmp_path / "auth"), "MIROCTL_AUTH_STORE": "file"}
    with serving(challenge=challenge) as url:
        result = CliRunner().invoke(app, ["auth", "--no-browser", "--timeout", "5", "--url", url], env=env)
    assert result.exit_code == 3, result.output
    assert "asks for no OAuth login: its 401 carries no OAuth challenge" in result.stderr
    assert "send it with -H 'Authorization: Bearer ...'" in result.stderr
    assert "Registration failed" not in result.stderr
