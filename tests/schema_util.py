"""Validate instances against one definition of an official MCP JSON schema.

The schema of a revision is read from ``../shared/spec/<revision>/schema.json``
(relative to the repository root) when that copy exists, else from
``tests/spec/<revision>/schema.json``. Revisions whose schema uses ``$defs``
(2025-11-25 on) are checked with Draft 2020-12, older ones (``definitions``)
with draft-07.

>>> validate_definition("2025-11-25", "TextContent", {"type": "text", "text": "hi"})
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

__all__ = ["load_schema", "schema_path", "validate_definition"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def schema_path(revision: str) -> Path:
    """The schema file used for ``revision`` (the shared copy when present)."""
    shared = REPO_ROOT.parent / "shared" / "spec" / revision / "schema.json"
    if shared.is_file():
        return shared
    return REPO_ROOT / "tests" / "spec" / revision / "schema.json"


@functools.cache
def load_schema(revision: str) -> dict[str, Any]:
    """The parsed schema document of ``revision``."""
    with schema_path(revision).open(encoding="utf-8") as handle:
        document: dict[str, Any] = json.load(handle)
    return document


@functools.cache
def _validator(revision: str, definition: str) -> jsonschema.protocols.Validator:
    document = load_schema(revision)
    if "$defs" in document:
        key, cls = "$defs", jsonschema.Draft202012Validator
    else:
        key, cls = "definitions", jsonschema.Draft7Validator
    if definition not in document[key]:
        raise KeyError(f"{definition!r} is not defined in the {revision} schema")
    schema = {
        "$schema": cls.META_SCHEMA["$id"],
        "$ref": f"#/{key}/{definition}",
        key: document[key],
    }
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def validate_definition(revision: str, definition: str, instance: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``instance`` matches ``definition``.

    Raises ``KeyError`` when the revision's schema has no such definition.
    """
    _validator(revision, definition).validate(instance)
