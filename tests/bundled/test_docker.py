"""The docker server from config/tool/tool-docker.yaml against a fake Docker Engine API on tcp://127.0.0.1:
the docker SDK runs unchanged, DOCKER_HOST points at the fake."""

from __future__ import annotations

import time

import pytest

from miroctl.policy.decisions import Policy
from tests.bundled.conftest import bundled_spec, cli_call, listed_tools, memory_spec, session
from tests.conftest import refused_port
from tests.fakes.docker_api import LIST, LOGS, Container, DockerFake
from tests.fakes.scripted import Reply

NOW = time.time()
WEB = Container(
    "web",
    "4f66ad9a0b2e" + "1" * 52,
    ports=[{"IP": "0.0.0.0", "PrivatePort": 80, "PublicPort": 8080, "Type": "tcp"}],
    logs=[
        (1, NOW - 7200, "old start"),
        (1, NOW - 60, "GET / 200"),
        (2, NOW - 30, "upstream timed out"),
        (1, NOW - 5, "GET /x 404"),
    ],
    health="healthy",
)
JOB = Container(
    "nightly-job",
    "9c0ffee00000" + "2" * 52,
    image="busybox",
    state="exited",
    status="Exited (137) 1 hour ago",
    exit_code=137,
)
TTY = Container("shell", "7a7a7a7a7a7a" + "3" * 52, tty=True, logs=[(1, NOW - 1, "$ ls"), (1, NOW, "bin etc")])


@pytest.fixture
def engine(monkeypatch):
    with DockerFake(WEB, JOB, TTY).running() as fake:
        monkeypatch.setenv("DOCKER_HOST", fake.host)
        monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
        monkeypatch.delenv("DOCKER_CERT_PATH", raising=False)
        yield fake


def test_list_containers_shows_state_status_image_and_ports(engine):
    got = session(
        memory_spec("docker"),
        ("list_containers", {}),
        ("list_containers", {"all": False}),
        ("list_containers", {"name": "zzz"}),
    )
    rows = got[0].structured_content["containers"]
    assert got[0].exit_code == 0, got[0].error
    assert got[0].result.splitlines()[0] == "3 containers (2 running):"
    assert "4f66ad9a0b2e web: running (Up 2 hours), image nginx:1.27, 0.0.0.0:8080->80/tcp" in got[0].result
    assert [r["name"] for r in rows] == ["web", "nightly-job", "shell"] and rows[1]["state"] == "exited"
    assert [r["name"] for r in got[1].structured_content["containers"]] == ["web", "shell"]
    assert engine.seen(LIST)[0].query["all"] == ["1"]
    assert got[2].exit_code == 0 and got[2].result == "No containers named like 'zzz'."
    assert got[2].structured_content == {"containers": []}


def test_container_logs_honours_tail_and_since_and_reads_both_stream_framings(engine):
    got = session(
        memory_spec("docker"),
        ("container_logs", {"container": "web", "tail": 2}),
        ("container_logs", {"container": "4f66ad", "since": "10m"}),
        ("container_logs", {"container": "shell"}),
        ("container_logs", {"container": "nightly-job"}),
    )
    assert got[0].exit_code == 0, got[0].error
    assert got[0].result == "web, last 2 lines:\nupstream timed out\nGET /x 404"
    assert got[1].structured_content["logs"] == "GET / 200\nupstream timed out\nGET /x 404\n"
    since = float(engine.seen(LOGS)[1].query["since"][0])
    assert abs(since - (time.time() - 600)) < 60
    assert got[2].structured_content["logs"] == "$ ls\nbin etc\n"
    assert got[3].result == "nightly-job: no log lines (last 100 lines)."


def test_inspect_masks_secret_environment_values_and_summarises_state(engine):
    got = session(
        memory_spec("docker"),
        ("inspect_container", {"container": "web"}),
        ("inspect_container", {"container": "nightly-job"}),
    )
    data = got[0].structured_content
    assert got[0].exit_code == 0, got[0].error
    assert "DB_PASSWORD=****" in data["Config"]["Env"] and "hunter2-secret" not in got[0].result
    assert "PATH=/usr/local/sbin:/usr/bin" in data["Config"]["Env"]
    assert got[0].result.startswith("web (4f66ad9a0b2e): running, health healthy")
    assert (
        "ports 0.0.0.0:8080->80/tcp" in got[0].result
        and "restart policy unless-stopped; restarted 2 times" in got[0].result
    )
    assert "mount /srv/www -> /usr/share/nginx/html (ro)" in got[0].result
    assert "exit code 137; OOM-killed" in got[1].result


def test_container_stats_computes_cpu_and_memory_as_docker_stats_does(engine):
    got = session(
        memory_spec("docker"),
        ("container_stats", {"container": "web"}),
        ("container_stats", {"container": "nightly-job"}),
    )
    data = got[0].structured_content
    assert got[0].exit_code == 0, got[0].error
    assert data["cpu_percent"] == 50.0 and data["online_cpus"] == 2
    assert data["memory_bytes"] == 128 * 2**20 and data["memory_limit_bytes"] == 2**30
    assert "memory 128.0 MB of 1.0 GB (12.5%)" in got[0].result and "5 processes" in got[0].result
    assert "disk 4.0 MB read / 1.0 MB written" in got[0].result
    assert got[1].structured_content["running"] is False and "is not running" in got[1].result
    assert engine.seen(r"/stats")[0].query["stream"][0].lower() in ("0", "false")  # the Engine parses it as a bool


def test_unknown_containers_bad_input_and_engine_errors_are_tool_errors(engine):
    engine.queue(LIST, Reply(500, {"message": "Cannot connect to containerd: deadline exceeded"}))
    got = session(
        memory_spec("docker"),
        ("container_logs", {"container": "nope"}),
        ("inspect_container", {"container": "../etc"}),
        ("container_logs", {"container": "web", "since": "yesterday-ish"}),
        ("list_containers", {}),
        ("container_stats", {"container": "   "}),
    )
    assert [o.exit_code for o in got.outcomes] == [1, 1, 1, 1, 1]
    assert "no such container: nope (list_containers shows the names)" in got[0].error
    assert "not a container name or id" in got[1].error
    assert "since must be a duration such as 10m or 2h" in got[2].error
    assert "refused the request (HTTP 500): Cannot connect to containerd" in got[3].error
    assert "not a container name or id" in got[4].error


def test_an_engine_that_is_not_there_or_too_slow_is_a_clear_tool_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{refused_port()}")
    refused = session(memory_spec("docker"), ("list_containers", {}))
    with DockerFake(WEB).running() as slow:
        slow.queue(LIST, Reply(200, [], delay=30))
        monkeypatch.setenv("DOCKER_HOST", slow.host)
        monkeypatch.setenv("DOCKER_TIMEOUT", "1")
        timed_out = session(memory_spec("docker"), ("list_containers", {}))
    assert refused[0].exit_code == 1
    assert (
        "cannot reach the Docker Engine at tcp://127.0.0.1" in refused[0].error
        and "connection refused" in refused[0].error
    )
    assert timed_out[0].exit_code == 1 and "did not answer within the DOCKER_TIMEOUT" in timed_out[0].error


def test_every_docker_tool_is_read_only_so_read_only_mode_allows_it():
    spec = bundled_spec("docker")
    listed = listed_tools([memory_spec("docker")])[0]
    assert {t.name for t in listed.tools} == {
        "list_containers",
        "container_logs",
        "inspect_container",
        "container_stats",
    }
    for tool in listed.tools:
        decision = Policy(mode="read_only").decide(spec, tool.name, tool)
        assert decision.state == "allow", (tool.name, decision)
        assert tool.annotations["readOnlyHint"] is True and spec.tools[tool.name]["read_only"] is True


@pytest.mark.process
def test_miroctl_call_docker_over_stdio_lists_containers(engine):
    code, envelope = cli_call("docker", "list_containers", env={"DOCKER_HOST": engine.host})
    assert code == 0, envelope
    assert [c["name"] for c in envelope["structured_content"]["containers"]] == ["web", "nightly-job", "shell"]
    assert bundled_spec("docker").env["DOCKER_TIMEOUT"] == "30"
