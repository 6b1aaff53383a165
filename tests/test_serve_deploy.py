"""The HTTP gateway beyond one machine: metrics, liveness and readiness; and, as a real `miroctl serve` process,
a graceful drain on SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from miroctl.gateway.http import FLUSH
from tests.conftest import fixture_yaml
from tests.gateway_support import (
    http_gateway_thread,
    pool_files,
    post_json,
    request,
    start_http_gateway,
    wait_until,
    write_pool,
)

TOKEN = "deploy-test-token-8c4e1b2a7d90"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """alpha and beta behind a token."""
    config = write_pool(tmp_path_factory.mktemp("deploy"), pool_files())
    with http_gateway_thread(config, token=TOKEN) as url:
        yield {"url": url}


def metrics(url: str) -> str:
    status, headers, body = request(url, "GET", "/metrics", headers=AUTH)
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain")
    return body.decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of the exposition text, or None when it is absent."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.M)
    return float(found.group(1)) if found else None


def test_metrics_count_calls_by_server_tool_and_outcome_with_latency(gateway):
    url = gateway["url"]
    assert post_json(url, "/v1/call", {"server": "alpha", "tool": "add", "arguments": {"a": 1}}, AUTH)[0] == 200
    post_json(url, "/v1/call", {"server": "alpha", "tool": "fail"}, AUTH)
    text = metrics(url)
    assert sample(text, "miroctl_calls_total", server="alpha", tool="add", outcome="ok") >= 1
    assert sample(text, "miroctl_calls_total", server="alpha", tool="fail", outcome="tool_error") >= 1
    assert sample(text, "miroctl_call_duration_seconds_count", server="alpha", tool="add") >= 1
    assert sample(text, "miroctl_upstream_up", server="alpha") == 1
    assert sample(text, "miroctl_upstream_state", server="beta", state="connected") == 1
    assert (
        sample(
            text,
            "miroctl_ready",
        )
        is None
    )  # an unlabelled gauge has no braces
    assert re.search(r"^miroctl_ready 1\.0$", text, re.M)
    assert re.search(r"^miroctl_sessions \d", text, re.M)


def test_metrics_label_unknown_tools_and_servers_as_other_and_never_show_secrets(gateway):
    url = gateway["url"]
    post_json(url, "/v1/call", {"server": "alpha", "tool": f"made-up-{uuid.uuid4().hex}"}, AUTH)
    post_json(url, "/v1/call", {"server": f"nobody-{uuid.uuid4().hex}", "tool": "x"}, AUTH)
    text = metrics(url)
    assert sample(text, "miroctl_calls_total", server="alpha", tool="other", outcome="not_found") >= 1
    assert sample(text, "miroctl_calls_total", server="other", tool="other", outcome="not_found") >= 1
    assert "made-up-" not in text and "nobody-" not in text
    assert TOKEN not in text


def test_metrics_need_the_token_but_liveness_and_readiness_do_not(gateway):
    url = gateway["url"]
    assert request(url, "GET", "/metrics")[0] == 401
    assert request(url, "GET", "/healthz")[0] == 401
    status, _, body = request(url, "GET", "/livez", headers={"Host": "pod.internal:8765"})
    assert (status, json.loads(body)) == (200, {"status": "alive"})
    status, _, body = request(url, "GET", "/readyz")
    assert (status, json.loads(body)) == (200, {"status": "ready"})


def test_readiness_is_503_while_a_server_has_not_started_and_listed(tmp_path, leak_tag):
    files = {
        "alpha": fixture_yaml("alpha", "--tools", "echo", env={"MIROCTL_TEST_TAG": leak_tag}),
        "broken": fixture_yaml("broken", "--mode", "exit", env={"MIROCTL_TEST_TAG": leak_tag}),
    }
    with http_gateway_thread(write_pool(tmp_path, files), retry_every=0) as url:
        status, _, body = request(url, "GET", "/readyz")
        assert status == 503
        assert json.loads(body) == {"status": "not ready", "servers": 2, "listed": 1}
        assert request(url, "GET", "/livez")[0] == 200


@pytest.mark.process
def test_sigterm_drains_a_call_in_flight_refuses_new_connections_and_exits_once_it_is_answered(tmp_path, leak_tag):
    release = tmp_path / "release"
    files = {"alpha": fixture_yaml("alpha", "--tools", "hold,echo", env={"MIROCTL_TEST_TAG": leak_tag})}
    # A grace far beyond the per-test timeout: a gateway that waited it out instead of exiting once drained
    # would fail the test.
    process, url = start_http_gateway(write_pool(tmp_path, files), "--grace", "3600")
    answers: list[tuple[int, Any]] = []
    held = threading.Thread(
        target=lambda: answers.append(
            post_json(url, "/v1/call", {"server": "alpha", "tool": "hold", "arguments": {"path": str(release)}})
        )
    )
    held.start()
    try:
        wait_until(lambda: "miroctl_inflight_requests 1.0" in metrics_open(url), message="the held call in flight")
        process.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: _refused(url), timeout=30, message="new connections refused")
        # Past the second uvicorn gets to flush (a gateway that does not drain is gone by then). Only a longer
        # wait could be given by a loaded machine, and a draining gateway waits for its call however long.
        time.sleep(FLUSH + 1)
        assert process.proc.poll() is None, "the gateway left before its call in flight was answered"
        release.touch()
        held.join(timeout=30)
        process.proc.wait(timeout=30)  # no second signal: the gateway ends by itself once drained
        code = process.stop()
    finally:  # a failed step never leaves the gateway running
        _kill(process)
    assert code == 143
    assert answers and answers[0][0] == 200
    assert answers[0][1]["result"] == "released"


@pytest.mark.process
def test_a_call_longer_than_the_grace_is_cut_when_it_ends(tmp_path, leak_tag):
    files = {"alpha": fixture_yaml("alpha", "--tools", "hold", env={"MIROCTL_TEST_TAG": leak_tag})}
    process, url = start_http_gateway(write_pool(tmp_path, files), "--grace", "1")
    never = tmp_path / "never-created"
    slow = threading.Thread(target=lambda: _try_call(url, never), daemon=True)
    slow.start()
    try:
        wait_until(lambda: "miroctl_inflight_requests 1.0" in metrics_open(url), message="the held call in flight")
        process.proc.send_signal(signal.SIGTERM)
        # The call is held until a file that nobody creates exists: only the end of the grace stops the gateway.
        assert process.stop(timeout=30) == 143
    finally:
        _kill(process)


def _kill(process: Any) -> None:
    if process.proc.poll() is None:
        process.stop(signal.SIGKILL)


def metrics_open(url: str) -> str:
    """/metrics of a gateway without a token."""
    try:
        return request(url, "GET", "/metrics")[2].decode()
    except OSError:
        return ""


def _refused(url: str) -> bool:
    import socket

    parts = urlsplit(url)
    with socket.socket() as sock:
        return sock.connect_ex((parts.hostname, parts.port)) != 0


def _try_call(url: str, never: Path) -> None:
    try:
        post_json(url, "/v1/call", {"server": "alpha", "tool": "hold", "arguments": {"path": str(never)}})
    except (OSError, ValueError):
        pass  # cut at the end of the grace: the connection closes without an answer
