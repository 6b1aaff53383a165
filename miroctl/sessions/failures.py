"""Turning whatever went wrong with a server into a Failure: a class, a one-line reason, a hint."""

from __future__ import annotations

import signal
from urllib.parse import urlsplit

from miroctl.base.errors import AuthRequired
from miroctl.base.models import Failure, ServerSpec, Step
from miroctl.base.text import counted
from miroctl.sessions.frames import unparsable
from miroctl.sessions.oauth import auth_hint, oauth_challenge, send_token
from miroctl.sessions.processes import SpawnError
from miroctl.sessions.session import CONNECTION_CLOSED, InvalidResult, RpcError
from miroctl.sessions.session import leaf as leaf  # re-exported: its home before sessions/session.py
from miroctl.sessions.transports import MAX_MESSAGE_BYTES, OUTBOX_BYTES, Wire

UNSUPPORTED_VERSION = "Unsupported protocol version"  # the SDK's RuntimeError after initialize
INITIALIZE = Step("initialize")


def exit_description(returncode: int | None) -> str:
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def startup_failure(exc: BaseException, wire: Wire, step: Step = INITIALIZE) -> Failure:
    """Why a server could not be started, connected or initialized."""
    exc = leaf(exc)
    tail = wire.stderr_tail()
    auth = auth_failure(exc, wire, Step("connect"))
    if auth is not None:
        return auth
    if isinstance(exc, SpawnError):
        return Failure(exc.kind, str(exc), hint=exc.hint, phase="spawn", stderr_tail=tail)
    if wire.broke_framing:
        return Failure.at(
            step,
            "protocol",
            _noise_reason(wire),
            hint="a stdio server must write only JSON-RPC to stdout; logs belong on stderr",
            stderr_tail=tail,
        )
    http = _http_failure(exc, wire, step, tail)
    if http is not None:
        return http
    code = exc.code if isinstance(exc, RpcError) else None
    if wire.exited_on_its_own or (code == CONNECTION_CLOSED and _exited_unsignalled(wire)):
        return Failure.at(
            step,
            "exited",
            f"server {exit_description(wire.returncode)} before {step} finished",
            hint=_stderr_hint(tail),
            stderr_tail=tail,
        )
    if code == CONNECTION_CLOSED:
        return Failure.at(
            step,
            "exited",
            f"server closed the connection during {step}",
            hint=_stderr_hint(tail),
            stderr_tail=tail,
        )
    if isinstance(exc, RpcError):
        return _error_answer(exc, step, tail)
    if UNSUPPORTED_VERSION in str(exc):
        return unsupported_version(exc, step, tail)
    return _failed_in(exc, step, tail)


def startup_timeout(wire: Wire, seconds: float, step: Step = INITIALIZE) -> Failure:
    tail = wire.stderr_tail()
    if wire.noise_lines:
        return Failure.at(
            step,
            "protocol",
            _noise_reason(wire) + f", and no answer to {step} within {seconds:g}s",
            hint="a stdio server must write only JSON-RPC to stdout",
            stderr_tail=tail,
        )
    return Failure.at(
        step,
        "timeout",
        f"no answer to {step} within {seconds:g}s",
        hint="raise startup_timeout if the server is just slow to start",
        stderr_tail=tail,
    )


def died_during(wire: Wire, step: Step) -> Failure:
    """The server went away while a request was in flight."""
    tail = wire.stderr_tail()
    if wire.oversize or wire.flooded:
        return Failure.at(step, "protocol", _noise_reason(wire), stderr_tail=tail)
    if wire.returncode is not None:
        reason = f"server {exit_description(wire.returncode)} during {step}"
    else:
        reason = f"server closed the connection during {step}"
    return Failure.at(step, "crashed", reason, hint=_stderr_hint(tail), stderr_tail=tail)


def _endpoint_hint(status: int, wire: Wire) -> str | None:
    """For an answer that says "no such endpoint" (404, 405, 501) from a URL that does not end in /mcp or
    /sse: where MCP servers usually answer."""
    url = wire.spec.url or ""
    path = urlsplit(url).path.rstrip("/")
    if status not in (404, 405, 501) or path.endswith(("/mcp", "/sse")):
        return None
    base = url.split("?", 1)[0].rstrip("/")
    return f"not an MCP endpoint? try {base}/mcp (streamable HTTP) or {base}/sse (SSE)"


def _http_failure(exc: BaseException, wire: Wire, step: Step, tail: tuple[str, ...]) -> Failure | None:
    status = wire.http_status
    if status == 401 and _oauth_challenge(wire):
        return Failure.at(
            step,
            "auth",
            f"auth required: {auth_hint(wire.spec)}",
            hint=f"the server asks for an OAuth login (HTTP 401 from {wire.spec.url})",
        )
    if status in (401, 403):
        return Failure.at(step, "auth", _refused(status, wire), hint=_token_hint(wire.spec))
    if status is not None:
        return Failure.at(
            step,
            "http",
            f"HTTP {status} from {wire.spec.url}",
            hint=_endpoint_hint(status, wire),
        )
    name = type(exc).__name__
    if name in ("ConnectError", "ConnectTimeout"):
        return Failure(
            "http",
            f"cannot connect to {wire.spec.url}: {_one_line(exc) or 'connection refused'}",
            hint="is the server running and listening there?",
            phase="connect",
        )
    if "Timeout" in name:
        return Failure.at(step, "timeout", f"HTTP timeout talking to {wire.spec.url}")
    if name in ("RemoteProtocolError", "ReadError", "WriteError", "NetworkError"):
        return Failure.at(step, "http", f"HTTP connection to {wire.spec.url} failed: {_one_line(exc)}")
    return None


def auth_failure(exc: BaseException, wire: Wire, step: Step) -> Failure | None:
    """A login is needed: no usable token, or the SDK's OAuth flow failed (discovery, registration, token)."""
    if isinstance(exc, AuthRequired):
        return Failure.at(step, "auth", exc.message, hint=exc.hint)
    if any(cls.__name__ == "OAuthFlowError" for cls in type(exc).__mro__):  # the SDK's, not imported here
        if wire.http_status == 401 and not _oauth_challenge(wire, own_header=False):
            # The stored tokens were refused by a server that asks for no OAuth login (a login would fail the
            # same way, at its registration): it wants a token of its own.
            return Failure.at(
                step,
                "auth",
                _refused(401, wire),
                hint="the server refused the stored OAuth tokens (from miroctl auth) and asks for no OAuth login: "
                + send_token(wire.spec, "the token it expects"),
            )
        return Failure.at(
            step,
            "auth",
            f"auth required: {auth_hint(wire.spec)}",
            hint=f"OAuth failed: {_one_line(exc)[:200]}",
        )
    return None


def _oauth_challenge(wire: Wire, *, own_header: bool = True) -> bool:
    """An OAuth challenge to a client that brought no Authorization header of its own: a login would help."""
    return oauth_challenge(wire.www_authenticate) and not (own_header and _authorization(wire.spec))


def _authorization(spec: ServerSpec) -> bool:
    return any(name.lower() == "authorization" for name in spec.headers)


def _refused(status: int, wire: Wire) -> str:
    return f"HTTP {status} {'Unauthorized' if status == 401 else 'Forbidden'} from {wire.spec.url}"


def _token_hint(spec: ServerSpec) -> str:
    """What to do about a 401/403 that asks for no OAuth login: send a token, or say which one was refused."""
    if not _authorization(spec):
        return f"the server wants a token: {send_token(spec)}"
    where = "the -H option" if spec.source == "--url" else f"the headers: of {spec.source or 'the server file'}"
    return f"the server refused the Authorization header from {where}: check it holds the token the server expects"


def _noise_reason(wire: Wire) -> str:
    if wire.flooded:
        return f"server sent requests without reading the answers (over {_size(OUTBOX_BYTES)} of them waited)"
    if wire.oversize:
        return f"server wrote a line of over {_size(MAX_MESSAGE_BYTES)} to stdout without a newline"
    sample = f" (first: {wire.noise_samples[0]!r})" if wire.noise_samples else ""
    return f"server wrote {counted(wire.noise_lines, 'non-JSON line')} to stdout{sample}"


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):g} MiB" if count >= 1024 * 1024 else f"{count} bytes"


def _exited_unsignalled(wire: Wire) -> bool:
    """It closed stdout and exited with a code of its own (a loaded machine can reap it late)."""
    return wire.stdout_eof and wire.returncode is not None and wire.returncode >= 0


MISSING_MODULE = ("ModuleNotFoundError", "No module named")
MISSING_MODULE_HINT = (
    "the server's Python lacks a module: set `python:` in its server file or the profile, or MIROCTL_PYTHON, "
    "to the interpreter of the environment that has it"
)


def _stderr_hint(tail: tuple[str, ...]) -> str | None:
    if any(marker in line for line in tail for marker in MISSING_MODULE):
        return MISSING_MODULE_HINT
    return f"its stderr ends: {tail[-1]}" if tail else None


def _one_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def unsupported_version(exc: BaseException, step: Step, tail: tuple[str, ...] = ()) -> Failure:
    """The server answered the handshake with a protocol version this client does not speak."""
    version = _one_line(exc).rpartition(":")[2].strip() or "?"
    return Failure.at(
        step,
        "protocol",
        f"server answered {step} with unsupported protocol version {version}",
        hint="the server or miroctl's mcp SDK needs updating",
        stderr_tail=tail,
    )


def _failed_in(exc: BaseException, step: Step, tail: tuple[str, ...]) -> Failure:
    """Any other exception of a request: the request and the exception's first line."""
    return Failure.at(step, "crashed", f"{step} failed: {type(exc).__name__}: {_one_line(exc)}", stderr_tail=tail)


def config_failure(message: str) -> Failure:
    """A server whose file could not be turned into something startable."""
    hint = None
    if "missing environment variable" in message:
        hint = "export it or put it in ./.env"
    elif "bad yaml" in message:
        hint = "fix the yaml at that line"
    return Failure("config", message, hint=hint, phase="config")


def after_initialize(exc: BaseException, wire: Wire, step: Step) -> Failure:
    """A request failed once the session was up; `wire` is read after the session was closed."""
    exc = leaf(exc)
    tail = wire.stderr_tail()
    code = exc.code if isinstance(exc, RpcError) else None
    auth = auth_failure(exc, wire, step)
    if auth is not None:
        return auth
    if wire.broke_framing:
        return Failure.at(
            step,
            "protocol",
            _noise_reason(wire),
            stderr_tail=tail,
            hint="a stdio server must write only JSON-RPC to stdout; logs belong on stderr",
        )
    if wire.returncode is not None and (wire.exited_on_its_own or code == CONNECTION_CLOSED):
        return Failure.at(
            step,
            "exited",
            f"server {exit_description(wire.returncode)} after initialize, during {step}",
            hint=_stderr_hint(tail),
            stderr_tail=tail,
        )
    http = _http_failure(exc, wire, step, tail)
    if http is not None:
        return http
    if isinstance(exc, InvalidResult):
        return Failure.at(
            step,
            "protocol",
            f"the answer to {step} does not fit the protocol: {_one_line(exc)}",
            stderr_tail=tail,
        )
    if code == CONNECTION_CLOSED or isinstance(exc, (ConnectionError, EOFError)):
        return Failure.at(
            step,
            "crashed",
            f"server closed the connection during {step}",
            hint=_stderr_hint(tail),
            stderr_tail=tail,
        )
    if isinstance(exc, RpcError):
        return _error_answer(exc, step, tail)
    return _failed_in(exc, step, tail)


def _error_answer(exc: RpcError, step: Step, tail: tuple[str, ...]) -> Failure:
    """A request answered with a JSON-RPC error (or an answer that could not be parsed)."""
    code, message = exc.code, exc.message
    cause = unparsable(code, message)
    if cause is not None:
        return Failure.at(
            step,
            "protocol",
            f"the answer to {step} could not be parsed: {cause}",
            stderr_tail=tail,
        )
    return Failure.at(
        step,
        "protocol",
        f"{step} failed: {_one_line(message)} (error {code})",
        stderr_tail=tail,
    )


def stdout_noise(wire: Wire | None, step: Step) -> Failure | None:
    """A working server that still wrote non-JSON to stdout: other clients break on that."""
    if wire is None or not wire.broke_framing:
        return None
    return Failure.at(
        step,
        "protocol",
        _noise_reason(wire),
        stderr_tail=wire.stderr_tail(),
        hint="a stdio server must write only JSON-RPC to stdout; logs belong on stderr",
    )
