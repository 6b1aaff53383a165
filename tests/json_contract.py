"""Validating miroctl's JSON documents against the schema files in miroctl/schemas."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from referencing import Registry, Resource

from miroctl import schemas


@cache
def _registry() -> Registry:
    loaded = [schemas.load(name) for name in (*schemas.DOCUMENTS, "common")]
    return Registry().with_resources((doc["$id"], Resource.from_contents(doc)) for doc in loaded)


def validate(document: Any) -> dict[str, Any]:
    """The document, after checking it against the schema its `schema` field names (AssertionError if not)."""
    assert isinstance(document, dict), f"not a JSON object: {document!r}"
    schema = json.loads(schemas.file_of(document["schema"]).read_text())
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    problems = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not problems, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in problems)
    return document


def one_document(stdout: str) -> dict[str, Any]:
    """The one JSON document on stdout, validated (anything else there is a failure)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one JSON document on stdout, got {len(lines)} lines:\n{stdout}"
    return validate(json.loads(lines[0]))
