"""`--via URL` / $MIROCTL_URL: the same envelopes and exit codes as the direct path, without the SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.launch import entry as warm
from tests.conftest import ROOT, refused_port, wait_for_no_tagged
from tests.gateway_support import (
    http_gateway_thread,
    pool_files,
    request,
    run_entry,
    without_timing,
    write_pool,
)
from tests.test_completion import complete


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A profile (beta.add blacklisted) and a gateway serving it over HTTP, its servers in this process."""
    config = write_pool(tmp_path_factory.mktemp("via"), pool_files(), tool_blacklist=[["beta", "add"]])
    with http_gateway_thread(config) as url:
        yield {"config": str(config), "url": url}


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """alpha behind a gateway that starts it as a process, as `miroctl serve` does: each session of it sees the
    task id of its calls in its environment."""
    tag = uuid.uuid4().hex
    config = write_pool(tmp_path_factory.mktemp("via"), pool_files(tag))
    with http_gateway_thread(config, "alpha", memory=False) as url:
        yield {"config": str(config), "url": url}
    assert not wait_for_no_tagged(tag)


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


CASES = {
    "ok": ["alpha", "add", "a=1", "b=2"],
    "tool error": ["alpha", "fail", "message=broken on purpose"],
    "no such tool": ["alpha", "ad"],
    "bad argument": ["alpha", "add", "a=many"],
    "blacklisted": ["beta", "add", "a=1"],
    "ambiguous tool": ["echo", "text=x"],
    "server found by its tool": ["progress", "steps=1"],
    "dotted target": ["alpha.echo", "text=dotted"],
    "timeout": ["alpha", "sleep", "seconds=30", "--timeout", "0.5"],
}


@pytest.mark.parametrize("words", CASES.values(), ids=CASES.keys())
def test_call_via_gives_the_envelope_and_exit_code_of_the_direct_path(pool, words):
    direct = invoke("call", *words, "--json", "--config", pool["config"])
    warm = invoke("call", *words, "--json", "--via", pool["url"])
    assert warm.exit_code == direct.exit_code, warm.stderr
    assert without_timing(json.loads(warm.stdout)) == without_timing(json.loads(direct.stdout))


def test_call_via_with_a_malformed_pair_exits_2_with_the_direct_message(pool):
    direct = invoke("call", "alpha", "add", "=1", "--config", pool["config"])
    warm = invoke("call", "alpha", "add", "=1", "--via", pool["url"])
    assert (warm.exit_code, direct.exit_code) == (2, 2)
    assert warm.stdout == direct.stdout == ""
    assert warm.stderr == direct.stderr


def test_call_via_prints_human_text_like_the_direct_path(pool):
    result = invoke("call", "alpha", "escape", "--via", pool["url"])
    assert result.exit_code == 0
    assert result.stdout == invoke("call", "alpha", "escape", "--config", pool["config"]).stdout
    assert "\x1b" not in result.stdout


def test_call_via_shows_a_corrected_calls_note_once_on_stderr_like_the_direct_path(pool):
    direct = invoke("call", "beta", "progress", "steps=1", "--config", pool["config"])
    warm = invoke("call", "beta", "progress", "steps=1", "--via", pool["url"])
    assert (warm.exit_code, direct.exit_code) == (0, 0), warm.stderr
    assert warm.stdout == direct.stdout == "did 1 steps\n"
    assert warm.stderr.count("[Auto-corrected: Server 'beta' has no tool 'progress'") == 1
    assert direct.stderr.count("[Auto-corrected: Server 'beta' has no tool 'progress'") == 1


def test_call_via_sends_args_from_a_json_base(pool, tmp_path):
    base = tmp_path / "args.json"
    base.write_text('{"a": 5, "b": 6}')
    result = invoke("call", "alpha", "add", "b=7", "--args", f"@{base}", "--json", "--via", pool["url"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["result"] == "12"


def test_miroctl_url_sends_calls_through_the_gateway(pool):
    result = invoke("call", "beta", "echo", "text=env", "--json", env={"MIROCTL_URL": pool["url"]})
    assert result.exit_code == 0
    assert json.loads(result.stdout)["result"] == "env"


def test_miroctl_url_is_ignored_when_a_config_is_named(pool):
    result = invoke(
        "call",
        "alpha",
        "echo",
        "text=direct",
        "--json",
        "--config",
        pool["config"],
        env={"MIROCTL_URL": f"http://127.0.0.1:{refused_port()}"},
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["result"] == "direct"


def test_via_together_with_config_is_a_usage_error_exit_2(pool):
    result = invoke("call", "alpha", "echo", "text=x", "--via", pool["url"], "--config", pool["config"])
    assert result.exit_code == 2
    assert "--via goes through a gateway" in result.stderr


def test_via_with_no_gateway_listening_exits_3_with_a_reason():
    url = f"http://127.0.0.1:{refused_port()}"
    result = invoke("call", "alpha", "echo", "text=x", "--json", "--via", url)
    assert result.exit_code == 3
    assert json.loads(result.stdout)["error_kind"] == "unavailable"  # --json: the error is the one document
    assert f"cannot reach the gateway at {url}" in result.stderr


def test_list_via_gives_the_document_and_exit_code_of_list(pool):
    direct = invoke("list", "beta", "alpha", "--json", "--config", pool["config"])
    warm = invoke("list", "beta", "alpha", "--json", "--via", f"{pool['url']}/mcp")
    assert (warm.exit_code, direct.exit_code) == (0, 0)
    assert without_timing(json.loads(warm.stdout)) == without_timing(json.loads(direct.stdout))


def test_list_via_with_an_unknown_server_exits_6_like_list(pool):
    direct = invoke("list", "gamma", "--config", pool["config"])
    warm = invoke("list", "gamma", "--via", pool["url"])
    assert (warm.exit_code, direct.exit_code) == (6, 6)
    assert "no server named 'gamma'" in warm.stderr
    assert warm.stderr == direct.stderr


def test_batch_via_gives_the_envelopes_of_the_direct_batch(pool, tmp_path):
    lines = tmp_path / "calls.jsonl"
    lines.write_text(
        '{"server": "alpha", "tool": "add", "arguments": {"a": 2}}\n'
        '{"server": "beta", "tool": "add", "arguments": {"a": 2}}\n'
        '{"tool": "nope"}\n'
    )
    direct = invoke("call", "--batch", str(lines), "--config", pool["config"])
    warm = invoke("call", "--batch", str(lines), "--via", pool["url"])
    assert (warm.exit_code, direct.exit_code) == (1, 1)
    assert [without_timing(json.loads(line)) for line in warm.stdout.splitlines()] == [
        without_timing(json.loads(line)) for line in direct.stdout.splitlines()
    ]
    assert [json.loads(line)["exit_code"] for line in warm.stdout.splitlines()] == [0, 5, 6]


def test_miroctl_command_via_a_gateway_imports_neither_typer_nor_the_sdk_nor_omegaconf(pool):
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['miroctl', 'call', 'beta', 'echo', 'text=light', '--json', '--via', sys.argv[1]]\n"
        "try:\n    runpy.run_module('miroctl', run_name='__main__')\nexcept SystemExit as exit:\n"
        "    heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'omegaconf', 'typer'})\n"
        "    print(exit.code, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, pool["url"]], capture_output=True, text=True, cwd=ROOT, check=False, timeout=60
    )
    assert done.stderr.strip() == "0 []"
    assert json.loads(done.stdout)["result"] == "light"


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "alpha", "add", "a=1", "b=-2", "--json"],
        ["call", "alpha", "add", "a=1", "--timeout", "5", "--no-autocorrect"],
        ["call", "alpha", "fail", "-t", "5"],
        ["call", "nosuch", "tool"],
        ["call", "alpha", "add", "=1", "--json"],
        ["call", "--json"],
        ["list", "beta", "--json"],
        ["list", "--schema"],
    ],
)
def test_fast_entry_and_full_cli_answer_alike(pool, argv, capsys):
    fast = _exit_of(lambda: warm.main([*argv, "--via", pool["url"]]))
    fast_out = capsys.readouterr()
    full = invoke(*argv, "--via", pool["url"])
    assert fast == full.exit_code
    assert without_timing(_documents(fast_out.out)) == without_timing(_documents(full.stdout))
    assert fast_out.err.split() == full.stderr.split()


def _exit_of(run: Any) -> int:
    try:
        run()
    except SystemExit as exit:
        return int(exit.code or 0)
    return 0


def _documents(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "alpha", "echo", "--help"],
        ["call", "alpha", "echo", "--config", "x.yaml"],
        ["call", "--batch", "-"],
        ["call", "alpha", "echo", "--timeout", "soon"],
        ["call", "alpha", "echo", "--via"],
        ["call", "alpha", "echo", "-tx"],
        ["check", "alpha"],
        ["serve"],
        ["call", "alpha", "echo", "text=x"],
    ],
)
def test_fast_entry_leaves_anything_it_is_unsure_of_to_the_full_cli(argv):
    assert warm.warm(argv, {}) is None


def test_fast_entry_takes_a_call_through_miroctl_url():
    reading, url = warm.warm(["call", "-a", "-", "alpha", "echo", "--json"], {"MIROCTL_URL": "http://h:1"})
    assert (reading.command, reading.words, url) == ("call", ("alpha", "echo"), "http://h:1")
    assert reading.values == {"args": "-", "json_mode": True}


def test_list_via_fills_the_completion_cache_for_command_lines_through_that_gateway(pool, monkeypatch):
    url = pool["url"]
    assert complete("call", "--via", url, "") == []  # nothing known of this gateway yet
    assert invoke("list", "--via", url).exit_code == 0
    assert complete("call", "--via", url, "") == ["alpha", "beta"]
    assert complete("call", "--via", url, "alpha", "ad") == ["add"]
    assert complete("call", "--via", url, "alpha", "add", "") == ["a=", "b="]
    assert complete("read", "--via", url.rstrip("/") + "/mcp", "b") == ["beta"]  # the address MCP hosts are given
    scheme, _, rest = url.partition(":")
    host, _, port = rest.partition(":")
    assert complete("call", "--via", scheme, ":", host, ":", port, "beta.ec") == ["beta.echo"]  # as bash splits it
    assert complete("call", "--config", pool["config"], "alpha", "ad") == []  # the direct servers: not listed
    monkeypatch.setenv("MIROCTL_URL", url)
    assert complete("call", "beta", "") == ["echo"]  # beta.add is blacklisted at the gateway


def test_a_call_via_a_gateway_makes_its_tool_completable_and_list_via_fills_in_its_parameters(pool):
    url = pool["url"]
    assert invoke("call", "alpha", "add", "a=1", "b=2", "--via", url).exit_code == 0
    assert invoke("call", "alpha", "fail", "--via", url).exit_code == 1  # a tool error: the tool exists
    assert invoke("call", "alpha", "nosuch", "--via", url).exit_code == 6
    assert complete("call", "--via", url, "") == ["alpha"]
    assert complete("call", "--via", url, "alpha", "") == ["add", "fail"]
    assert invoke("list", "beta", "--via", url).exit_code == 0  # one server: what is known of the others stays
    assert complete("call", "--via", url, "") == ["alpha", "beta"]
    assert invoke("list", "--via", url).exit_code == 0
    assert complete("call", "--via", url, "alpha", "add", "") == ["a=", "b="]


def test_the_warm_path_fills_the_completion_cache_too(pool, capsys):
    assert run_entry(["list", "--via", pool["url"]]) == 0, capsys.readouterr().err  # the console entry's warm path
    assert complete("call", "--via", pool["url"], "beta", "") == ["echo"]


@pytest.mark.parametrize("words", [["--json"], []])
def test_a_plain_result_through_a_gateway_is_printed_without_loading_rich(pool, words):
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['miroctl', 'call', 'beta', 'echo', 'text=light', *{words!r}, '--via', sys.argv[1]]\n"
        "try:\n    runpy.run_module('miroctl', run_name='__main__')\nexcept SystemExit as exit:\n"
        "    print(exit.code, 'rich' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, pool["url"]], capture_output=True, text=True, cwd=ROOT, check=False, timeout=60
    )
    assert done.stderr.strip() == "0 False"
    assert "light" in done.stdout


def server_env(result: Any) -> str:
    """What the fixture's `env` tool answered, once the command exited 0."""
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["result"]


def console(capfd: pytest.CaptureFixture[str], *words: str) -> SimpleNamespace:
    """A command line run by the console entry (what the `miroctl` script runs) in this process."""
    capfd.readouterr()
    code = run_entry(list(words))
    out, err = capfd.readouterr()
    return SimpleNamespace(exit_code=code, stdout=out, stderr=err)


@pytest.mark.process
def test_call_via_a_gateway_gives_the_server_its_task_id_as_a_direct_call_does(processes, monkeypatch, capfd):
    """The console script's warm path and the Typer command both send --task-id; the gateway's server for that
    call sees it as TASK_ID, and the served session, started without one, has the gateway's own."""
    monkeypatch.delenv("TASK_ID", raising=False)
    words = ["call", "alpha", "env", "name=TASK_ID", "--json", "--via", processes["url"]]
    assert warm.warm([*words, "--task-id", "t-1"], {}) is not None  # the warm path takes it, not the Typer app
    assert server_env(console(capfd, *words, "--task-id", "t-1")) == "t-1"
    assert server_env(invoke(*words, "--task-id", "t-2", "--no-autocorrect")) == "t-2"  # the Typer command
    monkeypatch.setenv("TASK_ID", "t-3")
    assert server_env(console(capfd, *words)) == "t-3"  # $TASK_ID, as directly
    monkeypatch.delenv("TASK_ID")
    assert server_env(console(capfd, *words)).startswith("gateway-")
    direct = console(capfd, *words[:-2], "--task-id", "t-1", "--config", processes["config"])
    assert server_env(direct) == "t-1"


@pytest.mark.process
def test_a_task_id_in_a_v1_call_reaches_the_server_and_a_bad_one_is_refused(processes):
    body = {"server": "alpha", "tool": "env", "arguments": {"name": "TASK_ID"}, "task_id": "api-7"}
    status, _, data = request(processes["url"], "POST", "/v1/call", json.dumps(body))
    assert status == 200 and json.loads(data)["result"] == "api-7"
    status, _, data = request(processes["url"], "POST", "/v1/call", json.dumps({**body, "task_id": 7}))
    assert status == 400 and "task_id must be a string" in json.loads(data)["error"]
