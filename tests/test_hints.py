"""The next step after a typical first-hour mistake: each is one line of reason, one hint, and its exit code."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import fixture_yaml, parse_json, refused_port
from tests.fakes.base import POLL


def invoke(*words: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(words), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def alpha(write_config):
    return str(write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,add")}))


class _NotMcp(BaseHTTPRequestHandler):
    """A web server that is no MCP endpoint: every request is 404."""

    def do_GET(self) -> None:
        self.send_error(404)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web_page() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotMcp)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    thread.join()


def test_args_that_are_not_json_say_how_to_write_one_json_object(alpha):
    code, stdout, stderr = invoke("call", "-c", alpha, "alpha", "echo", "--args", "{text: hi}")
    assert code == 2
    assert stdout == ""
    assert "--args: invalid JSON at line 1 column 2" in stderr
    assert (
        """hint: one JSON object, in single quotes, keys and strings in double quotes: --args '{"key": "value"}'"""
        in stderr
    )


def test_a_bare_value_for_a_tool_of_one_parameter_asks_whether_that_parameter_was_meant(alpha):
    assert invoke("list", "-c", alpha)[0] == 0  # the listing that completion and hints read
    code, _, stderr = invoke("call", "-c", alpha, "alpha", "echo", "notes.md")
    assert code == 2
    assert "argument 'notes.md' is not key=value (or key:=json)" in stderr
    assert "hint: did you mean text=notes.md?" in stderr


def test_a_bare_value_for_a_tool_not_listed_yet_names_the_command_that_shows_its_parameters(alpha):
    code, _, stderr = invoke("call", "-c", alpha, "alpha", "add", "2")
    assert code == 2
    assert "hint: name the parameter: NAME=2 (`miroctl list alpha add` shows the names)" in stderr


def test_a_profile_typo_names_the_bundled_profile_it_is_closest_to():
    code, _, stderr = invoke("list", "-c", "reserch")
    assert code == 2
    assert "config file not found: reserch (from --config)" in stderr
    assert "hint: did you mean 'research'? (a bundled profile)" in stderr


def test_a_url_that_answers_404_suggests_the_paths_where_mcp_servers_answer(web_page):
    code, stdout, _ = invoke("list", "--url", web_page, "--json")
    assert code == 1
    (server,) = parse_json(stdout)["servers"]
    assert server["failure"]["message"] == f"HTTP 404 from {web_page}"
    base = web_page.rstrip("/")
    assert server["failure"]["hint"] == f"not an MCP endpoint? try {base}/mcp (streamable HTTP) or {base}/sse (SSE)"


def test_an_unreachable_gateway_from_miroctl_url_says_how_to_do_without_it():
    url = f"http://127.0.0.1:{refused_port()}"
    code, _, stderr = invoke("call", "system", "disk_usage", env={"MIROCTL_URL": url})
    assert code == 3
    assert f"cannot reach the gateway at {url}" in stderr
    assert "($MIROCTL_URL names it: `unset MIROCTL_URL` to use the servers directly)" in stderr
