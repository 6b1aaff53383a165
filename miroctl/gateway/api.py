"""The gateway's JSON API: the documents behind POST /v1/call, /v1/list and /v1/batch.

Each answers what the direct command would print with --json, so `miroctl call --via URL` gives
the same envelope and exit code as `miroctl call`. A request the API cannot accept raises
UsageError (HTTP 400, exit 2), like a bad command line.
"""

from __future__ import annotations

from typing import Any

from miroctl.base import errors, models
from miroctl.base.errors import ConfigError, MiroctlError
from miroctl.base.models import CallRequest, ServerSpec
from miroctl.base.text import suggest
from miroctl.core import arguments as args_
from miroctl.core.arguments import split_target
from miroctl.core.bodies import Body
from miroctl.gateway.server import Gateway

CALL_KEYS = {"server", "tool", "target", "arguments", "pairs", "timeout", "autocorrect"}


def call_request(data: Any, gateway: Gateway) -> CallRequest:
    """A CallRequest from {server, tool | target, arguments, pairs, timeout, autocorrect}."""
    body = Body(data, CALL_KEYS, "the call")
    if "target" in body:
        server, tool, pairs = split_target(body.strings("target"), gateway.manager.config)
    else:
        server, tool, pairs = body.string("server"), body.tool(), []
    return CallRequest(
        server,
        tool,
        body.mapping("arguments"),
        [*pairs, *body.strings("pairs")],
        timeout=body.seconds("timeout"),
        autocorrect=body.flag("autocorrect", True),
    )


async def call_document(body: Any, gateway: Gateway) -> dict[str, Any]:
    """POST /v1/call: the envelope of `call --json`, secrets masked."""
    request = call_request(body, gateway)
    for pair in request.pairs:
        args_.split_pair(pair)
    outcome = await gateway.call(request)
    return gateway.masker.data(outcome.to_dict())


async def list_document(body: Any, gateway: Gateway) -> dict[str, Any]:
    """POST /v1/list: the document of `list --json` for the named servers (default: all served)."""
    names = Body({} if body is None else body, {"servers"}, "the list").strings("servers")
    specs = [served(name, gateway) for name in names] or gateway.specs
    entries = await gateway.manager.list_tools(specs)
    return gateway.masker.data(models.list_document(gateway.manager.config.source, entries))


def served(name: str, gateway: Gateway) -> ServerSpec:
    """A served server by name; the same error as `list` gives for an unknown one."""
    spec = gateway.spec(name)
    if spec is None:
        raise ConfigError(f"no server named {name!r}", hint=suggest(name, [s.name for s in gateway.specs]))
    return spec


def error_document(exc: MiroctlError) -> dict[str, Any]:
    """A request the API refused: the reason, the hint and the exit code the CLI would use."""
    return errors.error_document(exc.message, exc.kind, exc.hint, exc.exit_code)
