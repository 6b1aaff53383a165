"""Tool arguments: `key=value` pairs coerced by the input schema, a JSON base, validation, signatures."""

from __future__ import annotations

import functools
import json
import math
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from miroctl.base.errors import ArgumentError, NotFound, UsageError
from miroctl.base.models import ServerTools, ToolInfo
from miroctl.base.text import suggest
from miroctl.core import schemas
from miroctl.core.bodies import loads

if TYPE_CHECKING:  # only the type: the warm path must not load the config package
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

    from miroctl.config.loader import Config

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}

# What pydantic's lax mode (the validation of FastMCP and the SDK's MCPServer) reads from a string, kept to what
# it reads losslessly and what JSON can carry: an integer with an optional `.0` tail ("2024", "2024.0", "2_024"),
# a finite decimal number, and the words of a boolean (any case, no spaces around).
_SPACES = " \t\n\r\f\v"
_DIGITS = r"[0-9](?:_?[0-9])*"
_LAX_INTEGER = re.compile(rf"[+-]?{_DIGITS}(?:\.0+)?")
_LAX_NUMBER = re.compile(rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?")
LAX_DEPTH = 32  # levels of nested objects and arrays looked into; deeper values are sent as given
_LAX_TRUE = {"true", "t", "yes", "y", "on", "1"}
_LAX_FALSE = {"false", "f", "no", "n", "off", "0"}


def load_base(source: str | None, stdin: IO[str] | None = None) -> dict[str, object]:
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
        raise ArgumentError(
            f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            hint="""one JSON object, in single quotes, keys and strings in double quotes: --args '{"key": "value"}'""",
        ) from None
    except ValueError as exc:
        raise ArgumentError(f"{where}: invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ArgumentError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def split_pair(pair: str, parameters: Sequence[str] | None = None, shows: str | None = None) -> tuple[str, str, bool]:
    """`key=value` (coerced by schema) or `key:=json` (raw JSON) -> (key, text, is_json). A bare value's error
    names the one parameter it can be meant for, when `parameters` (the tool's, if known) has exactly one,
    else the command that `shows` them."""
    eq = pair.find("=")
    if eq <= 0:
        if parameters is not None and len(parameters) == 1 and eq < 0:
            hint = f"did you mean {shlex.quote(f'{parameters[0]}={pair}')}?"
        else:
            hint = f"name the parameter: NAME={pair}" + (f" (`{shows}` shows the names)" if shows else "")
        raise ArgumentError(f"argument {pair!r} is not key=value (or key:=json)", hint=hint)
    if pair[eq - 1] == ":" and eq > 1:
        return pair[: eq - 1], pair[eq + 1 :], True
    return pair[:eq], pair[eq + 1 :], False


def build(schema: Mapping[str, object], base: Mapping[str, object], pairs: Sequence[str]) -> dict[str, object]:
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


def _repeated(
    key: str, previous: object, value: object, prop: Mapping[str, object], root: Mapping[str, object]
) -> list[object]:
    """tag=a tag=b gives ["a", "b"] for an array parameter; any other repeated key is an error."""
    if "array" not in schemas.types(prop, root):
        raise ArgumentError(
            f"argument {key} is given twice, and it takes one value",
            hint=f"give it once, or as a JSON array with {key}:='[...]' if the tool takes a list",
        )
    items: list[object] = previous if isinstance(previous, list) else [previous]
    return items + (value if isinstance(value, list) else [value])


def coerce(key: str, text: str, prop: Mapping[str, object], root: Mapping[str, object] | None = None) -> object:
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


def _structured(
    key: str, text: str, types: set[str], prop: Mapping[str, object], root: Mapping[str, object] | None
) -> object:
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


def _json(key: str, text: str) -> object:
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"argument {key}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise ArgumentError(f"argument {key}: invalid JSON ({exc})") from None


def lenient(tool: ToolInfo, arguments: Mapping[str, object]) -> tuple[dict[str, object], list[str]]:
    """The arguments with what the server's lax validation would read as the schema's type made that type,
    and a note for each: a numeric string for an integer or a number, a boolean's word for a boolean, a JSON
    string for an object or an array (FastMCP parses those of its parameters). A value the schema already
    admits, one whose type the schema leaves open, or one that several of a union's types would read, is
    left as given (validation then decides); so is everything under a schema that cannot be used."""
    schema = tool.input_schema
    if _validator(json.dumps(dict(schema), sort_keys=True, default=str)) is None:
        return dict(arguments), []
    values: dict[str, object] = dict(arguments)
    notes: list[str] = []
    properties = schemas.properties(schema)
    for key, value in arguments.items():
        if key in properties:
            values[key] = _lax(key, value, properties[key], schema, notes)
    return values, notes


def _lax(
    path: str, value: object, prop: object, root: Mapping[str, object], notes: list[str], depth: int = 0
) -> object:
    """One value read as pydantic's lax mode would; nested values of an object or array are looked at too, to
    a depth (only the tool's own parameters are parsed from a JSON string, as FastMCP does)."""
    if depth > LAX_DEPTH:
        return value
    prop = schemas.resolve(prop, root)
    admitted = schemas.types(prop, root)
    if not admitted:
        return value
    if _json_kind(value) in admitted or (_json_kind(value) == "integer" and "number" in admitted):
        return _inside(path, value, prop, root, notes, depth)
    if not isinstance(value, str) or _choices(prop, root):
        return value  # a Literal refuses "2" for 2 where an IntEnum takes it: the schema cannot tell them apart
    found: dict[str, object] = {}
    for kind in sorted(admitted):
        read = _read(value, kind, top=depth == 0)
        if read is not _NOT:
            found.setdefault(json.dumps(read, sort_keys=True), read)
    if len(found) != 1:
        return value  # not readable as the schema's type, or readable as two of a union's types: left as given
    (read,) = found.values()
    kind = _json_kind(read)
    shown = json.dumps(value, ensure_ascii=False)
    if kind in ("object", "array"):
        notes.append(f"argument {path}: a JSON string sent as an {kind}, as the server would read it")
    else:
        notes.append(f"argument {path}: {shown} sent as {json.dumps(read)}, as the server would read it")
    return _inside(path, read, prop, root, notes, depth)


def _inside(
    path: str, value: object, prop: Mapping[str, object], root: Mapping[str, object], notes: list[str], depth: int
) -> object:
    """The values inside an object or an array, read against the properties or items of the schema itself
    (not of one of a union's options)."""
    properties, items = prop.get("properties"), prop.get("items")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        inner = dict(value)
        for key, item in value.items():
            if key in properties:
                inner[key] = _lax(f"{path}.{key}", item, properties[key], root, notes, depth + 1)
        return inner
    if isinstance(value, list) and isinstance(items, Mapping):
        return [_lax(f"{path}[{i}]", item, items, root, notes, depth + 1) for i, item in enumerate(value)]
    return value


def _choices(prop: object, root: Mapping[str, object], depth: int = 0) -> bool:
    """Whether the schema (or one of its union's options) is a list of values (`enum`, `const`)."""
    prop = schemas.resolve(prop, root)
    if "enum" in prop or "const" in prop:
        return True
    options = [o for key in ("anyOf", "oneOf", "allOf") for o in schemas.listed(prop, key)]
    return depth < schemas.MAX_DEPTH and any(_choices(o, root, depth + 1) for o in options)


_NOT = object()  # a string that does not read as the type


def _read(text: str, kind: str, *, top: bool) -> object:
    """`text` as a value of the JSON type `kind`, as pydantic's lax mode reads it, or _NOT."""
    try:
        return _parse(text, kind, top)
    except ValueError:  # more digits than Python converts, JSON that does not parse
        return _NOT


def _parse(text: str, kind: str, top: bool) -> object:
    if kind == "integer" and _LAX_INTEGER.fullmatch(text.strip(_SPACES)):
        return int(text.strip(_SPACES).replace("_", "").split(".")[0])
    if kind == "number" and _LAX_NUMBER.fullmatch(text.strip(_SPACES)):
        plain = text.strip(_SPACES).replace("_", "")
        if re.fullmatch(r"[+-]?[0-9]+", plain):
            return int(plain)  # exact, however long
        number = float(plain)
        return number if math.isfinite(number) else _NOT
    if kind == "boolean" and text.lower() in _LAX_TRUE | _LAX_FALSE:
        return text.lower() in _LAX_TRUE
    if kind in ("object", "array") and top and text.lstrip().startswith(("{", "[")):
        value = loads(text)
        return value if _json_kind(value) == kind else _NOT
    return _NOT


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def prepare() -> None:
    """Load what `validate` needs (jsonschema and its meta-schemas, ~50 ms the first time) now: a call does
    this before it waits for its server, so on a cold start it costs nothing while the server boots."""
    _validator(EMPTY_SCHEMA)


def validate(tool: ToolInfo, arguments: Mapping[str, object]) -> list[str]:
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


EMPTY_SCHEMA = json.dumps({"type": "object"})


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Validator | None:
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


def _server_fills(error: ValidationError) -> bool:
    """A required parameter that declares a `default` is the server's to fill (several servers ship them)."""
    return error.validator == "required" and not _missing(error)


def _missing(error: ValidationError) -> list[str]:
    """The required names absent from the instance, but those with a `default`."""
    properties = error.schema.get("properties") if isinstance(error.schema, Mapping) else None
    defaulted = {k for k, v in (properties or {}).items() if isinstance(v, Mapping) and "default" in v}
    return [r for r in error.validator_value if r not in (error.instance or {}) and r not in defaulted]


def _json_spelling(error: ValidationError) -> str:
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


def _describe(tool: ToolInfo, error: ValidationError) -> str:
    if error.validator == "required":
        missing = _missing(error)
        where = _path(error.absolute_path)
        names = ", ".join(missing)
        noun = "argument" if len(missing) == 1 else "arguments"
        inside = f" in {where}" if where else ""
        return f"{tool.name}: missing required {noun} {names}{inside}"
    where = _path(error.absolute_path) or "(arguments)"
    return f"{tool.name}: {where}: {_json_spelling(error)}"


def _path(parts: Sequence[object]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _unknown_keys(tool: ToolInfo, schema: Mapping[str, object], arguments: Mapping[str, object]) -> list[str]:
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
    required = set(schemas.listed(schemas.resolve(schema, schema), "required"))
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


def list_target(words: list[str], config: Config, adhoc: bool = False) -> tuple[list[str], str | None]:
    """What `list` is asked for: servers, or one tool in detail (the tool's name, else None). One tool is
    `SERVER TOOL` when the second word names no server, `SERVER.TOOL`, or `TOOL` alone for the one ad-hoc
    server (`list --stdio CMD TOOL`, `list --url URL TOOL`), as `call` reads the same words. Any other single
    word is a server's name (a typo of one is answered as such)."""
    if len(words) == 2 and config.get(words[0]) is not None and config.get(words[1]) is None:
        return [words[0]], words[1]
    if len(words) == 1 and config.get(words[0]) is None and "=" not in words[0]:
        server, tool, _ = split_target(words, config)
        if server is not None and tool and (adhoc or tool != words[0]):
            return [server], tool
    return words, None


def only_tool(entry: ServerTools, tool: str) -> ServerTools:
    """The server's entry with that one tool (`list SERVER TOOL`); NotFound (exit 6) with the near names when it
    has none. A server that failed stays its failure."""
    if not entry.ok:
        return entry
    found = tuple(t for t in entry.tools if t.name == tool)
    if not found:
        names = [t.name for t in entry.tools]
        hint = suggest(tool, names) or f"its tools: {', '.join(names) or '(none)'}"
        raise NotFound(f"server {entry.server!r} has no tool {tool!r}", hint=hint)
    return replace(entry, tools=found)


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
