"""Hostile JSON in and out: non-finite numbers, wrong types and deep nesting in batch lines, API bodies and
key=value pairs are that input's error (never a crash or an HTTP 500), and every JSON miroctl writes is
strict JSON, even when a server answers NaN."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.launch import entry
from tests.gateway_support import post_json, request, start_http_gateway, write_pool
from tests.surface_support import echo, surface_yaml, tool

DEEP = '{"server": "alpha", "tool": "echo", "arguments": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
NAN_RESULT = {"content": [], "structuredContent": {"ratio": float("nan"), "top": float("inf")}}


def strict(text: str) -> Any:
    """JSON as a strict parser reads it: NaN and Infinity are errors."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("hostile")
    servers = {
        "alpha": surface_yaml(directory, [echo(n={"type": "number"})], name="alpha"),
        "odd": surface_yaml(directory, [tool("nan", NAN_RESULT)], name="odd"),
    }
    process, url = start_http_gateway(write_pool(directory, servers))
    yield url
    process.stop()


BAD_BODIES = [
    ('{"server": "alpha", "tool": "echo", "arguments": {"a": 1e999}}', "too large for a number"),
    ('{"server": "alpha", "tool": "echo", "arguments": {"a": NaN}}', "NaN is not a JSON number"),
    (DEEP, "nested too deeply"),
    ('{"server": "alpha", "tool": "echo", "arguments": []}', "arguments must be a JSON object"),
    ('{"server": "alpha", "tool": "echo", "arguments": ""}', "arguments must be a JSON object"),
    ('{"server": "alpha", "tool": "echo", "pairs": ""}', "pairs must be a list of strings"),
    ('{"server": ["alpha"], "tool": "echo"}', "server must be a string"),
    ('{"server": "alpha", "tool": "echo", "timeout": "5"}', "timeout must be a positive number"),
]


@pytest.mark.parametrize(("body", "reason"), BAD_BODIES)
def test_a_bad_call_body_gets_http_400_with_the_reason(gateway, body, reason):
    status, _, answer = request(gateway, "POST", "/v1/call", body, {"Content-Type": "application/json"})
    assert status == 400
    document = strict(answer.decode())
    assert reason in document["error"] and document["exit_code"] == 2


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/list", {"servers": "alpha"}),
        ("/v1/list", {"servers": ""}),
        ("/v1/check", {"timeout": "NaN"}),
        ("/v1/check", {"concurrency": 1.5}),
        ("/v1/batch?timeout=nan", ""),
        ("/v1/batch?timeout=inf", ""),
        ("/v1/batch?jobs=many", ""),
    ],
)
def test_wrong_types_and_non_finite_options_are_http_400_on_every_endpoint(gateway, path, body):
    status, answer = post_json(gateway, path, body) if body != "" else _post_text(gateway, path, "")
    assert status == 400
    assert answer["schema"] == "miroctl.error/1" and answer["exit_code"] == 2


def _post_text(url: str, path: str, text: str) -> tuple[int, Any]:
    status, _, body = request(url, "POST", path, text)
    return status, strict(body.decode())


def test_nan_in_pairs_is_the_calls_argument_error_and_a_huge_timeout_still_works(gateway):
    status, envelope = post_json(gateway, "/v1/call", {"target": ["alpha", "echo", "n=nan"]})
    assert status == 200
    assert envelope["error_kind"] == "arguments" and envelope["exit_code"] == 2
    status, envelope = post_json(
        gateway, "/v1/call", {"server": "alpha", "tool": "echo", "arguments": {"text": "2"}, "timeout": 1e308}
    )
    assert (status, envelope["result"]) == (200, "2")


def test_a_batch_of_bad_lines_answers_each_line_and_keeps_going(gateway):
    lines = [
        '{"server": "alpha", "tool": "echo", "arguments": {"a": 1e999}}',
        DEEP,
        '{"server": "alpha", "tool": "echo", "arguments": []}',
        '{"server": 5, "tool": "echo"}',
        '{"server": "alpha", "tool": "echo", "arguments": {"text": "42"}}',
    ]
    status, _, body = request(gateway, "POST", "/v1/batch", "\n".join(lines) + "\n")
    assert status == 200
    envelopes = [strict(line) for line in body.decode().splitlines()]
    assert [e["exit_code"] for e in envelopes] == [2, 2, 2, 2, 0]
    assert envelopes[1]["error"] == "line 2: not JSON (nested too deeply)"
    assert envelopes[-1]["result"] == "42"


def test_a_nan_from_a_server_reaches_api_callers_as_strict_json(gateway):
    status, _, body = request(gateway, "POST", "/v1/call", json.dumps({"server": "odd", "tool": "nan"}))
    assert status == 200
    assert strict(body.decode())["structured_content"] == {"ratio": "NaN", "top": "Infinity"}


def test_call_batch_on_the_command_line_keeps_going_past_lines_that_would_crash_it(write_config, tmp_path):
    path = write_config({"alpha": surface_yaml(tmp_path, [echo()], name="alpha")})
    source = tmp_path / "calls.jsonl"
    lines = [
        DEEP,
        '{"server": "alpha", "tool": "echo", "arguments": {"a": 1e999}}',
        '{"tool": "echo", "arguments": {"text": "ok"}}',
    ]
    source.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["call", "-c", str(path), "--batch", str(source)])
    assert result.exit_code == 1
    assert [strict(line)["exit_code"] for line in result.stdout.splitlines()] == [2, 2, 0]


def test_nan_and_inf_are_never_accepted_as_numbers_from_the_command_line(write_config, tmp_path):
    record = tmp_path / "calls.txt"
    path = write_config({"alpha": surface_yaml(tmp_path, [echo(n={"type": "number"})], name="alpha", record=record)})
    for pair in ("n=nan", "n=inf", "n=-Infinity", "n=1e999", "n:=NaN", "n:=1e999"):
        result = CliRunner().invoke(app, ["call", "-c", str(path), "alpha", "echo", pair, "--json"])
        assert result.exit_code == 2, pair
        assert strict(result.stdout)["error_kind"] == "arguments"
    base = CliRunner().invoke(app, ["call", "-c", str(path), "alpha", "echo", "--args", '{"n": NaN}'])
    assert base.exit_code == 2 and "NaN is not a JSON number" in base.stderr
    assert not record.exists()  # nothing was sent


def test_a_nan_result_keeps_json_output_and_the_call_log_strict(write_config, tmp_path):
    path = write_config({"odd": surface_yaml(tmp_path, [tool("nan", NAN_RESULT)], name="odd")})
    log = tmp_path / "calls.jsonl"
    result = CliRunner().invoke(app, ["call", "-c", str(path), "odd", "nan", "--json", "--log", str(log)])
    assert result.exit_code == 0, result.output
    assert strict(result.stdout)["structured_content"] == {"ratio": "NaN", "top": "Infinity"}
    assert all(strict(line) for line in log.read_text().splitlines())


@pytest.mark.parametrize("command", [["call", "alpha", "add"], ["check"], ["read", "alpha", "x://y"]])
@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_timeout_of_nan_or_inf_is_a_usage_error(command, value, capsys):
    assert entry.run([*command, "--timeout", value]) == 2
    assert f"{value!r} is not a positive number of seconds" in capsys.readouterr().err
