"""A tool's input schema, as each model provider accepts it.

MCP gives tools' input schemas in JSON Schema 2020-12: references
(``$ref`` into ``$defs`` or ``definitions``, recursive ones too), unions,
``const``, type lists such as ``["string", "null"]``, boolean sub-schemas.
Each provider takes a different part of that language:

- :func:`plain_object`: OpenAI without strict mode and Anthropic take it as
  it is, once the top is an object with ``properties``;
- :func:`openai_strict`: OpenAI's strict mode (structured outputs) wants
  every object closed (``additionalProperties: false``) with every property
  required (an optional one becomes nullable), and a narrower set of
  keywords; a schema that cannot say the same thing under those rules
  (a free-form object, a value of any type) raises :class:`SchemaProblem`;
- :func:`gemini`: Gemini's ``FunctionDeclaration.parameters`` is an OpenAPI
  subset: references are inlined (a recursive one is cut after
  :data:`GEMINI_RECURSION` rounds, and said so), type lists become
  ``nullable``/``anyOf``, keywords it refuses are dropped, and what they
  said the model should know (a non-string enum, a format) goes into the
  description.

A schema that cannot be converted raises :class:`SchemaProblem`; the
:class:`~mcp_sync.llm.Toolbox` leaves that tool out, names it in
``toolbox.problems`` and issues a :class:`SchemaConversionWarning`.

>>> plain_object({"properties": {"city": {"type": "string"}}})
{'properties': {'city': {'type': 'string'}}, 'type': 'object'}
>>> openai_strict({"type": "object", "properties": {"city": {"type": "string"}}})["properties"]
{'city': {'type': ['string', 'null']}}
>>> gemini({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}})
{'type': 'OBJECT', 'properties': {'n': {'nullable': True, 'type': 'INTEGER'}}}
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .toolbox import ModelTool

__all__ = [
    "GEMINI_RECURSION",
    "OPENAI_STRICT_DEPTH",
    "SchemaConversionWarning",
    "SchemaProblem",
    "convert_each",
    "drop_absent_nulls",
    "gemini",
    "openai_strict",
    "plain_object",
]

OPENAI_STRICT_DEPTH = 10
"""The deepest nesting of objects OpenAI's strict mode takes."""

GEMINI_RECURSION = 2
"""How many times a recursive reference is followed on one path before Gemini's copy stops describing it."""


class SchemaProblem(ValueError):
    """A schema that cannot be given to a provider as it asks; the message says why."""


class SchemaConversionWarning(UserWarning):
    """A tool was left out, or given less strictly, because its schema does not fit a provider.

    Turn it into an error where a missing tool must stop the program:
    ``warnings.simplefilter("error", SchemaConversionWarning)``.
    """


def plain_object(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``type: object`` and ``properties`` at the top, otherwise unchanged (a copy).

    A top that is something else than an object cannot be a tool's
    arguments: :class:`SchemaProblem`.

    >>> plain_object({"type": "string"})
    Traceback (most recent call last):
    ...
    mcp_sync.llm.schemas.SchemaProblem: its input schema describes a string, not an object
    """
    result = copy.deepcopy(dict(schema))
    kind = result.get("type", "object")
    if isinstance(kind, list) and "object" in kind:
        kind = "object"
    if kind != "object":
        raise SchemaProblem(f"its input schema describes {_a(kind)}, not an object")
    result["type"] = "object"
    if not isinstance(result.get("properties"), Mapping):
        result["properties"] = {}
    return result


# ----------------------------------------------------------------- references


def _resolve(root: Mapping[str, Any], ref: str, where: str) -> Any:
    """The sub-schema ``ref`` (a JSON pointer inside ``root``) points to."""
    node: Any = root
    if ref != "#":
        if not ref.startswith("#/"):
            raise SchemaProblem(f"{where}: the reference {ref!r} leaves the schema")
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or key not in node:
                raise SchemaProblem(f"{where}: the reference {ref!r} points nowhere")
            node = node[key]
    return node


def _merged(node: Mapping[str, Any], other: Any) -> dict[str, Any]:
    """``node`` with ``other`` (a sub-schema of an ``allOf`` or a reference's target) folded in.

    ``node``'s own keywords win, except ``properties`` and ``required``, which add up.
    """
    if not isinstance(other, Mapping):
        return dict(node)
    result = {**other, **node}
    if isinstance(other.get("properties"), Mapping) and isinstance(node.get("properties"), Mapping):
        result["properties"] = {**node["properties"], **other["properties"], **node["properties"]}
    if isinstance(other.get("required"), list) and isinstance(node.get("required"), list):
        result["required"] = list(dict.fromkeys([*node["required"], *other["required"]]))
    return result


def _flattened(node: Mapping[str, Any], root: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``node`` without ``allOf`` (its parts folded in) and with ``oneOf`` read as ``anyOf``."""
    result = {key: value for key, value in node.items() if key != "allOf"}
    for part in node.get("allOf") or []:
        if isinstance(part, Mapping) and "$ref" in part:
            part = _merged({k: v for k, v in part.items() if k != "$ref"}, _resolve(root, part["$ref"], where))
        result = _merged(result, _flattened(part, root, where) if isinstance(part, Mapping) else part)
    if "oneOf" in result:
        result.setdefault("anyOf", result.pop("oneOf"))
    return result


def _a(kind: Any) -> str:
    text = json.dumps(kind) if isinstance(kind, list) else str(kind)
    return f"an {text}" if text[:1] in "aeiou" else f"a {text}"


# --------------------------------------------------------------- OpenAI strict

_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "title",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
"""The keywords OpenAI's strict mode takes (its structured outputs guide); the others are dropped."""

_STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})


def openai_strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` under OpenAI's strict-mode rules, or :class:`SchemaProblem` saying what cannot follow them.

    Every object gets ``additionalProperties: false`` and lists all its
    properties as required; an optional property's type gains ``"null"``
    (the model then sends ``null`` for it, which :func:`drop_absent_nulls`
    takes out again before the call). References are inlined, except
    recursive ones, which stay as references into ``$defs``. ``allOf`` is
    folded into one schema, ``oneOf`` read as ``anyOf``; keywords strict
    mode does not take (``default``, ``minLength``, most formats...) are
    dropped: the server still checks them.

    >>> openai_strict({"type": "object", "properties": {"tags": {"type": "object"}}})
    Traceback (most recent call last):
    ...
    mcp_sync.llm.schemas.SchemaProblem: tags: a free-form object (no properties declared) cannot be strict
    """
    root = plain_object(schema)
    if "anyOf" in root or "oneOf" in root:
        raise SchemaProblem("the top of its input schema is a union, which strict mode does not take")
    recursive: set[str] = set()
    result = _strict(root, root, "", 0, (), recursive)
    done: dict[str, Any] = {}
    while recursive - done.keys():
        ref = sorted(recursive - done.keys())[0]
        if ref == "#":
            done[ref] = None
            continue
        parts = ref[2:].split("/")
        if len(parts) != 2 or parts[0] not in ("$defs", "definitions"):
            raise SchemaProblem(f"a recursive reference to {ref!r}, outside $defs")
        done[ref] = _strict(_resolve(root, ref, ref), root, ref, 1, (ref,), recursive)
    defs = {ref[2:].split("/")[1]: converted for ref, converted in done.items() if converted is not None}
    if defs:
        result["$defs"] = defs
    return result


def _strict(
    node: Any, root: Mapping[str, Any], where: str, depth: int, chain: tuple[str, ...], recursive: set[str]
) -> dict[str, Any]:
    label = where or "the top"
    if not isinstance(node, Mapping):
        raise SchemaProblem(f"{label}: {'a value of any type' if node else 'no value at all'} cannot be strict")
    if "$ref" in node:
        ref = node["$ref"]
        if ref in chain:
            recursive.add(ref)
            parts = ref[2:].split("/")
            return {"$ref": f"#/$defs/{parts[-1]}" if ref != "#" else "#"}
        target = _resolve(root, ref, label)
        merged = _merged({key: value for key, value in node.items() if key != "$ref"}, target)
        return _strict(merged, root, where, depth, (*chain, ref), recursive)
    node = _flattened(node, root, label)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "format" and value not in _STRICT_FORMATS:
            continue
        if key in _STRICT_KEYWORDS:
            result[key] = value
    if "anyOf" in result:
        result["anyOf"] = [
            _strict(part, root, f"{where}.anyOf[{index}]" if where else f"anyOf[{index}]", depth, chain, recursive)
            for index, part in enumerate(node["anyOf"])
        ]
    kinds = result.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if not kinds and not {"anyOf", "enum", "const"} & result.keys():
        kinds = ["object"] if "properties" in node else ["array"] if "items" in node else []
        if not kinds:
            raise SchemaProblem(f"{label}: a value of any type cannot be strict")
        result["type"] = kinds[0]
    if "object" in kinds:
        if depth >= OPENAI_STRICT_DEPTH:
            raise SchemaProblem(f"{label}: objects nested deeper than {OPENAI_STRICT_DEPTH} levels")
        _strict_object(node, result, root, where, depth, chain, recursive)
    if "array" in kinds:
        if not isinstance(node.get("items"), Mapping):
            raise SchemaProblem(f"{label}: an array of values of any type cannot be strict")
        result["items"] = _strict(node["items"], root, f"{where}[]", depth, chain, recursive)
    return result


def _strict_object(
    node: Mapping[str, Any],
    result: dict[str, Any],
    root: Mapping[str, Any],
    where: str,
    depth: int,
    chain: tuple[str, ...],
    recursive: set[str],
) -> None:
    """Close the object ``result`` (converted from ``node``): all properties required, optional ones nullable."""
    label = where or "the top"
    properties = node.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    extra = node.get("additionalProperties")
    if extra not in (None, False):
        raise SchemaProblem(f"{label}: an object open to more properties (additionalProperties) cannot be strict")
    if not properties and where and extra is None:
        raise SchemaProblem(f"{label}: a free-form object (no properties declared) cannot be strict")
    required = set(node.get("required") or [])
    converted: dict[str, Any] = {}
    for name, sub in properties.items():
        if sub is False:  # a property that may never be given: the model is better not told of it
            continue
        path = f"{where}.{name}" if where else name
        one = _strict(sub, root, path, depth + 1, chain, recursive)
        converted[name] = one if name in required else _nullable(one)
    result["properties"] = converted
    result["required"] = list(converted)
    result["additionalProperties"] = False


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` that also accepts ``null``: its type list widened, or a union with null."""
    kind = node.get("type")
    if "anyOf" in node and "type" not in node:
        parts = node["anyOf"]
        return node if {"type": "null"} in parts else {**node, "anyOf": [*parts, {"type": "null"}]}
    if kind is None or "anyOf" in node or "$ref" in node or "const" in node:
        return {"anyOf": [node, {"type": "null"}]}
    kinds = kind if isinstance(kind, list) else [kind]
    result = {**node, "type": kinds if "null" in kinds else [*kinds, "null"]}
    if "enum" in node and None not in node["enum"]:
        result["enum"] = [*node["enum"], None]
    return result


# --------------------------------------------------------------------- Gemini

_GEMINI_KEYWORDS = frozenset(
    {
        "description",
        "title",
        "default",
        "example",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "nullable",
        "propertyOrdering",
    }
)
"""The keywords of ``google.genai.types.Schema`` copied as they are; the others are converted or dropped."""

_GEMINI_FORMATS = {"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}
"""The formats Gemini takes, by type."""


def gemini(schema: Mapping[str, Any], problems: list[str] | None = None) -> dict[str, Any]:
    """``schema`` as Gemini's ``FunctionDeclaration.parameters`` (an OpenAPI ``Schema``).

    References are inlined; a recursive one is followed :data:`GEMINI_RECURSION`
    times, then replaced by a description, and that cut is appended to
    ``problems``. Type lists become one type and ``nullable``, or
    ``anyOf``; ``oneOf`` is read as ``anyOf``, ``allOf`` folded in;
    ``const`` and a non-string ``enum`` (Gemini's enums are strings) become
    words in the description, as do formats Gemini does not know.

    >>> gemini({"properties": {"size": {"enum": [1, 2]}, "url": {"format": "uri"}}})["properties"]
    {'size': {'type': 'INTEGER', 'description': 'One of: 1, 2.'}, 'url': {'description': 'Format: uri.'}}
    """
    root = plain_object(schema)
    result = _gemini(root, root, "", (), problems if problems is not None else [])
    assert result is not None  # the top is an object (plain_object said so)
    return result


def _gemini(
    node: Any, root: Mapping[str, Any], where: str, chain: tuple[str, ...], problems: list[str]
) -> dict[str, Any] | None:
    """One node in Gemini's form; ``None`` for ``false`` (nothing is valid there)."""
    if node is True or node is False:
        return {} if node else None
    if "$ref" in node:
        ref = node["$ref"]
        if chain.count(ref) >= GEMINI_RECURSION:
            problems.append(f"{where or 'the top'}: the recursive reference {ref!r} is cut after {GEMINI_RECURSION}")
            text = node.get("description") or "More of the same structure"
            return {"description": f"{text} (nested too deep to describe here)."}
        target = _resolve(root, ref, where or "the top")
        merged = _merged({key: value for key, value in node.items() if key != "$ref"}, target)
        return _gemini(merged, root, where, (*chain, ref), problems)
    node = _flattened(node, root, where or "the top")
    result: dict[str, Any] = {}
    notes: list[str] = []
    kinds = node.get("type", [])
    kinds = list(kinds) if isinstance(kinds, list) else [kinds]
    if not kinds:
        kinds = ["object"] if "properties" in node else ["array"] if "items" in node else []
    if "null" in kinds:
        kinds.remove("null")
        result["nullable"] = True
    values = [node["const"]] if "const" in node else node.get("enum")
    if isinstance(values, list) and None in values:
        values = [value for value in values if value is not None]
        result["nullable"] = True
    if isinstance(values, list) and values and all(isinstance(value, str) for value in values):
        kinds = ["string"]
        result["enum"] = values
    elif isinstance(values, list) and values:
        kinds = kinds or sorted({_json_type(value) for value in values})
        notes.append(("One of: " if len(values) > 1 else "Always ") + ", ".join(json.dumps(v) for v in values) + ".")
    if len(kinds) == 1:
        result["type"] = kinds[0].upper()
    elif kinds:
        result["anyOf"] = [{"type": kind.upper()} for kind in kinds]
    if "anyOf" in node:
        parts = [_gemini(part, root, where, chain, problems) for part in node["anyOf"]]
        kept = [part for part in parts if part is not None and part != {"nullable": True}]  # null alone
        if len(kept) < len([part for part in parts if part is not None]):
            result["nullable"] = True
        if len(kept) == 1:
            result = {**kept[0], **result}
        elif kept and {} not in kept:  # a union with a part that takes anything says nothing
            result["anyOf"] = kept
    fmt = node.get("format")
    if fmt is not None and len(kinds) == 1 and fmt in _GEMINI_FORMATS.get(kinds[0], ()):
        result["format"] = fmt
    elif fmt is not None:
        notes.append(f"Format: {fmt}.")
    for key in _GEMINI_KEYWORDS & node.keys():
        result[key] = node[key]
    if "example" not in node and isinstance(node.get("examples"), list) and node["examples"]:
        result["example"] = node["examples"][0]
    if notes:
        result["description"] = " ".join([*([node["description"]] if node.get("description") else []), *notes])
    if isinstance(node.get("properties"), Mapping):
        _gemini_object(node, result, root, where, chain, problems)
    if isinstance(node.get("items"), (Mapping, bool)):
        items = _gemini(node["items"], root, f"{where}[]", chain, problems)
        result["items"] = items if items is not None else {}
    if isinstance(node.get("additionalProperties"), (Mapping, bool)):
        extra = _gemini(node["additionalProperties"], root, f"{where}{{}}", chain, problems)
        result["additionalProperties"] = extra if extra is not None else False
    return result


def _json_type(value: Any) -> str:
    """The JSON Schema type of a JSON value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def _gemini_object(
    node: Mapping[str, Any],
    result: dict[str, Any],
    root: Mapping[str, Any],
    where: str,
    chain: tuple[str, ...],
    problems: list[str],
) -> None:
    properties: dict[str, Any] = {}
    for name, sub in node["properties"].items():
        converted = _gemini(sub, root, f"{where}.{name}" if where else name, chain, problems)
        if converted is not None:
            properties[name] = converted
    result["properties"] = properties
    required = [name for name in node.get("required") or [] if name in properties]
    if required:
        result["required"] = required


# -------------------------------------------------------------- the model's calls


def drop_absent_nulls(schema: Mapping[str, Any], arguments: Any) -> Any:
    """``arguments`` without the ``null`` a model sent for optional properties whose schema does not take null.

    Strict mode makes every property required and the optional ones
    nullable, so the model writes ``null`` where it means "not given"; the
    server's own schema would refuse that ``null``. Nested objects are
    cleaned too.

    >>> drop_absent_nulls({"properties": {"unit": {"type": "string"}}}, {"city": "Oslo", "unit": None})
    {'city': 'Oslo'}
    """
    return _drop_nulls(schema, schema, arguments, ())


def _drop_nulls(root: Mapping[str, Any], node: Any, value: Any, chain: tuple[str, ...]) -> Any:
    if not isinstance(node, Mapping):
        return value
    if isinstance(node.get("$ref"), str) and node["$ref"] not in chain:
        try:
            target = _resolve(root, node["$ref"], "")
        except SchemaProblem:
            return value
        return _drop_nulls(root, _merged(node, target), value, (*chain, node["$ref"]))
    if isinstance(value, list):
        return [_drop_nulls(root, node.get("items"), item, chain) for item in value]
    if not isinstance(value, dict) or not isinstance(node.get("properties"), Mapping):
        return value
    properties = node["properties"]
    required = set(node.get("required") or [])
    return {
        key: _drop_nulls(root, properties.get(key), item, chain)
        for key, item in value.items()
        if not (item is None and key in properties and key not in required and not _takes_null(properties[key]))
    }


def _takes_null(node: Any) -> bool:
    """Whether ``null`` may be a value of ``node`` (a reference is taken to allow it: it is not followed)."""
    if not isinstance(node, Mapping):
        return bool(node)
    kind = node.get("type")
    if kind is None and not {"enum", "const", "anyOf", "oneOf"} & node.keys():
        return True
    return (
        kind == "null"
        or (isinstance(kind, list) and "null" in kind)
        or node.get("nullable") is True
        or None in (node.get("enum") or [])
        or ("const" in node and node["const"] is None)
        or any(_takes_null(part) for part in [*(node.get("anyOf") or []), *(node.get("oneOf") or [])])
    )


# ------------------------------------------------------------- a toolbox's tools


def convert_each(
    tools: Sequence[ModelTool], convert: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> tuple[list[tuple[ModelTool, dict[str, Any]]], dict[str, str]]:
    """Each tool with its input schema converted by ``convert``; the tools it refused, by model name, and why.

    >>> convert_each([], plain_object)
    ([], {})
    """
    converted: list[tuple[ModelTool, dict[str, Any]]] = []
    problems: dict[str, str] = {}
    for tool in tools:
        try:
            converted.append((tool, convert(tool.tool.input_schema)))
        except SchemaProblem as exc:
            problems[tool.name] = f"left out: {exc}"
    return converted, problems
