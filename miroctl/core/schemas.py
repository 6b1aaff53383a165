"""Reading a tool's input schema: local `$ref`s followed (a cycle, a dangling or a remote `$ref` leads to "any"
instead of an error), the JSON types a property admits, and short type labels for tables and signatures.

Servers written with pydantic put a model parameter under `$defs` and point at it with `$ref`; coercion and
labels must look through that as through `anyOf`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import unquote

MAX_DEPTH = 16  # $ref hops and anyOf/oneOf/allOf levels followed; deeper schemas read as "any"


def resolve(prop: object, root: Mapping[str, object] | None) -> Mapping[str, object]:
    """The schema a property stands for, its local `$ref`s followed; {} (any) when one leads nowhere or in a
    circle, or points outside the schema."""
    seen: set[str] = set()
    while isinstance(prop, Mapping) and isinstance(prop.get("$ref"), str):
        ref = prop["$ref"]
        if root is None or not ref.startswith("#") or ref in seen or len(seen) >= MAX_DEPTH:
            return {}
        seen.add(ref)
        prop = _pointer(root, ref[1:])
    return prop if isinstance(prop, Mapping) else {}


def properties(schema: Mapping[str, object]) -> Mapping[str, object]:
    """The properties of a tool's input schema (itself possibly a `$ref`), or {}."""
    found = resolve(schema, schema).get("properties")
    return found if isinstance(found, Mapping) else {}


def listed(schema: Mapping[str, object], key: str) -> list[object]:
    """A keyword's list (`anyOf`, `enum`, `required`...), or [] when the schema has none (or not a list)."""
    value = schema.get(key)
    return value if isinstance(value, list) else []


def _pointer(root: Mapping[str, object], pointer: str) -> object:
    """The part of `root` a JSON pointer (the fragment of a `$ref`) names, or None."""
    node: object = root
    for part in [p for p in unquote(pointer).split("/")[1:]]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def types(prop: object, root: Mapping[str, object] | None = None, depth: int = 0) -> set[str]:
    """Every JSON type a property schema admits, looking through `$ref`, anyOf / oneOf / allOf and enum."""
    prop = resolve(prop, root)
    found: set[str] = set()
    kind = prop.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    if depth < MAX_DEPTH:
        for key in ("anyOf", "oneOf", "allOf"):
            options = prop.get(key)
            for option in options if isinstance(options, list) else ():
                found |= types(option, root, depth + 1)
    enum = prop.get("enum")
    if not found and isinstance(enum, list):
        found |= {_json_type(v) for v in enum}
    if not found and isinstance(prop.get("properties"), Mapping):
        found.add("object")
    return found


def items_of(prop: object, root: Mapping[str, object] | None) -> Mapping[str, object]:
    """The schema of an array property's items (through `$ref`s), or {}."""
    prop = resolve(prop, root)
    for option in [prop, *(o for key in ("anyOf", "oneOf") for o in listed(prop, key) if isinstance(o, Mapping))]:
        option = resolve(option, root)
        if isinstance(option.get("items"), Mapping):
            return resolve(option["items"], root)
    return {}


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "null" if value is None else "object"


def type_label(prop: object, root: Mapping[str, object] | None = None, depth: int = 0) -> str:
    """A short type for a property schema: string, integer[], string | null, enum values..."""
    prop = resolve(prop, root)
    if "enum" in prop and isinstance(prop["enum"], list):
        return " | ".join(json.dumps(v) for v in prop["enum"][:6])
    admitted = types(prop, root)
    kinds = sorted(admitted - {"null"}) or ["any"]
    label = " | ".join(kinds)
    if kinds == ["array"] and depth < MAX_DEPTH and items_of(prop, root):
        label = f"{type_label(items_of(prop, root), root, depth + 1)}[]"
    return label + (" | null" if "null" in admitted else "")
