"""One tool in detail (`list SERVER TOOL`, `list --schema`): its whole description (dedented as a docstring
is), each parameter with type, `*` when required, default, enum and description, nested schemas as a tree,
the output schema, and a `miroctl call` line that runs as pasted (it carries the options that chose the
server: --config, --stdio, --url, ...).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from rich.tree import Tree

from miroctl.base.models import ToolInfo
from miroctl.core import schemas
from miroctl.core.examples import example_call
from miroctl.render.columns import PARAMETERS, wrap
from miroctl.render.heading import heading
from miroctl.render.output import Output

MAX_DEPTH = 6  # nested schemas deeper than this are summarised as "…"
MAX_ENUM = 20
_LIST_ITEM = re.compile(r"\s*(?:[-*+•]|\d+[.)])\s")


def tool_detail(out: Output, server: str, tool: ToolInfo, connection: Sequence[str] = ()) -> None:
    """Everything needed to call one tool, top to bottom."""
    out.out.print(heading(out, tool.name, f"({server})", tool.title if tool.title != tool.name else None))
    for line in _indented(out.safe(inspect.cleandoc(tool.description)), out.out.width):
        out.out.print(Text(line), soft_wrap=True)  # wrapped already, between words: a URL stays whole
    out.out.print(_schema_tree(out, PARAMETERS, tool.input_schema, "no parameters"))
    if tool.output_schema:
        out.out.print(_schema_tree(out, "output (structured content)", tool.output_schema, "any JSON value"))
    out.out.print(Text("example:", style="bold"))
    # soft_wrap: the line is never broken by miroctl, so it pastes whole whatever the width
    out.out.print(Text("  " + out.safe(example_call(server, tool, connection)), style="green"), soft_wrap=True)
    out.out.print()


def _indented(text: str, width: int) -> list[str]:
    """The whole text wrapped two spaces in (no padding to the screen's width) between words, as every
    description is (render/columns.py): the lines of a paragraph flow together, as a docstring's do; blank
    lines, list items and indented lines keep their place."""
    lines: list[str] = []
    for line in _paragraphs(text):
        indent = "  " + line[: len(line) - len(line.lstrip())]
        lines += wrap(line.strip(), max(20, width - len(indent)), indent) or [""]
    return lines if text else []


def _paragraphs(text: str) -> list[str]:
    """The text's lines with each run of plain lines (no list marker, no indent) joined into one."""
    out: list[str] = []
    for line in text.splitlines():
        plain = bool(line.strip()) and not line[:1].isspace() and not _LIST_ITEM.match(line)
        if plain and out and out[-1].strip() and not out[-1][:1].isspace():
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def _schema_tree(out: Output, label: str, schema: Mapping[str, Any], empty: str) -> Tree:
    tree = Tree(Text(label, style="bold"), guide_style="dim")
    properties = schemas.properties(schema)
    if not properties:
        root = schemas.resolve(schema, schema)
        kind = schemas.type_label(root, schema) if root else ""
        tree.add(Text(empty if kind in ("", "object", "any") else kind, style="dim"))
        return tree
    _add_properties(out, tree, schemas.resolve(schema, schema), schema, 0)
    return tree


def _add_properties(out: Output, tree: Tree, node: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> None:
    properties = node.get("properties")
    listed = node.get("required")
    required = listed if isinstance(listed, list) else []
    for name, prop in (properties or {}).items() if isinstance(properties, Mapping) else ():
        _add_property(out, tree, str(name), prop, name in required, root, depth)


def _add_property(
    out: Output, tree: Tree, name: str, prop: Any, required: bool, root: Mapping[str, Any], depth: int
) -> None:
    resolved = schemas.resolve(prop, root)
    label = Text(out.safe(name) + ("*" if required else ""), style="bold" if required else "")
    label.append("  " + out.safe(_type(resolved, root)), style="cyan")
    if "default" in resolved:
        label.append(f"  default: {out.safe(_json(resolved['default']))}", style="dim")
    branch = tree.add(label)
    described = resolved.get("description") or resolved.get("title")
    if isinstance(described, str) and described.strip():
        branch.add(Text(out.safe(described.strip())))
    values = resolved.get("enum")
    if isinstance(values, list):
        shown = ", ".join(_json(v) for v in values[:MAX_ENUM]) + (", …" if len(values) > MAX_ENUM else "")
        branch.add(Text("one of: " + out.safe(shown), style="dim"))
    if depth >= MAX_DEPTH:
        return
    _add_nested(out, branch, resolved, root, depth)


def _add_nested(out: Output, branch: Tree, resolved: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> None:
    """An object's own properties, an array's item schema, the alternatives of anyOf / oneOf."""
    if isinstance(resolved.get("properties"), Mapping):
        _add_properties(out, branch, resolved, root, depth + 1)
    items = schemas.items_of(resolved, root)
    if items and isinstance(items.get("properties"), Mapping):
        _add_properties(out, branch.add(Text("each item:", style="dim")), items, root, depth + 1)
    extra = resolved.get("additionalProperties")
    if isinstance(extra, Mapping) and extra:
        branch.add(Text(f"any other key: {out.safe(_type(schemas.resolve(extra, root), root))}", style="dim"))
    for key in ("anyOf", "oneOf"):
        options = [schemas.resolve(o, root) for o in resolved.get(key) or () if isinstance(o, Mapping)]
        for option in options:
            if isinstance(option.get("properties"), Mapping):
                alternative = branch.add(Text(f"{'either' if key == 'oneOf' else 'any of'}: object", style="dim"))
                _add_properties(out, alternative, option, root, depth + 1)


def _type(prop: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    """The JSON type (an enum's values are listed under it instead of in the type)."""
    if isinstance(prop.get("enum"), list):
        kinds = sorted(schemas.types(prop, root) - {"null"}) or ["any"]
        return " | ".join(kinds) + (" | null" if None in prop["enum"] else "")
    label = schemas.type_label(prop, root)
    fmt = prop.get("format")
    return f"{label} ({fmt})" if isinstance(fmt, str) and fmt else label


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
