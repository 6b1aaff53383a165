"""`miroctl check --via URL`: the gateway probes afresh and answers the document, exit code and lock of `check`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from miroctl.check.report import CheckRun
from miroctl.cli.app import app
from tests.conftest import ROOT, fixture_yaml, refused_port, tagged_processes, wait_for_no_tagged
from tests.gateway_support import http_gateway_thread, post_json, request, wait_until, write_pool

TOKEN = "check-via-test-token-3e9f1a"
AUTH = {"MIROCTL_TOKEN": TOKEN}
PAIR = ("good", "quitter")  # one healthy server, one that exits before initialize


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A gateway with a token serving good (in this process) and quitter (a process that exits before
    initialize)."""
    tag = uuid.uuid4().hex
    files = {
        "good": fixture_yaml(
            "good", "--tools", "echo,counter", smoke={"tool": "echo", "arguments": {"text": "still here"}}
        ),
        "quitter": fixture_yaml("quitter", "--mode", "exit", env={"MIROCTL_TEST_TAG": tag}),
    }
    config = write_pool(tmp_path_factory.mktemp("checkvia"), files)
    with http_gateway_thread(config, token=TOKEN, max_body=4096) as url:
        yield {"config": str(config), "url": url}
    assert not wait_for_no_tagged(tag)


@pytest.fixture
def spawning(tmp_path: Path, leak_tag: str) -> Iterator[dict[str, Any]]:
    """A gateway with a token whose servers are processes, as `miroctl serve` starts them: good, and spawner,
    whose smoke call leaves a detached child."""
    env = {"MIROCTL_TEST_TAG": leak_tag}
    files = {
        "good": fixture_yaml("good", "--tools", "echo,counter", env=env),
        "spawner": fixture_yaml(
            "spawner", "--tools", "spawn_child", env=env, smoke={"tool": "spawn_child", "arguments": {"detach": True}}
        ),
    }
    with http_gateway_thread(write_pool(tmp_path, files), token=TOKEN, memory=False) as url:
        yield {"url": url, "tag": leak_tag}


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env={**AUTH, **(env or {})})


def comparable(document: Any) -> Any:
    """A check document without what differs from one run to the next: times and process ids."""
    if isinstance(document, dict):
        return {k: comparable(v) for k, v in document.items() if k not in ("duration_ms", "ms")}
    if isinstance(document, list):
        return [comparable(v) for v in document]
    return re.sub(r"^pid \d+$", "pid N", document) if isinstance(document, str) else document


def both(pool: dict[str, Any], *args: str) -> tuple[Any, Any]:
    """The same check made directly and through the gateway."""
    return invoke("check", *args, "--config", pool["config"]), invoke("check", *args, "--via", pool["url"])


def test_check_via_gives_the_document_and_exit_code_of_the_direct_check(pool):
    direct, warm = both(pool, *PAIR, "--smoke", "--json")
    assert (warm.exit_code, direct.exit_code) == (1, 1), warm.stderr
    document = json.loads(warm.stdout)
    assert comparable(document) == comparable(json.loads(direct.stdout))
    servers = {s["name"]: s for s in document["servers"]}
    assert servers["good"]["status"] == "healthy" and servers["good"]["smoke"][0]["result"] == "still here"
    assert servers["quitter"]["failure"]["kind"] == "exited"
    assert "surface" not in document


def test_check_via_prints_the_table_of_the_direct_check(pool):
    warm = invoke("check", *PAIR, "--via", pool["url"])
    assert warm.exit_code == 1
    assert "exited: server exited with code 3" in warm.stdout
    assert "1 of 2 servers healthy" in warm.stdout


def test_the_check_document_rebuilds_into_the_same_run(pool):
    result = invoke("check", *PAIR, "--smoke", "--json", "--via", pool["url"])
    document = json.loads(result.stdout)
    assert CheckRun.from_dict(document).to_dict() == document


def test_lock_through_the_gateway_then_against_reports_drift_like_the_direct_check(pool, tmp_path):
    warm_lock, direct_lock = tmp_path / "warm.lock.json", tmp_path / "direct.lock.json"
    assert invoke("check", "good", "--lock", str(warm_lock), "--via", pool["url"]).exit_code == 0
    assert invoke("check", "good", "--lock", str(direct_lock), "--config", pool["config"]).exit_code == 0
    assert warm_lock.read_text() == direct_lock.read_text()
    lock = json.loads(warm_lock.read_text())
    assert lock["servers"]["good"]["tools"]["echo"]["input_schema"]["required"] == ["text"]
    tools = lock["servers"]["good"]["tools"]
    tools["echo"]["description"] = "An older description."
    tools["gone"] = {"description": "Removed since.", "input_schema": {"type": "object"}}
    warm_lock.write_text(json.dumps(lock))
    direct, warm = both(pool, "good", "--against", str(warm_lock), "--json")
    assert (warm.exit_code, direct.exit_code) == (1, 1), warm.stderr
    changes = json.loads(warm.stdout)["lock"]
    assert changes == json.loads(direct.stdout)["lock"]
    assert (changes["breaking"], changes["drift"]) == (1, 1)
    assert {(c["tool"], c["kind"]) for c in changes["changes"]} == {("gone", "removed"), ("echo", "changed")}


def test_allow_fail_through_the_gateway_passes_and_writes_junit_with_the_server_skipped(pool, tmp_path):
    junit = tmp_path / "check.xml"
    result = invoke("check", *PAIR, "--allow-fail", "quitter", "--junit", str(junit), "--json", "--via", pool["url"])
    assert result.exit_code == 0, result.stderr
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert servers["quitter"]["allowed_failure"] is True and servers["quitter"]["status"] == "unhealthy"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "1")


def test_allow_fail_naming_a_server_that_is_not_checked_exits_2_like_the_direct_check(pool):
    direct, warm = both(pool, "good", "--allow-fail", "quiter")
    assert (warm.exit_code, direct.exit_code) == (2, 2)
    assert warm.stderr == direct.stderr
    assert "--allow-fail quiter: no such server among those checked" in warm.stderr


def test_check_via_an_unknown_server_exits_6_like_the_direct_check(pool):
    direct, warm = both(pool, "godo")
    assert (warm.exit_code, direct.exit_code) == (6, 6)
    assert warm.stdout == ""
    assert warm.stderr == direct.stderr
    assert "no server named 'godo'" in warm.stderr


@pytest.mark.process
def test_a_check_leaves_the_gateways_serving_sessions_alone_and_its_own_servers_gone(spawning):
    def count() -> int:
        result = invoke("call", "good", "counter", "--json", "--via", spawning["url"])
        return int(json.loads(result.stdout)["result"])

    def alive() -> set[int]:  # quitter is left out: the gateway may retry it, and it exits at once
        return {pid for pid in tagged_processes(spawning["tag"]) if "quitter" not in " ".join(_cmdline(pid))}

    first = count()
    serving = alive()
    assert len(serving) == 2
    # spawner's smoke call leaves a detached grandchild outside its server's process group.
    result = invoke("check", "good", "spawner", "--smoke", "--json", "--via", spawning["url"])
    assert result.exit_code == 0, result.stderr
    assert count() == first + 1
    wait_until(lambda: alive() == serving, timeout=10, message="only the gateway's own sessions alive")
    status, _, body = request(spawning["url"], "GET", "/healthz", headers={"Authorization": f"Bearer {TOKEN}"})
    good = next(s for s in json.loads(body)["servers"] if s["name"] == "good")
    assert (status, good["state"], good["starts"]) == (200, "connected", 1)


def test_check_via_with_no_gateway_listening_exits_3_like_call_via():
    url = f"http://127.0.0.1:{refused_port()}"
    check = invoke("check", "--json", "--via", url)
    call = invoke("call", "good", "echo", "text=x", "--json", "--via", url)
    assert (check.exit_code, call.exit_code) == (3, 3)
    assert check.stdout == call.stdout  # the same miroctl.error/1 document
    assert json.loads(check.stdout)["error_kind"] == "unavailable"
    assert check.stderr == call.stderr
    assert f"cannot reach the gateway at {url}" in check.stderr


def test_check_via_without_the_token_exits_3_and_says_how_to_fix_it(pool):
    result = CliRunner().invoke(app, ["check", "good", "--via", pool["url"]], env={"MIROCTL_TOKEN": ""})
    assert result.exit_code == 3
    assert "HTTP 401" in result.stderr and "MIROCTL_TOKEN" in result.stderr


def test_miroctl_url_sends_check_through_the_gateway_unless_a_config_is_named(pool):
    warm = invoke("check", "good", "--json", env={"MIROCTL_URL": pool["url"]})
    assert warm.exit_code == 0, warm.stderr
    assert json.loads(warm.stdout)["config"] == pool["config"]
    dead = f"http://127.0.0.1:{refused_port()}"
    direct = invoke("check", "good", "--json", "--config", pool["config"], env={"MIROCTL_URL": dead})
    assert direct.exit_code == 0, direct.stderr


@pytest.mark.parametrize(
    "option", [["--mode", "read_only"], ["--task-id", "t1"], ["--log", "calls.jsonl"], ["--config", "miroctl.yaml"]]
)
def test_check_via_refuses_options_the_gateway_would_not_apply_with_exit_2(pool, option):
    result = invoke("check", "good", *option, "--via", pool["url"])
    assert result.exit_code == 2
    assert result.stdout == ""


def test_check_via_refuses_an_unreadable_against_file_before_asking_the_gateway(pool, tmp_path):
    result = invoke("check", "--against", str(tmp_path / "missing.json"), "--via", pool["url"])
    assert result.exit_code == 2
    assert "lock file not found" in result.stderr


CHECK_BODIES = {
    "unknown key": ({"servers": ["good"], "verbose": True}, "unknown keys in the check: verbose"),
    "servers not strings": ({"servers": "good"}, "servers must be a list of strings"),
    "bad timeout": ({"timeout": -1}, "timeout must be a positive number of seconds"),
    "bad concurrency": ({"concurrency": 0}, "concurrency must be a whole number of at least 1"),
    "smoke not a flag": ({"smoke": "yes"}, "smoke must be true or false"),
}


@pytest.mark.parametrize(("body", "message"), CHECK_BODIES.values(), ids=CHECK_BODIES.keys())
def test_the_check_endpoint_refuses_a_bad_request_with_exit_2(pool, body, message):
    status, document = post_json(pool["url"], "/v1/check", body, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 400
    assert (document["exit_code"], document["error"]) == (2, message)


def test_the_check_endpoint_answers_the_tool_surface_only_when_asked(pool):
    status, document = post_json(
        pool["url"], "/v1/check", {"servers": ["good"], "surface": True}, {"Authorization": f"Bearer {TOKEN}"}
    )
    assert status == 200
    assert document["schema"] == "miroctl.check/1"
    assert set(document["surface"]["good"]) == {"echo", "counter"}
    assert document["surface"]["good"]["echo"]["description"].startswith("Echo the text back.")


GUARD_CASES = {
    "no token": ({}, "{}", 401),
    "foreign origin": ({"Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"}, "{}", 403),
    "foreign host": ({"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}, "{}", 421),
    "oversize body": ({"Authorization": f"Bearer {TOKEN}"}, json.dumps({"servers": ["x" * 5000]}), 413),
}


@pytest.mark.parametrize(("headers", "body", "status"), GUARD_CASES.values(), ids=GUARD_CASES.keys())
def test_the_check_endpoint_is_guarded_like_the_others(pool, headers, body, status):
    answer, _, _ = request(pool["url"], "POST", "/v1/check", body, {"Content-Type": "application/json", **headers})
    assert answer == status


def test_check_via_imports_neither_the_sdk_nor_omegaconf_nor_markitdown(pool):
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['miroctl', 'check', 'good', '--json', '--via', sys.argv[1]]\n"
        "try:\n    runpy.run_module('miroctl', run_name='__main__')\nexcept SystemExit as exit:\n"
        "    heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'omegaconf',"
        " 'markitdown', 'httpx2'})\n"
        "    print(exit.code, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, pool["url"]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
        env={**_environ(), **AUTH},
    )
    assert done.stderr.strip() == "0 []"
    assert json.loads(done.stdout)["servers"][0]["status"] == "healthy"


def _cmdline(pid: int) -> list[str]:
    import psutil

    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_a_server_carries_its_managers_sub_run_marker_but_never_one_its_config_made_up():
    from miroctl.base.models import ServerSpec
    from miroctl.sessions.processes import RUN_ID, RUN_MARKER, child_environment, sub_run_id

    mine = sub_run_id("check")
    assert mine.startswith(f"{RUN_ID}/check-")
    assert child_environment(ServerSpec("s", command="x", env={RUN_MARKER: mine}))[RUN_MARKER] == mine
    assert child_environment(ServerSpec("s", command="x", env={RUN_MARKER: "elsewhere"}))[RUN_MARKER] == RUN_ID
