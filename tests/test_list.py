"""`miroctl list`: concurrent listing where one broken server never hides the others."""

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import fixture_yaml, parse_json, tagged_processes, wait_for_no_tagged

BROKEN_TIMEOUT = 5.0


@contextmanager
def most_alive_at_once(tag: str, mode: str) -> Iterator[list[int]]:
    """The most processes in `--mode MODE` with this test tag that were alive at the same time during the block
    (a list of one number, filled when the block ends): servers started one after another never overlap."""
    most: list[int] = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            alive = [pid for pid in tagged_processes(tag) if _in_mode(pid, mode)]
            most[0] = max(most[0], len(alive))
            done.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield most
    finally:
        done.set()
        watcher.join()


def _in_mode(pid: int, mode: str) -> bool:
    try:
        words = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    return any(a == "--mode" and b == mode for a, b in itertools.pairwise(words))


def _pool(tag: str, url: str) -> dict:
    env = {"MIROCTL_TEST_TAG": tag}
    slow = {"env": env, "startup_timeout": BROKEN_TIMEOUT}
    return {
        "alpha": fixture_yaml("alpha", env=env),
        "beta": fixture_yaml("beta", "--tools", "add,echo", env=env),
        "quitter": fixture_yaml("quitter", "--mode", "exit", env=env),
        "sleeper": fixture_yaml("sleeper", "--mode", "hang", **slow),
        "sleeper2": fixture_yaml("sleeper2", "--mode", "hang", **slow),
        "chatty": fixture_yaml("chatty", "--mode", "noise", **slow),
        "web": {"name": "web", "url": url},
    }


def test_list_reports_each_failure_in_place_and_takes_the_slowest_timeout_not_the_sum(
    write_config, leak_tag, http_fixture
):
    path = write_config(_pool(leak_tag, http_fixture("web")))
    with most_alive_at_once(leak_tag, "hang") as hanging:
        result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 1
    servers = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    assert {t["name"] for t in servers["beta"]["tools"]} == {"add", "echo"}
    assert servers["alpha"]["ok"] and servers["web"]["ok"] and len(servers["web"]["tools"]) > 5
    assert servers["quitter"]["failure"]["kind"] == "exited"
    assert "exited with code 3" in servers["quitter"]["failure"]["message"]
    assert "fixture: giving up" in servers["quitter"]["failure"]["stderr_tail"]
    assert servers["sleeper"]["failure"]["kind"] == "timeout"
    assert servers["chatty"]["failure"]["kind"] == "protocol"
    assert "non-JSON line" in servers["chatty"]["failure"]["message"]  # the start ends at the first one
    assert hanging == [2], "the two hanging servers' start-up timeouts ran one after another, not at once"
    assert not wait_for_no_tagged(leak_tag)


def test_list_json_document_has_the_documented_keys(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add")})
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 0
    document = parse_json(result.stdout)
    assert set(document) == {"schema", "config", "ok", "exit_code", "servers"}
    server = document["servers"][0]
    assert set(server) == {
        "name",
        "ok",
        "transport",
        "protocol_version",
        "server_version",
        "duration_ms",
        "tools",
        "failure",
    }
    assert server["server_version"] == "alpha 9.9.9"
    tool = server["tools"][0]
    assert set(tool) == {"name", "title", "description", "input_schema", "output_schema", "annotations"}
    assert tool["input_schema"]["required"] == ["a"]


@pytest.mark.process
def test_list_human_output_shows_tables_and_failures_and_keeps_server_text_literal(write_config):
    path = write_config(
        {"alpha": fixture_yaml("alpha", "--tools", "add,nasty"), "quitter": fixture_yaml("quitter", "--mode", "exit")}
    )
    result = CliRunner().invoke(app, ["list", "--config", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "a*: integer" in result.stdout
    assert "alpha  stdio · 2 tools · " in result.stdout
    assert "[red]markup[/red]" in result.stdout and "\\x1b[31mANSI" in result.stdout
    assert "\x1b" not in result.stdout
    assert "quitter  exited: server exited with code 3" in result.stdout


def test_list_names_servers_to_list_and_rejects_unknown_ones(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add"), "beta": fixture_yaml("beta")})
    result = CliRunner().invoke(app, ["list", "alpah", "--config", str(path)])
    assert result.exit_code == 6  # not found, as in call, read and prompt
    assert "no server named 'alpah'" in result.stderr and "did you mean 'alpha'" in result.stderr
    result = CliRunner().invoke(app, ["list", "alpha", "--json", "--config", str(path)])
    assert result.exit_code == 0
    assert [s["name"] for s in parse_json(result.stdout)["servers"]] == ["alpha"]


def test_list_hides_blacklisted_tools(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add,echo")}, tool_blacklist=[["alpha", "echo"]])
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 0
    assert [t["name"] for t in parse_json(result.stdout)["servers"][0]["tools"]] == ["add"]
    human = CliRunner().invoke(app, ["list", "--config", str(path)], env={"COLUMNS": "200"})
    assert human.exit_code == 0
    assert "alpha  memory · 1 tool · " in human.stdout and "echo" not in human.stdout


def test_list_reports_a_missing_env_var_and_a_missing_command_as_config_and_not_found(write_config, monkeypatch):
    monkeypatch.delenv("MIROCTL_ABSENT", raising=False)
    path = write_config(
        {
            "needs-env": fixture_yaml("needs-env", env={"KEY": "${oc.env:MIROCTL_ABSENT}"}),
            "no-binary": {"name": "no-binary", "tool_command": "miroctl-no-such-binary"},
        }
    )
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 1
    errors = {s["name"]: s["failure"] for s in parse_json(result.stdout)["servers"]}
    assert errors["needs-env"]["kind"] == "config"
    assert "missing environment variable MIROCTL_ABSENT" in errors["needs-env"]["message"]
    assert errors["no-binary"] == {
        "kind": "not_found",
        "message": "command not found: miroctl-no-such-binary",
        "hint": "is it installed and on PATH?",
        "phase": "spawn",
        "stderr_tail": [],
    }


def test_list_over_http_with_an_adhoc_url(http_fixture):
    url = http_fixture("web", "--tools", "echo")
    result = CliRunner().invoke(app, ["list", "--url", url, "--json"])
    assert result.exit_code == 0
    server = parse_json(result.stdout)["servers"][0]
    assert server["transport"] == "streamable_http" and [t["name"] for t in server["tools"]] == ["echo"]


def test_list_of_an_http_server_that_is_not_there_is_a_connect_failure():
    result = CliRunner().invoke(app, ["list", "--url", "http://127.0.0.1:9/mcp", "--json"])
    assert result.exit_code == 1
    error = parse_json(result.stdout)["servers"][0]["failure"]
    assert error["kind"] == "http" and "cannot connect to http://127.0.0.1:9/mcp" in error["message"]


def test_a_server_flooding_stdout_without_newlines_is_cut_off_as_a_protocol_failure(
    write_config, leak_tag, monkeypatch
):
    monkeypatch.setattr("miroctl.sessions.transports.MAX_MESSAGE_BYTES", 1024 * 1024)
    monkeypatch.setattr("miroctl.sessions.failures.MAX_MESSAGE_BYTES", 1024 * 1024)
    path = write_config({"flood": fixture_yaml("flood", "--mode", "flood", env={"MIROCTL_TEST_TAG": leak_tag})})
    result = CliRunner().invoke(app, ["list", "--json", "--config", str(path)])
    assert result.exit_code == 1
    error = parse_json(result.stdout)["servers"][0]["failure"]
    assert error["kind"] == "protocol"
    assert error["message"] == "server wrote a line of over 1 MiB to stdout without a newline"


def test_secrets_in_a_failing_servers_stderr_are_masked(write_config, monkeypatch):
    monkeypatch.setenv("MIROCTL_CANARY", "canary-7f3a9")
    path = write_config(
        {"quitter": fixture_yaml("quitter", "--mode", "exit", env={"FIXTURE_SECRET": "${oc.env:MIROCTL_CANARY}"})}
    )
    for args in (["--json"], []):
        result = CliRunner().invoke(app, ["list", "--config", str(path), *args])
        assert result.exit_code == 1
        assert "canary-7f3a9" not in result.stdout + result.stderr
        assert "FIXTURE_SECRET is ****" in result.stdout


def test_list_schema_shows_full_descriptions_and_each_parameter(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo")})
    result = CliRunner().invoke(app, ["list", "--schema", "--config", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "Returns exactly what it was given." in result.stdout
    assert "text*  string\n" in result.stdout
    assert f"miroctl call -c {path} alpha echo text='<text>'" in result.stdout
