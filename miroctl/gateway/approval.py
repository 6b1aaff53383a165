"""Mode ask through a gateway: the question goes to the host whose call it holds, as an MCP elicitation.

Accept runs the tool; decline, cancel, an error answer, or no answer within policy.ask_timeout deny it with
reason mode_ask. A host that declared no elicitation capability, or whose connection has no way back, cannot
be asked: the call is denied as it is without anyone to ask.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from miroctl.core.manager import Answer, Confirmation
from miroctl.gateway.relay import MISSING_CAPABILITY, Relays

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
        with anyio.move_on_after(self.timeout):
            answer = await self.relays.ask(host, "elicitation/create", params)
            if isinstance(answer, types.ErrorData):
                if answer.code == MISSING_CAPABILITY:
                    return None
                return Answer(False, why=f"the host's answer was an error: {answer.message}")
            return _answer(answer.action)
        return Answer(False, why=f"the host gave no answer within {self.timeout:g} s")


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
