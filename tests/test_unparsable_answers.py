"""Answers the JSON parser rejects fail their request at once with the cause, or are read leniently; a pending
request never waits out its timeout for an answer that was dropped."""

import sys

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.sessions.frames import UNPARSABLE, answer_id, parse_line, unparsable
from miroctl.sessions.transports import sse_item
from tests.conftest import HOSTILE, parse_json, serve_on_a_free_port

CASES = {
    "surrogate": (0, "cut emoji: \ufffd"),
    "deep": (1, "the answer to deep could not be parsed: recursion limit exceeded at line 1 column"),
    "truncated": (1, "the answer to truncated could not be parsed: EOF while parsing a string at line 1 column 63"),
}


def call(server: list[str], tool: str):
    # A timeout beyond the per-test timeout: an answer dropped and waited for fails the test instead of
    # ending as a timeout (exit 4).
    return CliRunner().invoke(app, ["call", *server, tool, "--json", "--timeout", "600"])


def check(result, tool: str) -> None:
    code, text = CASES[tool]
    assert result.exit_code == code, result.stderr
    envelope = parse_json(result.stdout)
    assert (envelope.get("result") or envelope.get("error")).startswith(text)


@pytest.mark.parametrize("tool", CASES)
def test_over_stdio_an_unparsable_answer_fails_its_call_at_once_or_is_read_leniently(tool):
    result = call(["--stdio", f"{sys.executable} {HOSTILE}"], tool)
    check(result, tool)


@pytest.fixture(scope="module")
def hostile_http():
    proc, port = serve_on_a_free_port(lambda port: [sys.executable, HOSTILE, "--http", str(port)])
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("tool", ["deep", "truncated"])
def test_over_http_an_unparsable_answer_fails_its_call_at_once_with_a_one_line_cause(hostile_http, tool):
    result = call(["--url", hostile_http], tool)
    check(result, tool)


@pytest.fixture(scope="module")
def hostile_sse():
    proc, port = serve_on_a_free_port(lambda port: [sys.executable, HOSTILE, "--sse", str(port)])
    try:
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("tool", CASES)
def test_over_legacy_sse_an_unparsable_answer_fails_its_call_at_once_or_is_read_leniently(hostile_sse, tool):
    result = call(["--url", hostile_sse], tool)
    check(result, tool)


def test_an_sse_message_that_is_json_but_not_json_rpc_becomes_the_error_for_its_id():
    import mcp_types
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as raised:
        mcp_types.jsonrpc_message_adapter.validate_json('{"jsonrpc": "2.0", "id": 5, "result": 7}', by_name=False)
    message = sse_item(raised.value).message
    assert (message.id, message.error.code) == (5, UNPARSABLE)
    assert unparsable(message.error.code, message.error.message).startswith("not a valid JSON-RPC message")
    other = ValueError("the stream broke")
    assert sse_item(other) is other


def test_a_lone_surrogate_over_http_is_named_as_the_cause(hostile_http):
    result = call(["--url", hostile_http], "surrogate")
    assert result.exit_code == 1
    assert parse_json(result.stdout)["error"].startswith(
        "the answer to surrogate could not be parsed: unexpected end of hex escape"
    )


def test_a_line_shaped_like_an_answer_becomes_an_error_for_its_id_and_other_lines_stay_noise():
    message = parse_line('{"jsonrpc": "2.0", "result": {"content": [{"id": 9}, {"type": "te')
    assert message is None  # no top-level id: nobody can be told
    message = parse_line('{"result": {"x": [{"id": 9}]}, "jsonrpc": "2.0", "id": 4, "error": ')
    assert (message.id, message.error.code) == (4, UNPARSABLE)
    assert parse_line('{"jsonrpc": "2.0", "id": 5, "result": 7}').error.message.startswith(
        "the server's answer could not be parsed: not a valid JSON-RPC message"
    )
    assert parse_line('{"jsonrpc": "2.0", "id": 6, "method": "sampling/x", "params": {"a": "\\ud800"') is None
    assert parse_line("hello from a chatty server") is None
    assert answer_id('{"id": "abc", "jsonrpc": "2.0"') == "abc"
    assert unparsable(UNPARSABLE, "Failed to parse JSON response: 1 validation error\n  Invalid JSON: EOF [x]") == "EOF"
    assert unparsable(-32603, "the server's answer could not be parsed: x") is None
