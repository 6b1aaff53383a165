"""A ready-to-paste `miroctl call` line for a tool, built from its input schema.

Each required parameter gets a value of its type (its default, const, first enum value or example when it
has one, a `<name>` placeholder for text), written as `key=value` when the command line turns that text
back into the same value, else as `key:=JSON`; every word is quoted for a POSIX shell.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence

from miroctl.base.errors import ArgumentError
from miroctl.base.models import ToolInfo
from miroctl.core import schemas
from miroctl.core.arguments import coerce

MAX_DEPTH = 6  # nested objects deeper than this are left empty in the example
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.@-]+")


def required(schema: Mapping[str, object]) -> list[str]:
    """The required parameter names of an input schema, in the order its properties list them."""
    root = schemas.resolve(schema, schema)
    names = root.get("required")
    if not isinstance(names, list):
        return []
    order = list(schemas.properties(schema))
    listed = [n for n in order if n in names]
    return listed + [n for n in names if isinstance(n, str) and n not in listed]


def example_value(prop: object, root: Mapping[str, object], name: str, depth: int = 0) -> object:
    """A value the property's schema accepts, for showing how to call the tool."""
    prop = schemas.resolve(prop, root)
    for key in ("default", "const"):
        if key in prop:
            return prop[key]
    for key in ("enum", "examples"):
        if choices := schemas.listed(prop, key):
            return choices[0]
    kinds = schemas.types(prop, root) - {"null"}
    if "object" in kinds and depth < MAX_DEPTH:
        return {key: example_value(sub, root, key, depth + 1) for key, sub in _required_properties(prop, root)}
    if "array" in kinds:
        return [example_value(schemas.items_of(prop, root), root, name, depth + 1)] if depth < MAX_DEPTH else []
    if "string" in kinds or not kinds:
        return f"<{name}>"
    if "integer" in kinds or "number" in kinds:
        low = prop.get("minimum", prop.get("exclusiveMinimum", 0))
        start = low + 1 if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
        return int(start) if "integer" in kinds or float(start).is_integer() else start
    if "boolean" in kinds:
        return True
    return {} if "object" in kinds else None


def _required_properties(prop: Mapping[str, object], root: Mapping[str, object]) -> list[tuple[str, object]]:
    properties = prop.get("properties")
    names = prop.get("required")
    if not isinstance(properties, Mapping) or not isinstance(names, list):
        return []
    return [(key, properties[key]) for key in properties if key in names]


def pair(key: str, value: object, prop: object, root: Mapping[str, object]) -> str:
    """`key=text` when the command line reads `text` back as `value`, else `key:=json`; shell-quoted."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        text = "true" if value else "false"
    try:
        same = _same(coerce(key, text, schemas.resolve(prop, root), root), value)
    except ArgumentError:
        same = False
    if same:
        return _quoted(key, "=", text)
    return _quoted(key, ":=", json.dumps(value, ensure_ascii=False))


def _same(parsed: object, value: object) -> bool:
    """Equal, and of the same JSON types (1 is not true, 1.0 is 1 in JSON)."""
    return json.dumps(parsed, sort_keys=True) == json.dumps(value, sort_keys=True)


def _quoted(key: str, sign: str, text: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{key}{sign}{shlex.quote(text)}"
    return shlex.quote(f"{key}{sign}{text}")


def example_call(server: str, tool: ToolInfo, connection: Sequence[str] = ()) -> str:
    """`miroctl call [CONNECTION] SERVER TOOL key=value ...` with every required parameter, ready to paste into
    a shell; `connection` is the options that name the server's config (`--stdio CMD`, `-c FILE`...)."""
    schema = tool.input_schema
    properties = schemas.properties(schema)
    words = ["miroctl", "call", *map(shlex.quote, connection), shlex.quote(server), shlex.quote(tool.name)]
    for name in required(schema):
        prop = properties.get(name, {})
        words.append(pair(name, example_value(prop, schema, name), prop, schema))
    return " ".join(words)
