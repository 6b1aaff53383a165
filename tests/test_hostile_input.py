"""Hostile JSON in and out: non-finite numbers, wrong types and deep nesting in batch lines, API bodies and
key=value pairs are that input's error (never a crash or an HTTP 500), and every JSON miroctl writes is
strict JSON, even when a server answers NaN."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from miroctl.cli import entry
from miroctl.cli.app import app
from tests.conftest import fixture_yaml
from tests.gateway_support import post_json, request, start_http_gateway, write_pool
from tests.surface_support import surface_yaml, tool

DEEP = '{"server": "alpha", "tool": "add", "arguments": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
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
        "alpha": fixture_yaml("alpha", "--tools", "add"),
        "odd": surface_yaml(directory, [tool("nan", NAN_RESULT)], name="odd"),
    }
    process, url = start_http_gateway(write_pool(directory, servers))
    yield url
    process.stop()


BAD_BODIES = [
    ('{"server": "alpha", "tool": "add", "arguments": {"a": 1e999}}', "too large for a number"),
    ('{"server": "alpha", "tool": "add", "arguments": {"a": NaN}}', "NaN is not a JSON number"),
    (DEEP, "nested too deeply"),
    ('{"server": "alpha", "tool": "add", "arguments": []}', "arguments must be a JSON object"),
    ('{"server": "alpha", "tool": "add", "arguments": ""}', "arguments must be a JSON object"),
    ('{"server": "alpha", "tool": "add", "pairs": ""}', "pairs must be a list of strings"),
    ('{"server": ["alpha"], "tool": "add"}', "server must be a string"),
    ('{"server": "alpha", "tool": "add", "timeout": "5"}', "timeout must be a positive number"),
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
    status, envelope = post_json(gateway, "/v1/call", {"target": ["alpha", "add", "a=nan"]})
    assert status == 200
    assert envelope["error_kind"] == "arguments" and envelope["exit_code"] == 2
    status, envelope = post_json(
        gateway, "/v1/call", {"server": "alpha", "tool": "add", "arguments": {"a": 2}, "timeout": 1e308}
    )
    assert (status, envelope["result"]) == (200, "2")


def test_a_batch_of_bad_lines_answers_each_line_and_keeps_going(gateway):
    lines = [
        '{"server": "alpha", "tool": "add", "arguments": {"a": 1e999}}',
        DEEP,
        '{"server": "alpha", "tool": "add", "arguments": []}',
        '{"server": 5, "tool": "add"}',
        '{"server": "alpha", "tool": "add", "arguments": {"a": 40, "b": 2}}',
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
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add")})
    source = tmp_path / "calls.jsonl"
    source.write_text(
        DEEP
        + '\n{"server": "alpha", "tool": "add", "arguments": {"a": 1e999}}\n{"tool": "add", "arguments": {"a": 1}}\n'
    )
    result = CliRunner().invoke(app, ["call", "-c", str(path), "--batch", str(source)])
    assert result.exit_code == 1
    assert [strict(line)["exit_code"] for line in result.stdout.splitlines()] == [2, 2, 0]


@pytest.mark.parametrize("pair", ["a=nan", "a=inf", "a:=NaN", "a:=1e999", "a=-Infinity"])
def test_nan_and_inf_are_never_accepted_as_numbers_from_the_command_line(write_config, pair):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add,config_echo")})
    result = CliRunner().invoke(app, ["call", "-c", str(path), "alpha", "add", pair, "--json"])
    assert result.exit_code == 2
    assert strict(result.stdout)["error_kind"] == "arguments"
    ratio = CliRunner().invoke(
        app, ["call", "-c", str(path), "alpha", "config_echo", "options={}", "tags=a", "ratio=inf"]
    )
    assert ratio.exit_code == 2
    base = CliRunner().invoke(app, ["call", "-c", str(path), "alpha", "add", "--args", '{"a": NaN}'])
    assert base.exit_code == 2 and "NaN is not a JSON number" in base.stderr


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
