"""network: read-only network diagnostics from this machine: DNS, TCP ports, HTTP(S) checks, ping.

Every probe runs under a timeout. A probe that gets a negative answer (a name that does not
resolve, a closed port, an HTTP 500) has still done its job: that is reported as the result, with
a `state` in the structured data; only bad input is a tool error.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from miroctl.base.version import __version__

from .helpers.common import human_bytes, result, setting
from .helpers.net_probes import (
    Deadline,
    ProbeFailed,
    certificate,
    connect,
    elapsed_ms,
    is_ip,
    resolve,
    reverse,
)

mcp = MCPServer("network", version=__version__, log_level="WARNING")

PROBE = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
Seconds = Annotated[float, Field(ge=0.1, le=60.0)]
Port = Annotated[int, Field(ge=1, le=65535)]
BODY_LIMIT = 1024 * 1024
_HOST = re.compile(r"[A-Za-z0-9._:\[\]%-]{1,253}")


@mcp.tool(annotations=PROBE)
def dns_lookup(hostname: str, timeout_seconds: Seconds = 5.0) -> CallToolResult:
    """Resolve a host name to its IP addresses with this machine's resolver (or an IP back to a name).

    Returns the IPv4 and IPv6 addresses found and how long the lookup took, or says plainly that
    the name does not resolve (state "unresolvable") or that the resolver did not answer in time.
    """
    host = _host(hostname)
    deadline = Deadline(timeout_seconds)
    started = time.monotonic()
    try:
        if is_ip(host):
            name = reverse(host, deadline)
            text = f"{host} maps back to {name}" if name else f"{host} has no reverse DNS name (PTR)"
            return result(f"{text} ({elapsed_ms(started)} ms).", {"host": host, "state": "ok", "name": name})
        found = resolve(host, deadline)
    except ProbeFailed as failed:
        return _finding(host, failed, started)
    v4 = [a for f, a in found if f == socket.AF_INET]
    v6 = [a for f, a in found if f == socket.AF_INET6]
    parts = [f"IPv4 {', '.join(v4)}" if v4 else "", f"IPv6 {', '.join(v6)}" if v6 else ""]
    text = f"{host} resolves to {len(found)} address{'es' if len(found) != 1 else ''} in {elapsed_ms(started)} ms: "
    data = {"host": host, "state": "ok", "ipv4": v4, "ipv6": v6, "ms": elapsed_ms(started)}
    return result(text + "; ".join(p for p in parts if p), data)


@mcp.tool(annotations=PROBE)
def tcp_port_check(host: str, port: Port, timeout_seconds: Seconds = 3.0) -> CallToolResult:
    """Check whether a TCP port on a host accepts connections (open, closed, or no answer).

    "closed" means the host answered but nothing listens on the port; "timeout" means no answer at
    all (a firewall dropping packets, or the host is down); "unresolvable" means the name does not
    resolve. Returns the state, the address tried and the connect time in milliseconds.
    """
    host = _host(host)
    deadline = Deadline(timeout_seconds)
    started = time.monotonic()
    try:
        family, address = resolve(host, deadline, port)[0]
        ms = connect(family, address, port, deadline)
    except ProbeFailed as failed:
        return _finding(f"{host}:{port}", failed, started, {"port": port})
    shown = address if address == host else f"{host} ({address})"
    return result(
        f"{shown} port {port} is OPEN: connected in {ms} ms.",
        {"host": host, "address": address, "port": port, "state": "open", "ms": ms},
    )


@mcp.tool(annotations=PROBE)
def http_check(
    url: str,
    method: Literal["GET", "HEAD"] = "GET",
    timeout_seconds: Seconds = 10.0,
    follow_redirects: bool = True,
    verify_tls: bool = True,
) -> CallToolResult:
    """Request an http(s) URL once and report how the server answered.

    Returns the status code and reason, the time to the response headers and in total, redirects
    followed and the final URL, content type and size (the body is read up to 1 MB). For https it
    also reports the TLS certificate: subject, issuer, expiry date with days left, and whether this
    machine trusts it (and if not, why: self-signed, expired, wrong host name). With verify_tls
    false an untrusted certificate does not stop the request. Connection failures are reported as
    findings, not errors.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"url must be an http:// or https:// URL with a host, got {url!r}")
    deadline = Deadline(timeout_seconds)
    tls = _tls_facts(parts, deadline) if parts.scheme == "https" else None
    lines, data = _request(url.strip(), method, deadline, follow_redirects, verify_tls)
    if tls is not None:
        lines.append(_tls_line(tls))
        data["tls"] = tls
    return result("\n".join(lines), data)


@mcp.tool(annotations=PROBE)
def ping(
    host: str,
    count: Annotated[int, Field(ge=1, le=20)] = 3,
    timeout_seconds: Seconds = 5.0,
    method: Literal["auto", "icmp", "tcp"] = "auto",
    tcp_port: Port = 443,
) -> CallToolResult:
    """Check whether a host answers and how fast (round-trip times and packet loss).

    "auto" uses the system's ping (ICMP) when it is installed and permitted, otherwise times TCP
    connects to `tcp_port` instead; the answer always says which method was used and why. A TCP
    "connection refused" still proves the host is up. `timeout_seconds` bounds each attempt.
    """
    host = _host(host)
    started = time.monotonic()
    try:
        family, address = resolve(host, Deadline(timeout_seconds))[0]
    except ProbeFailed as failed:
        return _finding(host, failed, started)
    command = setting("NETWORK_PING") or shutil.which("ping")
    if method in ("auto", "icmp"):
        outcome = _system_ping(command, address, count, timeout_seconds)
        if isinstance(outcome, CallToolResult):
            return outcome
        if method == "icmp":
            raise ToolError(f"ICMP ping is not possible here: {outcome}")
        return _tcp_ping(host, family, address, count, timeout_seconds, tcp_port, why=outcome)
    return _tcp_ping(host, family, address, count, timeout_seconds, tcp_port, why="method tcp was asked for")


# ---------------------------------------------------------------------------------------------- helpers


def _host(text: str) -> str:
    """A bare host name or IP from what the caller gave (a URL is reduced to its host)."""
    host = text.strip()
    if "://" in host:
        host = urlsplit(host).hostname or ""
    if not host or not _HOST.fullmatch(host):
        raise ToolError(f"not a host name or IP address: {text!r}")
    return host


def _finding(target: str, failed: ProbeFailed, started: float, extra: dict[str, Any] | None = None) -> CallToolResult:
    words = {
        "closed": "is CLOSED: the host answered but nothing listens there",
        "timeout": "did not answer: a firewall may drop the packets, or the host is down",
        "unreachable": "is UNREACHABLE from this machine (no route)",
        "unresolvable": "cannot be checked: the host name does not resolve",
    }
    head = f"{target} {words.get(failed.state, 'could not be checked')}"
    data = {
        "target": target,
        "state": failed.state,
        "reason": failed.reason,
        "ms": elapsed_ms(started),
        **(extra or {}),
    }
    return result(f"{head} ({failed.reason}).", data)


def _tls_facts(parts: Any, deadline: Deadline) -> dict[str, Any]:
    try:
        return certificate(parts.hostname, parts.port or 443, deadline)
    except ProbeFailed as failed:
        return {"state": failed.state, "problem": failed.reason}


def _tls_line(tls: dict[str, Any]) -> str:
    if "not_after" not in tls:
        return f"TLS certificate: could not be read ({tls['problem']})"
    days = tls["days_left"]
    when = f"EXPIRED {-days} day{'s' if days != -1 else ''} ago" if tls["expired"] else f"in {days} days"
    trust = "trusted by this machine" if tls["trusted"] else f"NOT trusted: {tls['problem']}"
    return (
        f"TLS certificate: {tls['subject']}, issued by {tls['issuer']}; expires {tls['not_after'][:16]} UTC "
        f"({when}); {trust}"
    )


def _request(url: str, method: str, deadline: Deadline, follow: bool, verify: bool) -> tuple[list[str], dict[str, Any]]:
    import httpx2

    started = time.monotonic()
    try:
        with (
            httpx2.Client(timeout=deadline.left(), follow_redirects=follow, verify=verify) as client,
            client.stream(method, url, headers={"User-Agent": "miroctl-network/0.2"}) as response,
        ):
            headers_ms = elapsed_ms(started)
            size = _body_size(response)
    except ProbeFailed as failed:
        return [f"{url} did not answer: {failed.reason}"], {"url": url, "state": failed.state}
    except httpx2.TimeoutException:
        return [f"{url} did not answer within {deadline.seconds:g} s"], {"url": url, "state": "timeout"}
    except httpx2.HTTPError as exc:
        reason = _http_reason(exc, verify)
        return [f"{url} could not be requested: {reason}"], {"url": url, "state": "error", "reason": reason}
    return _answer_lines(url, response, headers_ms, elapsed_ms(started), size)


def _body_size(response: Any) -> int | None:
    if response.request.method == "HEAD":
        return None
    size = 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size >= BODY_LIMIT:
            break
    return size


def _answer_lines(
    url: str, response: Any, headers_ms: float, total_ms: float, size: int | None
) -> tuple[list[str], dict[str, Any]]:
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    shown = "not read" if size is None else (f"{human_bytes(size)}+" if size >= BODY_LIMIT else human_bytes(size))
    first = (
        f"{url} answered {response.status_code} {response.reason_phrase} in {headers_ms} ms (headers), "
        f"{total_ms} ms in total; {shown}, {kind}"
    )
    lines = [first]
    redirects = [str(r.url) for r in response.history]
    if redirects:
        lines.append(
            f"Followed {len(redirects)} redirect{'s' if len(redirects) != 1 else ''}; final URL {response.url}"
        )
    data = {
        "url": url,
        "state": "answered",
        "status": response.status_code,
        "reason": response.reason_phrase,
        "headers_ms": headers_ms,
        "total_ms": total_ms,
        "bytes": size,
        "content_type": kind,
        "redirects": redirects,
        "final_url": str(response.url),
    }
    return lines, data


def _http_reason(exc: Exception, verify: bool) -> str:
    text = str(exc) or type(exc).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        hint = " (pass verify_tls=false to check the rest anyway)" if verify else ""
        return f"the TLS certificate is not trusted{hint}"
    found = re.search(r"\[Errno -?\d+\] ([^'\"\]]+)", text)
    return found.group(1).strip() if found else text.splitlines()[0][:200]


# ---------------------------------------------------------------------------------------------- ping


def _system_ping(command: str | None, address: str, count: int, timeout: float) -> CallToolResult | str:
    """The system ping's answer, or the reason it cannot be used (a string)."""
    if not command:
        return "the system ping is not installed"
    argv = [command, "-n", "-c", str(count), "-W", str(max(1, round(timeout))), address]
    try:
        done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=count * (timeout + 1) + 2)
    except FileNotFoundError:
        return f"the system ping ({command}) is not installed"
    except subprocess.TimeoutExpired:
        return "the system ping did not finish in time"
    summary = re.search(r"(\d+) packets transmitted, (\d+) (?:packets )?received", done.stdout)
    if summary is None:
        said = (done.stderr or done.stdout).strip().splitlines()
        return f"the system ping failed ({said[-1] if said else f'exit code {done.returncode}'})"
    sent, got = int(summary.group(1)), int(summary.group(2))
    rtt = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)", done.stdout)
    times = [float(v) for v in rtt.groups()] if rtt else []
    return _ping_result(address, "ICMP (system ping)", None, sent, got, times)


def _tcp_ping(host: str, family: int, address: str, count: int, timeout: float, port: int, why: str) -> CallToolResult:
    times, refused = [], 0
    for _ in range(count):
        try:
            times.append(connect(family, address, port, Deadline(timeout)))
        except ProbeFailed as failed:
            if failed.state == "closed" and failed.ms is not None:
                refused += 1
                times.append(failed.ms)
    stats = [min(times), sum(times) / len(times), max(times)] if times else []
    method = f"TCP connect to port {port}"
    note = f"{why}; timed TCP connects to port {port} instead"
    if refused:
        note += f" ({refused} refused: nothing listens on that port, but the host answered)"
    return _ping_result(address if address == host else f"{host} ({address})", method, note, count, len(times), stats)


def _ping_result(target: str, method: str, note: str | None, sent: int, got: int, times: list[float]) -> CallToolResult:
    loss = 100.0 * (sent - got) / sent if sent else 100.0
    head = f"{target}: {got} of {sent} answered ({loss:.0f}% loss) by {method}"
    if times:
        head += f"; round trip min/avg/max {times[0]:.2f}/{times[1]:.2f}/{times[2]:.2f} ms"
    lines = [head] + ([f"note: {note}"] if note else [])
    data = {
        "target": target,
        "method": method,
        "sent": sent,
        "received": got,
        "loss_percent": loss,
        "rtt_ms": dict(zip(("min", "avg", "max"), times)),
        "state": "up" if got else "no_answer",
        "note": note,
    }
    return result("\n".join(lines), data)


if __name__ == "__main__":
    mcp.run("stdio")
