"""One JSON contract: every --json prints one document on stdout that validates against miroctl/schemas, errors too."""

from __future__ import annotations

import json
import re
import select
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from miroctl import schemas
from miroctl.base.errors import ERROR_KIND_NAMES, ErrorKind
from miroctl.base.models import PHASES, phase_named
from miroctl.cli.app import app
from miroctl.launch import entry
from tests.conftest import ROOT, fixture_yaml, refused_port
from tests.gateway_support import GatewayProcess, http_gateway_thread, post_json, request, run_entry, write_pool
from tests.json_contract import one_document, validate


@pytest.fixture
def pool(write_config, leak_tag):
    """alpha (echo, add, fail; the notes resource, the review prompt) and quitter, which exits at start."""
    env = {"MIROCTL_TEST_TAG": leak_tag}
    return write_config(
        {
            "alpha": fixture_yaml("alpha", "--tools", "echo,add,fail", env=env),
            "quitter": fixture_yaml("quitter", "--mode", "exit", env=env),
        }
    )


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def test_a_failing_server_is_its_failure_in_list_and_check_and_both_documents_validate(pool):
    listed = invoke("list", "--json", "--config", str(pool))
    checked = invoke("check", "--json", "--config", str(pool))
    assert (listed.exit_code, checked.exit_code) == (1, 1)
    in_list = {s["name"]: s for s in one_document(listed.stdout)["servers"]}
    in_check = {s["name"]: s for s in one_document(checked.stdout)["servers"]}
    assert in_list["alpha"]["ok"] and in_list["alpha"]["failure"] is None
    assert in_list["quitter"]["failure"]["kind"] == in_check["quitter"]["failure"]["kind"] == "exited"
    assert set(in_list["quitter"]["failure"]) == set(in_check["quitter"]["failure"])


def test_call_envelopes_validate_for_a_result_a_tool_error_and_an_unknown_tool(pool):
    results = [
        invoke("call", "--json", "--config", str(pool), *words)
        for words in (["alpha", "add", "a=1", "b=2"], ["alpha", "fail"], ["alpha", "ghost"], ["nosuch", "ghost"])
    ]
    assert [r.exit_code for r in results] == [0, 1, 6, 6]
    documents = [one_document(r.stdout) for r in results]
    assert documents[0]["result"] == "3" and documents[0]["is_error"] is False
    assert [d["error_kind"] for d in documents[1:]] == ["tool_error", "not_found", "not_found"]
    assert all(d["is_error"] is True for d in documents[1:])


def test_read_and_prompt_envelopes_validate_and_say_is_error_when_they_fail(pool):
    results = [
        invoke(*words)
        for words in (
            ["read", "--json", "--config", str(pool), "alpha", "fixture://notes"],
            ["read", "--json", "--config", str(pool), "ghost", "fixture://notes"],
            ["prompt", "--json", "--config", str(pool), "alpha", "review", "code=x=1"],
            ["prompt", "--json", "--config", str(pool), "alpha", "review"],
        )
    ]
    assert [r.exit_code for r in results] == [0, 6, 0, 2]
    documents = [one_document(r.stdout) for r in results]
    assert documents[0]["contents"][0]["text"] == "notes of alpha" and documents[0]["is_error"] is False
    assert "x=1" in documents[2]["messages"][0]["content"]["text"]
    assert [(d["is_error"], d["error_kind"]) for d in documents[1::2]] == [(True, "not_found"), (True, "usage")]


def test_every_line_of_a_batch_is_a_valid_call_envelope(pool):
    lines = [{"server": "alpha", "tool": "echo", "arguments": {"text": "hi"}}, {"server": "alpha", "tool": "ghost"}]
    result = invoke("call", "--batch", "-", "--config", str(pool), input="\n".join(map(json.dumps, lines)))
    assert result.exit_code == 1
    envelopes = [validate(json.loads(line)) for line in result.stdout.splitlines()]
    assert [e["exit_code"] for e in envelopes] == [0, 6]


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        (["list", "--json", "--config", "{missing}"], "config"),
        (["call", "--json", "--timeout", "soon", "alpha", "add"], "usage"),
        (["call", "--json", "--bogus-option", "alpha", "add"], "usage"),
        (["check", "--json", "--config", "{pool}", "--allow-fail", "nosuch"], "usage"),
        (["read", "--json", "--config", "{pool}", "a", "b", "c"], "usage"),
        (["prompt", "--json", "--config", "{missing}", "alpha", "review"], "config"),
        (["serve", "--json", "--config", "{pool}", "--transport", "carrier-pigeon"], "usage"),
    ],
)
def test_an_error_before_any_server_starts_is_one_error_document_on_stdout(words, kind, write_config, tmp_path, capsys):
    pool = write_config({"alpha": fixture_yaml("alpha", "--tools", "add")})
    words = [w.format(pool=pool, missing=tmp_path / "nowhere.yaml") for w in words]
    code = entry.run(words)
    captured = capsys.readouterr()
    assert code == 2
    document = one_document(captured.out)
    assert (document["schema"], document["is_error"], document["error_kind"]) == ("miroctl.error/1", True, kind)
    assert document["exit_code"] == 2 and document["error"] in captured.err  # the reason is on stderr too


@pytest.mark.parametrize("command", [["list"], ["check"], ["serve", "--transport", "http", "--port", "0"]])
def test_an_unknown_server_name_is_one_not_found_error_document_exit_6(command, write_config, capsys):
    pool = write_config({"alpha": fixture_yaml("alpha", "--tools", "add")})
    code = run_entry([*command, "--json", "--config", str(pool), "alpah"])
    captured = capsys.readouterr()
    assert code == 6, captured.err
    document = one_document(captured.out)
    assert (document["schema"], document["error_kind"], document["exit_code"]) == ("miroctl.error/1", "not_found", 6)
    assert document["error"] == "no server named 'alpah'" and document["hint"] == "did you mean 'alpha'?"


def test_an_unreachable_gateway_is_an_error_document_with_exit_3(capsys):
    code = entry.run(["call", "--via", f"http://127.0.0.1:{refused_port()}", "--json", "alpha", "add"])
    assert code == 3
    document = one_document(capsys.readouterr().out)
    assert document["error_kind"] == "unavailable" and "cannot reach the gateway" in document["error"]


def _first_line(stream, timeout: float = 60) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"nothing on the stream within {timeout}s"
    return stream.readline()


@pytest.mark.process
def test_serve_json_prints_its_ready_line_as_one_document_and_the_api_documents_validate(tmp_path, leak_tag, capsys):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    path = write_pool(tmp_path, {"alpha": fixture_yaml("alpha", "--tools", "echo,add", env=env)})
    gateway = GatewayProcess("--config", str(path), "--transport", "http", "--port", "0", "--json", env={"TASK_ID": ""})
    try:
        ready = validate(json.loads(_first_line(gateway.proc.stdout)))
        assert (ready["transport"], sorted(ready["tools"])) == ("http", ["alpha__add", "alpha__echo"])
        assert ready["task_id"].startswith("gateway-")  # the gateway's own, without --task-id or $TASK_ID
        base = ready["url"].removesuffix("/mcp")
        status, _, body = request(base, "GET", "/healthz")
        assert status == 200 and validate(json.loads(body))["status"] == "ok"
        status, listed = post_json(base, "/v1/list", {})
        assert status == 200 and validate(listed)["ok"] is True
        status, called = post_json(base, "/v1/call", {"server": "alpha", "tool": "add", "arguments": {"a": 2}})
        assert status == 200 and validate(called)["result"] == "2"
        status, refused = post_json(base, "/v1/call", {"server": "alpha", "tool": "add", "colour": "red"})
        assert status == 400 and validate(refused)["is_error"] is True
        assert entry.run(["list", "--via", base, "--json"]) == 0
        assert one_document(capsys.readouterr().out)["servers"][0]["name"] == "alpha"
    finally:
        gateway.stop()
    assert gateway.proc.returncode in (0, 130, 143)


@pytest.mark.process
def test_serve_json_over_stdio_puts_its_ready_line_on_stderr_and_keeps_stdout_for_mcp(tmp_path, leak_tag):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    path = write_pool(tmp_path, {"alpha": fixture_yaml("alpha", "--tools", "add", env=env)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "miroctl", "serve", "--config", str(path), "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = validate(json.loads(_first_line(proc.stderr)))
        assert (ready["transport"], ready["url"], ready["tools"]) == ("stdio", None, ["alpha__add"])
    finally:
        out, _ = proc.communicate("", timeout=30)  # end of stdin ends a stdio gateway
    assert proc.returncode == 0 and out == ""


def test_an_http_refusal_of_the_gateway_is_an_error_document_with_its_status(tmp_path):
    path = write_pool(tmp_path, {"alpha": fixture_yaml("alpha", "--tools", "add")})
    with http_gateway_thread(path, token="s3cret-token-for-the-test") as url:
        status, refused = post_json(url, "/v1/list", {})
    assert status == 401
    assert validate(refused)["status"] == 401 and refused["error_kind"] == "http" and refused["is_error"] is True


def documents_shown_in_the_docs() -> list[tuple[str, dict[str, Any]]]:
    """Every miroctl document docs/*.md shows whole: ```json blocks, and one-line documents in console output."""
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        shown = re.findall(r"```json\n(.*?)```", text, re.DOTALL)
        shown += [line for line in text.splitlines() if line.startswith('{"schema": "miroctl.')]
        for raw in shown:
            try:
                document = json.loads(raw)
            except ValueError:
                continue  # a document spread over several console lines: its command's test checks it
            kind = str(document.get("schema", "")).removeprefix("miroctl.").partition("/")[0]
            if kind in schemas.DOCUMENTS:
                found.append((page.name, document))
    return found


def test_every_document_the_docs_show_validates_against_its_schema():
    shown = documents_shown_in_the_docs()
    assert {document["schema"] for _, document in shown} >= {"miroctl.call/1", "miroctl.health/1"}
    for page, document in shown:
        try:
            validate(document)
        except AssertionError as exc:
            raise AssertionError(f"{page} shows a {document['schema']} document its schema rejects:\n{exc}") from None


def test_the_schema_of_a_failure_names_exactly_the_phases_miroctl_reports():
    phase = schemas.load("common")["$defs"]["failure"]["properties"]["phase"]
    assert phase["enum"] == [*PHASES, None]


def test_a_failure_read_back_keeps_its_phase_and_takes_a_request_name_as_its_phase():
    assert [phase_named(text) for text in ("tools", "tools/list", "resources/read", None, "lunch")] == [
        "tools",
        "tools",
        "resources",
        None,
        None,
    ]


def test_every_error_kind_is_a_name_an_envelope_can_carry_and_no_other():
    assert sorted(ERROR_KIND_NAMES) == sorted(kind.value for kind in ErrorKind)
