"""The gateway's JSON API: the documents behind POST /v1/call, /v1/list and /v1/batch.

Each answers what the direct command would print with --json, so `miroctl call --via URL` gives
the same envelope and exit code as `miroctl call`. A request the API cannot accept raises
UsageError (HTTP 400, exit 2), like a bad command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from miroctl.base.errors import ConfigError, MiroctlError, UsageError
from miroctl.base.models import CallRequest
from miroctl.base.text import suggest
from miroctl.core import arguments as args_
from miroctl.core.arguments import split_target
from miroctl.gateway.server import Gateway

CALL_KEYS = {"server", "tool", "target", "arguments", "pairs", "timeout", "autocorrect"}


def call_request(body: Any, gateway: Gateway) -> CallRequest:
    """A CallRequest from {server, tool | target, arguments, pairs, timeout, autocorrect}."""
    if not isinstance(body, Mapping):
        raise UsageError("the request body must be a JSON object")
    unknown = sorted(set(body) - CALL_KEYS)
    if unknown:
        raise UsageError(
            f"unknown keys in the call: {', '.join(unknown)}", hint=f"known: {', '.join(sorted(CALL_KEYS))}"
        )
    server, tool, pairs = _target(body, gateway)
    arguments = body.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise UsageError("arguments must be a JSON object")
    return CallRequest(
        server,
        tool,
        dict(arguments),
        [*pairs, *_strings(body, "pairs")],
        timeout=_timeout(body.get("timeout")),
        autocorrect=body.get("autocorrect", True) is not False,
    )


def _target(body: Mapping[str, Any], gateway: Gateway) -> tuple[str | None, str, list[str]]:
    if "target" in body:
        return split_target(_strings(body, "target"), gateway.manager.config)
    tool, server = body.get("tool"), body.get("server")
    if not isinstance(tool, str) or not tool:
        raise UsageError("the call needs a tool (a string)")
    if server is not None and not isinstance(server, str):
        raise UsageError("server must be a string")
    return server or None, tool, []


def _strings(body: Mapping[str, Any], key: str) -> list[str]:
    value = body.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{key} must be a list of strings")
    return value


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise UsageError("timeout must be a positive number of seconds")
    return float(value)


async def call_document(body: Any, gateway: Gateway) -> dict[str, Any]:
    """POST /v1/call: the envelope of `call --json`, secrets masked."""
    request = call_request(body, gateway)
    for pair in request.pairs:
        args_.split_pair(pair)
    outcome = await gateway.call(request)
    return gateway.masker.data(outcome.to_dict())


async def list_document(body: Any, gateway: Gateway) -> dict[str, Any]:
    """POST /v1/list: the document of `list --json` for the named servers (default: all served)."""
    names = _strings(body, "servers") if isinstance(body, Mapping) else []
    if body is not None and not isinstance(body, Mapping):
        raise UsageError("the request body must be a JSON object")
    specs = [_served(name, gateway) for name in names] or gateway.specs
    entries = await gateway.manager.list_tools(specs)
    document = {
        "schema": "miroctl.list/1",
        "config": gateway.manager.config.source,
        "servers": [entry.to_dict() for entry in entries],
    }
    return gateway.masker.data(document)


def _served(name: str, gateway: Gateway) -> Any:
    """A served server by name; the same error as `list` gives for an unknown one."""
    spec = gateway.spec(name)
    if spec is None:
        raise ConfigError(f"no server named {name!r}", hint=suggest(name, [s.name for s in gateway.specs]))
    return spec


def error_document(exc: MiroctlError) -> dict[str, Any]:
    """A request the API refused: the reason, the hint and the exit code the CLI would use."""
    return {
        "schema": "miroctl.error/1",
        "error": exc.message,
        "error_kind": exc.kind,
        "hint": exc.hint,
        "exit_code": int(exc.exit_code),
    }
