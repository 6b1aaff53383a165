"""Calling a web API from a bundled server: a timeout per request, retries with exponential backoff on
transient failures (429 honouring Retry-After, 5xx, timeouts, refused connections), never on other 4xx,
and every failure as a one-line tool error that names the service.

Settings (environment of the server): HTTP_TIMEOUT (seconds per request), HTTP_RETRIES (attempts in
all, at least 1), HTTP_BACKOFF (seconds before the first retry; doubles each time), HTTP_MAX_WAIT (the
longest wait honoured, Retry-After included: a service asking for more is reported, not waited for).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from mcp.server.mcpserver.exceptions import ToolError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from miroctl.base.text import human_bytes
from miroctl.base.version import __version__
from miroctl.base.webpages import reason
from miroctl.policy import urls

from .common import number_setting

USER_AGENT = f"miroctl/{__version__} (bundled research tools)"
MAX_REDIRECTS = 3
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_ANSWER_BYTES = 20 * 1024 * 1024  # an API answer larger than this is not a normal answer


@dataclass(frozen=True)
class HttpSettings:
    """How long to wait for a service and how often to try it."""

    timeout: float = 30.0
    attempts: int = 3
    backoff: float = 1.0
    max_wait: float = 60.0

    @classmethod
    def from_env(cls, timeout: float = 30.0) -> HttpSettings:
        """The server's HTTP_* settings, with `timeout` as the default per-request timeout."""
        return cls(
            timeout=number_setting("HTTP_TIMEOUT", timeout, minimum=0.05),
            attempts=int(number_setting("HTTP_RETRIES", 3, minimum=1)),
            backoff=number_setting("HTTP_BACKOFF", 1.0),
            max_wait=number_setting("HTTP_MAX_WAIT", 60.0),
        )


class Transient(Exception):
    """A failure worth another try; `retry_after` is the wait the service asked for, if it did."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


@dataclass(frozen=True)
class Answer:
    """A service's answer: status, headers, and the body (read up to MAX_ANSWER_BYTES)."""

    status: int
    headers: Mapping[str, str]  # names in lowercase
    body: bytes
    url: str

    def json(self, service: str) -> Any:
        """The body as JSON, or a tool error saying the answer was malformed."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise ToolError(f"{service} sent a malformed answer (not JSON): {_preview(self.body)}") from None


Describe = Callable[[Answer], str]


def call(
    service: str,
    method: str,
    url: str,
    settings: HttpSettings,
    *,
    describe: Describe | None = None,
    ok: Callable[[Answer], bool] | None = None,
    busy: Callable[[Answer], str | None] | None = None,
    **kwargs: Any,
) -> Answer:
    """One API request, retried on transient failures; `ok` accepts an error status as an answer
    (e.g. a 404 that means "not found"); other statuses become tool errors described by `describe`;
    `busy` names a successful-looking answer that says "try later" (MediaWiki's maxlag), retried too."""

    def wait(state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        asked = failure.retry_after if isinstance(failure, Transient) else None
        return asked if asked is not None else min(settings.backoff * 2 ** (state.attempt_number - 1), 60.0)

    retrying = Retrying(
        stop=stop_after_attempt(settings.attempts),
        wait=wait,
        retry=retry_if_exception_type(Transient),
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                answer = _once(service, method, url, settings, describe or _status_line, ok, kwargs)
                if busy is not None and busy(answer) is not None:
                    raise _retryable(service, answer, lambda said: busy(said) or "busy", settings)
                return answer
    except Transient as failure:
        tries = f" (tried {settings.attempts} times)" if settings.attempts > 1 else ""
        raise ToolError(f"{service}: {failure.reason}{tries}") from None
    raise AssertionError("unreachable")


def _once(
    service: str,
    method: str,
    url: str,
    settings: HttpSettings,
    describe: Describe,
    ok: Callable[[Answer], bool] | None,
    kwargs: Mapping[str, Any],
) -> Answer:
    """One request; redirects are followed only on the same host, so a key in a header never travels on."""
    options = dict(kwargs)
    for _ in range(MAX_REDIRECTS + 1):
        answer = _send(method, url, settings, options)
        location = answer.headers.get("location") if answer.status in REDIRECTS else None
        if location is None:
            break
        target = urljoin(url, location)
        if urlsplit(target).hostname != urlsplit(url).hostname:
            raise ToolError(f"{service} redirected to another host ({urlsplit(target).hostname}): not followed")
        if answer.status == 303 or (answer.status in (301, 302) and method != "GET"):
            method = "GET"  # as browsers and requests do: the body is not sent again
            options = {k: v for k, v in options.items() if k not in ("json", "data")}
        url = target
    else:
        raise ToolError(f"{service}: more than {MAX_REDIRECTS} redirects")
    if answer.status == 429 or answer.status >= 500:
        raise _retryable(service, answer, describe, settings)
    if answer.status >= 400 and not (ok and ok(answer)):
        raise ToolError(f"{service}: {describe(answer)}")
    return answer


def _send(method: str, url: str, settings: HttpSettings, options: Mapping[str, Any]) -> Answer:
    import requests

    headers = {"User-Agent": USER_AGENT, **options.get("headers", {})}
    timeout = (min(settings.timeout, 10.0), settings.timeout)
    try:
        with requests.request(
            method, url, timeout=timeout, stream=True, allow_redirects=False, **{**options, "headers": headers}
        ) as response:
            received = {name.lower(): value for name, value in response.headers.items()}
            return Answer(response.status_code, received, _read(response, url), response.url)
    except requests.Timeout:
        raise Transient(f"no answer within {settings.timeout:g}s") from None
    except requests.ConnectionError as exc:
        raise Transient(f"cannot connect to {_origin(url)}: {reason(exc)}") from None
    except requests.RequestException as exc:
        raise ToolError(f"request to {_origin(url)} failed: {reason(exc)}") from None


def _retryable(service: str, answer: Answer, describe: Describe, settings: HttpSettings) -> Exception:
    """A Transient for a 429/5xx, or a ToolError when the service asks for a longer wait than allowed."""
    retry_after = parse_retry_after(answer.headers.get("retry-after"))
    reason = describe(answer)
    if retry_after is not None and retry_after > settings.max_wait:
        return ToolError(
            f"{service}: {reason}; it asks to retry after {retry_after:g}s, longer than HTTP_MAX_WAIT "
            f"({settings.max_wait:g}s): try again later"
        )
    return Transient(reason, retry_after)


def _read(response: Any, url: str) -> bytes:
    buffer = bytearray()
    for chunk in response.iter_content(chunk_size=65536):
        buffer += chunk
        if len(buffer) > MAX_ANSWER_BYTES:
            raise ToolError(f"{_origin(url)} sent more than {human_bytes(MAX_ANSWER_BYTES)}: not an API answer")
    return bytes(buffer)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds from now: a number of seconds or an HTTP date (None when absent or unreadable)."""
    if not value:
        return None
    value = value.strip()
    if value.replace(".", "", 1).isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def json_message(answer: Answer, *keys: str) -> str | None:
    """The first of `keys` found in a JSON error body (nested keys as 'error.info'), or None."""
    try:
        data = json.loads(answer.body)
    except ValueError:
        return None
    for key in keys:
        value: Any = data
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, str) and value.strip():
            return one_line(value)
    return None


def _status_line(answer: Answer) -> str:
    return f"HTTP {answer.status}"


def one_line(text: str, limit: int = 300) -> str:
    """The first line of a message, shortened: server text is shown, never trusted to be short."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _preview(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    return repr(one_line(text, 80)) if text else "an empty body"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def page_url(given: str, notes: list[str], *, verb: str, done: str, refusal: str) -> str:
    """A page address from a tool's argument: https:// added when no scheme is given (said in `notes`), anything
    but http(s) refused, and miroctl's URL rules applied. `verb`/`done` say what the tool does with the page
    ("read"/"read", "look up"/"looked up"); `refusal` ends the message of a blocked page."""
    target = given.strip()
    if not target:
        raise ToolError(f"url is empty: give the address of the page to {verb}")
    if "://" not in target:
        target = f"https://{target}"
        notes.append(f"no scheme was given: {done} {target}")
    parts = urlsplit(target)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ToolError(f"url must be an http(s) address, got {given!r}")
    pattern = urls.from_env().blocked_by(target)
    if pattern is not None:
        raise ToolError(f"{target} is blocked by the url rule {pattern!r}: {refusal}")
    return target
