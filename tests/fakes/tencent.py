"""A fake Tencent Cloud API endpoint for SearchPro (service wsa, version 2025-05-08), as Tencent documents it.

POST / with a JSON body and the common headers X-TC-Action, X-TC-Version, X-TC-Timestamp and an Authorization
header of TC3-HMAC-SHA256 ("Signature v3"): the fake recomputes the signature from the canonical request
(method, URI "/", empty query, the signed headers content-type and host, the body's SHA-256), the string to
sign (algorithm, timestamp, credential scope date/service/tc3_request) and the key derived from "TC3" +
SecretKey over the date, the service and "tc3_request". Answers are {"Response": {...}}: Query, Pages (each a
JSON string with title, url, passage, date, site, ...) and RequestId, or an Error {Code, Message} with HTTP 200
as the API sends errors (AuthFailure.SecretIdNotFound, AuthFailure.SignatureFailure, RequestLimitExceeded, ...).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from typing import Any

from tests.fakes.base import FakeService, Reply, Seen, json_reply

SECRET_ID = "AKIDtestsecretid0123456789"
SECRET_KEY = "testsecretkey0123456789abcdef"
AUTH = re.compile(
    r"TC3-HMAC-SHA256 Credential=([^/]+)/(\d{4}-\d{2}-\d{2})/(\w+)/tc3_request, "
    r"SignedHeaders=([a-z;-]+), Signature=([0-9a-f]{64})$"
)


def page(title: str, url: str, passage: str = "", **extra: Any) -> str:
    """One entry of Pages: a JSON string, as SearchPro sends it."""
    data = {
        "title": title,
        "url": url,
        "passage": passage or f"About {title}.",
        "date": "2025-03-01 10:00:00",
        "site": "example",
        "score": 0.8,
        "images": [],
        "favicon": "",
        **extra,
    }
    return json.dumps(data, ensure_ascii=False)


def answer(response: dict[str, Any]) -> Reply:
    """HTTP 200 with {"Response": ...}, typed exactly application/json as the API answers."""
    return json_reply({"Response": response}, **{"Content-Type": "application/json"})


def failure(code: str, message: str) -> Reply:
    return answer({"Error": {"Code": code, "Message": message}, "RequestId": "req-fake-0001"})


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signature(secret_key: str, seen: Seen, timestamp: str, service: str, signed: str) -> str:
    """The TC3-HMAC-SHA256 signature of a request, computed as Tencent's "Signature v3" page describes."""
    headers = "".join(f"{name}:{seen.headers.get(name, '').strip().lower()}\n" for name in signed.split(";"))
    canonical = "\n".join(["POST", "/", "", headers, signed, _sha256(seen.body)])
    date = datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%d")
    scope = f"{date}/{service}/tc3_request"
    to_sign = "\n".join(["TC3-HMAC-SHA256", timestamp, scope, _sha256(canonical.encode())])
    key = _hmac(_hmac(_hmac(("TC3" + secret_key).encode(), date), service), "tc3_request")
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


class FakeSearchPro(FakeService):
    """`index` maps a query to its Pages (JSON strings)."""

    def __init__(self, secret_id: str = SECRET_ID, secret_key: str = SECRET_KEY) -> None:
        super().__init__()
        self.secret_id, self.secret_key = secret_id, secret_key
        self.index: dict[str, list[str]] = {}

    def route(self, request: Seen) -> Reply:
        refused = self._unsigned(request)
        if refused is not None:
            return refused
        if request.headers.get("x-tc-action") != "SearchPro" or request.headers.get("x-tc-version") != "2025-05-08":
            return failure("InvalidAction", "The action requested is invalid for this version.")
        body = request.json()
        query = str(body.get("Query") or "")
        if not query.strip():
            return failure("InvalidParameter", "Query is required.")
        count = int(body.get("Cnt", 10))
        pages = self.index.get(query, [])[:count]
        return answer({"Query": query, "Pages": pages, "RequestId": "req-fake-0002"})

    def _unsigned(self, request: Seen) -> Reply | None:
        match = AUTH.match(request.headers.get("authorization", ""))
        if match is None:
            return failure("AuthFailure.InvalidAuthorization", "Authorization header is malformed.")
        secret_id, date, service, signed, given = match.groups()
        if secret_id != self.secret_id:
            return failure("AuthFailure.SecretIdNotFound", "The SecretId is not found, please ensure it exists.")
        timestamp = request.headers.get("x-tc-timestamp", "0")
        if datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%d") != date or service != "wsa":
            return failure("AuthFailure.InvalidAuthorization", "Credential scope does not match the request.")
        if not hmac.compare_digest(given, signature(self.secret_key, request, timestamp, service, signed)):
            return failure("AuthFailure.SignatureFailure", "The provided credentials could not be validated.")
        return None
