"""Tool arguments: `key=value` pairs coerced by the input schema, a JSON base, validation, signatures."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from miroctl.base.errors import ArgumentError, UsageError
from miroctl.base.models import ToolInfo
from miroctl.base.text import suggest
from miroctl.core import schemas
from miroctl.core.bodies import loads

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
        value = loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise ArgumentError(f"{where}: invalid JSON: {exc}") from None
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
    properties = schemas.properties(schema)
    seen: set[str] = set()
    for pair in pairs:
        key, text, is_json = split_pair(pair)
        prop = schemas.resolve(properties.get(key), schema)
        value = _json(key, text) if is_json else coerce(key, text, prop, schema)
        if key in seen:
            value = _repeated(key, arguments[key], value, prop, schema)
        seen.add(key)
        arguments[key] = value
    return arguments


def _repeated(key: str, previous: Any, value: Any, prop: Mapping[str, Any], root: Mapping[str, Any]) -> list[Any]:
    """tag=a tag=b gives ["a", "b"] for an array parameter; any other repeated key is an error."""
    if "array" not in schemas.types(prop, root):
        raise ArgumentError(
            f"argument {key} is given twice, and it takes one value",
            hint=f"give it once, or as a JSON array with {key}:='[...]' if the tool takes a list",
        )
    items: list[Any] = previous if isinstance(previous, list) else [previous]
    return items + (value if isinstance(value, list) else [value])


def coerce(key: str, text: str, prop: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A command-line string as the type the property's schema asks for (local `$ref`s followed)."""
    types = schemas.types(prop, root)
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
            if math.isfinite(number):
                return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        except ValueError:
            pass
    return _structured(key, text, types, prop, root)


def _structured(key: str, text: str, types: set[str], prop: Mapping[str, Any], root: Mapping[str, Any] | None) -> Any:
    """An array or object value (JSON), one item of an array, or the text itself where a string is allowed."""
    looks_json = text.lstrip().startswith(("[", "{"))
    if "array" in types and not looks_json and "string" not in types:
        items = schemas.items_of(prop, root)  # one item; repeat the key for more: tag=a tag=b
        return [coerce(key, text, items, root)]
    if types & {"array", "object"} and (looks_json or "string" not in types):
        try:
            value = loads(text)
        except ValueError as exc:
            if "string" in types:
                return text  # not JSON after all: the schema takes a string too
            detail = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ArgumentError(
                f"argument {key}: invalid JSON ({detail})",
                hint=f"quote the whole pair for the shell, e.g. {key}='{{\"a\": 1}}', or give raw JSON with {key}:=",
            ) from None
        if isinstance(value, dict) and "array" in types and "object" not in types:
            return [value]  # one object for a list of objects
        return value
    if "string" in types:
        return text
    kinds = " or ".join(sorted(types))
    raise ArgumentError(f"argument {key}: expected {kinds}, got {text!r}", hint=f"for raw JSON use {key}:=")


def _json(key: str, text: str) -> Any:
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"argument {key}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise ArgumentError(f"argument {key}: invalid JSON ({exc})") from None


def validate(tool: ToolInfo, arguments: Mapping[str, Any]) -> list[str]:
    """ArgumentError naming the first failing path (unknown keys too), before anything is sent; the notes to
    show with the call (unknown keys a schema allows, a schema that cannot be used to check)."""
    schema = dict(tool.input_schema)
    notes = _unknown_keys(tool, schema, arguments)
    import jsonschema
    from referencing.exceptions import Unresolvable

    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    if validator is None:
        return [*notes, f"{tool.name}'s input schema is not valid JSON Schema: arguments sent unchecked"]
    try:
        found = [e for e in validator.iter_errors(dict(arguments)) if not _server_fills(e)]
        errors = sorted(found, key=lambda e: (len(e.path), str(e.path)))
    except (Unresolvable, RecursionError) as exc:
        return [*notes, f"{tool.name}'s input schema cannot be used ({_unusable(exc)}): arguments sent unchecked"]
    if not errors:
        return notes
    error = jsonschema.exceptions.best_match(errors)
    raise ArgumentError(_describe(tool, error), hint=f"usage: {signature(tool)}")


def _unusable(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "its $refs go round in a circle"
    ref = getattr(exc, "ref", None)
    return f"$ref {ref!r} does not resolve" if ref else f"a $ref does not resolve: {exc}"


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    """A validator for one schema, or None if the schema is broken; checked once (it costs ~1 ms a call).
    Its registry is empty: a remote `$ref` is never fetched (it fails to resolve instead)."""
    import jsonschema
    from referencing import Registry

    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except (jsonschema.SchemaError, RecursionError):
        return None
    return validator_class(schema, registry=Registry())


def _server_fills(error: Any) -> bool:
    """A required parameter that declares a `default` is the server's to fill (several servers ship them)."""
    return error.validator == "required" and not _missing(error)


def _missing(error: Any) -> list[str]:
    """The required names absent from the instance, but those with a `default`."""
    properties = error.schema.get("properties") if isinstance(error.schema, Mapping) else None
    defaulted = {k for k, v in (properties or {}).items() if isinstance(v, Mapping) and "default" in v}
    return [r for r in error.validator_value if r not in (error.instance or {}) and r not in defaulted]


def _json_spelling(error: Any) -> str:
    """jsonschema's message with values in JSON's spelling (null, true, "text"), not Python's."""
    message = str(error.message)
    values = [error.instance] + ([] if isinstance(error.validator_value, str) else [error.validator_value])
    for value in values:  # a type's name stays as jsonschema quotes it ('number')
        try:
            spelled = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            continue
        message = message.replace(repr(value), spelled, 1)
    return message


def _describe(tool: ToolInfo, error: Any) -> str:
    if error.validator == "required":
        missing = _missing(error)
        where = _path(error.absolute_path)
        names = ", ".join(missing)
        noun = "argument" if len(missing) == 1 else "arguments"
        inside = f" in {where}" if where else ""
        return f"{tool.name}: missing required {noun} {names}{inside}"
    where = _path(error.absolute_path) or "(arguments)"
    return f"{tool.name}: {where}: {_json_spelling(error)}"


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _unknown_keys(tool: ToolInfo, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """ArgumentError for a key the schema does not take; a note for each one it takes as an extra."""
    root = schemas.resolve(schema, schema)
    properties = root.get("properties")
    if not isinstance(properties, Mapping) or root.get("patternProperties"):
        return []
    unknown = [key for key in arguments if key not in properties]
    extra = root.get("additionalProperties", False)
    if extra not in (False, None):
        return [f"{key!r} is not a declared parameter of {tool.name}; sent as given" for key in unknown]
    for key in unknown:
        hint = suggest(key, properties) or f"usage: {signature(tool)}"
        raise ArgumentError(f"{tool.name}: unknown argument {key!r}", hint=hint)
    return []


def signature(tool: ToolInfo) -> str:
    """`name(required: type, optional?: type = default)` from the input schema."""
    schema = tool.input_schema
    properties = schemas.properties(schema)
    required = set(schemas.resolve(schema, schema).get("required") or [])
    parts = []
    for name, prop in properties.items():
        kind = schemas.type_label(prop, schema)
        if name in required:
            parts.append(f"{name}: {kind}")
        else:
            prop = prop if isinstance(prop, Mapping) else {}
            default = f" = {json.dumps(prop['default'])}" if "default" in prop else ""
            parts.append(f"{name}?: {kind}{default}")
    return f"{tool.name}({', '.join(parts)})"


def split_target(words: list[str], config: Config) -> tuple[str | None, str, list[str]]:
    """SERVER TOOL [k=v...], SERVER.TOOL [k=v...], or TOOL [k=v...] (the server found by its tool); a
    server's name alone gives an empty tool name (the router answers with that server's tools)."""
    if not words:
        raise UsageError("call needs a tool: miroctl call SERVER TOOL [key=value ...]")
    first, rest = words[0], words[1:]
    if "." in first and "=" not in first:
        dots = [i for i, char in enumerate(first) if char == "."]
        for dot in reversed(dots):  # the longest server name that exists: server names may hold dots too
            if config.get(first[:dot]) is not None and first[dot + 1 :]:
                return first[:dot], first[dot + 1 :], rest
    if rest and "=" not in rest[0]:
        return first, rest[0], rest[1:]
    if "=" in first:
        raise UsageError(f"expected a tool name before the arguments, got {first!r}")
    named = config.get(first)
    if named is not None:  # a server's name alone: the tool name is missing (its tools say which)
        return named.name, "", rest
    only = config.select() if len(config.default_names) == 1 else []
    return (only[0].name if only else None), first, rest
