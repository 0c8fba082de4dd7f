"""Input schemas converted for each provider: references, unions, type lists, const and enum, formats, boolean
sub-schemas, recursion, missing type or properties; what cannot be converted is said, never dropped in silence."""

from __future__ import annotations

import re
from typing import Any

import pytest
from google.genai import types as gemini_types
from provider_rules import check_gemini_schema, check_strict

from mcp_sync.llm.schemas import SchemaProblem, drop_absent_nulls, gemini, openai_strict, plain_object

ADDRESS = {
    "type": "object",
    "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{4}$"}},
    "required": ["street"],
}
ORDER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"Address": ADDRESS, "Colour": {"enum": ["red", "green"]}},
    "definitions": {"Size": {"type": "integer", "enum": [1, 2, 3]}},
    "properties": {
        "ship_to": {"$ref": "#/$defs/Address", "description": "Where it goes"},
        "colour": {"$ref": "#/$defs/Colour"},
        "size": {"$ref": "#/definitions/Size"},
        "note": {"type": ["string", "null"], "default": None, "maxLength": 200},
        "when": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri"},
        "kind": {"const": "order"},
        "count": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        "either": {"type": ["integer", "string"]},
        "gift": {
            "allOf": [{"$ref": "#/$defs/Address"}, {"properties": {"to": {"type": "string"}}, "required": ["to"]}]
        },
        "tags": {"type": "array", "items": {"type": "string"}, "examples": [["a"]]},
        "secret": False,
        "priority": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
    "required": ["ship_to", "kind"],
}


def strict_ok(schema: dict[str, Any]) -> dict[str, Any]:
    converted = openai_strict(schema)
    check_strict(converted)
    return converted


def gemini_ok(schema: dict[str, Any], cuts: list[str] | None = None) -> dict[str, Any]:
    converted = gemini(schema, cuts)
    check_gemini_schema(gemini_types.Schema.model_validate(converted), top=bool(converted.get("properties")))
    return converted


# ----------------------------------------------------------------- plain objects


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"type": "object", "properties": {}}),
        ({"type": "object"}, {"type": "object", "properties": {}}),
        ({"type": ["object", "null"], "properties": {"a": {}}}, {"type": "object", "properties": {"a": {}}}),
        ({"properties": "nonsense"}, {"type": "object", "properties": {}}),
    ],
)
def test_plain_objects_get_type_and_properties_at_the_top(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert plain_object(given) == expected


@pytest.mark.parametrize(
    ("given", "says"), [({"type": "array"}, "an array"), ({"type": ["string", "null"]}, 'a ["string", "null"]')]
)
def test_a_top_that_is_not_an_object_is_a_problem(given: dict[str, Any], says: str) -> None:
    with pytest.raises(SchemaProblem, match=re.escape(f"describes {says}, not an object")):
        plain_object(given)


# ------------------------------------------------------------------ OpenAI strict


def test_strict_inlines_references_folds_unions_and_closes_every_object() -> None:
    converted = strict_ok(ORDER)
    properties = converted["properties"]
    assert converted["required"] == list(properties) and "secret" not in properties  # `false`: never given
    assert properties["ship_to"] == {
        "type": "object",
        "description": "Where it goes",
        "properties": {"street": {"type": "string"}, "zip": {"type": ["string", "null"], "pattern": "^[0-9]{4}$"}},
        "required": ["street", "zip"],
        "additionalProperties": False,
    }
    assert properties["colour"] == {"anyOf": [{"enum": ["red", "green"]}, {"type": "null"}]}
    assert properties["size"] == {"type": ["integer", "null"], "enum": [1, 2, 3, None]}
    assert properties["note"] == {"type": ["string", "null"]}  # default and maxLength are not strict keywords
    assert properties["when"]["format"] == "date-time" and "format" not in properties["site"]
    assert properties["kind"] == {"const": "order"}
    assert properties["count"] == {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}
    assert properties["gift"]["type"] == ["object", "null"] and properties["gift"]["required"] == [
        "street",
        "zip",
        "to",
    ]
    assert properties["priority"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert "$defs" not in converted


def test_strict_keeps_a_recursive_reference_as_a_reference_into_defs() -> None:
    tree = {
        "type": "object",
        "definitions": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
                "required": ["children"],
            }
        },
        "properties": {"root": {"$ref": "#/definitions/Node"}, "again": {"$ref": "#"}},
        "required": ["root", "again"],
    }
    converted = strict_ok(tree)
    assert converted["properties"]["root"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert converted["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert converted["properties"]["again"]["properties"]["again"] == {"$ref": "#"}


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"anyOf": [{"type": "object"}]}, "the top of its input schema is a union"),
        ({"properties": {"meta": {"type": "object"}}}, "meta: a free-form object"),
        (
            {"properties": {"map": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "map: an object open to more",
        ),
        ({"properties": {"anything": {}}}, "anything: a value of any type"),
        ({"properties": {"anything": True}}, "anything: a value of any type"),
        ({"properties": {"list": {"type": "array"}}}, "list: an array of values of any type"),
        ({"properties": {"x": {"anyOf": [False]}}}, "x.anyOf[0]: no value at all"),
        ({"properties": {"x": {"$ref": "#/$defs/Missing"}}}, "x: the reference '#/$defs/Missing' points nowhere"),
        ({"properties": {"x": {"$ref": "other.json#/a"}}}, "leaves the schema"),
        (
            {"properties": {"x": {"$ref": "#/properties/x"}}},
            "a recursive reference to '#/properties/x', outside $defs",
        ),
    ],
)
def test_what_strict_mode_cannot_say_is_a_problem_naming_where(schema: dict[str, Any], says: str) -> None:
    with pytest.raises(SchemaProblem, match=re.escape(says)):
        openai_strict(schema)


def test_strict_refuses_objects_nested_deeper_than_ten_levels() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for level in range(11):
        deep = {"type": "object", "properties": {f"l{level}": deep}, "required": [f"l{level}"]}
    with pytest.raises(SchemaProblem, match="objects nested deeper than 10 levels"):
        openai_strict(deep)
    strict_ok(deep["properties"]["l10"])


def test_strict_closes_an_explicitly_closed_empty_object_and_reads_a_missing_type() -> None:
    converted = strict_ok(
        {
            "properties": {
                "empty": {"type": "object", "additionalProperties": False},
                "shape": {"properties": {"x": {"type": "number"}}, "required": ["x"]},
                "list": {"items": {"type": "string"}},
                "choice": {"enum": ["a", None]},
            }
        }
    )
    properties = converted["properties"]
    assert properties["empty"]["type"] == ["object", "null"] and properties["empty"]["properties"] == {}
    assert properties["shape"]["type"] == ["object", "null"] and properties["list"]["type"] == ["array", "null"]
    assert properties["choice"] == {"anyOf": [{"enum": ["a", None]}, {"type": "null"}]}
    assert strict_ok({"type": "object"}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


# ------------------------------------------------------------------------ Gemini


def test_gemini_inlines_references_and_speaks_openapi() -> None:
    converted = gemini_ok(ORDER)
    properties = converted["properties"]
    assert "secret" not in properties and converted["required"] == ["ship_to", "kind"]
    assert properties["ship_to"] == {
        "type": "OBJECT",
        "description": "Where it goes",
        "properties": {"street": {"type": "STRING"}, "zip": {"type": "STRING", "pattern": "^[0-9]{4}$"}},
        "required": ["street"],
    }
    assert properties["colour"] == {"type": "STRING", "enum": ["red", "green"]}
    assert properties["size"] == {"type": "INTEGER", "description": "One of: 1, 2, 3."}
    assert properties["note"] == {"type": "STRING", "nullable": True, "default": None, "maxLength": 200}
    assert properties["when"] == {"type": "STRING", "format": "date-time"}
    assert properties["site"] == {"type": "STRING", "description": "Format: uri."}
    assert properties["kind"] == {"type": "STRING", "enum": ["order"]}
    assert properties["count"] == {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}
    assert properties["either"] == {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}
    assert properties["gift"]["required"] == ["street", "to"]
    assert properties["tags"] == {"type": "ARRAY", "items": {"type": "STRING"}, "example": ["a"]}
    assert properties["priority"] == {"type": "INTEGER", "nullable": True}


def test_gemini_notes_what_it_cannot_say_and_keeps_open_objects() -> None:
    converted = gemini_ok(
        {
            "properties": {
                "mode": {"const": 3, "description": "Fixed."},
                "maybe": {"enum": ["a", None]},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "closed": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
                "never": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": {"not": {}},
                },
                "anything": True,
                "nothing_in": {"type": "array", "items": False},
                "nulls": {"anyOf": [{"type": "null"}, False]},
                "ratio": {"type": "number", "format": "double", "exclusiveMinimum": 0},
                "odd": {"enum": [1, 1.5, {"a": 1}, [1], "a"]},
                "flag": {"const": True},
                "both": {"allOf": [True, {"type": "string"}]},
            }
        }
    )
    properties = converted["properties"]
    assert properties["mode"] == {"type": "INTEGER", "description": "Fixed. Always 3."}
    assert properties["maybe"] == {"type": "STRING", "nullable": True, "enum": ["a"]}
    assert properties["map"] == {"type": "OBJECT", "additionalProperties": {"type": "INTEGER"}}
    assert properties["closed"]["additionalProperties"] is False
    assert properties["anything"] == {} and properties["nothing_in"] == {"type": "ARRAY", "items": {}}
    assert properties["nulls"] == {"nullable": True}
    assert properties["ratio"] == {"type": "NUMBER", "format": "double"}
    assert properties["odd"] == {
        "anyOf": [{"type": t} for t in ("ARRAY", "INTEGER", "NUMBER", "OBJECT", "STRING")],
        "description": 'One of: 1, 1.5, {"a": 1}, [1], "a".',
    }
    assert properties["flag"] == {"type": "BOOLEAN", "description": "Always true."}
    assert properties["both"] == {"type": "STRING"}


def test_gemini_cuts_recursion_and_says_where() -> None:
    cuts: list[str] = []
    converted = gemini_ok({"properties": {"next": {"$ref": "#", "description": "The next one"}}}, cuts)
    inner = converted["properties"]["next"]["properties"]["next"]["properties"]["next"]
    assert inner == {"description": "The next one (nested too deep to describe here)."}
    assert cuts == ["next.next.next: the recursive reference '#' is cut after 2"]
    gemini({"properties": {"next": {"$ref": "#"}}})  # without a list to collect them, the cuts are only made


# ------------------------------------------------------------ the model's nulls


def test_the_nulls_a_model_gives_optional_arguments_are_left_out_where_null_is_not_allowed() -> None:
    schema = {
        "$defs": {"Inner": {"properties": {"deep": {"type": "string"}}}},
        "properties": {
            "unit": {"type": "string"},
            "may_be_null": {"type": ["string", "null"]},
            "anything": {},
            "needed": {"type": "string"},
            "inner": {"$ref": "#/$defs/Inner"},
            "items": {"type": "array", "items": {"properties": {"x": {"type": "integer"}}}},
            "choice": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "ref": {"$ref": "#/$defs/Missing"},
            "flag": True,
            "colour": {"enum": ["red"]},
        },
        "required": ["needed"],
    }
    given = {
        "unit": None,
        "may_be_null": None,
        "anything": None,
        "needed": None,
        "inner": {"deep": None},
        "items": [{"x": None}, 3],
        "choice": None,
        "ref": {"a": None},
        "flag": None,
        "colour": None,
        "unknown": None,
    }
    assert drop_absent_nulls(schema, given) == {
        "may_be_null": None,
        "anything": None,
        "needed": None,
        "inner": {},
        "items": [{}, 3],
        "choice": None,
        "ref": {"a": None},
        "flag": None,
        "unknown": None,
    }
    assert drop_absent_nulls(schema, "not an object") == "not an object"
