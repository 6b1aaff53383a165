"""The E2B backend: sandboxes are E2B cloud VMs (used when E2B_API_KEY is set; `pip install 'miroctl[e2b]'`).

The `e2b_code_interpreter` package is imported only here, when the backend is used. Each call
reconnects to the sandbox by id and extends its lifetime, as the seeds' server does. As there,
creating a sandbox is tried up to 5 times and a run up to 3 times, waiting SANDBOX_RETRY_DELAY
times the attempt number squared between tries (SANDBOX_RETRIES changes the counts' base: 5 and 3).
A run that timed out is not tried again. E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL are read by
the SDK itself.
"""

from __future__ import annotations

import posixpath
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from .common import cut_middle, number_setting, setting
from .sandbox_run import Limits, Run

E2B_HOME = "/home/user"


class E2BSandboxes:
    """Sandboxes in E2B's cloud; a handle is a connected `Sandbox` object."""

    name = "e2b"

    def __init__(self, api_key: str, lifetime: float, retries: int = 5, delay: float = 1.0) -> None:
        self.api_key = api_key
        self.lifetime = lifetime
        self.create_attempts = max(1, retries)
        self.run_attempts = max(1, retries - 2)
        self.delay = delay

    @classmethod
    def from_env(cls) -> E2BSandboxes:
        key = setting("E2B_API_KEY")
        if key is None:
            raise ToolError("SANDBOX_BACKEND is e2b but E2B_API_KEY is not set")
        return cls(
            key,
            number_setting("SANDBOX_LIFETIME", 600.0, minimum=30),
            int(number_setting("SANDBOX_RETRIES", 5, minimum=1)),
            number_setting("SANDBOX_RETRY_DELAY", 1.0, minimum=0.0),
        )

    def _retried(self, attempts: int, what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        """sdk_call, tried `attempts` times with growing waits (as the seeds do).

        Not tried again: a run that timed out, and a command that ran and exited non-zero.
        """
        for attempt in range(1, attempts + 1):
            try:
                return sdk_call(what, function, *args, **kwargs)
            except SDKFailure as failure:
                final = (
                    "Timeout" in type(failure.cause).__name__ or getattr(failure.cause, "exit_code", None) is not None
                )
                if final:
                    raise
                if attempt == attempts:
                    if attempts > 1:
                        raise SDKFailure(f"{failure} (after {attempt} attempts)", failure.cause) from None
                    raise
                time.sleep(self.delay * attempt**2)
        raise AssertionError("unreachable")

    def _sandbox_class(self) -> Any:
        try:
            from e2b_code_interpreter import Sandbox
        except ImportError:
            raise ToolError(
                "E2B_API_KEY is set but the E2B client is not installed: pip install 'miroctl[e2b]' "
                "(or set SANDBOX_BACKEND=local)"
            ) from None
        return Sandbox

    def _new(self, timeout: int | None = None) -> Any:
        sandbox_class = self._sandbox_class()
        lifetime = int(timeout or self.lifetime)
        what = "E2B could not create a sandbox"
        return self._retried(self.create_attempts, what, sandbox_class.create, timeout=lifetime, api_key=self.api_key)

    def create(self, timeout: int | None = None) -> str:
        return str(self._new(timeout).sandbox_id)

    def find(self, sandbox_id: str) -> Any | None:
        """The connected sandbox, or None when E2B does not know the id (or it has expired)."""
        sandbox_class = self._sandbox_class()
        try:
            sandbox = sdk_call("", sandbox_class.connect, sandbox_id, api_key=self.api_key)
            sdk_call("", sandbox.set_timeout, int(self.lifetime))
        except SDKFailure:
            return None
        return sandbox

    def run_command(self, sandbox: Any, command: str, limits: Limits) -> Run:
        started = time.monotonic()
        try:
            done = self._retried(
                self.run_attempts, "E2B failed to run it", sandbox.commands.run, command, timeout=limits.timeout
            )
        except SDKFailure as failure:  # a non-zero exit raises CommandExitException, carrying the output
            return _failed_command(failure, started, limits)
        return _run(done.exit_code, done.stdout, done.stderr, started, limits)

    def run_python(self, sandbox: Any | None, code: str, limits: Limits) -> Run:
        one_shot = sandbox is None
        box = self._new() if sandbox is None else sandbox
        started = time.monotonic()
        try:
            execution = self._retried(
                self.run_attempts, "E2B failed to run it", box.run_code, code, timeout=limits.timeout
            )
        except SDKFailure as failure:
            return _run(None, "", "", started, limits, killed=str(failure))
        finally:
            if one_shot:  # best effort: a cloud sandbox left behind expires on its own
                with suppress(SDKFailure):
                    sdk_call("", box.kill)
        return _execution(execution, started, limits)

    def upload(self, sandbox: Any, local: Path, destination: str) -> str:
        path = posixpath.join(destination.strip() or E2B_HOME, local.name)
        with open(local, "rb") as handle:
            sdk_call(f"E2B could not write {path}", sandbox.files.write, path, handle)
        return path

    def write(self, sandbox: Any, path: str, data: bytes) -> str:
        """Write bytes to a file in the sandbox (a relative path is under /home/user)."""
        full = posixpath.normpath(posixpath.join(E2B_HOME, path.strip()))
        sdk_call(f"E2B could not write {full}", sandbox.files.write, full, data)
        return full

    def download(self, sandbox: Any, path: str, destination: Path) -> Path:
        data = sdk_call(f"cannot read {path} in the sandbox", sandbox.files.read, path, format="bytes")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(bytes(data))
        return destination


class SDKFailure(ToolError):
    """An E2B SDK call failed; `cause` is the SDK's exception."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def sdk_call(what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the E2B SDK; its failures (which share no base class) become one clear tool error."""
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the SDK raises its own, httpx's and OS errors alike
        raise SDKFailure(f"{what}: {_first_line(exc)}", exc) from None


def _execution(execution: Any, started: float, limits: Limits) -> Run:
    stdout = "".join(execution.logs.stdout or [])
    stderr = "".join(execution.logs.stderr or [])
    if getattr(execution, "text", None):  # the value of the last expression, as in a notebook
        stdout += ("" if not stdout or stdout.endswith("\n") else "\n") + str(execution.text)
    error = execution.error
    if error is not None:
        stderr += f"{error.name}: {error.value}\n{error.traceback or ''}"
    return _run(1 if error is not None else 0, stdout, stderr, started, limits)


def _failed_command(failure: SDKFailure, started: float, limits: Limits) -> Run:
    exc = failure.cause
    code = getattr(exc, "exit_code", None)
    if code is None:
        return _run(None, "", "", started, limits, killed=str(failure))
    return _run(code, getattr(exc, "stdout", "") or "", getattr(exc, "stderr", "") or "", started, limits)


def _run(code: int | None, stdout: str, stderr: str, started: float, limits: Limits, killed: str | None = None) -> Run:
    out, cut_out = cut_middle(stdout or "", limits.output_bytes)
    err, cut_err = cut_middle(stderr or "", limits.output_bytes)
    run = Run(code, out, err, time.monotonic() - started, killed, cut_out + cut_err)
    if run.cut_bytes:
        run.notes.append(f"{run.cut_bytes:,} characters of output were cut (the first and last parts are kept)")
    return run


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
