"""One line a server wrote, as a JSON-RPC message: strictly when possible, leniently when safe, and never a
silent drop of an answer someone is waiting for.

The SDK's parser rejects some lines that real servers write: a lone UTF-16 surrogate (JavaScript writes
one for a cut emoji), nesting deeper than it allows, a line cut short. A lone surrogate is decoded
leniently (as U+FFFD). Any other line that is shaped like an answer (it has a top-level `id` and no
`method`) becomes a JSON-RPC error for that id, so the pending request fails at once with the cause
instead of waiting out its timeout. Whatever is left is not JSON-RPC: the caller counts it as noise.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # types only: the lean client's reading never imports the SDK
    from mcp_types import JSONRPCMessage
    from pydantic import ValidationError

    from miroctl.base.jsontypes import JSONValue

UNPARSABLE = -32700  # JSON-RPC's "Parse error"
UNPARSABLE_PREFIX = "the server's answer could not be parsed: "
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]', re.DOTALL)
_VALUE = re.compile(r'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_line(line: str | bytes) -> JSONRPCMessage | None:
    """The JSON-RPC message of one line, a synthesized error for an unreadable answer, or None (noise). Bytes
    are parsed as they are (UTF-8, as JSON is); only a line the strict parser refuses is decoded, leniently.
    The line becomes Python objects first and is checked against the SDK's types as those: the types' own
    JSON reading holds a long text four times over (its parsed tree, then the Python strings), this once."""
    import mcp_types
    from pydantic import ValidationError
    from pydantic_core import from_json  # noqa: PLC0415 - as in parse_plain: only a reading of a line pays it

    try:
        data = from_json(line)
    except ValueError as exc:
        cause, invalid_json = str(exc).removeprefix("Invalid JSON: "), True
    else:
        try:
            return mcp_types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        except ValidationError as exc:
            cause, invalid_json = _cause(exc), False
        del data
    text = as_text(line)
    lenient = _lenient(text) if invalid_json else None
    if lenient is not None:
        return lenient
    ident = answer_id(text)
    if ident is None:
        return None
    error = {"code": UNPARSABLE, "message": UNPARSABLE_PREFIX + cause}
    return mcp_types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", "id": ident, "error": error})


def parse_plain(line: str | bytes) -> dict[str, object] | None:
    """parse_line without the SDK's types (the lean client's): the same JSON parser (pydantic-core's, so the
    same nesting limit and the same words for a cause), the same lenient second reading, the message as a
    dict; a synthesized error for an unreadable answer, or None (noise). Members are not checked. Bytes are
    parsed as they are; only a line the strict parser refuses is decoded."""
    from pydantic_core import from_json  # noqa: PLC0415 - ~30 ms: only the lean client's reading pays it

    try:
        data = from_json(line)
    except ValueError as exc:
        cause = str(exc).removeprefix("Invalid JSON: ")
        data = _lenient_data(as_text(line))
    else:
        cause = ""
    if data is not None:
        problem = frame_problem(data)
        if problem is None:
            return cast("dict[str, object]", data)  # frame_problem checked it is an object
        cause = f"not a valid JSON-RPC message ({problem})"
    ident = answer_id(as_text(line))
    if ident is None:
        return None
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": UNPARSABLE, "message": UNPARSABLE_PREFIX + cause}}


def as_text(line: str | bytes) -> str:
    """A line as text: bytes decoded as UTF-8, a byte that is not replaced by U+FFFD."""
    return line.decode("utf-8", errors="replace").strip() if isinstance(line, bytes) else line


def _lenient_data(text: str) -> object:
    """The line as Python's JSON parser reads it, lone surrogates replaced by U+FFFD; None if it cannot."""
    try:
        return _replace_surrogates(json.loads(text))
    except (ValueError, RecursionError):
        return None


def frame_problem(data: object) -> str | None:
    """Why `data` is not a JSON-RPC 2.0 request, notification or answer; None when it is one."""
    if not isinstance(data, dict):
        return f"a {type(data).__name__}, not an object"
    if data.get("jsonrpc") != "2.0":
        return "jsonrpc: Input should be '2.0'"
    ident = data.get("id")
    if "id" in data and (isinstance(ident, bool) or not isinstance(ident, (int, str))):
        return "id: Input should be a valid integer or string"
    if "method" in data:
        if not isinstance(data["method"], str):
            return "method: Input should be a valid string"
        if "params" in data and data["params"] is not None and not isinstance(data["params"], dict):
            return "params: Input should be a valid dictionary"
        return None
    if "id" not in data:
        return "id: Field required"
    if "result" in data:
        return None if isinstance(data["result"], dict) else "result: Input should be a valid dictionary"
    error = data.get("error")
    if not isinstance(error, dict):
        return "result: Field required"
    if isinstance(error.get("code"), bool) or not isinstance(error.get("code"), int):
        return "error.code: Input should be a valid integer"
    if not isinstance(error.get("message"), str):
        return "error.message: Input should be a valid string"
    return None


def _cause(exc: ValidationError) -> str:
    """What the parser objected to, in one line."""
    first = exc.errors()[0]
    message = str(first.get("msg") or "invalid")
    if first.get("type") != "json_invalid":
        where = ".".join(str(part) for part in first.get("loc", ()) if isinstance(part, str))
        return f"not a valid JSON-RPC message ({where + ': ' if where else ''}{message})"
    return message.removeprefix("Invalid JSON: ")


def _lenient(text: str) -> JSONRPCMessage | None:
    """The message as Python's JSON parser reads it (lone surrogates replaced by U+FFFD), or None."""
    import mcp_types
    from pydantic import ValidationError

    data = _lenient_data(text)
    if data is None:
        return None
    try:
        return mcp_types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except (ValidationError, RecursionError):
        return None


def _replace_surrogates(value: JSONValue) -> JSONValue:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_LONE_SURROGATE.sub("\ufffd", k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    return value


def answer_id(text: str) -> int | str | None:
    """The top-level `id` of a line shaped like a JSON-RPC answer (an object with no top-level `method`)."""
    if not text.startswith("{"):
        return None
    depth, ident, found = 0, None, False
    for token in _TOKEN.finditer(text):
        kind = token.group()
        if kind in "{[":
            depth += 1
        elif kind in "}]":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and kind in ('"id"', '"method"'):
            value = _VALUE.match(text, token.end())
            if kind == '"method"' and text[token.end() :].lstrip().startswith(":"):
                return None  # a request or notification of the server's: nobody is waiting for it
            if value is not None and not found:
                ident, found = json.loads(value.group(1)), True
    return ident


def unparsable(code: object, message: object) -> str | None:
    """The cause, when an error says the server's answer could not be parsed (by miroctl over stdio, or by
    the SDK over HTTP, whose message carries a whole validation report): one line."""
    if code != UNPARSABLE:
        return None
    text = str(message)
    for prefix in (UNPARSABLE_PREFIX, "Failed to parse JSON response: ", "Failed to parse SSE message: "):
        if text.startswith(prefix):
            rest = text[len(prefix) :]
            invalid = re.search(r"Invalid JSON: ([^\[\n]+)", rest)
            return (invalid.group(1) if invalid else rest.splitlines()[0] if rest else "invalid").strip()
    return None
