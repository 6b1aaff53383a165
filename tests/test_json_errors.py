"""One rule for `--json` errors: every command, every kind of error, the same exit code, one document, one reason.

Each case is a command line as a user types it, run through the console entry: its exit code is the one of
docs/exit-codes.md, stdout holds exactly one document (valid against its schema) carrying the error in the
same fields, and stderr holds the reason line (and the hint's line) that the command prints without --json.
"""

from __future__ import annotations

import pytest

from miroctl.launch import entry
from tests.conftest import fixture_yaml, refused_port
from tests.json_contract import one_document

ERROR = "miroctl.error/1"
CALL = "miroctl.call/1"
RESOURCE = "miroctl.resource/1"
PROMPT = "miroctl.prompt/1"

CASES = [
    # list
    ("list", ["--json", "--bogus"], 2, "usage", ERROR),
    ("list", ["--json", "--brief", "--schema"], 2, "usage", ERROR),
    ("list", ["--json", "nosuch"], 6, "not_found", ERROR),
    ("list", ["--json", "alpha", "ghost"], 6, "not_found", ERROR),
    ("list", ["--json", "--config", "{missing}"], 2, "config", ERROR),
    ("list", ["--json", "--via", "{down}"], 3, "unavailable", ERROR),
    # check
    ("check", ["--json", "--bogus"], 2, "usage", ERROR),
    ("check", ["--json", "nosuch"], 6, "not_found", ERROR),
    ("check", ["--json", "--config", "{missing}"], 2, "config", ERROR),
    ("check", ["--json", "--via", "{down}"], 3, "unavailable", ERROR),
    # call
    ("call", ["--json", "--timeout", "soon", "alpha", "add"], 2, "usage", ERROR),
    ("call", ["--json", "alpha", "add", "a=two"], 2, "arguments", CALL),
    ("call", ["--json", "alpha", "ghost"], 6, "not_found", CALL),
    ("call", ["--json", "quitter", "add"], 3, "unavailable", CALL),
    ("call", ["--json", "--timeout", "0.2", "alpha", "sleep", "seconds=3600"], 4, "timeout", CALL),
    ("call", ["--json", "alpha", "fail"], 5, "denied", CALL),
    ("call", ["--json", "needenv", "echo", "text=x"], 2, "config", CALL),
    ("call", ["--json", "--config", "{missing}", "alpha", "add"], 2, "config", ERROR),
    ("call", ["--json", "--via", "{down}", "alpha", "add"], 3, "unavailable", ERROR),
    # read
    ("read", ["--json", "alpha", "a", "b"], 2, "usage", ERROR),
    ("read", ["--json", "nosuch", "fixture://notes"], 6, "not_found", RESOURCE),
    ("read", ["--json", "alpha", "fixture://nope"], 6, "not_found", RESOURCE),
    ("read", ["--json", "quitter", "fixture://notes"], 3, "unavailable", RESOURCE),
    ("read", ["--json", "needenv", "fixture://notes"], 2, "config", RESOURCE),
    ("read", ["--json", "--via", "{down}", "alpha", "fixture://notes"], 3, "unavailable", ERROR),
    # prompt
    ("prompt", ["--json", "alpha", "nope"], 6, "not_found", PROMPT),
    ("prompt", ["--json", "alpha", "review"], 2, "usage", PROMPT),
    ("prompt", ["--json", "quitter", "review"], 3, "unavailable", PROMPT),
    ("prompt", ["--json", "needenv", "review", "code=x"], 2, "config", PROMPT),
    ("prompt", ["--json", "--config", "{missing}", "alpha", "review"], 2, "config", ERROR),
    # serve: stdio's errors go to stdout as everywhere (its stdout carries MCP only once it serves)
    ("serve", ["--json", "--transport", "carrier-pigeon"], 2, "usage", ERROR),
    ("serve", ["--json", "--transport", "http", "--host", "0.0.0.0", "--port", "0"], 2, "usage", ERROR),
    ("serve", ["--json", "--transport", "http", "--port", "0", "nosuch"], 6, "not_found", ERROR),
    ("serve", ["--json", "--config", "{missing}"], 2, "config", ERROR),
    # auth
    ("auth", ["--json", "nosuch"], 6, "not_found", ERROR),
    ("auth", ["--json", "alpha"], 2, "config", ERROR),
    # bench
    ("bench", ["--json", "alpha", "add"], 2, "usage", ERROR),
    ("bench", ["--json", "-n", "1", "alpha", "add", "a=two"], 2, "arguments", ERROR),
    ("bench", ["--json", "-n", "1", "alpha", "ghost"], 6, "not_found", ERROR),
    ("bench", ["--json", "-n", "1", "quitter", "add"], 3, "unavailable", ERROR),
    ("bench", ["--json", "-n", "1", "alpha", "fail"], 5, "denied", ERROR),
    ("bench", ["--json", "-n", "1", "needenv", "echo"], 2, "config", ERROR),
    ("bench", ["--json", "-n", "1", "--via", "{down}", "alpha", "add"], 3, "unavailable", ERROR),
    # config sources, daemon status
    ("config", ["sources", "--json", "extra"], 2, "usage", ERROR),
    ("daemon", ["status", "--json", "--bogus"], 2, "usage", ERROR),
]


@pytest.fixture
def pool(write_config, leak_tag, monkeypatch):
    """alpha (its add and echo, a sleep, a blacklisted fail; a resource, a prompt); quitter, which exits at start;
    needenv, whose file needs an environment variable that is not set."""
    monkeypatch.delenv("NEEDENV_TOKEN", raising=False)
    env = {"MIROCTL_TEST_TAG": leak_tag}
    return write_config(
        {
            "alpha": fixture_yaml("alpha", "--tools", "echo,add,sleep,fail", env=env),
            "quitter": fixture_yaml("quitter", "--mode", "exit", env=env),
            "needenv": fixture_yaml("needenv", env={**env, "TOKEN": "${oc.env:NEEDENV_TOKEN}"}),
        },
        tool_blacklist=[["alpha", "fail"]],
    )


@pytest.mark.parametrize(
    ("command", "words", "code", "kind", "schema"),
    CASES,
    ids=[f"{c[0]} {' '.join(c[1])}" for c in CASES],
)
def test_every_json_error_is_its_exit_code_one_document_on_stdout_and_its_reason_on_stderr(
    command, words, code, kind, schema, pool, tmp_path, capsys
):
    fill = {"missing": str(tmp_path / "nowhere.yaml"), "down": f"http://127.0.0.1:{refused_port()}"}
    words = [word.format(**fill) for word in words]
    own = "--config" in words or "--via" in words or command in ("config", "daemon")  # theirs, or none taken
    config = [] if own else ["--config", str(pool)]
    assert entry.run([command, *words[:1], *config, *words[1:]]) == code
    captured = capsys.readouterr()
    document = one_document(captured.out)
    assert document["schema"] == schema
    assert (document["is_error"], document["error_kind"], document["exit_code"]) == (True, kind, code)
    assert document["error"] and "hint" in document
    if document["error"].startswith("no server named"):  # every command hints alike at an unknown server
        assert document["hint"] == "miroctl list shows the configured servers"
    reason = [f"miroctl: {kind}: {document['error']}"]
    assert captured.err.splitlines() == reason + ([f"  hint: {document['hint']}"] if document["hint"] else [])
