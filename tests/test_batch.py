"""`call --batch`: JSON lines in, one envelope per line out, in input order; failures stay on their line."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from typer.testing import CliRunner

from miroctl.base.models import CallOutcome, CallRequest
from miroctl.cli.app import app
from miroctl.core import batch
from tests.gateway_support import http_gateway_here, pool_files, write_pool


def lines_of(*documents: Any) -> str:
    return "\n".join(d if isinstance(d, str) else json.dumps(d) for d in documents) + "\n"


def parse_lines(text: str) -> list[batch.Line]:
    """A batch's lines as `call --batch` reads them (batch.read_lines), from text held whole."""

    async def main() -> list[batch.Line]:
        return [line async for line in batch.read_lines(_chunks(text.encode()))]

    return anyio.run(main)


def test_run_emits_in_input_order_when_later_calls_finish_first():
    delays = {"slow": 0.2, "medium": 0.1, "fast": 0.0}
    emitted: list[str] = []

    async def call(request: CallRequest) -> CallOutcome:
        await anyio.sleep(delays[request.tool])
        return CallOutcome("s", request.tool, result=request.tool)

    lines = parse_lines(lines_of(*({"server": "s", "tool": t} for t in delays)))
    anyio.run(batch.run, lines, call, lambda outcome: emitted.append(outcome.tool_name), 3)
    assert emitted == ["slow", "medium", "fast"]


def test_run_keeps_at_most_jobs_calls_in_flight():
    in_flight, peak = 0, 0

    async def call(request: CallRequest) -> CallOutcome:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.01)
        in_flight -= 1
        return CallOutcome("s", request.tool, result="")

    lines = parse_lines(lines_of(*({"tool": f"t{i}"} for i in range(12))))
    failed = anyio.run(batch.run, lines, call, lambda _: None, 3)
    assert failed == []
    assert peak == 3


def test_run_reads_a_line_only_while_the_lines_before_it_wait_in_a_bounded_window():
    pulled = emitted = ahead = 0
    parsed = parse_lines(lines_of(*({"tool": f"t{i}"} for i in range(500))))

    def lines() -> Iterator[batch.Line]:
        nonlocal pulled
        for line in parsed:
            pulled += 1
            yield line

    async def call(request: CallRequest) -> CallOutcome:
        await anyio.sleep(0)
        return CallOutcome("s", request.tool, result="")

    def emit(outcome: CallOutcome) -> None:
        nonlocal emitted, ahead
        emitted += 1
        ahead = max(ahead, pulled - emitted)  # lines taken in and not yet answered: what the batch holds

    failed = anyio.run(batch.run, lines(), call, emit, 2)
    assert ahead <= 2 * batch.WINDOW + 2
    assert emitted == 500 and failed == []


def test_run_returns_only_the_outcomes_that_failed_so_exit_code_sees_them():
    async def call(request: CallRequest) -> CallOutcome:
        if request.tool == "bad":
            return CallOutcome("s", "bad", error="it broke", error_kind="tool")
        return CallOutcome("s", request.tool, result="")

    lines = parse_lines(lines_of({"tool": "a"}, {"tool": "bad"}, {"tool": "c"}))
    failed = anyio.run(batch.run, lines, call, lambda _: None, 2)
    assert [outcome.tool_name for outcome in failed] == ["bad"]
    assert batch.exit_code(failed) == 1


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{not json", "line 1: not JSON"),
        ("[1, 2]", "line 1: a line must be a JSON object"),
        ('{"server": "a"}', "line 1: a line needs a tool"),
        ('{"tool": "t", "arguments": [1]}', "line 1: arguments must be a JSON object"),
        ('{"tool": "t", "args": {}}', "line 1: unknown keys in a line: args"),
        ('{"tool": "t", "timeout": -1}', "line 1: timeout must be a positive number"),
    ],
)
def test_a_line_that_cannot_be_read_becomes_a_usage_envelope_with_exit_2(raw, reason):
    (line,) = parse_lines(raw)
    assert line.request is None
    assert line.problem.error.startswith(reason)
    assert line.problem.to_dict()["exit_code"] == 2


def test_blank_lines_are_skipped_and_numbers_follow_the_file():
    lines = parse_lines('\n{"tool": "a"}\n\n{"tool": 1}\n')
    assert [line.number for line in lines] == [2, 4]
    assert lines[1].problem.error.startswith("line 4:")


@pytest.fixture
def config(tmp_path, leak_tag):
    return str(write_pool(tmp_path, pool_files(leak_tag)))


def test_batch_keeps_input_order_and_one_failure_never_stops_the_rest(config, tmp_path):
    source = tmp_path / "calls.jsonl"
    source.write_text(
        lines_of(
            {"server": "alpha", "tool": "sleep", "arguments": {"seconds": 0.5}},
            {"server": "alpha", "tool": "add", "arguments": {"a": 1, "b": 1}},
            "{oops",
            {"server": "alpha", "tool": "fail", "arguments": {"message": "no"}},
            {"server": "beta", "tool": "nope"},
            {"server": "alpha", "tool": "sleep", "arguments": {"seconds": 30}, "timeout": 0.3},
            {"server": "beta", "tool": "echo", "arguments": {"text": "last"}},
        )
    )
    result = CliRunner().invoke(app, ["call", "--batch", str(source), "--config", config])
    assert result.exit_code == 1
    envelopes = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["exit_code"] for e in envelopes] == [0, 0, 2, 1, 6, 4, 0]
    assert [e.get("result") for e in envelopes] == ["awake", "2", None, None, None, None, "last"]


def test_batch_from_stdin_with_every_call_succeeding_exits_0(config):
    text = lines_of(*({"server": "beta", "tool": "add", "arguments": {"a": i, "b": i}} for i in range(20)))
    result = CliRunner().invoke(app, ["call", "--batch", "-", "--config", config, "--jobs", "4"], input=text)
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["result"] for line in result.stdout.splitlines()] == [str(2 * i) for i in range(20)]


@pytest.mark.process
def test_batch_survives_an_upstream_crash_and_later_lines_reconnect(config):
    text = lines_of(
        {"server": "alpha", "tool": "crash"}, {"server": "alpha", "tool": "echo", "arguments": {"text": "up"}}
    )
    result = CliRunner().invoke(app, ["call", "--batch", "-", "--config", config, "--jobs", "1"], input=text)
    envelopes = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1
    assert (envelopes[0]["error_kind"], envelopes[0]["exit_code"]) == ("unavailable", 3)
    assert envelopes[1]["result"] == "up"


def test_batch_applies_timeout_and_no_autocorrect_to_every_line(config):
    text = lines_of(
        {"server": "alpha", "tool": "sleep", "arguments": {"seconds": 30}},
        {"server": "beta", "tool": "progress", "arguments": {"steps": 1}},
    )
    result = CliRunner().invoke(
        app, ["call", "--batch", "-", "--config", config, "--timeout", "0.3", "--no-autocorrect"], input=text
    )
    assert [json.loads(line)["exit_code"] for line in result.stdout.splitlines()] == [4, 6]


def test_unreadable_batch_file_exits_2_and_starts_nothing(tmp_path):
    result = CliRunner().invoke(app, ["call", "--batch", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2
    assert "cannot read the batch file" in result.stderr
    assert result.stdout == ""


def test_batch_with_a_target_is_a_usage_error_exit_2():
    result = CliRunner().invoke(app, ["call", "alpha", "echo", "--batch", "-"], input="")
    assert result.exit_code == 2
    assert "--batch reads every call from its lines" in result.stderr


def test_batch_lines_with_numeric_strings_are_sent_as_integers_and_a_fraction_is_refused(config):
    text = lines_of(
        {"server": "beta", "tool": "add", "arguments": {"a": "2", "b": "40"}},
        {"server": "beta", "tool": "add", "arguments": {"a": "2.5"}},
    )
    result = CliRunner().invoke(app, ["call", "--batch", "-", "--config", config], input=text)
    assert result.exit_code == 1, result.stderr  # a batch with a failed line exits 1
    read, refused = [json.loads(line) for line in result.stdout.splitlines()]
    assert (read["exit_code"], read["result"]) == (0, "42")
    assert read["notes"] == [
        'argument a: "2" sent as 2, as the server would read it',
        'argument b: "40" sent as 40, as the server would read it',
    ]
    assert (refused["exit_code"], refused["error"]) == (2, "add: a: \"2.5\" is not of type 'integer'")


async def _chunks(*pieces: bytes, gate: anyio.Event | None = None, taken: list[bytes] | None = None):
    """A batch's bytes in `pieces`; with `gate`, everything after the first piece waits for it to be set."""
    for index, piece in enumerate(pieces):
        if index == 1 and gate is not None:
            await gate.wait()
        if taken is not None:
            taken.append(piece)
        yield piece


def test_read_lines_numbers_lines_split_across_pieces_and_skips_blank_ones():
    async def main() -> list[batch.Line]:
        pieces = (b'{"tool": "a"}\n\n{"to', b'ol": "b"}\n', b"  \n", b'{"tool": 7}')
        return [line async for line in batch.read_lines(_chunks(*pieces), 5.0, False)]

    lines = anyio.run(main)
    assert [line.number for line in lines] == [1, 3, 5]
    assert [line.request.tool for line in lines[:2] if line.request] == ["a", "b"]
    assert all(line.request.timeout == 5.0 and not line.request.autocorrect for line in lines[:2] if line.request)
    assert lines[2].problem is not None and lines[2].problem.error.startswith("line 5:")


def test_a_line_that_is_not_utf8_becomes_its_own_usage_envelope_and_the_others_go_on():
    async def main() -> list[batch.Line]:
        pieces = (b'{"tool": "a"}\n{"tool": "\xff\xfe"}\n{"tool": "c"}\n',)
        return [line async for line in batch.read_lines(_chunks(*pieces))]

    first, bad, last = anyio.run(main)
    assert bad.problem is not None
    assert (bad.problem.error, bad.problem.exit_code) == ("line 2: not UTF-8 (byte 11)", 2)
    assert first.request is not None and last.request is not None and last.request.tool == "c"


def test_run_emits_the_first_envelope_before_the_next_line_has_arrived():
    """A batch is read as its calls go: the first envelope comes out while the rest of the input is still
    to come (a producer that waits for it would otherwise hang, and the guard fails the test)."""
    first_out = anyio.Event()
    emitted: list[str] = []

    async def call(request: CallRequest) -> CallOutcome:
        return CallOutcome(None, request.tool, result=request.tool)

    def emit(outcome: CallOutcome) -> None:
        emitted.append(outcome.tool_name)
        first_out.set()

    async def main() -> None:
        pieces = (b'{"tool": "first"}\n', b'{"tool": "second"}\n')
        with anyio.fail_after(30):
            await batch.run(batch.read_lines(_chunks(*pieces, gate=first_out)), call, emit, 2)

    anyio.run(main)
    assert emitted == ["first", "second"]


def test_run_takes_the_input_a_window_at_a_time_not_whole():
    """While the first call waits, only the lines of one window are read, however long the batch."""
    taken: list[bytes] = []
    seen_while_waiting: list[int] = []

    async def call(request: CallRequest) -> CallOutcome:
        if request.tool == "t0":
            await anyio.wait_all_tasks_blocked()  # the reader has gone as far as the window lets it
            seen_while_waiting.append(len(taken))
        return CallOutcome(None, request.tool, result="ok")

    async def main() -> None:
        pieces = [json.dumps({"tool": f"t{i}"}).encode() + b"\n" for i in range(1000)]
        with anyio.fail_after(60):
            await batch.run(batch.read_lines(_chunks(*pieces, taken=taken)), call, lambda _: None, 2)

    anyio.run(main)
    assert seen_while_waiting and seen_while_waiting[0] <= 2 * batch.WINDOW + 3, seen_while_waiting
    assert len(taken) == 1000


def test_a_batch_from_a_pipe_is_taken_a_line_at_a_time_while_the_pipe_is_still_open():
    """What `call --batch -` reads, directly or to send through a gateway: the first line as soon as it is
    written, not once 64 KB have arrived or the writer has closed the pipe."""
    read_end, write_end = os.pipe()
    with open(read_end, "rb") as handle:
        pieces = batch.pieces_of(handle)
        os.write(write_end, b'{"tool": "first"}\n')
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(next(pieces)), daemon=True)
        reader.start()
        reader.join(timeout=30)  # a hang guard only: a read that waits for more blocks until the pipe closes
        before_the_close = list(got)
        os.close(write_end)
        reader.join()
    assert before_the_close == [b'{"tool": "first"}\n']


def test_batch_via_a_gateway_streams_the_file_and_gives_the_direct_envelopes(config, tmp_path):
    """The file goes to the gateway in pieces (chunked) and the envelopes come back one line each, among
    them a line that is not UTF-8, which fails alone."""
    source = tmp_path / "calls.jsonl"
    calls = [{"server": "beta", "tool": "add", "arguments": {"a": i, "b": 1}} for i in range(300)]
    source.write_bytes(lines_of(*calls).encode() + b'{"server": "beta", "tool": "\xff"}\n')

    async def through_a_gateway() -> Any:
        async with http_gateway_here(config) as url:
            return await anyio.to_thread.run_sync(
                lambda: CliRunner().invoke(app, ["call", "--batch", str(source), "--via", url, "-j", "3"])
            )

    via = anyio.run(through_a_gateway)
    direct = CliRunner().invoke(app, ["call", "--batch", str(source), "--config", config, "-j", "3"])
    assert (via.exit_code, direct.exit_code) == (1, 1), via.stderr + direct.stderr
    through = [json.loads(line) for line in via.stdout.splitlines()]
    here = [json.loads(line) for line in direct.stdout.splitlines()]
    assert [e["result"] for e in through[:300]] == [str(i + 1) for i in range(300)]
    assert [(e["exit_code"], e.get("error")) for e in through] == [(e["exit_code"], e.get("error")) for e in here]
    assert through[300]["error"] == "line 301: not UTF-8 (byte 29)"


def test_a_gateway_sends_each_envelope_as_soon_as_it_and_the_ones_before_it_are_done(config):
    """The first envelope reaches the client while the second call is still running (it sleeps for ten
    minutes: a gateway that answered at the end would trip the guard)."""
    body = lines_of(
        {"server": "beta", "tool": "echo", "arguments": {"text": "early"}},
        {"server": "alpha", "tool": "sleep", "arguments": {"seconds": 600}},
    ).encode()

    def first_line(url: str) -> tuple[int, str, bytes]:
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        try:
            connection.request("POST", "/v1/batch?jobs=2", body=body, headers={"Content-Type": "application/jsonl"})
            response = connection.getresponse()
            return response.status, response.getheader("content-type", ""), response.readline()
        finally:
            connection.close()

    async def main() -> tuple[int, str, bytes]:
        async with http_gateway_here(config) as url:
            with anyio.fail_after(120):
                return await anyio.to_thread.run_sync(first_line, url)

    status, content_type, line = anyio.run(main)
    assert (status, content_type) == (200, "application/jsonl")
    assert (json.loads(line)["result"], json.loads(line)["exit_code"]) == ("early", 0)
