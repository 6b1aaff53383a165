"""The parts of OAuth that need no server: the loopback callback, the token store's files, the config keys."""

from __future__ import annotations

import json
import stat

import anyio
import httpx2
import pytest

from miroctl.base.errors import AuthRequired, ConfigError, TimedOut
from miroctl.config.servers import server_from_mapping
from miroctl.sessions import loopback
from miroctl.sessions.tokens import Record, TokenStore


async def visit(url: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as client:
        return await client.get(url)


def callback(*paths: str, state: str = "s-1", wait: float = 10) -> tuple[list[int], object]:
    """Arm a loopback with `state`, visit `paths` in order, return their statuses and what the login got."""

    async def main() -> tuple[list[int], object]:
        async with loopback.listening(0) as loop:
            loop.expect(state)
            base = f"http://127.0.0.1:{loop.port}"
            statuses = [(await visit(base + path)).status_code for path in paths]
            try:
                got: object = await loop.wait(wait)
            except (AuthRequired, TimedOut) as exc:
                got = exc
            return statuses, got

    return anyio.run(main)


def test_the_callback_ignores_other_paths_and_returns_the_code_of_the_matching_state():
    statuses, got = callback("/favicon.ico", "/callback?code=c-9&state=s-1")
    assert statuses == [404, 200]
    assert got.code == "c-9" and got.state == "s-1"


def test_a_callback_with_another_state_is_refused_even_if_it_carries_a_code():
    statuses, got = callback("/callback?code=c-9&state=forged")
    assert statuses == [400]
    assert isinstance(got, AuthRequired) and "state does not match" in got.message


def test_an_error_from_the_authorization_server_is_reported_in_one_line():
    statuses, got = callback("/callback?error=access_denied&error_description=user%20said%20no&state=s-1")
    assert statuses == [400]
    assert isinstance(got, AuthRequired)
    assert got.message == "the authorization server refused the login: access_denied: user said no"


def test_the_listener_takes_one_callback_and_then_closes():
    async def main() -> None:
        async with loopback.listening(0) as loop:
            loop.expect("s")
            await visit(f"http://127.0.0.1:{loop.port}/callback?code=c&state=s")
            await loop.wait(5)
            await anyio.sleep(0.3)
            with pytest.raises(httpx2.ConnectError):
                await visit(f"http://127.0.0.1:{loop.port}/callback?code=again&state=s")

    anyio.run(main)


def test_nobody_coming_back_ends_in_a_timeout_with_a_hint():
    statuses, got = callback(wait=0.2)
    assert statuses == []
    assert isinstance(got, TimedOut) and got.message == "no authorization arrived within 0.2s"
    assert "--timeout" in (got.hint or "")


def test_records_are_written_0600_in_a_0700_directory_and_forgotten_on_request(tmp_path):
    store = TokenStore(tmp_path / "auth", kind="file")
    store.save(Record(url="http://127.0.0.1:1/mcp", tokens={"access_token": "a", "token_type": "Bearer"}))
    (path,) = (tmp_path / "auth").iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "auth").stat().st_mode) == 0o700
    assert json.loads(path.read_text())["tokens"]["access_token"] == "a"
    assert store.has("http://127.0.0.1:1/mcp") and not store.has("http://127.0.0.1:2/mcp")
    assert store.forget("http://127.0.0.1:1/mcp") and not list((tmp_path / "auth").iterdir())


def test_an_unreadable_record_is_a_config_error_that_names_the_way_out(tmp_path):
    store = TokenStore(tmp_path, kind="file")
    store.path("http://x/mcp").write_text("{not json")
    with pytest.raises(ConfigError, match="unreadable token record") as caught:
        store.load("http://x/mcp")
    assert "--reset" in (caught.value.hint or "")


def test_auth_oauth_in_a_server_file_with_scopes_and_a_static_client():
    spec = server_from_mapping(
        {
            "url": "https://mcp.example.com/mcp",
            "auth": {
                "scopes": "read write",
                "client_id": "abc",
                "client_secret": "s3cret-value",
                "callback_port": 33418,
            },
        },
        where="x.yaml",
    )
    assert spec.oauth is not None and spec.oauth.scopes == ("read", "write")
    assert spec.oauth.client_id == "abc" and spec.oauth.callback_port == 33418
    assert "s3cret-value" in spec.secrets  # masked wherever it could show


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ("basic", "unknown auth type 'basic'"),
        ({"type": "oauth", "scope": "x"}, "unknown key 'scope'"),
        ({"client_metadata_url": "http://example.com/c.json"}, "must be an https URL"),
        ({"callback_port": "http"}, "must be a port number"),
    ],
)
def test_bad_auth_settings_are_config_errors(auth, message):
    with pytest.raises(ConfigError, match=message):
        server_from_mapping({"url": "https://mcp.example.com/mcp", "auth": auth}, where="x.yaml")


def test_auth_oauth_on_a_stdio_server_is_a_config_error():
    with pytest.raises(ConfigError, match="needs a url"):
        server_from_mapping({"command": "srv", "auth": "oauth"}, where="x.yaml")


def test_a_failing_oauth_flow_of_the_sdk_is_classified_as_auth_with_the_login_hint():
    from mcp.client.auth import OAuthTokenError

    from miroctl.base.models import ServerSpec
    from miroctl.sessions.failures import startup_failure
    from miroctl.sessions.transports import Wire

    spec = ServerSpec(name="docs", transport="streamable_http", url="http://127.0.0.1:9/mcp")
    failure = startup_failure(ExceptionGroup("g", [OAuthTokenError("Token exchange failed (400)")]), Wire(spec))
    assert failure.kind == "auth" and failure.message == "auth required: run miroctl auth docs"
    assert failure.hint == "OAuth failed: Token exchange failed (400)"


def test_the_login_hint_of_an_ad_hoc_server_names_its_url():
    from miroctl.config.servers import adhoc_servers
    from miroctl.sessions.oauth import auth_hint

    (spec,) = adhoc_servers((), ["http://127.0.0.1:9/mcp"])
    assert auth_hint(spec) == "run miroctl auth --url http://127.0.0.1:9/mcp"
