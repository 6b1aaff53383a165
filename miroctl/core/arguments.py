"""Tool arguments: `key=value` pairs coerced by the input schema, a JSON base, validation, signatures."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from miroctl.base.errors import ArgumentError, UsageError
from miroctl.base.models import ToolInfo
from miroctl.base.text import suggest

if TYPE_CHECKING:  # only the type: the warm path must not load the config package
    from miroctl.config.loader import Config

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def load_base(source: str | None, stdin: IO[str] | None = None) -> dict[str, Any]:
    """The JSON base object from --args: inline JSON, @file.json, or - for stdin."""
    if not source:
        return {}
    where = "--args"
    if source == "-":
        text, where = (stdin or sys.stdin).read(), "--args - (stdin)"
    elif source.startswith("@"):
        path = Path(source[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ArgumentError(f"--args {source}: cannot read {path}: {exc.strerror or exc}") from None
        where = f"--args {source}"
    else:
        text = source
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ArgumentError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def split_pair(pair: str) -> tuple[str, str, bool]:
    """`key=value` (coerced by schema) or `key:=json` (raw JSON) -> (key, text, is_json)."""
    eq = pair.find("=")
    if eq <= 0:
        raise ArgumentError(f"argument {pair!r} is not key=value (or key:=json)")
    if pair[eq - 1] == ":" and eq > 1:
        return pair[: eq - 1], pair[eq + 1 :], True
    return pair[:eq], pair[eq + 1 :], False


def build(schema: Mapping[str, Any], base: Mapping[str, Any], pairs: Sequence[str]) -> dict[str, Any]:
    """The arguments object: the JSON base, with pairs (coerced by the schema) on top."""
    arguments = dict(base)
    properties = schema.get("properties") or {}
    seen: set[str] = set()
    for pair in pairs:
        key, text, is_json = split_pair(pair)
        prop = properties.get(key) or {}
        value = _json(key, text) if is_json else coerce(key, text, prop)
        if key in seen and "array" in _types(prop):  # tag=a tag=b -> ["a", "b"]
            previous = arguments[key] if isinstance(arguments[key], list) else [arguments[key]]
            value = previous + (value if isinstance(value, list) else [value])
        seen.add(key)
        arguments[key] = value
    return arguments


def coerce(key: str, text: str, prop: Mapping[str, Any]) -> Any:
    """A command-line string as the type the property's schema asks for."""
    types = _types(prop)
    if not types or types == {"string"}:
        return text
    if "null" in types and text in ("null", "none", ""):
        return None
    if "boolean" in types and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE
    if "integer" in types:
        try:
            return int(text)
        except ValueError:
            pass
    if "number" in types:
        try:
            number = float(text)
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        except ValueError:
            pass
    looks_json = text.lstrip().startswith(("[", "{"))
    if "array" in types and not looks_json and "string" not in types:
        items = prop.get("items")  # one item; repeat the key for more: tag=a tag=b
        return [coerce(key, text, items if isinstance(items, Mapping) else {})]
    if types & {"array", "object"}:
        if "string" in types and not looks_json:
            return text
        return _json(key, text)
    if "string" in types:
        return text
    kinds = " or ".join(sorted(types))
    raise ArgumentError(f"argument {key}: expected {kinds}, got {text!r}")


def _json(key: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"argument {key}: invalid JSON ({exc.msg} at column {exc.colno})") from None


def _types(prop: Mapping[str, Any]) -> set[str]:
    """Every JSON type a property schema admits, looking through anyOf / oneOf / enum."""
    found: set[str] = set()
    kind = prop.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf", "allOf"):
        for option in prop.get(key) or []:
            if isinstance(option, Mapping):
                found |= _types(option)
    if not found and "enum" in prop:
        found |= {_json_type(v) for v in prop["enum"]}
    return found


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "null" if value is None else "object"


def validate(tool: ToolInfo, arguments: Mapping[str, Any]) -> None:
    """ArgumentError naming the first failing path (unknown keys too), before anything is sent."""
    schema = dict(tool.input_schema)
    _reject_unknown(tool, schema, arguments)
    import jsonschema

    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    if validator is None:
        return  # the server's schema is broken; let the server judge the arguments
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: (len(e.path), str(e.path)))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    raise ArgumentError(_describe(tool, error), hint=f"usage: {signature(tool)}")


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    """A validator for one schema, or None if the schema is broken; checked once (it costs ~1 ms a call)."""
    import jsonschema

    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return validator_class(schema)


def _describe(tool: ToolInfo, error: Any) -> str:
    if error.validator == "required":
        missing = [r for r in error.validator_value if r not in (error.instance or {})]
        where = _path(error.absolute_path)
        names = ", ".join(missing)
        noun = "argument" if len(missing) == 1 else "arguments"
        inside = f" in {where}" if where else ""
        return f"{tool.name}: missing required {noun} {names}{inside}"
    where = _path(error.absolute_path) or "(arguments)"
    return f"{tool.name}: {where}: {error.message}"


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _reject_unknown(tool: ToolInfo, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    properties = schema.get("properties")
    extra = schema.get("additionalProperties", False)
    if not isinstance(properties, Mapping) or extra not in (False, None) or schema.get("patternProperties"):
        return
    for key in arguments:
        if key not in properties:
            hint = suggest(key, properties) or f"usage: {signature(tool)}"
            raise ArgumentError(f"{tool.name}: unknown argument {key!r}", hint=hint)


def signature(tool: ToolInfo) -> str:
    """`name(required: type, optional?: type = default)` from the input schema."""
    schema = tool.input_schema
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        kind = type_label(prop)
        if name in required:
            parts.append(f"{name}: {kind}")
        else:
            default = f" = {json.dumps(prop['default'])}" if "default" in prop else ""
            parts.append(f"{name}?: {kind}{default}")
    return f"{tool.name}({', '.join(parts)})"


def type_label(prop: Mapping[str, Any]) -> str:
    """A short type for a property schema: string, integer[], string | null, enum values..."""
    if "enum" in prop and isinstance(prop["enum"], list):
        return " | ".join(json.dumps(v) for v in prop["enum"][:6])
    kinds = sorted(_types(prop) - {"null"}) or ["any"]
    label = " | ".join(kinds)
    if kinds == ["array"] and isinstance(prop.get("items"), Mapping):
        label = f"{type_label(prop['items'])}[]"
    return label + (" | null" if "null" in _types(prop) else "")


def split_target(words: list[str], config: Config) -> tuple[str | None, str, list[str]]:
    """SERVER TOOL [k=v...], SERVER.TOOL [k=v...], or TOOL [k=v...] (the server found by its tool)."""
    if not words:
        raise UsageError("call needs a tool: miroctl call SERVER TOOL [key=value ...]")
    first, rest = words[0], words[1:]
    if "." in first and "=" not in first:
        server, _, tool = first.partition(".")
        if config.get(server) is not None:
            return server, tool, rest
    if rest and "=" not in rest[0]:
        return first, rest[0], rest[1:]
    if "=" in first:
        raise UsageError(f"expected a tool name before the arguments, got {first!r}")
    only = config.select() if len(config.default_names) == 1 else []
    return (only[0].name if only else None), first, rest
