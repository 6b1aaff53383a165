"""Mode ask through a gateway: the question goes to the host whose call it holds, as an MCP elicitation.

Accept runs the tool; decline, cancel, an error answer, or no answer within policy.ask_timeout deny it with
reason mode_ask. A host that declared no elicitation capability, or whose connection has no way back, cannot
be asked: the call is denied as it is without anyone to ask. A host on 2026-07-28 is asked through an
input_required result (the call is answered with the question, and the host calls again with its answer);
the question's key holds a digest of the call, so an answer counts only for the call it was asked about.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import anyio

from miroctl.core.manager import Answer, Confirmation
from miroctl.gateway.relay import MISSING_CAPABILITY, HostCall, Relays

MAX_ARGUMENTS_CHARS = 2000  # of the arguments' JSON in the question
# Nothing to fill in: accepting the form is the yes.
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class HostApproval:
    """The gateway's confirm callback (Manager.confirm): mode ask's question, elicited from the calling host."""

    def __init__(self, relays: Relays, timeout: float) -> None:
        self.relays = relays
        self.timeout = timeout

    async def __call__(self, question: Confirmation) -> Answer | None:
        import mcp_types as types

        host = self.relays.current()
        if host is None:  # not an MCP host's call (the JSON API): no one to ask
            return None
        params = types.ElicitRequestFormParams(message=message(question), requested_schema=SCHEMA)
        if host.modern:
            return _in_rounds(host, params)
        with anyio.move_on_after(self.timeout):
            answer = await self.relays.ask(host, "elicitation/create", params)
            if isinstance(answer, types.ErrorData):
                if answer.code == MISSING_CAPABILITY:
                    return None
                return Answer(False, why=f"the host's answer was an error: {answer.message}")
            return _answer(answer.action)
        return Answer(False, why=f"the host gave no answer within {self.timeout:g} s")


def _in_rounds(host: HostCall, params: Any) -> Answer | None:
    """2026-07-28: the host's answer from its retry, or the question queued for an input_required result."""
    import mcp_types as types

    body = json.dumps(params.model_dump(mode="json", by_alias=True), sort_keys=True)
    key = "miroctl-approval-" + hashlib.sha256(body.encode()).hexdigest()[:16]
    answer = host.responses.get(key)
    if isinstance(answer, types.ElicitResult):
        return _answer(answer.action)
    if answer is not None:
        return Answer(False, why="the host's answer was not an elicitation result")
    if not host.session.check_client_capability(types.ClientCapabilities.model_validate({"elicitation": {}})):
        return None
    host.requests[key] = types.ElicitRequest(params=params)
    return Answer(False, why="the host is asked first (input_required)")


def _answer(action: str) -> Answer:
    if action == "accept":
        return Answer(True, by="host")
    return Answer(False, why="the host declined" if action == "decline" else "the host cancelled")


def message(question: Confirmation) -> str:
    """What the host shows its user: the tool, why it needs a yes, and the (masked) arguments."""
    where = f"{question.server}.{question.tool}"
    arguments = json.dumps(dict(question.arguments), ensure_ascii=False, default=str)
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        arguments = arguments[:MAX_ARGUMENTS_CHARS] + f"... ({len(arguments)} characters)"
    return f"Allow {where} to run? {question.decision.message}.\nArguments: {arguments}"
