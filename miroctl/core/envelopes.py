"""Building call envelopes (CallOutcome) for every way a call can end, and their call-log summaries."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from miroctl.base.models import CallOutcome, DecisionRecord
from miroctl.base.text import correction_note

if TYPE_CHECKING:
    from miroctl.base.models import CallRequest
    from miroctl.core.routing import Route
    from miroctl.policy.decisions import Decision
    from miroctl.sessions.pool import Unavailable


def outcome_from_result(server: str, tool: str, result: dict[str, object]) -> CallOutcome:
    """A CallToolResult (as JSON) as the envelope: text joined, blocks and structured content kept."""
    content = result.get("content")
    blocks = [_block(block) for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    texts = [text for b in blocks if b.get("type") == "text" and isinstance(text := b.get("text"), str)]
    texts += [
        text
        for b in blocks
        if b.get("type") == "resource"
        and isinstance(resource := b.get("resource"), dict)
        and isinstance(text := resource.get("text"), str)
    ]
    structured = result.get("structuredContent")
    text = "\n".join(texts)
    if not texts and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    is_error = bool(result.get("isError"))
    outcome = CallOutcome(server, tool, content=blocks, structured_content=structured, is_error=is_error)
    if is_error:
        outcome.error, outcome.error_kind = text or "the tool reported an error without a message", "tool_error"
    else:
        outcome.result = text
    return outcome


def _block(block: dict[str, object]) -> dict[str, object]:
    """A content block as scripts see it whichever client read it: `type` first, no null members."""
    return {"type": block.get("type"), **{key: value for key, value in block.items() if value is not None}}


def raw_arguments(request: CallRequest) -> dict[str, object]:
    """The arguments as given (pairs as text), for the log and the URL rules before any routing."""
    values = dict(request.arguments)
    for pair in request.pairs:
        key, _, text = pair.partition("=")
        values[key.removesuffix(":")] = text
    return values


def text_result(text: str) -> dict[str, object]:
    """A plain text answer (the fallback's) as a CallToolResult, so --output and limits treat it alike."""
    return {"content": [{"type": "text", "text": text}]}


def decision_record(decision: Decision) -> DecisionRecord:
    """The policy's decision as the envelope records it."""
    return DecisionRecord(decision.allowed, decision.state, decision.reason, decision.message, decision.confirmed_by)


def denied(server: str | None, tool: str, decision: Decision, unanswered: bool = False) -> CallOutcome:
    hint = f"reason: {decision.reason}"
    if decision.reason == "mode_ask" and unanswered:
        hint += "; answer the prompt on a terminal, or pass --yes (policy.assume_yes in the profile)"
    return CallOutcome(
        server, tool, error=decision.message, error_kind="denied", hint=hint, decision=decision_record(decision)
    )


def log_summary(outcome: CallOutcome) -> tuple[str, dict[str, object]]:
    """The call log's last line of a call: call_success or call_error, without the result itself."""
    fields: dict[str, object] = {
        "server": outcome.server_name,
        "tool": outcome.tool_name,
        "duration_ms": round(outcome.duration_ms, 1),
        "exit_code": int(outcome.exit_code),
    }
    if outcome.corrected_from is not None:
        fields["corrected_from"] = outcome.corrected_from
    for key, record in (("truncated", outcome.truncated), ("fallback", outcome.fallback), ("output", outcome.output)):
        if record is not None:
            fields[key] = record.to_dict()
    if outcome.ok:
        return "call_success", {**fields, "result_chars": len(outcome.result or "")}
    return "call_error", {**fields, "error_kind": outcome.error_kind, "error": outcome.error}


def mark_correction(outcome: CallOutcome, route: Route, given_exists: bool) -> None:
    """A call sent to another server than the one named says so as the seeds do: its result starts with the note."""
    if route.corrected_from is None:
        return
    outcome.corrected_from = route.corrected_from
    outcome.correction = correction_note(route.corrected_from, route.tool.name, route.spec.name, given_exists)
    if outcome.ok:
        outcome.result = f"{outcome.correction} {outcome.result or ''}"


def says_unknown_tool(outcome: CallOutcome) -> bool:
    return outcome.is_error and "Unknown tool:" in (outcome.error or "")


def timed_out(route: Route, timeout: float) -> CallOutcome:
    return CallOutcome(
        route.spec.name,
        route.tool.name,
        error_kind="timeout",
        corrected_from=route.corrected_from,
        error=f"{route.tool.name} did not answer within {timeout:g}s",
        hint="raise it with --timeout, or the server's timeout setting",
    )


def unavailable(server: str | None, tool: str, exc: Unavailable) -> CallOutcome:
    failure = exc.failure
    return CallOutcome(
        server, tool, error=failure.message, error_kind=failure.error_kind, hint=failure.hint, failure=failure
    )
