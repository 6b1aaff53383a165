"""Network probes with deadlines: name resolution, TCP connects, TLS certificates. Data in, data out.

Each probe returns what it found (or raises ProbeFailed with a state and a reason); the network
server turns the findings into sentences.
"""

from __future__ import annotations

import concurrent.futures
import errno
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

_RESOLVER = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="resolve")
_UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN, errno.EADDRNOTAVAIL}


class ProbeFailed(Exception):
    """A probe could not get an answer: `state` is a short keyword, the message says why."""

    def __init__(self, state: str, reason: str, ms: float | None = None) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason
        self.ms = ms  # how long until the answer, when there was one (a refusal)


@dataclass
class Deadline:
    """A budget of seconds shared by the steps of one probe."""

    seconds: float
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = time.monotonic()

    def left(self) -> float:
        remaining = self.seconds - (time.monotonic() - self.started)
        if remaining <= 0:
            raise ProbeFailed("timeout", f"no answer within {self.seconds:g} s")
        return remaining


def elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 2)


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def resolve(host: str, deadline: Deadline, port: int | None = None) -> list[tuple[int, str]]:
    """(family, address) pairs for a host name or IP literal, in the resolver's order, without repeats."""
    future = _RESOLVER.submit(socket.getaddrinfo, host.strip("[]"), port, 0, socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=deadline.left())
    except concurrent.futures.TimeoutError:
        raise ProbeFailed("timeout", f"the resolver gave no answer for {host} within {deadline.seconds:g} s") from None
    except socket.gaierror as exc:
        raise ProbeFailed("unresolvable", exc.strerror or str(exc)) from None
    except (OSError, UnicodeError) as exc:
        raise ProbeFailed("unresolvable", f"{host} cannot be looked up: {exc}") from None
    found: list[tuple[int, str]] = []
    for family, _, _, _, sockaddr in infos:
        pair = (int(family), str(sockaddr[0]))
        if pair not in found:
            found.append(pair)
    return found


def reverse(ip: str, deadline: Deadline) -> str | None:
    """The host name an IP address maps back to (PTR), or None when it has none."""
    future = _RESOLVER.submit(socket.gethostbyaddr, ip.strip("[]"))
    try:
        return future.result(timeout=deadline.left())[0]
    except concurrent.futures.TimeoutError:
        raise ProbeFailed("timeout", f"the resolver gave no answer for {ip} within {deadline.seconds:g} s") from None
    except (socket.herror, socket.gaierror, OSError):
        return None


def connect(family: int, address: str, port: int, deadline: Deadline) -> float:
    """Open and close a TCP connection; the milliseconds it took, or ProbeFailed (refused, timeout, ...)."""
    started = time.monotonic()
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(deadline.left())
        try:
            sock.connect((address, port))
        except ConnectionRefusedError:
            ms = elapsed_ms(started)
            raise ProbeFailed("closed", f"connection refused after {ms} ms", ms) from None
        except TimeoutError:
            raise ProbeFailed("timeout", f"no answer within {deadline.seconds:g} s") from None
        except OSError as exc:
            state = "unreachable" if exc.errno in _UNREACHABLE else "error"
            raise ProbeFailed(state, exc.strerror or str(exc)) from None
    return elapsed_ms(started)


# ---------------------------------------------------------------------------------------------- TLS


def certificate(host: str, port: int, deadline: Deadline) -> dict[str, Any]:
    """The server's TLS certificate: names, issuer, expiry, and whether this machine trusts it."""
    try:
        der, trusted, problem = _peer_certificate(host, port, deadline, verify=True), True, None
    except ssl.SSLCertVerificationError as exc:
        der, trusted, problem = _peer_certificate(host, port, deadline, verify=False), False, exc.verify_message
    return {**describe_certificate(der), "trusted": trusted, "problem": problem}


def _peer_certificate(host: str, port: int, deadline: Deadline, *, verify: bool) -> bytes:
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host.strip("[]"), port), timeout=deadline.left()) as raw,
            context.wrap_socket(raw, server_hostname=host.strip("[]")) as tls,
        ):
            return tls.getpeercert(binary_form=True) or b""
    except ssl.SSLCertVerificationError:
        raise
    except ssl.SSLError as exc:
        raise ProbeFailed("tls_error", f"TLS handshake failed: {exc.reason or exc}") from None
    except TimeoutError:
        raise ProbeFailed("timeout", f"no TLS answer within {deadline.seconds:g} s") from None
    except OSError as exc:
        raise ProbeFailed("error", f"cannot connect for TLS: {exc.strerror or exc}") from None


def describe_certificate(der: bytes, now: datetime | None = None) -> dict[str, Any]:
    """Subject, issuer, alternative names and expiry of a DER certificate (via `cryptography`)."""
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    expires = cert.not_valid_after_utc
    seconds_left = (expires - (now or datetime.now(UTC))).total_seconds()
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        alt_names = [str(n.value) for n in names]
    except x509.ExtensionNotFound:
        alt_names = []
    return {
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "alt_names": alt_names,
        "not_before": cert.not_valid_before_utc.isoformat(),
        "not_after": expires.isoformat(),
        "days_left": int(seconds_left // 86400),
        "expired": seconds_left < 0,
    }
