"""Each provider's documented constraints on tool definitions, checked on what the Toolbox gives (tests' helper).

Sources: OpenAI's function-calling and structured-outputs guides (name
pattern, strict mode's supported subset), Anthropic's tool-use guide (name
pattern, ``input_schema`` an object), google-genai's ``FunctionDeclaration``
and ``Schema`` (name rule; every keyword a field of ``Schema``, which
forbids the others; string enums; formats by type).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic
from anthropic.types import ToolParam
from google.genai import types as gemini_types
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")

STRICT_KEYWORDS = {
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$ref", "$defs", "pattern", "format", "multipleOf", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems",
}  # fmt: skip
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
GEMINI_FORMATS = {"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}


def check_openai_chat(tool: dict[str, Any]) -> None:
    pydantic.TypeAdapter(ChatCompletionToolParam).validate_python(tool)
    json.dumps(tool)
    function = tool["function"]
    assert OPENAI_NAME.match(function["name"]), function["name"]
    assert function["parameters"]["type"] == "object" and "properties" in function["parameters"]
    if function.get("strict"):
        check_strict(function["parameters"])


def check_openai_responses(tool: dict[str, Any]) -> None:
    pydantic.TypeAdapter(FunctionToolParam).validate_python(tool)
    json.dumps(tool)
    assert OPENAI_NAME.match(tool["name"])
    if tool["strict"]:
        check_strict(tool["parameters"])


def check_strict(schema: dict[str, Any]) -> None:
    """OpenAI strict mode: the top an object (no union); every object closed, all its properties required; only
    the supported keywords and formats; references only to the top or into ``$defs``; 10 levels of objects."""
    assert "anyOf" not in schema
    defs = schema.get("$defs", {})

    def walk(node: Any, depth: int) -> None:
        assert isinstance(node, dict), node
        assert set(node) <= STRICT_KEYWORDS, set(node) - STRICT_KEYWORDS
        assert node.get("format", "date") in STRICT_FORMATS
        if "$ref" in node:
            assert set(node) == {"$ref"}
            ref = node["$ref"]
            assert ref == "#" or (ref.startswith("#/$defs/") and ref[8:] in defs), ref
            return
        kinds = node.get("type", [])
        kinds = kinds if isinstance(kinds, list) else [kinds]
        assert kinds or {"anyOf", "enum", "const"} & node.keys(), node
        if "object" in kinds:
            assert depth <= 10
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
            for sub in node["properties"].values():
                walk(sub, depth + 1)
        if "array" in kinds:
            walk(node["items"], depth)
        for sub in node.get("anyOf", []):
            walk(sub, depth)

    walk({key: value for key, value in schema.items() if key != "$defs"}, 0)
    for sub in defs.values():
        walk(sub, 1)


def check_anthropic(tool: dict[str, Any]) -> None:
    pydantic.TypeAdapter(ToolParam).validate_python(tool)
    json.dumps(tool)
    assert ANTHROPIC_NAME.match(tool["name"])
    assert tool["input_schema"]["type"] == "object"


def check_gemini(tools: list[dict[str, Any]]) -> int:
    """The declarations pass the SDK's checks and Gemini's rules; how many there are."""
    [tool] = gemini_types.GenerateContentConfig(tools=tools).tools or []  # type: ignore[arg-type]
    assert isinstance(tool, gemini_types.Tool)
    declarations = tool.function_declarations or []
    for declaration in declarations:
        assert declaration.name and GEMINI_NAME.match(declaration.name)
        if declaration.parameters is not None:
            check_gemini_schema(declaration.parameters, top=True)
    return len(declarations)


def check_gemini_schema(schema: gemini_types.Schema, top: bool = False) -> None:
    assert schema.ref is None and schema.defs is None
    if top:
        assert schema.type == gemini_types.Type.OBJECT and schema.properties
    if schema.format is not None:
        assert schema.type is not None and schema.format in GEMINI_FORMATS.get(schema.type.value, set()), schema
    if schema.enum is not None:
        assert schema.type == gemini_types.Type.STRING
    for sub in [*(schema.properties or {}).values(), *(schema.any_of or []), *([schema.items] if schema.items else [])]:
        check_gemini_schema(sub)
