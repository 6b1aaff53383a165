"""The protocol's checks of a listed tool and of a tool's output schema, without the SDK's models.

`tool_problem` says, in the words of the SDK's validation (`inputSchema: Field required`), why the
protocol rejects one tool of a tools/list page at the negotiated version, or None when it takes it:
the rules of the wire types of each version (mcp_types), which tests/test_lean.py holds against the SDK
tool by tool. `output_validator` is the SDK's check of structured content: the tool's output schema
compiled once (jsonschema, `$ref`s resolved inside the schema only), the best-matching error reported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

MODERN = "2026-07-28"
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "f", "false", "n", "no", "off"}
_TASK_SUPPORT = ("forbidden", "optional", "required")
_HINTS = ("destructiveHint", "idempotentHint", "openWorldHint", "readOnlyHint")


def page_problem(page: Mapping[str, object], version: str) -> str | None:
    """Why the protocol at `version` rejects a tools/list page's own fields (all but its tools), or None."""
    cursor = page.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        return "nextCursor: Input should be a valid string"
    if page.get("_meta") is not None and not isinstance(page["_meta"], dict):
        return "_meta: Input should be a valid dictionary"
    if version != MODERN:
        return None
    if "cacheScope" not in page:
        return "cacheScope: Field required"
    if page["cacheScope"] not in ("private", "public"):
        return "cacheScope: Input should be 'private' or 'public'"
    if not isinstance(page.get("resultType"), str):
        return (
            "resultType: Field required" if "resultType" not in page else "resultType: Input should be a valid string"
        )
    ttl = page.get("ttlMs")
    if "ttlMs" not in page:
        return "ttlMs: Field required"
    if isinstance(ttl, bool) or not (isinstance(ttl, int) or (isinstance(ttl, float) and ttl.is_integer())):
        return "ttlMs: Input should be a valid integer"
    return None


def tool_problem(item: object, version: str) -> str | None:
    """Why the protocol at `version` rejects this tools/list item (`field: message`), or None."""
    if not isinstance(item, dict):
        return "the tool: Input should be a valid dictionary or instance of Tool"
    problems: list[str] = []
    modern = version == MODERN
    if "inputSchema" not in item:
        problems.append("inputSchema: Field required")
    else:
        problems += _schema_problems("inputSchema", item["inputSchema"], typed=True, modern=modern)
    if "name" not in item:
        problems.append("name: Field required")
    elif not isinstance(item["name"], str):
        problems.append("name: Input should be a valid string")
    for key in ("description", "title"):
        if item.get(key) is not None and not isinstance(item[key], str):
            problems.append(f"{key}: Input should be a valid string")
    if item.get("outputSchema") is not None:
        problems += _schema_problems("outputSchema", item["outputSchema"], typed=not modern, modern=modern)
    problems += _annotation_problems(item.get("annotations"))
    problems += icon_problems(item.get("icons"))
    if item.get("execution") is not None:  # checked by the SDK's own Tool model at every version
        execution = item["execution"]
        if not isinstance(execution, dict):
            problems.append("execution: Input should be a valid dictionary or instance of ToolExecution")
        elif execution.get("taskSupport") is not None and execution["taskSupport"] not in _TASK_SUPPORT:
            problems.append("execution.taskSupport: Input should be 'forbidden', 'optional' or 'required'")
    if item.get("_meta") is not None and not isinstance(item["_meta"], dict):
        problems.append("_meta: Input should be a valid dictionary")
    if not problems:
        return None
    extra = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + extra


def _schema_problems(key: str, schema: object, *, typed: bool, modern: bool) -> list[str]:
    model = "InputSchema" if key == "inputSchema" else "OutputSchema"
    if not isinstance(schema, dict):
        return [f"{key}: Input should be a valid dictionary or instance of {model}"]
    problems: list[str] = []
    if schema.get("$schema") is not None and not isinstance(schema["$schema"], str):
        problems.append(f"{key}.$schema: Input should be a valid string")
    if typed:
        if "type" not in schema:
            problems.append(f"{key}.type: Field required")
        elif schema["type"] != "object":
            problems.append(f"{key}.type: Input should be 'object'")
    if not modern:
        properties, required = schema.get("properties"), schema.get("required")
        if properties is not None and not isinstance(properties, dict):
            problems.append(f"{key}.properties: Input should be a valid dictionary")
        elif isinstance(properties, dict):
            for name, value in properties.items():
                if not isinstance(value, (dict, bool)):
                    problems.append(f"{key}.properties.{name}.dict[str,any]: Input should be a valid dictionary")
        if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
            problems.append(f"{key}.required: Input should be a valid list of strings")
    return problems


def _annotation_problems(annotations: object) -> list[str]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return ["annotations: Input should be a valid dictionary or instance of ToolAnnotations"]
    problems = [
        f"annotations.{hint}: Input should be a valid boolean"
        for hint in _HINTS
        if annotations.get(hint) is not None and not lax_bool(annotations[hint])
    ]
    if annotations.get("title") is not None and not isinstance(annotations["title"], str):
        problems.append("annotations.title: Input should be a valid string")
    return problems


def icon_problems(icons: object) -> list[str]:
    if icons is None:
        return []
    if not isinstance(icons, list):
        return ["icons: Input should be a valid list"]
    problems: list[str] = []
    for index, icon in enumerate(icons):
        if not isinstance(icon, dict):
            problems.append(f"icons.{index}: Input should be a valid dictionary or instance of Icon")
            continue
        if not isinstance(icon.get("src"), str):
            problems.append(
                f"icons.{index}.src: {'Field required' if 'src' not in icon else 'Input should be a valid string'}"
            )
        if icon.get("mimeType") is not None and not isinstance(icon["mimeType"], str):
            problems.append(f"icons.{index}.mimeType: Input should be a valid string")
        sizes = icon.get("sizes")
        if sizes is not None and not (isinstance(sizes, list) and all(isinstance(s, str) for s in sizes)):
            problems.append(f"icons.{index}.sizes: Input should be a valid list of strings")
        if icon.get("theme") is not None and icon["theme"] not in ("dark", "light"):
            problems.append(f"icons.{index}.theme: Input should be 'dark' or 'light'")
    return problems


def annotations_of(annotations: object) -> dict[str, object]:
    """A valid tool's annotations as the SDK keeps them: the known keys that are set, hints as booleans."""
    if not isinstance(annotations, dict):
        return {}
    kept: dict[str, object] = {}
    for key, value in annotations.items():
        if value is None:
            continue
        if key in _HINTS:
            kept[key] = value if isinstance(value, bool) else _TRUE.__contains__(str(value).strip().lower())
        elif key == "title":
            kept[key] = value
    return kept


def lax_bool(value: object) -> bool:
    """Whether pydantic's lax mode reads `value` as a boolean (as the SDK's models do)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return value in (0, 1)
    return isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE


def read_bool(value: object) -> bool | None:
    """`value` as pydantic's lax mode reads a boolean (as the SDK's models do), or None when it refuses it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return value == 1
    if isinstance(value, str):
        text = value.lower()
        return True if text in _TRUE else False if text in _FALSE else None
    return None


_VALIDATORS: dict[str, tuple[str, Callable[[object], str | None]]] = {}


def output_validator(name: str, schema: Mapping[str, object]) -> Callable[[object], str | None]:
    """A check of tool `name`'s structured content against its output schema: None when it fits, else the
    SDK's words for what is wrong. A schema that is not valid JSON Schema fails every check."""
    key = json.dumps(schema, sort_keys=True, default=str)
    cached = _VALIDATORS.get(name)
    if cached is not None and cached[0] == key:
        return cached[1]
    check = _compile(name, schema)
    _VALIDATORS[name] = (key, check)
    return check


def _compile(name: str, schema: Mapping[str, object]) -> Callable[[object], str | None]:
    # jsonschema is imported by the first result that has an output schema, not by every start (~40 ms)
    from jsonschema import SchemaError
    from jsonschema import exceptions as schema_errors
    from jsonschema.validators import validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        invalid = f"Invalid schema for tool {name}: {exc}"
        return lambda value: invalid
    validator = cls(schema, registry=Registry())

    def check(value: object) -> str | None:
        try:
            error = schema_errors.best_match(validator.iter_errors(value))
        except Unresolvable as exc:
            return f"Invalid schema for tool {name}: {exc}"
        return None if error is None else f"Invalid structured content returned by tool {name}: {error}"

    return check
