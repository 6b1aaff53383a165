"""The warm path: `call`, `list`, `check` and `call --batch` through a running gateway (--via URL or $MIROCTL_URL).

Only the standard library's http.client: no mcp SDK and no OmegaConf are imported, so a call from a
shell loop costs little more than starting Python. The gateway answers with the documents the
direct commands print, so the envelopes and exit codes are the same.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from miroctl.base.errors import ErrorKind, ExitCode, MiroctlError, ServerUnavailable
from miroctl.base.models import CallOutcome, Failure, ServerTools, ToolInfo

URL_ENV = "MIROCTL_URL"
TOKEN_ENV = "MIROCTL_TOKEN"


class RemoteError(MiroctlError):
    """The gateway refused the request for a reason the direct command would have given too."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        super().__init__(str(document.get("error") or "the gateway refused the request"), hint=document.get("hint"))
        kind = str(document.get("error_kind") or ErrorKind.USAGE)
        self.kind = ErrorKind(kind) if kind in ErrorKind.__members__.values() else ErrorKind.USAGE
        code = document.get("exit_code")
        self._exit_code = code if isinstance(code, int) and not isinstance(code, bool) else int(ExitCode.USAGE)

    @property
    def exit_code(self) -> int:
        return self._exit_code


def base_url(url: str) -> str:
    """The gateway's root: a URL ending in /mcp (as MCP hosts are given) works too."""
    url = url.strip().rstrip("/")
    return url.removesuffix("/mcp") if url.endswith("/mcp") else url


class GatewayClient:
    """POSTs JSON to one gateway and hands back its documents; failures become MiroctlErrors."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = base_url(url)
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServerUnavailable(f"not a gateway URL: {url!r}", hint="give http://HOST:PORT of `miroctl serve`")
        self._parts = parts
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def call(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._answer(self._post("/v1/call", json.dumps(body).encode()))

    def list_tools(self, servers: list[str]) -> dict[str, Any]:
        return self._answer(self._post("/v1/list", json.dumps({"servers": servers}).encode()))

    def check(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._answer(self._post("/v1/check", json.dumps(body).encode()))

    def batch(
        self, text: str, jobs: int, timeout: float | None = None, no_autocorrect: bool = False
    ) -> list[dict[str, Any]]:
        query = urlencode(
            {
                k: v
                for k, v in (("jobs", jobs), ("timeout", timeout), ("autocorrect", "0" if no_autocorrect else None))
                if v is not None
            }
        )
        answer = self._post(f"/v1/batch?{query}", text.encode(), "application/jsonl")
        return [self._answer(line.encode()) for line in answer.decode(errors="replace").splitlines() if line.strip()]

    def _post(self, path: str, body: bytes, content_type: str = "application/json") -> bytes:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        import http.client  # noqa: PLC0415 - ~20 ms (email, ssl): only a command through a gateway pays it

        kind = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(self._parts.hostname or "", self._parts.port, timeout=None)
        try:
            connection.request("POST", self._parts.path + path, body=body, headers=headers)
            response = connection.getresponse()
            status, data = response.status, response.read()
        except OSError as exc:
            raise ServerUnavailable(
                f"cannot reach the gateway at {self.url}: {exc.strerror or exc}",
                hint="is `miroctl serve --transport http` running there?",
            ) from None
        finally:
            connection.close()
        if status != 200:
            raise self._refused(status, data)
        return data

    def _answer(self, data: bytes) -> dict[str, Any]:
        """A document of the gateway's, or ServerUnavailable when the answer is not a JSON object."""
        try:
            document = json.loads(data)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            shown = data[:60].decode("utf-8", errors="replace").strip() or "an empty body"
            raise ServerUnavailable(
                f"{self.url} did not answer as a miroctl gateway does: {shown!r}",
                hint="is it `miroctl serve --transport http`?",
            )
        return document

    def _refused(self, status: int, data: bytes) -> MiroctlError:
        document = _document(data)
        if status == 400 and document.get("schema") == "miroctl.error/1":
            return RemoteError(document)
        reason = document.get("error") or data.decode("utf-8", errors="replace").strip()[:200] or "no reason given"
        hint = f"set {TOKEN_ENV} to the gateway's token" if status == 401 else None
        return ServerUnavailable(f"the gateway at {self.url} answered HTTP {status}: {reason}", hint=hint)


def _document(data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


# ---------------------------------------------------------------------------------------------- documents


def outcome_from_dict(data: Mapping[str, Any]) -> CallOutcome:
    """A call envelope (`call --json`) back as a CallOutcome, for human rendering and exit codes."""
    failure = failure_from_dict(data["failure"]) if data.get("failure") else None
    return CallOutcome(
        data.get("server_name"),
        data.get("tool_name") or "",
        result=data.get("result"),
        error=data.get("error"),
        error_kind=data.get("error_kind"),
        is_error=bool(data.get("is_error")),
        content=data.get("content") or [],
        structured_content=data.get("structured_content"),
        corrected_from=data.get("corrected_from"),
        fallback=data.get("fallback"),
        truncated=data.get("truncated"),
        duration_ms=data.get("duration_ms") or 0.0,
        hint=data.get("hint"),
        failure=failure,
        candidates=data.get("candidates") or [],
        decision=data.get("decision"),
        notes=data.get("notes") or [],
    )


def failure_from_dict(data: Mapping[str, Any]) -> Failure:
    return Failure(
        data.get("kind") or "unavailable",
        data.get("message") or "",
        hint=data.get("hint"),
        phase=data.get("phase"),
        stderr_tail=tuple(data.get("stderr_tail") or ()),
    )


def server_tools_from_dict(data: Mapping[str, Any]) -> ServerTools:
    """One server of a `list --json` document back as ServerTools, for the human tables."""
    tools = tuple(
        ToolInfo(
            server=data["name"],
            name=t["name"],
            description=t.get("description") or "",
            input_schema=t.get("input_schema") or {},
            title=t.get("title"),
            output_schema=t.get("output_schema"),
            annotations=t.get("annotations") or {},
        )
        for t in data.get("tools") or ()
    )
    failure = failure_from_dict(data["error"]) if data.get("error") else None
    return ServerTools(
        data["name"],
        data.get("transport") or "",
        tools=tools,
        failure=failure,
        duration_ms=data.get("duration_ms") or 0.0,
        protocol_version=data.get("protocol_version"),
        server_version=data.get("server_version"),
    )
