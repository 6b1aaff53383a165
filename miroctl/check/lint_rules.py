"""What each model provider accepts in a tool's name and input schema, as rules over one tool.

The tables follow the providers' own documentation (late 2026):
- OpenAI function calling takes any JSON Schema object as parameters; names match ^[a-zA-Z0-9_-]{1,64}$.
- OpenAI strict function calling (Structured Outputs, `strict: true`, provider `openai-strict`: a client's
  choice, so named on its own and not part of a bare --strict): every object has `additionalProperties: false` and lists
  every property in `required` (optional ones are made nullable instead); `anyOf` is the only composition;
  `format` takes only date-time, time, date, duration, email, hostname, ipv4, ipv6 and uuid; the keywords in
  OPENAI_UNSUPPORTED are rejected; at most 10 levels of nesting; names match ^[a-zA-Z0-9_-]{1,64}$.
- Gemini function declarations (`parameters`): "a select subset of an OpenAPI 3.0 schema object", the fields in
  GEMINI_FIELDS; one `type` (nullable: true instead of a type list), string enums only; function names start
  with a letter or an underscore (letters, digits, _ . : -, at most 64); parameter names are letters, digits and
  underscores, at most 64, not starting with a digit.
- Anthropic tool use: names match ^[a-zA-Z0-9_-]{1,64}$ and input_schema is an object schema.
Every provider wants an object at the top of the input schema, never a `$ref` or a composition there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

PROVIDERS = ("openai", "anthropic", "gemini", "openai-strict")
# What a bare --strict lints for: each provider as it takes tools by default. OpenAI's strict mode is a client's
# opt-in that also refuses optional parameters; a server cannot meet it without making every parameter
# required for every other client, so it is asked for by name.
DEFAULT = ("openai", "anthropic", "gemini")
EVERY = frozenset(PROVIDERS)
_TYPED = frozenset({"openai", "openai-strict", "gemini"})  # a nested schema without a type is refused

NAME_RULES = {
    "openai": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "openai-strict": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "anthropic": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "gemini": re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$"),
}
GEMINI_PARAMETER = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")
DESCRIPTION_MAX = 1024  # longer ones cost every request's context; several hosts cut tool descriptions there
OPENAI_MAX_DEPTH = 10
OPENAI_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
OPENAI_UNSUPPORTED = frozenset(
    {
        "allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
        "patternProperties", "unevaluatedProperties", "propertyNames", "minProperties", "maxProperties",
        "minLength", "maxLength", "unevaluatedItems", "contains", "minContains", "maxContains", "uniqueItems",
    }
)  # fmt: skip
GEMINI_FIELDS = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
        "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
        "propertyOrdering", "default", "items", "minimum", "maximum",
        "additionalProperties",  # only `false` is let through (below): what the subset assumes anyway
    }
)  # fmt: skip
COMPOSITIONS = ("$ref", "anyOf", "oneOf", "allOf", "not")
TYPED_BY = ("$ref", "anyOf", "oneOf", "allOf", "enum", "const")  # a schema with these needs no `type`
MAX_NODES = 5000  # a hostile schema is walked this far, no further
MAX_DEPTH = 64


@dataclass(frozen=True)
class Problem:
    """One portability problem in one place of one tool."""

    path: str
    rule: str
    providers: frozenset[str]
    problem: str
    fix: str


def child(path: str, key: str) -> str:
    """`path.key`, or `path["a key"]` when the key is not a plain identifier."""
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$-]*", key) else f"{path}[{json.dumps(key)}]"


def portable_name(name: str) -> str:
    """A name every provider accepts, as close to `name` as it gets."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name) or "tool"
    if not re.match(r"[a-zA-Z_]", cleaned):
        cleaned = "_" + cleaned
    return cleaned[:64]


def name_problems(name: str) -> Iterator[Problem]:
    rejecting = frozenset(p for p, rule in NAME_RULES.items() if not rule.fullmatch(name))
    if rejecting:
        yield Problem(
            "name",
            "name",
            rejecting,
            f"tool name {name!r} is not a valid function name",
            f"rename it to {portable_name(name)!r} (letters, digits, _ and -, at most 64, not starting with a digit)",
        )


def description_problems(description: str) -> Iterator[Problem]:
    if not description.strip():
        yield Problem(
            "description", "description-empty", EVERY, "no description", "say what the tool does and when to use it"
        )
    elif len(description) > DESCRIPTION_MAX:
        yield Problem(
            "description",
            "description-huge",
            EVERY,
            f"description is {len(description)} characters long (over {DESCRIPTION_MAX})",
            "shorten it; move reference material into a resource or the parameters' own descriptions",
        )


def root_problems(schema: object) -> Iterator[Problem]:
    """The top of the input schema: one object, no reference or composition."""
    path = "input_schema"
    if not isinstance(schema, Mapping):
        yield Problem(path, "root-object", EVERY, "input schema is not a JSON object", 'give {"type": "object"}')
        return
    for key in COMPOSITIONS:
        if key in schema:
            yield Problem(
                child(path, key),
                "root-composition",
                EVERY,
                f"{key} at the top level of the input schema",
                "make the top level one object schema; move the alternatives into a property",
            )
    if "type" not in schema:
        yield Problem(child(path, "type"), "missing-type", EVERY, "no type at the top level", 'add "type": "object"')
    elif schema.get("type") != "object":
        yield Problem(
            child(path, "type"),
            "root-object",
            EVERY,
            f"top-level type is {json.dumps(schema.get('type'))}, not object",
            'use "type": "object" and put the value in a property',
        )


def schema_problems(schema: object, providers: frozenset[str]) -> Iterator[Problem]:
    """Every node of the input schema against the chosen providers' subsets."""
    budget = [MAX_NODES]
    if isinstance(schema, Mapping):
        yield from _node(schema, "input_schema", 1, providers, budget)


def _node(
    node: Mapping[str, object], path: str, depth: int, providers: frozenset[str], budget: list[int]
) -> Iterator[Problem]:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        return
    if depth > 1 and not any(k in node for k in ("type", *TYPED_BY)) and providers & _TYPED:
        yield Problem(
            child(path, "type"),
            "missing-type",
            providers & _TYPED,
            "no type",
            "add a type (string, number, integer, boolean, array or object)",
        )
    if "openai-strict" in providers:
        yield from _openai(node, path, depth)
    if "gemini" in providers:
        yield from _gemini(node, path)
    for key, sub in _children(node, path):
        yield from _node(sub, key, depth + 1, providers, budget)


def _children(node: Mapping[str, object], path: str) -> Iterator[tuple[str, Mapping[str, object]]]:
    for key in ("properties", "$defs", "definitions"):
        group = node.get(key)
        if isinstance(group, Mapping):
            for name, sub in group.items():
                if isinstance(sub, Mapping):
                    yield child(child(path, key), str(name)), sub
    for key in ("items", "additionalProperties", "not"):
        sub = node.get(key)
        if isinstance(sub, Mapping):
            yield child(path, key), sub
    for key in ("anyOf", "oneOf", "allOf", "prefixItems", "items"):
        group = node.get(key)
        if isinstance(group, list):
            for index, sub in enumerate(group):
                if isinstance(sub, Mapping):
                    yield f"{child(path, key)}[{index}]", sub


def _is_object(node: Mapping[str, object]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _openai(node: Mapping[str, object], path: str, depth: int) -> Iterator[Problem]:
    only = frozenset({"openai-strict"})
    if depth == OPENAI_MAX_DEPTH + 1:
        yield Problem(path, "openai-depth", only, f"nested deeper than {OPENAI_MAX_DEPTH} levels", "flatten the schema")
    if _is_object(node):
        if node.get("additionalProperties") is not False:
            yield Problem(
                child(path, "additionalProperties"),
                "openai-additional-properties",
                only,
                "strict mode needs additionalProperties: false on every object",
                "set additionalProperties: false (a free-form map cannot be strict: list its keys as properties)",
            )
        properties = node.get("properties")
        listed = node.get("required")
        required = listed if isinstance(listed, list) else []
        missing = [str(n) for n in properties if n not in required] if isinstance(properties, Mapping) else []
        if missing:
            yield Problem(
                child(path, "required"),
                "openai-required",
                only,
                f"strict mode needs every property required; optional: {', '.join(missing)}",
                'list them in required and make each nullable (e.g. "type": ["string", "null"]) to keep it optional',
            )
    for key in sorted(OPENAI_UNSUPPORTED & set(node)):
        yield Problem(
            child(path, key), "openai-keyword", only, f"{key} is not supported in strict mode", _keyword_fix(key)
        )
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in OPENAI_FORMATS:
        yield Problem(
            child(path, "format"),
            "openai-format",
            only,
            f"format {fmt!r} is not supported in strict mode",
            f"drop it and say {fmt!r} in the description (supported: {', '.join(sorted(OPENAI_FORMATS))})",
        )


def _keyword_fix(key: str) -> str:
    if key in ("oneOf", "allOf"):
        return f"use anyOf instead of {key}" if key == "oneOf" else "merge the allOf parts into one schema"
    return f"drop {key} and state the constraint in the description (miroctl still validates it before a call)"


def _gemini(node: Mapping[str, object], path: str) -> Iterator[Problem]:
    only = frozenset({"gemini"})
    for key in sorted(k for k in node if k not in GEMINI_FIELDS):
        fix = "drop it and describe the constraint in the description"
        if key == "$ref" or key in ("$defs", "definitions"):
            fix = "inline the referenced schema"
        elif key == "oneOf":
            fix = "use anyOf"
        elif key == "const":
            fix = "use a one-value enum"
        yield Problem(child(path, key), "gemini-keyword", only, f"{key} is not in Gemini's schema subset", fix)
    extra = node.get("additionalProperties")
    if "additionalProperties" in node and extra is not False:
        yield Problem(
            child(path, "additionalProperties"),
            "gemini-map",
            only,
            "a free-form map (additionalProperties) cannot be declared to Gemini",
            "list the keys as properties, or take the map as a JSON string",
        )
    if isinstance(node.get("type"), list):
        yield Problem(
            child(path, "type"),
            "gemini-type-list",
            only,
            f"type {json.dumps(node['type'])} is a list; Gemini takes one type",
            'use one type with "nullable": true, or anyOf',
        )
    enum = node.get("enum")
    if isinstance(enum, list) and not all(isinstance(value, str) for value in enum):
        yield Problem(child(path, "enum"), "gemini-enum", only, "enum values are not all strings", "use string values")
    properties = node.get("properties")
    for name in properties if isinstance(properties, Mapping) else ():
        if not GEMINI_PARAMETER.fullmatch(str(name)):
            yield Problem(
                child(child(path, "properties"), str(name)),
                "gemini-parameter-name",
                only,
                f"parameter name {name!r} is not accepted by Gemini",
                f"rename it to {re.sub(r'[^a-zA-Z0-9_]', '_', str(name))[:64]!r}",
            )
