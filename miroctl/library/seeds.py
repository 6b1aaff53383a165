"""The seeds' shapes: tool definitions for a prompt, and a call's result or error as MiroFlow's agents read it.

Agents read `server_name` and `tool_name` with `[]` from every result, print each `schema` in a prompt and
extend the definitions list with `+=`: every document here is made of plain dicts, lists and strings, new
for each caller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from miroctl.base.escaping import visible
from miroctl.base.models import CallOutcome, Failure, ServerTools
from miroctl.base.text import correction_note
from miroctl.config.loader import Config

STDERR_SHOWN = 300  # characters of a failed server's last stderr line in its reason
PARSE_FAILURE = "Failed to parse arguments"  # what MiroFlow's parser puts in `arguments` for broken JSON


def definitions(entries: list[ServerTools]) -> list[dict[str, object]]:
    """`[{"name": server, "tools": [{"name", "description", "schema"}, ...]}, ...]`; a server that could not
    start or list has one entry `{"error": reason}` in place of its tools."""
    listed: list[dict[str, object]] = []
    for entry in entries:
        if entry.failure is not None:
            tools: list[dict[str, object]] = [{"error": reason(entry.failure)}]
        else:
            tools = [
                {"name": tool.name, "description": tool.description, "schema": plain(tool.input_schema)}
                for tool in entry.tools
            ]
        listed.append({"name": entry.server, "tools": tools})
    return listed


def reason(failure: Failure) -> str:
    """A server's failure in one line, as a call's error gives it: the message, the last line of the server's
    stderr (a server that dies on start says why there: an import error, a missing key), and the hint."""
    return explained(failure.message, failure, failure.hint)


def explained(message: str, failure: Failure | None, hint: str | None) -> str:
    """`message`, then the last line of the server's stderr unless the hint quotes it, then the hint when it
    is advice for the caller rather than a command line to type."""
    last = next((line.strip() for line in reversed(failure.stderr_tail) if line.strip()), "") if failure else ""
    if last and last not in message and not (hint and last in hint):
        shown = last if len(last) <= STDERR_SHOWN else last[:STDERR_SHOWN] + "..."
        message = f"{message} (its stderr ends: {visible(shown)})"
    if hint and "miroctl" not in hint and "--" not in hint:
        return f"{message} ({hint})"
    return message


def plain(value: object) -> Any:
    """A JSON value made of plain dicts and lists (a schema as printed in a prompt, mutable by its reader)."""
    result: object = json.loads(json.dumps(value, default=_mapping))
    return result


def _mapping(value: object) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def bad_arguments(arguments: object) -> str | None:
    """Why `arguments` cannot be sent: the model's JSON did not parse, or they are not a mapping."""
    if isinstance(arguments, Mapping):
        if set(arguments) == {"error", "raw"} and arguments.get("error") == PARSE_FAILURE:
            raw = str(arguments.get("raw"))
            shown = raw if len(raw) <= 200 else raw[:200] + "..."
            return f"the tool's arguments are not valid JSON, so nothing was sent; they were: {shown}"
        return None
    if arguments is None:
        return None
    return f"the tool's arguments must be a JSON object, got {type(arguments).__name__}; nothing was sent"


def failed(server: str, tool: str, error: str) -> dict[str, object]:
    return {"server_name": server, "tool_name": tool, "error": error}


def result_of(outcome: CallOutcome, asked_server: str, config: Config) -> dict[str, object]:
    """`{"server_name", "tool_name", "result"}` or `{..., "error"}`, with the seeds' `[Auto-corrected: ...]`
    note first when the call went to another server than the one named."""
    server = outcome.server_name or asked_server
    body: dict[str, object] = {"server_name": server, "tool_name": outcome.tool_name}
    corrected = outcome.corrected_from is not None and server != asked_server
    if outcome.error is None:
        note = outcome.correction or ""  # the envelope's result starts with it already
        text = (outcome.result or "").removeprefix(f"{note} ") if note else outcome.result or ""
        if not note and _by_alias(asked_server, server, config):
            note = correction_note(asked_server, outcome.tool_name, server)
        body["result"] = (f"{note} " if note else "") + _text(outcome, text)
    else:
        missing = config.get(asked_server) is not None
        corrected = corrected or _by_alias(asked_server, server, config)
        note = correction_note(asked_server, outcome.tool_name, server, missing, failed=True) if corrected else ""
        body["error"] = (f"{note} " if note else "") + _error(outcome)
    return body


def noted(body: dict[str, object], note: str) -> dict[str, object]:
    """The result (or error) with miroctl's note first, in brackets as the seeds' notes are: the model reads it."""
    key = "result" if "result" in body else "error"
    body[key] = f"[miroctl: {note}] {body[key]}"
    return body


def _by_alias(asked: str, used: str, config: Config) -> bool:
    """`reading` reached `tool-reading` (miroctl's short name): the seeds know no such name, so their agents
    get the note that teaches the model the server's real name."""
    return used != asked and not any(spec.name == asked for spec in config.servers)


def _text(outcome: CallOutcome, text: str) -> str:
    """The result's text; an empty one says so, as the seeds do (an agent's model reads it)."""
    if text.strip():
        return text
    tool = outcome.tool_name
    if not outcome.content:
        return f"Tool '{tool}' completed but returned no content - this may be expected or indicate an issue"
    return f"Tool '{tool}' completed but returned empty text - this may be expected or indicate an issue"


def _error(outcome: CallOutcome) -> str:
    """The reason, with the server's last stderr line and the hint (see `explained`)."""
    return explained(outcome.error or "the call failed", outcome.failure, outcome.hint)
