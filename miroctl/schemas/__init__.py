"""JSON Schemas of every document miroctl prints with --json or serves from its JSON API, one file each.

A document names its schema in its `schema` field (`miroctl.call/1` is call.json); common.json holds the
parts they share. The files are the contract that tests validate every command's output against.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DIRECTORY = Path(__file__).resolve().parent
DOCUMENTS = ("call", "list", "check", "resource", "prompt", "error", "health", "serve", "bench", "daemons")


def file_of(schema: str) -> Path:
    """The schema file of a document's `schema` field (`miroctl.list/1` -> list.json); ValueError otherwise."""
    prefix, _, rest = schema.partition(".")
    name, _, version = rest.partition("/")
    if prefix != "miroctl" or name not in DOCUMENTS or version != "1":
        raise ValueError(f"not a miroctl document schema: {schema!r}")
    return DIRECTORY / f"{name}.json"


def load(name: str) -> dict[str, Any]:
    """One schema file by its name without .json (`common` included)."""
    document: dict[str, Any] = json.loads((DIRECTORY / f"{name}.json").read_text(encoding="utf-8"))
    return document
