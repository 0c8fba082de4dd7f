"""Reading JSON schemas: the one place that walks ``type``, ``enum`` and ``anyOf``/``oneOf``.

Used by the client (Python signatures for tools), the display layer (type
names in listings) and the command line (parsing ``key=value`` arguments).
:func:`declared_types` and :func:`alternatives` are the two readings every
walk here is built on.

>>> json_type_name({"type": ["string", "null"]}), sorted(json_kinds({"anyOf": [{"type": "integer"}, {"enum": ["a"]}]}))
('string | null', ['integer', 'string'])
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .types import Tool

__all__ = [
    "Argument",
    "alternatives",
    "arguments_of",
    "declared_types",
    "json_kind",
    "json_kinds",
    "json_type_name",
    "properties_of",
    "python_annotation",
    "tool_summary",
]


def declared_types(schema: Mapping[str, Any]) -> list[str] | None:
    """The schema's ``type`` as a list (``None`` when it declares none)."""
    kinds = schema.get("type")
    if isinstance(kinds, str):
        return [kinds]
    return [str(kind) for kind in kinds] if isinstance(kinds, list) else None


def alternatives(schema: Mapping[str, Any]) -> list[Any]:
    """The schema's ``anyOf`` (else ``oneOf``) variants; empty when it has none."""
    variants = schema.get("anyOf", schema.get("oneOf"))
    return variants if isinstance(variants, list) else []


def json_kind(value: Any) -> str:
    """The JSON type of a Python value (``boolean``, ``integer``, ``number``, ``string``, ``array``, ...)."""
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), "null")


def json_kinds(schema: Any) -> set[str]:
    """The JSON types a property schema allows (from ``type``, else ``enum``, else ``anyOf``/``oneOf``)."""
    if not isinstance(schema, Mapping):
        return set()
    kinds = declared_types(schema)
    if kinds is not None:
        return set(kinds)
    enum = schema.get("enum")
    if isinstance(enum, list):
        return {json_kind(value) for value in enum}
    found: set[str] = set()
    for variant in alternatives(schema):
        found |= json_kinds(variant)
    return found


_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": None,
}


_LITERAL_VALUES = (str, int, float, bool, type(None))


def python_annotation(schema: Any) -> Any:
    """The Python type that a JSON schema describes, as far as a signature can show it."""
    if not isinstance(schema, Mapping):
        return Any
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(value, _LITERAL_VALUES) for value in enum):
        return Literal.__getitem__(tuple(enum))
    kinds = declared_types(schema)
    if kinds is not None:
        members = [_type_annotation(kind, schema) for kind in kinds]
    else:
        variants = alternatives(schema)
        if not variants:
            return Any
        members = [python_annotation(variant) for variant in variants]
    if Any in members:
        return Any
    return functools.reduce(lambda left, right: left | right, members)


def _type_annotation(kind: str, schema: Mapping[str, Any]) -> Any:
    annotation = _JSON_TYPES.get(kind, Any)
    if annotation is list:
        item = python_annotation(schema.get("items"))
        return list if item is Any else list[item]  # type: ignore[valid-type]
    return annotation


def json_type_name(schema: Any) -> str:
    """A short name for the type a JSON schema describes: ``number``, ``string | null``, ``array[string]``.

    >>> json_type_name({"type": ["string", "null"]}), json_type_name({"enum": ["a", "b"]})
    ('string | null', '"a" | "b"')
    >>> json_type_name({"type": "array", "items": {"type": "integer"}}), json_type_name({})
    ('array[integer]', 'any')
    """
    if not isinstance(schema, Mapping):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return " | ".join(json.dumps(value) for value in enum)
    kinds = declared_types(schema)
    if kinds is not None:
        names = kinds
        if names == ["array"] and isinstance(schema.get("items"), Mapping):
            return f"array[{json_type_name(schema['items'])}]"
    else:
        variants = alternatives(schema)
        if not variants:
            return "any"
        names = [json_type_name(variant) for variant in variants]
    return " | ".join(dict.fromkeys(names))


@dataclass(frozen=True)
class Argument:
    """One property of a tool's input schema."""

    name: str
    schema: Mapping[str, Any]
    required: bool

    @property
    def has_default(self) -> bool:
        return "default" in self.schema


def properties_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def arguments_of(tool: Tool) -> list[Argument]:
    """The properties of a tool's input schema, the required ones first."""
    schema = tool.input_schema
    properties = properties_of(schema)
    required = schema.get("required")
    required = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    names = [*properties, *(name for name in sorted(required) if name not in properties)]
    arguments = []
    for name in names:
        property_schema = properties.get(name)
        arguments.append(
            Argument(name, property_schema if isinstance(property_schema, Mapping) else {}, name in required)
        )
    return sorted(arguments, key=lambda argument: not argument.required)


def tool_summary(tool: Tool) -> str:
    """A one-line call summary with JSON type names: ``add(a: number, b: number = 0, note?: string)``.

    >>> from mcp_sync.types import Tool
    >>> tool = Tool(name="add", input_schema={"type": "object", "required": ["a"],
    ...     "properties": {"a": {"type": "number"}, "b": {"type": "number", "default": 0}, "note": {}}})
    >>> tool_summary(tool)
    'add(a: number, b: number = 0, note?: any)'
    """
    parts = []
    for argument in arguments_of(tool):
        type_name = json_type_name(argument.schema)
        if argument.required:
            parts.append(f"{argument.name}: {type_name}")
        elif argument.has_default:
            parts.append(f"{argument.name}: {type_name} = {json.dumps(argument.schema['default'])}")
        else:
            parts.append(f"{argument.name}?: {type_name}")
    return f"{tool.name}({', '.join(parts)})"
