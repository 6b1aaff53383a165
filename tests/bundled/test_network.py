"""The network server from config/tool/tool-network.yaml, over stdio (and the CLI) and in-process; every target is
on 127.0.0.1 or a name that cannot resolve."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.bundled.conftest import cli_call, memory_spec, session
from tests.bundled.web import serve
from tests.conftest import refused_port

UNRESOLVABLE = "nonexistent.invalid"  # .invalid never resolves, and fails at once without a network


def test_dns_lookup_resolves_localhost_and_reports_a_name_that_does_not_resolve():
    got = session(
        memory_spec("network"),
        ("dns_lookup", {"hostname": "localhost"}),
        ("dns_lookup", {"hostname": UNRESOLVABLE}),
        ("dns_lookup", {"hostname": "bad host!"}),
        ("dns_lookup", {"hostname": "127.0.0.1"}),
    )
    assert got[0].ok and "127.0.0.1" in got[0].structured_content["ipv4"]
    assert got[1].ok and got[1].structured_content["state"] == "unresolvable"
    assert f"{UNRESOLVABLE} cannot be checked: the host name does not resolve" in got[1].result
    assert got[2].error_kind == "tool_error" and "not a host name or IP address" in got[2].error
    assert got[3].ok and got.starts == 1


def test_tcp_port_check_tells_an_open_port_from_a_closed_one_and_an_unreachable_host():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        open_port, closed_port = listener.getsockname()[1], refused_port()
        got = session(
            memory_spec("network"),
            ("tcp_port_check", {"host": "127.0.0.1", "port": open_port}),
            ("tcp_port_check", {"host": "127.0.0.1", "port": closed_port}),
            ("tcp_port_check", {"host": UNRESOLVABLE, "port": 80, "timeout_seconds": 2}),
        )
    assert got[0].structured_content["state"] == "open"
    assert f"127.0.0.1 port {open_port} is OPEN: connected in" in got[0].result
    assert got[1].structured_content["state"] == "closed"
    assert f"127.0.0.1:{closed_port} is CLOSED: the host answered but nothing listens there" in got[1].result
    assert got[2].structured_content["state"] == "unresolvable"
    assert all(o.exit_code == 0 for o in got.outcomes)


def test_http_check_reports_status_latency_redirects_and_refusals():
    closed = refused_port()
    with serve() as base:
        got = session(
            memory_spec("network"),
            ("http_check", {"url": f"{base}/"}),
            ("http_check", {"url": f"{base}/redirect", "method": "HEAD"}),
            ("http_check", {"url": f"{base}/missing"}),
            ("http_check", {"url": f"http://127.0.0.1:{closed}/"}),
            ("http_check", {"url": f"http://{UNRESOLVABLE}/"}),
            ("http_check", {"url": "ftp://127.0.0.1/file"}),
        )
    first = got[0].structured_content
    assert first["status"] == 200 and first["content_type"] == "text/html" and first["bytes"] > 50
    assert f"{base}/ answered 200 OK in" in got[0].result and "ms (headers)" in got[0].result
    assert got[1].structured_content["redirects"] == [f"{base}/redirect"]
    assert f"final URL {base}/" in got[1].result
    assert got[2].structured_content["status"] == 404 and "answered 404 Not Found" in got[2].result
    assert got[3].structured_content["state"] == "error" and "Connection refused" in got[3].result
    assert got[4].structured_content["state"] == "error"
    assert got[5].error_kind == "tool_error" and "must be an http:// or https:// URL" in got[5].error


def test_http_check_reports_the_expiry_and_trust_of_a_self_signed_certificate(tmp_path: Path):
    with serve(tmp_path, days=30) as fresh, serve(tmp_path, days=-3) as stale:
        got = session(
            memory_spec("network"),
            ("http_check", {"url": f"{fresh}/"}),
            ("http_check", {"url": f"{fresh}/", "verify_tls": False}),
            ("http_check", {"url": f"{stale}/", "verify_tls": False}),
        )
    untrusted = got[0].structured_content
    assert untrusted["state"] == "error" and "the TLS certificate is not trusted" in got[0].result
    assert untrusted["tls"]["trusted"] is False and untrusted["tls"]["problem"] == "self-signed certificate"
    assert untrusted["tls"]["days_left"] == 30 and untrusted["tls"]["expired"] is False
    assert "(in 30 days); NOT trusted: self-signed certificate" in got[0].result
    assert got[1].structured_content["status"] == 200 and "CN=miroctl-test" in got[1].result
    assert got[2].structured_content["tls"]["expired"] is True and "(EXPIRED 3 days ago)" in got[2].result


def test_ping_falls_back_to_tcp_when_the_system_ping_is_missing_and_says_so(monkeypatch):
    monkeypatch.setenv("NETWORK_PING", "/nonexistent/ping")
    spec = memory_spec("network")
    closed = refused_port()
    got = session(
        spec,
        ("ping", {"host": "127.0.0.1", "count": 2, "tcp_port": closed}),
        ("ping", {"host": "127.0.0.1", "method": "icmp"}),
        ("ping", {"host": UNRESOLVABLE}),
        ("ping", {"host": "localhost", "method": "tcp", "tcp_port": closed}),
    )
    fallback = got[0].structured_content
    assert fallback["method"] == f"TCP connect to port {closed}" and fallback["received"] == 2
    assert "the system ping (/nonexistent/ping) is not installed; timed TCP connects" in got[0].result
    assert "2 refused: nothing listens on that port, but the host answered" in got[0].result
    assert got[1].error_kind == "tool_error" and "ICMP ping is not possible here" in got[1].error
    assert got[2].structured_content["state"] == "unresolvable"
    assert "method tcp was asked for" in got[3].result and got.starts == 1


@pytest.mark.process
def test_miroctl_call_network_reports_a_closed_port_as_a_finding():
    port = refused_port()
    code, envelope = cli_call("network", "tcp_port_check", "host=127.0.0.1", f"port={port}")
    assert code == 0, envelope
    assert envelope["structured_content"]["state"] == "closed" and "is CLOSED" in envelope["result"]


def test_http_check_of_a_non_http_url_is_a_tool_error_that_exits_1():
    got = session(memory_spec("network"), ("http_check", {"url": "ftp://127.0.0.1/"}))
    assert got[0].exit_code == 1
    assert got[0].error_kind == "tool_error" and "must be an http:// or https:// URL" in got[0].error


IPUTILS_OUTPUT = """PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.040 ms
64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.051 ms

--- 127.0.0.1 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 1001ms
rtt min/avg/max/mdev = 0.040/0.045/0.051/0.004 ms
"""


def fake_ping(directory: Path, stdout: str, stderr: str = "", code: int = 0) -> Path:
    """A stand-in for the system's ping: records its arguments and prints what iputils would."""
    (directory / "out.txt").write_text(stdout)
    (directory / "err.txt").write_text(stderr)
    script = directory / "ping"
    script.write_text(
        f'#!/bin/sh\nprintf "%s " "$@" > "{directory}/args.txt"\ncat "{directory}/out.txt"\n'
        f'cat "{directory}/err.txt" >&2\nexit {code}\n'
    )
    script.chmod(0o755)
    return script


def test_ping_uses_the_system_ping_and_reads_its_summary(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("NETWORK_PING", str(fake_ping(tmp_path, IPUTILS_OUTPUT)))
    got = session(memory_spec("network"), ("ping", {"host": "localhost", "count": 2, "timeout_seconds": 3}))
    data = got[0].structured_content
    assert data["method"] == "ICMP (system ping)" and data["received"] == 2 and data["loss_percent"] == 0
    assert data["rtt_ms"] == {"min": 0.04, "avg": 0.045, "max": 0.051}
    assert (tmp_path / "args.txt").read_text().split() == ["-n", "-c", "2", "-W", "3", "127.0.0.1"]


def test_ping_falls_back_to_tcp_when_the_system_ping_is_not_permitted(tmp_path: Path, monkeypatch):
    denied = fake_ping(tmp_path, "", "ping: socket: Operation not permitted", code=2)
    monkeypatch.setenv("NETWORK_PING", str(denied))
    got = session(memory_spec("network"), ("ping", {"host": "127.0.0.1", "count": 1, "tcp_port": refused_port()}))
    assert got[0].structured_content["method"].startswith("TCP connect")
    assert "the system ping failed (ping: socket: Operation not permitted); timed TCP connects" in got[0].result
