"""The gateway's JSON API: the documents behind POST /v1/call, /v1/list and /v1/batch.

Each answers what the direct command would print with --json, so `miroctl call --via URL` gives
the same envelope and exit code as `miroctl call`. A request the API cannot accept raises
UsageError (HTTP 400, exit 2), like a bad command line.
"""

from __future__ import annotations

from dataclasses import replace

from miroctl.base import errors, models
from miroctl.base.errors import MiroctlError, NotFound, UsageError
from miroctl.base.fetched import Fetched
from miroctl.base.models import CallRequest, ServerSpec
from miroctl.base.text import unknown_server_hint
from miroctl.core import arguments as args_
from miroctl.core import catalog
from miroctl.core.arguments import split_target
from miroctl.core.bodies import Body
from miroctl.gateway.passthrough import unwrap
from miroctl.gateway.server import Gateway

CALL_KEYS = {"server", "tool", "target", "arguments", "pairs", "timeout", "autocorrect", "task_id"}


def call_request(data: object, gateway: Gateway) -> CallRequest:
    """A CallRequest from {server, tool | target, arguments, pairs, timeout, autocorrect} (and task_id, which
    `call_task` reads)."""
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


def call_task(data: object) -> str | None:
    """The call's task id (`task_id`, what `call --task-id` sends), or None."""
    return Body(data, CALL_KEYS, "the call").string("task_id")


async def call_document(body: object, gateway: Gateway) -> dict[str, object]:
    """POST /v1/call: the envelope of `call --json`, secrets masked."""
    request = call_request(body, gateway)
    shows = f"miroctl list {request.server} {request.tool}" if request.server and request.tool else None
    for pair in request.pairs:
        args_.split_pair(pair, shows=shows)
    outcome = await gateway.call(request, task_id=call_task(body))
    return gateway.masker.data(outcome.to_dict())


async def list_document(body: object, gateway: Gateway) -> dict[str, object]:
    """POST /v1/list: the document of `list --json` for the named servers (default: all served), or with
    `target` (the words of `list SERVER TOOL`, `list SERVER.TOOL`, or servers) for what those words name."""
    fields = Body({} if body is None else body, {"servers", "target"}, "the list")
    names, tool = fields.strings("servers"), None
    if "target" in fields.data:
        names, tool = args_.list_target(fields.strings("target"), gateway.manager.config)
    specs = [served(name, gateway) for name in names] or gateway.specs
    entries = await gateway.manager.list_tools(specs)
    if tool is not None:
        entries = [args_.only_tool(entry, tool) for entry in entries]
    return gateway.masker.data(models.list_document(gateway.manager.config.source, entries))


def served(name: str, gateway: Gateway) -> ServerSpec:
    """A served server by name; the same error as `list` gives for an unknown one."""
    spec = gateway.spec(name)
    if spec is None:
        raise NotFound(f"no server named {name!r}", hint=unknown_server_hint(name, (s.name for s in gateway.specs)))
    return spec


async def read_document(body: object, gateway: Gateway) -> dict[str, object]:
    """POST /v1/read: the envelope of `read --json` ({target: [SERVER] URI, timeout}), under the gateway's policy."""
    fields = Body(body, {"target", "timeout"}, "the read")
    target = fields.strings("target")
    if not 1 <= len(target) <= 2:
        raise UsageError("read takes SERVER and URI (SERVER may be left out when there is only one)")
    parts = unwrap(target[0]) if len(target) == 1 else None
    if parts is not None:  # a gateway URI, as hosts see them
        server, uri = gateway.catalog.by_prefix.get(parts[0], parts[0]), parts[1]
    else:
        server, uri = (target[0], target[1]) if len(target) == 2 else (_only_server(gateway, "read"), target[0])
    spec = gateway.spec(server)
    if spec is not None and not gateway.catalog.allowed(spec, uri):
        fetched = _denied(Fetched(spec.name, "resource", uri))
    else:
        fetched = await catalog.read_resource(_ServedOnly(gateway), server, uri, fields.seconds("timeout"))
    return gateway.masker.data(fetched.to_dict())


async def prompt_document(body: object, gateway: Gateway) -> dict[str, object]:
    """POST /v1/prompt: the envelope of `prompt --json` ({words: [SERVER] NAME [k=v ...], timeout})."""
    fields = Body(body, {"words", "timeout"}, "the prompt")
    server, name, pairs = _prompt_words(gateway, fields.strings("words"))
    arguments = {key: value for key, value, _ in map(args_.split_pair, pairs)}
    spec = gateway.spec(server)
    if spec is not None and not gateway.catalog.allowed(spec, name):
        fetched = _denied(Fetched(spec.name, "prompt", name))
    else:
        fetched = await catalog.get_prompt(_ServedOnly(gateway), server, name, arguments, fields.seconds("timeout"))
    return gateway.masker.data(fetched.to_dict())


def _denied(asked: Fetched) -> Fetched:
    asked.error, asked.error_kind = (
        f"{asked.server_name}: {asked.what} {asked.name!r} is denied by the policy",
        "denied",
    )
    return asked


class _ServedOnly:
    """The gateway's sessions, seen through a config that holds only the served servers."""

    def __init__(self, gateway: Gateway) -> None:
        specs = tuple(gateway.specs)
        self.config = replace(gateway.manager.config, servers=specs, default_names=tuple(s.name for s in specs))
        self.handle = gateway.manager.handle


def _only_server(gateway: Gateway, command: str) -> str:
    if len(gateway.specs) == 1:
        return gateway.specs[0].name
    raise UsageError(
        f"{command} needs a server name: the gateway serves {len(gateway.specs)} servers",
        hint=f"miroctl {command} SERVER ... --via URL; miroctl list --via URL shows them",
    )


def _prompt_words(gateway: Gateway, words: list[str]) -> tuple[str, str, list[str]]:
    """SERVER NAME [k=v...], or NAME [k=v...] when the gateway serves one server and the first word is not it."""
    if not words:
        raise UsageError("prompt takes SERVER and NAME, then key=value pairs")
    if len(gateway.specs) == 1 and gateway.spec(words[0]) is None and "=" not in words[0]:
        return gateway.specs[0].name, words[0], words[1:]
    if len(words) < 2 or "=" in words[0] or "=" in words[1]:
        raise UsageError(
            "prompt takes SERVER and NAME, then key=value pairs", hint="SERVER may be left out when there is one"
        )
    return words[0], words[1], words[2:]


def error_document(exc: MiroctlError) -> dict[str, object]:
    """A request the API refused: the reason, the hint and the exit code the CLI would use."""
    return errors.error_document(exc.message, exc.kind, exc.hint, exc.exit_code)
