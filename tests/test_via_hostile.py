"""The warm client against endpoints that are not well-behaved gateways: a bounded wait (exit 4) and a one-line
reason (exit 3), never a hang or a traceback."""

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from miroctl.launch import entry as warm
from tests.conftest import refused_port


@contextmanager
def silent_gateway() -> Iterator[str]:
    """Accepts connections, reads the request, and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in held:
            connection.close()


@contextmanager
def answering(body: bytes, content_type: str = "application/json") -> Iterator[str]:
    """Answers every POST with 200 and `body`."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for serve_forever to look at its flag, which it does every poll_interval (0.5 s by default)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = warm.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_gateway_that_accepts_and_never_answers_costs_the_timeout_plus_the_margin_and_exits_4(capsys, monkeypatch):
    monkeypatch.setenv("MIROCTL_VIA_MARGIN", "0.5")
    with silent_gateway() as url:
        started = time.monotonic()
        code, out, err = run(capsys, "call", "alpha", "echo", "text=x", "--timeout", "0.5", "--via", url)
        elapsed = time.monotonic() - started
    assert code == 4
    assert err.splitlines() == [
        f"miroctl: timeout: the gateway at {url} did not answer within 1s (a timeout of 0.5s and 0.5s for the trip)",
        "  hint: is it stuck? `miroctl check --via` or its /healthz shows its servers' states",
    ]
    assert out == ""
    assert elapsed > 0.9  # it waited the timeout and the margin (a loaded machine only waits longer)


def test_a_silent_gateway_is_awaited_the_timeout_plus_a_small_margin_which_the_message_names(capsys, monkeypatch):
    monkeypatch.delenv("MIROCTL_VIA_MARGIN", raising=False)
    with silent_gateway() as url:
        code, out, err = run(capsys, "call", "alpha", "echo", "text=x", "--timeout", "0.5", "--via", url)
    assert code == 4
    assert err.splitlines()[0] == (
        f"miroctl: timeout: the gateway at {url} did not answer within 2s (a timeout of 0.5s and 1.5s for the trip)"
    )
    assert out == ""


def test_nothing_listening_is_unavailable_at_once(capsys):
    code, _, err = run(capsys, "list", "--via", f"http://127.0.0.1:{refused_port()}")
    assert code == 3
    assert err.startswith("miroctl: unavailable: cannot reach the gateway at")


DEEP = b'{"servers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
BAD_ANSWERS = {
    "html": (b"<html><body>Welcome to nginx!</body></html>", "did not answer as a miroctl gateway does"),
    "empty": (b"", "did not answer as a miroctl gateway does: 'an empty body'"),
    "a list": (b"[1, 2]", "did not answer as a miroctl gateway does"),
    "deep": (DEEP, "did not answer as a miroctl gateway does"),
}


@pytest.mark.parametrize("body", [v[0] for v in BAD_ANSWERS.values()], ids=list(BAD_ANSWERS))
@pytest.mark.parametrize("command", [["call", "alpha", "echo"], ["list"]], ids=["call", "list"])
def test_an_answer_that_is_not_a_gateway_document_exits_3_in_one_line(capsys, body, command):
    expected = next(reason for answer, reason in BAD_ANSWERS.values() if answer == body)
    with answering(body, "text/html") as url:
        code, out, err = run(capsys, *command, "--via", url)
    assert code == 3
    assert out == ""
    assert expected in err.splitlines()[0]
    assert "Traceback" not in err and "internal" not in err


WRONG_SHAPES = {
    "call": [
        ({"error": "x", "error_kind": "exploded"}, "error_kind 'exploded' is not an error kind"),
        ({"result": "x", "content": "not a list"}, "content is not a list of objects"),
        ({"result": ["x"]}, "result is list, not text"),
        ({"error": "x", "error_kind": "failed", "failure": [1]}, "failure is list, not an object"),
        ({"result": "x", "duration_ms": "soon"}, "duration_ms is str, not a number"),
        ({"result": "x", "notes": [1]}, "notes is not a list of str"),
    ],
    "list": [
        ({"servers": {"a": 1}}, "servers is not a list of objects"),
        ({"servers": [{"tools": []}]}, "a server without a name"),
        ({"servers": [{"name": "a", "tools": [{"name": 5}]}]}, "name is int, not text"),
        ({"servers": [{"name": "a", "failure": "down"}]}, "failure is str, not an object"),
    ],
}


@pytest.mark.parametrize(
    ("command", "document", "reason"),
    [(command, document, reason) for command, cases in WRONG_SHAPES.items() for document, reason in cases],
)
def test_a_document_of_the_wrong_shape_exits_3_naming_what_is_wrong(capsys, command, document, reason):
    argv = ["call", "alpha", "echo"] if command == "call" else ["list"]
    with answering(json.dumps(document).encode()) as url:
        code, out, err = run(capsys, *argv, "--via", url)
    assert (code, out) == (3, ""), err
    assert err.splitlines()[0] == f"miroctl: unavailable: {url} answered with a document miroctl cannot read: {reason}"


def test_check_via_with_a_document_of_the_wrong_shape_exits_3(capsys):
    from typer.testing import CliRunner

    from miroctl.cli.app import app

    with answering(json.dumps({"servers": [{"phases": {}}]}).encode()) as url:
        result = CliRunner().invoke(app, ["check", "--via", url])
    assert result.exit_code == 3, result.stderr
    assert "answered with a document miroctl cannot read: KeyError: 'name'" in result.stderr
