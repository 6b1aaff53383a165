"""The warm path: `call`, `list`, `read`, `prompt`, `check` and `call --batch` through a running gateway
(--via URL or $MIROCTL_URL).

Only the standard library's http.client: no mcp SDK and no OmegaConf are imported, so a call from a
shell loop costs little more than starting Python. The gateway answers with the documents the
direct commands print, so the envelopes and exit codes are the same.
"""

from __future__ import annotations

import json
import os
import select
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlencode, urlsplit

from miroctl.base.errors import ErrorKind, ErrorKindName, ExitCode, MiroctlError, ServerUnavailable, TimedOut, kind_name
from miroctl.base.fetched import Fetched
from miroctl.base.models import (
    FAILURE_KINDS,
    LISTED_TRANSPORTS,
    CallOutcome,
    DecisionRecord,
    Failure,
    FailureKind,
    Fallback,
    ListedTransport,
    RejectedTool,
    ServerTools,
    ToolInfo,
    Truncated,
    phase_named,
)
from miroctl.base.text import correction_note

if TYPE_CHECKING:
    import http.client
    import socket

T = TypeVar("T")
URL_ENV = "MIROCTL_URL"
TOKEN_ENV = "MIROCTL_TOKEN"
CONNECT_TIMEOUT = 10.0  # seconds to reach the gateway at all
DEFAULT_WAIT = 900.0  # what a request may take at the gateway when the command names no --timeout
MARGIN_ENV = "MIROCTL_VIA_MARGIN"
MARGIN = 1.5  # beyond the request's own timeout: the gateway's routing and the answer's trip
PIECE = 1 << 18  # bytes of an answer read at a time


class RemoteError(MiroctlError):
    """The gateway refused the request for a reason the direct command would have given too."""

    def __init__(self, document: Mapping[str, object]) -> None:
        hint = document.get("hint")
        super().__init__(
            str(document.get("error") or "the gateway refused the request"),
            hint=hint if isinstance(hint, str) else None,
        )
        kind = str(document.get("error_kind") or ErrorKind.USAGE)
        self.kind = ErrorKind(kind) if kind in ErrorKind.__members__.values() else ErrorKind.USAGE
        code = document.get("exit_code")
        self._exit_code = code if isinstance(code, int) and not isinstance(code, bool) else int(ExitCode.USAGE)

    @property
    def exit_code(self) -> int:
        return self._exit_code


def _margin() -> float:
    """How long beyond the request's own timeout the answer is awaited ($MIROCTL_VIA_MARGIN, seconds)."""
    try:
        margin = float(os.environ.get(MARGIN_ENV) or MARGIN)
    except ValueError:
        return MARGIN
    return margin if 0 <= margin <= 86400 else MARGIN  # NaN and infinity too


UNIX = "unix:"  # a gateway on a Unix socket (miroctl's daemon): unix:/PATH/TO/SOCKET


def base_url(url: str) -> str:
    """The gateway's root: a URL ending in /mcp (as MCP hosts are given) works too."""
    url = url.strip()
    if url.startswith(UNIX):
        return url
    url = url.rstrip("/")
    return url.removesuffix("/mcp") if url.endswith("/mcp") else url


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept connection has been closed by the gateway (or has unread bytes, which it never
    sends unasked): it is readable now."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _unix_connection(path: str, timeout: float) -> http.client.HTTPConnection:
    """An HTTP connection over a Unix socket that talks only to a process of this user (SO_PEERCRED)."""
    import http.client  # noqa: PLC0415 - as in GatewayClient._post
    import socket  # noqa: PLC0415

    from miroctl.base.peercred import peer  # noqa: PLC0415 - with socket, only a command through a daemon

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(path)
                _, uid = peer(sock)
            except OSError:
                sock.close()
                raise
            if uid != os.getuid():
                sock.close()
                raise PermissionError(f"the socket is served by uid {uid}, not by this user")
            self.sock = sock

    return UnixConnection("localhost", timeout=timeout)


class GatewayClient:
    """POSTs JSON to one gateway and hands back its documents; failures become MiroctlErrors.

    `timeout` is what the request may take at the gateway (a call's --timeout); the answer is awaited that
    long plus a margin, so a gateway that accepts and never answers costs a bounded wait (exit 4)."""

    def __init__(
        self, url: str, token: str | None = None, timeout: float | None = None, keep_alive: bool = False
    ) -> None:
        self.url = base_url(url)
        self.socket_path = self.url.removeprefix(UNIX) if self.url.startswith(UNIX) else None
        parts = urlsplit("http://localhost" if self.socket_path else self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServerUnavailable(f"not a gateway URL: {url!r}", hint="give http://HOST:PORT of `miroctl serve`")
        self._parts = parts
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.timeout, self.margin = timeout or DEFAULT_WAIT, _margin()
        self.wait = self.timeout + self.margin
        # keep_alive: each thread keeps its connection for its next request (a load test's many calls), so
        # neither end pays a TCP connection and an HTTP handshake per call; close() ends them all
        self.keep_alive = keep_alive
        self._kept = threading.local()
        self._opened: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._current: http.client.HTTPConnection | None = None  # the request under way (abort)
        self._aborted = False

    def abort(self) -> None:
        """From another thread: end the request under way (or keep one from starting); the gateway sees its
        client leave and cancels the call, as when a command is interrupted."""
        self._aborted = True
        connection = self._current
        if connection is not None and connection.sock is not None:
            import socket  # noqa: PLC0415 - as in _unix_connection

            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def call(self, body: Mapping[str, object]) -> dict[str, object]:
        return self._answer(self._post("/v1/call", json.dumps(body).encode()))

    def list_tools(self, target: list[str]) -> dict[str, object]:
        """The list document of what `list`'s words name: servers, or one tool (SERVER TOOL, SERVER.TOOL)."""
        return self._answer(self._post("/v1/list", json.dumps({"target": target}).encode()))

    def read(self, body: Mapping[str, object]) -> dict[str, object]:
        return self._answer(self._post("/v1/read", json.dumps(body).encode()))

    def prompt(self, body: Mapping[str, object]) -> dict[str, object]:
        return self._answer(self._post("/v1/prompt", json.dumps(body).encode()))

    def check(self, body: Mapping[str, object]) -> dict[str, object]:
        return self._answer(self._post("/v1/check", json.dumps(body).encode()))

    def request(self, path: str, body: Mapping[str, object] | None = None) -> dict[str, object]:
        """POST `body` to another of the gateway's JSON endpoints (a daemon's /v1/daemon/...)."""
        return self._answer(self._post(path, json.dumps(body or {}).encode()))

    def batch(
        self, source: bytes | Iterable[bytes], jobs: int, timeout: float | None = None, no_autocorrect: bool = False
    ) -> Iterator[dict[str, object]]:
        """The envelopes of a batch of JSON lines (bytes, or pieces of them sent as they are read), one at a
        time as the gateway's answer brings them."""
        query = urlencode(
            {
                k: v
                for k, v in (("jobs", jobs), ("timeout", timeout), ("autocorrect", "0" if no_autocorrect else None))
                if v is not None
            }
        )
        for line in self._answers(f"/v1/batch?{query}", source, "application/jsonl", whole=False):
            if line.strip():
                yield self._answer(line)

    def close(self) -> None:
        """End the connections kept for further requests (keep_alive)."""
        with self._lock:
            opened, self._opened = self._opened, []
        for connection in opened:
            connection.close()

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's kept connection if the gateway has not closed it meanwhile, else a new one."""
        kept: http.client.HTTPConnection | None = getattr(self._kept, "connection", None)
        if kept is not None:
            self._kept.connection = None
            if kept.sock is not None and not _dropped(kept.sock):
                return kept
            self._forget(kept)
        import http.client  # noqa: PLC0415 - ~20 ms (email, ssl): only a command through a gateway pays it

        kind = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        return (
            _unix_connection(self.socket_path, CONNECT_TIMEOUT)
            if self.socket_path
            else kind(self._parts.hostname or "", self._parts.port, timeout=CONNECT_TIMEOUT)
        )

    def _keep(self, connection: http.client.HTTPConnection) -> None:
        self._kept.connection = connection
        with self._lock:
            if connection not in self._opened:
                self._opened.append(connection)

    def _forget(self, connection: http.client.HTTPConnection) -> None:
        connection.close()
        with self._lock:
            if connection in self._opened:
                self._opened.remove(connection)

    def _post(self, path: str, body: bytes, content_type: str = "application/json") -> bytearray:
        (data,) = self._answers(path, body, content_type, whole=True)
        return data

    def _answers(self, path: str, body: bytes | Iterable[bytes], content_type: str, whole: bool) -> Iterator[bytearray]:
        """POST `body` (bytes, or pieces sent chunked as they are read); the answer whole (one item), or its
        lines as they arrive. An error of the gateway's or of the network is raised here, in one line; what
        the caller does with each item is not this exchange's failure."""
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        import http.client  # noqa: PLC0415 - ~20 ms (email, ssl): only a command through a gateway pays it

        connection = self._connection()
        waited = f"to accept a connection within {CONNECT_TIMEOUT:g}s"
        keep = False
        try:
            if connection.sock is None:
                connection.connect()
            self._current = connection
            if self._aborted:
                raise ConnectionAbortedError("the request was cancelled")
            if connection.sock is not None:
                connection.sock.settimeout(self.wait)
                waited = f"within {self.wait:g}s (a timeout of {self.timeout:g}s and {self.margin:g}s for the trip)"
            connection.request("POST", self._parts.path + path, body=body, headers=headers)
            response = connection.getresponse()
            status = response.status
            if status != 200 or whole:
                data = _body(response)
                if status == 200:
                    yield data
            else:
                while line := response.readline():
                    yield bytearray(line)
            keep = self.keep_alive and not response.will_close
        except TimeoutError:
            raise TimedOut(
                f"the gateway at {self.url} did not answer {waited}",
                hint="is it stuck? `miroctl check --via` or its /healthz shows its servers' states",
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if self.socket_path:
                hint = "`miroctl daemon status` shows the daemons"
            else:
                hint = "is `miroctl serve --transport http` running there?"
                if os.environ.get(URL_ENV) == self.url:
                    hint += f" (${URL_ENV} names it: `unset {URL_ENV}` to use the servers directly)"
            raise ServerUnavailable(f"cannot reach the gateway at {self.url}: {reason}", hint=hint) from None
        finally:
            self._current = None
            if keep and not self._aborted:
                self._keep(connection)
            else:
                self._forget(connection)
        if status != 200:
            raise self._refused(status, data)

    def _answer(self, data: bytearray) -> dict[str, object]:
        """A document of the gateway's, or ServerUnavailable when the answer is not a JSON object. The body is
        emptied once it is decoded: a large result is held as its text and its parsed document, never as both
        of those and the bytes too."""
        shown = data[:60].decode("utf-8", errors="replace").strip() or "an empty body"
        text = data.decode("utf-8", errors="replace")
        data.clear()
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            document = None
        del text
        if not isinstance(document, dict):
            raise ServerUnavailable(
                f"{self.url} did not answer as a miroctl gateway does: {shown!r}",
                hint="is it `miroctl serve --transport http`?",
            )
        return document

    def _refused(self, status: int, data: bytearray) -> MiroctlError:
        document = _document(data)
        if status == 400 and document.get("schema") == "miroctl.error/1":
            return RemoteError(document)
        reason = document.get("error") or data.decode("utf-8", errors="replace").strip()[:200] or "no reason given"
        hint = f"set {TOKEN_ENV} to the gateway's token" if status == 401 else None
        return ServerUnavailable(f"the gateway at {self.url} answered HTTP {status}: {reason}", hint=hint)


def _body(response: http.client.HTTPResponse) -> bytearray:
    """The whole body, read a piece at a time into one buffer (a streamed answer is never joined from a list
    of its chunks, which would hold it twice)."""
    body, piece = bytearray(), bytearray(PIECE)
    view = memoryview(piece)
    while count := response.readinto(view):
        body += view[:count]
    return body


def _document(data: bytes | bytearray) -> dict[str, object]:
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return document if isinstance(document, dict) else {}


# ---------------------------------------------------------------------------------------------- documents


class ShapeError(ValueError):
    """A gateway document that is JSON but not of the shape miroctl reads."""


def readable(url: str, read: Callable[[], T]) -> T:
    """`read()` of a gateway's document; a document of the wrong shape is ServerUnavailable, in one line."""
    try:
        return read()
    except (ShapeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        reason = str(exc) if isinstance(exc, ShapeError) else f"{type(exc).__name__}: {exc}"
        raise ServerUnavailable(
            f"{base_url(url)} answered with a document miroctl cannot read: {reason}",
            hint="is it `miroctl serve --transport http`, of this miroctl's version?",
        ) from None


def _text(data: Mapping[str, object], key: str, default: str | None = None) -> str | None:
    value = data.get(key, default)
    if value is None or isinstance(value, str):
        return value
    raise ShapeError(f"{key} is {type(value).__name__}, not text")


def _number(data: Mapping[str, object], key: str) -> float:
    value = data.get(key) or 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ShapeError(f"{key} is {type(value).__name__}, not a number")


def _mapping(data: Mapping[str, object], key: str) -> dict[str, object] | None:
    value = data.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise ShapeError(f"{key} is {type(value).__name__}, not an object")


def _list(data: Mapping[str, object], key: str) -> list[dict[str, object]]:
    value = data.get(key) or []
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value
    raise ShapeError(f"{key} is not a list of objects")


def _texts(data: Mapping[str, object], key: str) -> list[str]:
    value = data.get(key) or []
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise ShapeError(f"{key} is not a list of str")


def _kind(data: Mapping[str, object], key: str) -> ErrorKindName | None:
    value = _text(data, key)
    try:
        return kind_name(value) if value is not None else None
    except ValueError:
        raise ShapeError(f"{key} {value!r} is not an error kind") from None


def outcome_from_dict(data: Mapping[str, object]) -> CallOutcome:
    """A call envelope (`call --json`) back as a CallOutcome, for human rendering and exit codes."""
    failure = _mapping(data, "failure")
    return CallOutcome(
        _text(data, "server_name"),
        _text(data, "tool_name") or "",
        result=_text(data, "result"),
        error=_text(data, "error"),
        error_kind=_kind(data, "error_kind"),
        is_error=bool(data.get("is_error")),
        content=_list(data, "content"),
        structured_content=data.get("structured_content"),
        corrected_from=_text(data, "corrected_from"),
        fallback=Fallback.from_json(data.get("fallback")),
        truncated=Truncated.from_json(data.get("truncated")),
        duration_ms=_number(data, "duration_ms"),
        hint=_text(data, "hint"),
        failure=failure_from_dict(failure) if failure else None,
        candidates=_texts(data, "candidates"),
        decision=DecisionRecord.from_json(data.get("decision")),
        notes=_texts(data, "notes"),
        correction=_correction(data),
    )


def _correction(data: Mapping[str, object]) -> str | None:
    """The auto-correction note the envelope's result starts with, if it has one."""
    given, result = _text(data, "corrected_from"), _text(data, "result") or ""
    used, tool = _text(data, "server_name") or "", _text(data, "tool_name") or ""
    if given is None:
        return None
    for exists in (False, True):
        note = correction_note(given, tool, used, exists)
        if result.startswith(f"{note} "):
            return note
    return None


def fetched_from_dict(data: Mapping[str, object]) -> Fetched:
    """A `read --json` or `prompt --json` envelope back as a Fetched, for human rendering and exit codes."""
    schema = _text(data, "schema") or ""
    what = "prompt" if schema == "miroctl.prompt/1" else "resource" if schema == "miroctl.resource/1" else None
    if what is None:
        raise ShapeError(f"schema {schema!r} is not a resource or prompt envelope")
    failure = _mapping(data, "failure")
    return Fetched(
        _text(data, "server_name"),
        what,
        _text(data, "prompt" if what == "prompt" else "uri") or "",
        content=_list(data, "messages" if what == "prompt" else "contents"),
        description=_text(data, "description"),
        error=_text(data, "error"),
        error_kind=_kind(data, "error_kind"),
        hint=_text(data, "hint"),
        failure=failure_from_dict(failure) if failure else None,
        duration_ms=_number(data, "duration_ms"),
    )


def _failure_kind(kind: str | None) -> FailureKind:
    return next((known for known in FAILURE_KINDS if known == kind), "unavailable")


def _transport(transport: str | None) -> ListedTransport:
    return next((known for known in LISTED_TRANSPORTS if known == transport), "unknown")


def failure_from_dict(data: Mapping[str, object]) -> Failure:
    return Failure(
        _failure_kind(_text(data, "kind")),
        _text(data, "message") or "",
        hint=_text(data, "hint"),
        phase=phase_named(_text(data, "phase")),
        stderr_tail=tuple(_texts(data, "stderr_tail")),
    )


def list_from_dict(document: Mapping[str, object]) -> list[ServerTools]:
    """The servers of a `list --json` document, for the human tables."""
    return [server_tools_from_dict(entry) for entry in _list(document, "servers")]


def server_tools_from_dict(data: Mapping[str, object]) -> ServerTools:
    """One server of a `list --json` document back as ServerTools, for the human tables."""
    name = _text(data, "name")
    if not name:
        raise ShapeError("a server without a name")
    tools = tuple(
        ToolInfo(
            server=name,
            name=_text(t, "name") or "",
            description=_text(t, "description") or "",
            input_schema=_mapping(t, "input_schema") or {},
            title=_text(t, "title"),
            output_schema=_mapping(t, "output_schema"),
            annotations=_mapping(t, "annotations") or {},
        )
        for t in _list(data, "tools")
    )
    failure = _mapping(data, "failure")
    rejected = tuple(
        RejectedTool(_text(r, "name") or "", _text(r, "reason") or "") for r in _list(data, "rejected_tools")
    )
    return ServerTools(
        name,
        _transport(_text(data, "transport")),
        tools=tools,
        failure=failure_from_dict(failure) if failure else None,
        duration_ms=_number(data, "duration_ms"),
        protocol_version=_text(data, "protocol_version"),
        server_version=_text(data, "server_version"),
        rejected=rejected,
        python=_text(data, "python"),
    )
