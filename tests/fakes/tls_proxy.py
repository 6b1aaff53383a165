"""An HTTP proxy on 127.0.0.1 that inspects TLS, as a company proxy does: `CONNECT host:443` for a routed host
is answered with a certificate for that host from a CA made here, and the requests inside go to the local
fake standing for that host; any other host is refused. A client that names public hosts itself (ddgs) can
so talk to fakes, and to nothing else."""

from __future__ import annotations

import datetime
import http.client
import socketserver
import ssl
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.fakes.base import POLL

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "content-length"}


class InterceptingProxy:
    """`routes` maps a public host name to the base URL of the local fake that answers for it."""

    def __init__(self, directory: Path, routes: Mapping[str, str]) -> None:
        self.directory = directory
        self.routes = dict(routes)
        self.connects: list[str] = []
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        self._ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "miroctl test CA")])
        self.ca = directory / "ca.pem"
        self.ca.write_bytes(
            self._certificate(self._ca_name, self._ca_key, ca=True).public_bytes(serialization.Encoding.PEM)
        )

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Listen on a free port of 127.0.0.1; yields the proxy URL."""
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    def _handler(self) -> type[socketserver.StreamRequestHandler]:
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline().decode("latin-1").strip()
                proxy.connects.append(line)
                _read_headers(self.rfile)
                method, target = [*line.split(), "", ""][:2]
                host = target.rsplit(":", 1)[0]
                if method != "CONNECT" or host not in proxy.routes:
                    self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                with proxy._context(host).wrap_socket(self.connection, server_side=True) as tls:
                    proxy._relay(tls, proxy.routes[host])

        return Handler

    def _relay(self, tls: ssl.SSLSocket, base: str) -> None:
        """One request from inside the tunnel, sent on to the fake, its answer sent back; then the tunnel closes."""
        stream = tls.makefile("rwb")
        method, path, _ = stream.readline().decode("latin-1").split(" ", 2)
        headers = _read_headers(stream)
        body = stream.read(int(headers.get("content-length", "0") or 0))
        local = urlsplit(base)
        connection = http.client.HTTPConnection(local.hostname, local.port, timeout=30)
        try:
            kept = {k: v for k, v in headers.items() if k not in HOP_BY_HOP and k != "accept-encoding"}
            connection.request(method, path, body=body or None, headers=kept)
            answer = connection.getresponse()
            data = answer.read()
        finally:
            connection.close()
        lines = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        lines += [f"{k}: {v}" for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP]
        lines += [f"Content-Length: {len(data)}", "Connection: close"]
        stream.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        stream.flush()

    @cache  # noqa: B019 - one context per host for the proxy's lifetime
    def _context(self, host: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
        cert, key_path = self.directory / f"{host}.pem", self.directory / f"{host}.key"
        cert.write_bytes(self._certificate(name, key, host=host).public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key_path)
        context.set_alpn_protocols(["http/1.1"])
        return context

    def _certificate(
        self, name: x509.Name, key: ec.EllipticCurvePrivateKey, *, ca: bool = False, host: str = ""
    ) -> x509.Certificate:
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(self._ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
        )
        if ca:
            builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            builder = builder.add_extension(
                x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
            )
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        return builder.sign(self._ca_key, hashes.SHA256())


def _read_headers(stream: BinaryIO) -> dict[str, str]:
    headers: dict[str, str] = {}
    while True:
        line = stream.readline()
        if line in (b"", b"\r\n", b"\n"):
            return headers
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
