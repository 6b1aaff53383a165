"""Local web servers for the bundled servers' tests: plain HTTP and HTTPS with a certificate made here."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.fakes.base import POLL

HOME_PAGE = b"<html><head><title>Fixture</title></head><body><h1>Hello page</h1><p>A <a href='/next'>link</a>.</p>"
PAGES = {
    "/": ("text/html", HOME_PAGE + b"</body></html>"),
    "/data.csv": ("text/csv", b"name,count\nalpha,1\nbeta,2\n"),
}


class Handler(BaseHTTPRequestHandler):
    """Serves PAGES; /redirect goes to /; anything else is 404."""

    def do_GET(self) -> None:  # the name http.server calls
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        kind, body = PAGES.get(self.path, ("text/plain", b""))
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:  # the name http.server calls
        self.do_GET()

    def log_message(self, *args: object) -> None:
        """Quiet: the tests read answers, not logs."""


@contextmanager
def serve(tls_dir: Path | None = None, *, days: int = 30) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (HTTPS with a fresh self-signed certificate when tls_dir is given)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    scheme = "http"
    if tls_dir is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self_signed(tls_dir, days))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def self_signed(directory: Path, days: int) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 valid for `days` more days (negative: already expired)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "miroctl-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=400))
        .not_valid_after(now + datetime.timedelta(days=days, hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"cert{days}.pem", directory / f"key{days}.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)
