"""`miroctl bench`: exact request counts, honoured concurrency, errors by kind, the error-rate exit code."""

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from typer.testing import CliRunner

from miroctl.base.models import CallOutcome, ServerSpec
from miroctl.cli.app import app
from miroctl.config import loader, resolve
from miroctl.core import bench
from miroctl.remote import GatewayClient, outcome_from_dict
from tests.conftest import HEALTHY_STARTUP, ROOT, parse_json
from tests.gateway_support import CountingRelay, http_gateway_here, wait_until
from tests.json_contract import validate
from tests.servers import loadtest

LOADTEST = str(ROOT / "tests" / "servers" / "loadtest.py")
SUMMARY_KEYS = {
    "schema",
    "server",
    "tool",
    "via",
    "plan",
    "completed",
    "succeeded",
    "failed",
    "could_not_keep_up",
    "error_rate",
    "errors_by_kind",
    "error_samples",
    "latency_ms",
    "throughput_rps",
    "elapsed_s",
    "max_in_flight",
    "interrupted",
    "passed",
    "exit_code",
}


def load_yaml(stats, tag):
    env = {"LOADTEST_STATS": str(stats), "MIROCTL_TEST_TAG": tag}
    return {"name": "load", "tool_command": "python", "args": [LOADTEST, "--name", "load"], "env": env}


@pytest.fixture(autouse=True)
def loadtest_in_memory(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """The load-test server of the configs a test loads runs in this process (the memory transport), with a
    count of its own, as conftest does for the fixture servers: what these tests check is the bench's counting
    and pacing, not the server's process. A `miroctl` run as a process, and the tests marked `process`, keep
    real ones."""
    if request.node.get_closest_marker("process"):
        return
    monkeypatch.setattr(loadtest, "STATE", {"calls": 0, "in_flight": 0, "max_in_flight": 0, "flaky": 0, "by_tool": {}})
    for module in (loader, resolve):
        original = module.server_from_mapping

        def converted(*args: Any, _original: Callable[..., ServerSpec] = original, **kwargs: Any) -> ServerSpec:
            spec = _original(*args, **kwargs)
            if spec.error or spec.command != sys.executable or spec.args[:1] != (LOADTEST,):
                return spec
            monkeypatch.setenv("LOADTEST_STATS", spec.env["LOADTEST_STATS"])  # where its tools write their counts
            target = loadtest.build(spec.args[spec.args.index("--name") + 1])
            return replace(spec, transport="memory", target=target, command=None, args=())

        monkeypatch.setattr(module, "server_from_mapping", converted)


@contextmanager
def gateway_here(config: Path) -> Iterator[str]:
    """What `miroctl serve --config CONFIG --transport http --port 0` serves, in this process (its own event
    loop in a thread, beside the command under test): its base URL."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(http_gateway_here(config)) as url,
    ):
        yield url


@pytest.fixture
def load(write_config, tmp_path, leak_tag):
    """A profile with the load-test server; returns the profile and the server's stats file."""
    stats = tmp_path / "stats.json"
    return write_config({"load": load_yaml(stats, leak_tag)}, tool_blacklist=[["load", "slow"]]), stats


def bench_json(config, *args):
    result = CliRunner().invoke(app, ["bench", "--config", str(config), "--json", *args])
    return result, (parse_json(result.stdout) if result.stdout.strip() else None)


def stats_of(path):
    return json.loads(path.read_text())


def test_bench_makes_exactly_the_requested_number_of_calls(load):
    config, stats = load
    result, document = bench_json(config, "load", "work", "ms=5", "--requests", "25", "--concurrency", "3")
    assert result.exit_code == 0, result.stderr
    assert document["completed"] == 25 and document["succeeded"] == 25 and document["failed"] == 0
    assert stats_of(stats)["by_tool"] == {"work": 25}
    assert result.stderr == ""  # no live progress when stderr is not a terminal


def test_bench_never_has_more_calls_in_flight_than_its_concurrency_and_reaches_it(load):
    config, stats = load
    result, document = bench_json(config, "load", "work", "ms=150", "-n", "24", "-j", "4")
    assert result.exit_code == 0, result.stderr
    assert stats_of(stats)["max_in_flight"] == 4
    assert document["max_in_flight"] == 4


def test_bench_counts_failures_by_kind_and_exits_1_over_the_max_error_rate(load):
    config, _ = load
    result, document = bench_json(config, "load", "flaky", "-n", "10")
    assert result.exit_code == 1
    assert document["errors_by_kind"] == {"tool_error": 5}
    assert document["error_rate"] == 0.5 and document["passed"] is False
    assert "fails on purpose" in document["error_samples"]["tool_error"]


def test_bench_passes_when_the_error_rate_is_within_the_maximum(load):
    config, _ = load
    result, document = bench_json(config, "load", "flaky", "-n", "10", "--max-error-rate", "0.5")
    assert result.exit_code == 0
    assert document["failed"] == 5 and document["passed"] is True


def test_bench_duration_bounds_the_run_and_every_answered_call_is_counted(load):
    config, stats = load
    result, document = bench_json(config, "load", "work", "ms=20", "--duration", "0.5", "-j", "2")
    assert result.exit_code == 0, result.stderr
    assert document["elapsed_s"] >= 0.5  # no -n: without the deadline it would run until the per-test timeout
    assert document["completed"] > 0
    assert stats_of(stats)["calls"] == document["completed"]


def test_bench_json_is_one_document_with_the_bench_schema(load):
    config, _ = load
    result, document = bench_json(config, "load.work", "--requests", "3", "--warmup", "2")
    assert result.exit_code == 0, result.stderr
    assert set(document) == SUMMARY_KEYS
    assert validate(document)["schema"] == "miroctl.bench/1"
    assert (document["server"], document["tool"], document["via"]) == ("load", "work", None)
    assert set(document["latency_ms"]) == {"min", "mean", "p50", "p90", "p99", "max"}
    assert document["plan"]["warmup"] == 2 and document["completed"] == 3


def test_bench_refuses_a_blacklisted_tool_before_any_call(load):
    config, stats = load
    result, document = bench_json(config, "load", "slow", "seconds=0", "-n", "5")
    assert result.exit_code == 5
    assert "denied" in result.stderr
    assert (validate(document)["schema"], document["error_kind"]) == ("miroctl.error/1", "denied")
    assert not stats.exists()


def test_bench_rejects_bad_arguments_before_any_call(load):
    config, stats = load
    result, _ = bench_json(config, "load", "work", "ms=fast", "-n", "5")
    assert result.exit_code == 2
    assert not stats.exists()


@pytest.mark.parametrize("args", [[], ["--requests", "3", "--duration", "1"]])
def test_bench_needs_exactly_one_of_duration_and_requests(load, args):
    config, _ = load
    result, _ = bench_json(config, "load", "work", *args)
    assert result.exit_code == 2
    assert "exactly one of --duration" in result.stderr


def test_bench_through_a_serve_gateway_counts_every_call(load):
    config, stats = load
    with gateway_here(config) as url:
        result = CliRunner().invoke(
            app, ["bench", "load", "work", "ms=5", "-n", "12", "-j", "3", "--via", url, "--json"]
        )
        assert result.exit_code == 0, result.stderr
        document = parse_json(result.stdout)
        assert document["via"] == url and document["completed"] == 12 and document["failed"] == 0
        assert stats_of(stats)["by_tool"] == {"work": 12}


def test_bench_through_a_gateway_opens_a_connection_per_call_in_flight_not_one_per_call(load):
    config, stats = load
    with gateway_here(config) as url:
        relay = CountingRelay(url)
        try:
            result = CliRunner().invoke(
                app, ["bench", "load", "work", "ms=1", "-n", "30", "-j", "3", "--via", relay.url, "--json"]
            )
        finally:
            relay.close()
    assert result.exit_code == 0, result.stderr
    document = parse_json(result.stdout)
    assert document["completed"] == 30 and document["failed"] == 0
    assert stats_of(stats)["by_tool"] == {"work": 30}
    assert relay.accepted <= 3 + 1  # one kept by each of the 3 threads, and the check before the run


def test_a_kept_gateway_connection_the_gateway_has_closed_is_replaced_and_the_call_made(load):
    config, stats = load
    body = {"target": ["load", "work", "ms=1"]}
    with gateway_here(config) as url:
        relay = CountingRelay(url)
        client = GatewayClient(relay.url, timeout=30, keep_alive=True)
        try:
            answers = [client.call(body), client.call(body)]
            kept = relay.accepted
            relay.drop()
            answers.append(client.call(body))
        finally:
            client.close()
            relay.close()
    assert kept == 1  # the second call went over the first call's connection
    assert relay.accepted == 2
    assert [outcome_from_dict(a).error for a in answers] == [None, None, None]
    assert stats_of(stats)["by_tool"] == {"work": 3}


def test_bench_through_a_gateway_refuses_an_unknown_tool_before_any_call(load):
    config, stats = load
    with gateway_here(config) as url:
        result = CliRunner().invoke(app, ["bench", "load", "wrok", "-n", "50", "--via", url])
    assert result.exit_code == 6
    assert "load has no tool 'wrok'" in result.stderr and "work" in result.stderr
    assert not stats.exists()


def test_bench_through_a_gateway_that_is_not_there_exits_3(load):
    result = CliRunner().invoke(app, ["bench", "load", "work", "-n", "5", "--via", "http://127.0.0.1:9"])
    assert result.exit_code == 3
    assert "cannot reach the gateway" in result.stderr


def test_a_refusing_answer_stops_the_run_at_once():
    async def refused() -> CallOutcome:
        await anyio.sleep(0.01)
        return CallOutcome("s", "t", error="denied by the gateway", error_kind="denied")

    tally = bench.Tally()
    anyio.run(bench.run, bench.Plan(concurrency=2, requests=1000), refused, tally)
    assert tally.refusal is not None and tally.refusal.error_kind == "denied"
    assert tally.completed <= 2


def test_ctrl_c_prints_the_partial_summary_and_exits_130(load):
    config, stats = load
    proc = subprocess.Popen(
        [sys.executable, "-m", "miroctl", "bench", "-c", str(config), "load", "work", "ms=10", "-d", "120", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        wait_until(lambda: stats.exists() and stats_of(stats)["calls"] >= 5, timeout=HEALTHY_STARTUP * 2)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    document = parse_json(stdout)
    assert document["interrupted"] is True and document["completed"] >= 4


async def _slow_call(seconds: float) -> CallOutcome:
    await anyio.sleep(seconds)
    return CallOutcome("s", "t", result="ok")


def test_open_loop_latency_counts_from_the_scheduled_start():
    """50 calls a second on one slot that takes 0.1 s each: the queue grows, and the latencies show it."""
    plan = bench.Plan(concurrency=1, requests=10, rate=50)
    tally = bench.Tally()
    started = time.perf_counter()
    anyio.run(bench.run, plan, lambda: _slow_call(0.1), tally)
    assert tally.completed == 10
    assert time.perf_counter() - started >= 1.0  # one at a time
    assert max(tally.latencies_ms) >= 700  # the last call was scheduled at 0.18 s and answered after 1 s


def test_an_open_loop_faster_than_its_server_ends_at_its_duration_and_counts_what_could_not_start():
    """200 000 calls a second for 0.3 s on two slots of 20 ms calls: the run ends when the time is up, having
    made a few dozen calls; every other call of the schedule is counted as one that could not keep up."""
    plan = bench.Plan(concurrency=2, duration=0.3, rate=200_000)
    tally = bench.Tally()

    async def main() -> None:
        with anyio.fail_after(HEALTHY_STARTUP):  # the old schedule queued 60 000 calls: 10 minutes of work
            await bench.run(plan, lambda: _slow_call(0.02), tally)

    anyio.run(main)
    assert bench.scheduled_calls(plan) == 60_000
    assert tally.completed + tally.missed == 60_000
    assert 0 < tally.completed <= 2 * 0.3 / 0.02 + 2 * 2  # the slots' worth, and the calls in flight at the end


def test_an_open_loop_keeps_at_most_its_backlog_waiting_for_a_slot(monkeypatch):
    monkeypatch.setattr(bench, "BACKLOG", 10)
    plan = bench.Plan(concurrency=1, requests=2000, rate=1_000_000)  # the whole schedule is due within 2 ms
    tally = bench.Tally()
    anyio.run(bench.run, plan, lambda: _slow_call(0.001), tally)
    assert tally.completed + tally.missed == 2000
    assert tally.completed <= 10 + 1 + 5  # the backlog, the slot, and what the slot took while the schedule ran


def test_an_open_loop_that_keeps_up_misses_no_call():
    plan = bench.Plan(concurrency=4, requests=20, rate=200)
    tally = bench.Tally()
    anyio.run(bench.run, plan, lambda: _slow_call(0.001), tally)
    assert (tally.completed, tally.missed) == (20, 0)


@pytest.mark.process
def test_bench_at_a_rate_no_server_can_keep_up_with_ends_at_its_duration(load):
    """The command of the report: a million calls a second for 2 s. It ends (the calls in flight at the
    deadline answered), counts the calls it could not start, and fails the run for them."""
    config, stats = load
    command = [sys.executable, "-m", "miroctl", "bench", "-c", str(config), "load", "work", "ms=5"]
    proc = subprocess.Popen(
        [*command, "--rate", "1000000", "--duration", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        stdout, stderr = proc.communicate(timeout=HEALTHY_STARTUP + 20)  # start-up, 2 s, the last calls
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, stderr
    document = validate(parse_json(stdout))
    assert document["completed"] + document["could_not_keep_up"] == 2_000_000
    assert document["could_not_keep_up"] > 1_000_000 and document["completed"] > 0
    assert document["failed"] == 0 and document["error_rate"] > 0.5
    assert stats_of(stats)["calls"] == document["completed"]


def test_the_bench_table_shows_the_calls_that_could_not_keep_up(load):
    config, _ = load
    result = CliRunner().invoke(
        app, ["bench", "--config", str(config), "load", "work", "ms=5", "--rate", "100000", "-d", "0.5"]
    )
    assert result.exit_code == 1, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("│"))
    answered = int(row.strip("│").split("│")[0])
    behind = re.search(r"^  could not keep up: (\d+)  calls due that found no free slot", result.stdout, re.M)
    assert behind is not None, result.stdout
    assert answered + int(behind.group(1)) == 50_000 and answered > 0


def test_closed_loop_latency_counts_from_each_call_start():
    now = [0.0]

    async def fifty_ms_call() -> CallOutcome:  # on the run's own clock, whatever the machine's load
        now[0] += 0.05
        return CallOutcome("s", "t", result="ok")

    tally = bench.Tally(clock=lambda: now[0])
    anyio.run(bench.run, bench.Plan(concurrency=1, requests=5), fifty_ms_call, tally)
    assert tally.latencies_ms == pytest.approx([50.0] * 5)  # counted from the run's start: 50, 100, ... 250
    assert tally.elapsed() == pytest.approx(0.25)


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert [bench.percentile(values, p) for p in (50, 90, 99, 100)] == [50.0, 90.0, 99.0, 100.0]
    assert bench.percentile([], 50) is None


def test_calls_slower_than_the_timeout_are_counted_as_timeouts(write_config, tmp_path, leak_tag):
    config = write_config({"load": load_yaml(tmp_path / "stats.json", leak_tag)})
    result, document = bench_json(config, "load", "slow", "seconds=10", "-n", "2", "-j", "2", "--timeout", "0.5")
    assert result.exit_code == 1
    assert document["errors_by_kind"] == {"timeout": 2}  # cut at 0.5 s, not answered after the server's 10 s
    assert document["latency_ms"]["max"] >= 500


@pytest.mark.parametrize(
    ("jobs", "reason"), [("0", "0 is not in the range 1<=x<=10000"), ("many", "'many' is not a whole")]
)
def test_bench_with_concurrency_outside_1_to_10000_exits_2_before_starting_anything(jobs, reason):
    result = CliRunner().invoke(app, ["bench", "-c", "/nonexistent.yaml", "load", "work", "-n", "1", "-j", jobs])
    assert result.exit_code == 2
    assert reason in result.stderr
    assert "nonexistent" not in result.stderr  # refused on the command line, before the config is read
