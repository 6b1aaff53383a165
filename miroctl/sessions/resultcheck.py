"""The protocol's checks of a tools/call result, without the SDK's models: what the SDK refuses, refused here.

`result_problem` says in one line (`content.0.annotations.priority: ...`) why the SDK's validation of a
CallToolResult (the wire types of each version, then its lax pydantic model) rejects a result, or None when
it takes it; tests/test_sessions_results.py holds the two verdicts together case by case.
"""

from __future__ import annotations

from collections.abc import Callable

from miroctl.sessions.toolcheck import MODERN, icon_problems, lax_bool

Problem = tuple[str, str] | None  # (where, below the field checked: "" for the field itself; what is wrong)
Check = Callable[[object], Problem]
_AUDIENCE = ("user", "assistant")
_REQUIRED = object()  # stands for a missing field


def _string(value: object) -> Problem:
    return None if value is None or isinstance(value, str) else ("", "Input should be a valid string")


def _required_string(value: object) -> Problem:
    if value is _REQUIRED:
        return ("", "Field required")
    return None if isinstance(value, str) else ("", "Input should be a valid string")


def _dictionary(value: object) -> Problem:
    return None if value is None or isinstance(value, dict) else ("", "Input should be a valid dictionary")


def _lax_number(value: object) -> float | None:
    """A number as pydantic's lax mode reads one (booleans and numeric strings included), or None."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _integer(value: object) -> Problem:
    number = _lax_number(value)
    if value is None or (number is not None and number.is_integer()):
        return None
    return ("", "Input should be a valid integer")


def _annotations(value: object) -> Problem:
    if value is None:
        return None
    if not isinstance(value, dict):
        return ("", "Input should be a valid dictionary or instance of Annotations")
    audience = value.get("audience")
    if audience is not None and not isinstance(audience, list):
        return ("audience", "Input should be a valid list")
    if isinstance(audience, list) and any(who not in _AUDIENCE for who in audience):
        return ("audience", "Input should be 'assistant' or 'user'")
    priority = value.get("priority")
    number = _lax_number(priority)
    if priority is not None and number is None:
        return ("priority", "Input should be a valid number")
    if number is not None and not 0 <= number <= 1:
        return ("priority", "Input should be between 0 and 1")
    if _string(value.get("lastModified")) is not None:
        return ("lastModified", "Input should be a valid string")
    return None


def _icons(value: object) -> Problem:
    problems = icon_problems(value)
    if not problems:
        return None
    where, _, message = problems[0].partition(": ")
    return (where.removeprefix("icons").lstrip("."), message)


def _resource(value: object) -> Problem:
    if value is _REQUIRED:
        return ("", "Field required")
    if not isinstance(value, dict):
        return ("", "Input should be a valid dictionary")
    if "uri" not in value or not isinstance(value["uri"], str):
        return ("uri", "Field required" if "uri" not in value else "Input should be a valid string")
    if not isinstance(value.get("text"), str) and not isinstance(value.get("blob"), str):
        return ("", "a text or blob is required")
    for key, check in (("mimeType", _string), ("_meta", _dictionary)):
        problem = check(value.get(key))
        if problem is not None:
            return (key, problem[1])
    return None


_COMMON: dict[str, Check] = {"annotations": _annotations, "_meta": _dictionary}
_REQUIRED_CHECKS: tuple[Check, ...] = (_required_string, _resource)
_BLOCKS: dict[str, dict[str, Check]] = {
    "text": {"text": _required_string},
    "image": {"data": _required_string, "mimeType": _required_string},
    "audio": {"data": _required_string, "mimeType": _required_string},
    "resource_link": {
        "uri": _required_string,
        "name": _required_string,
        "title": _string,
        "description": _string,
        "mimeType": _string,
        "size": _integer,
        "icons": _icons,
    },
    "resource": {"resource": _resource},
}


def block_problem(block: object) -> Problem:
    """Why one content block is refused, or None."""
    if not isinstance(block, dict):
        return ("", "Input should be a valid dictionary")
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in _BLOCKS:
        return ("", f"Input tag {kind!r} found using 'type' does not match any of the expected tags")
    for key, check in {**_BLOCKS[kind], **_COMMON}.items():
        absent = _REQUIRED if check in _REQUIRED_CHECKS else None  # an optional field may be left out
        problem = check(block.get(key, absent))
        if problem is not None:
            return (".".join(part for part in (key, problem[0]) if part), problem[1])
    return None


def result_problem(result: dict[str, object], version: str | None = None) -> str | None:
    """Why a tools/call result (not one asking for more input) is refused at `version`, in one line, or None."""
    if version == MODERN and "resultType" not in result:
        return "resultType: Field required"
    if "content" not in result:
        return "content: Field required"
    content = result["content"]
    if not isinstance(content, list):
        return "content: Input should be a valid list"
    for index, block in enumerate(content):
        problem = block_problem(block)
        if problem is not None:
            return f"{'.'.join(part for part in ('content', str(index), problem[0]) if part)}: {problem[1]}"
    if result.get("isError") is not None and not lax_bool(result["isError"]):
        return "isError: Input should be a valid boolean"
    if _dictionary(result.get("_meta")) is not None:
        return "_meta: Input should be a valid dictionary"
    structured = result.get("structuredContent")
    if structured is not None and not isinstance(structured, dict):
        return "structuredContent: Input should be a valid dictionary"
    return None
