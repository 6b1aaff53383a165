"""Sogou web search through Tencent Cloud's SearchPro API (service wsa, version 2025-05-08), with Tencent's
official SDK (tencentcloud-sdk-python-common: the request is signed with TC3-HMAC-SHA256).

Settings (environment): TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (the key pair), SOGOU_BASE_URL
(default https://wsa.tencentcloudapi.com), and webapi's HTTP_TIMEOUT, HTTP_RETRIES and HTTP_BACKOFF.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver.exceptions import ToolError
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from .common import setting
from .webapi import HttpSettings, one_line

SERVICE, VERSION, ACTION = "wsa", "2025-05-08", "SearchPro"
BASE_URL = "https://wsa.tencentcloudapi.com"
COUNTS = (10, 20, 30, 40, 50)
FIELDS = ("title", "url", "passage", "date", "site")
INSTALL_HINT = "pip install 'miroctl[research]'"
# Error codes worth another try (Tencent Cloud's common error codes; the SDK's own for a broken connection).
TRANSIENT = ("RequestLimitExceeded", "InternalError", "ServiceUnavailable", "ServerNetworkError", "ClientNetworkError")


def search(query: str, count: int, settings: HttpSettings) -> list[dict[str, Any]]:
    """SearchPro's pages for the query, each reduced to title, url, passage, date and site."""
    secret_id, secret_key = setting("TENCENTCLOUD_SECRET_ID"), setting("TENCENTCLOUD_SECRET_KEY")
    if not secret_id or not secret_key:
        raise ToolError("TENCENTCLOUD_SECRET_ID or TENCENTCLOUD_SECRET_KEY is not set: sogou_search needs both")
    client, errors = _client(secret_id, secret_key, settings)
    retrying = Retrying(
        stop=stop_after_attempt(settings.attempts),
        wait=wait_exponential(multiplier=settings.backoff, max=settings.max_wait),
        retry=retry_if_exception(lambda exc: isinstance(exc, errors) and _transient(exc)),
        reraise=True,
    )
    try:
        answer = retrying(client.call_json, ACTION, {"Query": query, "Mode": 0, "Cnt": count})
    except errors as exc:
        raise ToolError(_failure(exc, settings.attempts)) from None
    except Exception as exc:  # noqa: BLE001 - the SDK's transport (requests) fails in many ways
        raise ToolError(f"Tencent Cloud SearchPro request failed: {one_line(str(exc), 240)}") from None
    return _pages(answer)


def _client(secret_id: str, secret_key: str, settings: HttpSettings) -> tuple[Any, type[Exception]]:
    try:
        from tencentcloud.common import credential
        from tencentcloud.common.common_client import CommonClient
        from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
        from tencentcloud.common.profile.client_profile import ClientProfile
        from tencentcloud.common.profile.http_profile import HttpProfile
    except ImportError:
        raise ToolError(f"sogou_search needs tencentcloud-sdk-python-common: {INSTALL_HINT}") from None
    base = urlsplit(setting("SOGOU_BASE_URL") or BASE_URL)
    if base.scheme not in ("http", "https") or not base.netloc:
        raise ToolError(f"the server setting SOGOU_BASE_URL must be an http(s) URL, got {base.geturl()!r}")
    http = HttpProfile(protocol=base.scheme, endpoint=base.netloc, reqTimeout=max(1, round(settings.timeout)))
    try:
        cred = credential.Credential(secret_id, secret_key)
    except TencentCloudSDKException as exc:
        raise ToolError(f"Tencent Cloud credentials refused before sending: {exc.get_message()}") from None
    client = CommonClient(SERVICE, VERSION, cred, "", profile=ClientProfile(httpProfile=http))
    return client, TencentCloudSDKException


def _transient(exc: Any) -> bool:
    code = str(exc.get_code() or "")
    return any(code == t or code.startswith(t + ".") for t in TRANSIENT)


def _failure(exc: Any, attempts: int) -> str:
    code, message = str(exc.get_code() or "error"), one_line(str(exc.get_message() or ""), 240)
    if code.startswith("AuthFailure"):
        return f"Tencent Cloud refused the credentials ({code}: {message}): check TENCENTCLOUD_SECRET_ID and _KEY"
    if _transient(exc):
        return f"Tencent Cloud SearchPro failed after {attempts} attempts ({code}: {message})"
    return f"Tencent Cloud SearchPro refused the request ({code}: {message})"


def _pages(answer: Any) -> list[dict[str, Any]]:
    """The documented answer: {"Response": {"Query", "Pages": [JSON strings], "RequestId"}}."""
    response = answer.get("Response") if isinstance(answer, Mapping) else None
    error = response.get("Error") if isinstance(response, Mapping) else None
    if isinstance(error, Mapping):
        code, message = error.get("Code", "error"), one_line(str(error.get("Message", "")), 240)
        raise ToolError(f"Tencent Cloud SearchPro refused the request ({code}: {message})")
    pages = response.get("Pages", []) if isinstance(response, Mapping) else None
    if not isinstance(pages, list):
        raise ToolError("Tencent Cloud SearchPro sent a malformed answer: no list of Pages")
    found = []
    for page in pages:
        try:
            data = json.loads(page) if isinstance(page, str) else page
        except ValueError:
            continue  # one unreadable result does not spoil the others
        if isinstance(data, Mapping):
            found.append({name: str(data.get(name) or "") for name in FIELDS})
    return found
