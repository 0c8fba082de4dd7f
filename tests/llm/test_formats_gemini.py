"""Gemini: function declarations for google-genai, and ``toolbox.run`` on a ``GenerateContentResponse``.

Declarations are checked with ``google.genai.types`` (which checks every
field of a ``Schema``); the answers ``run`` reads are the SDK's own models.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import types
from kitchen import PDF, PNG, kitchen

from mcp_sync import MCPClient, MCPServer, connect
from mcp_sync.llm import SchemaConversionWarning, Toolbox


@pytest.fixture
def client() -> Iterator[MCPClient]:
    with connect(kitchen()) as connected:
        yield connected


def answer(*parts: dict[str, Any]) -> types.GenerateContentResponse:
    return types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"role": "model", "parts": list(parts)}}]}
    )


def call(name: str, args: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {"function_call": {"name": name, "args": args, **({"id": id} if id else {})}}


def test_declarations_are_one_tool_the_sdk_accepts(client: MCPClient) -> None:
    tools = Toolbox(client).gemini()
    config = types.GenerateContentConfig(tools=tools)
    [tool] = config.tools or []
    assert isinstance(tool, types.Tool)
    declarations = {one.name: one for one in tool.function_declarations or []}
    weather = declarations["weather"]
    assert weather.description == "Weather: The weather in a city."
    assert weather.parameters == types.Schema(
        type=types.Type.OBJECT,
        properties={
            "city": types.Schema(type=types.Type.STRING, description="Where"),
            "unit": types.Schema(type=types.Type.STRING, enum=["c", "f"]),
        },
        required=["city"],
    )
    assert declarations["chart"].parameters is None  # no arguments: no parameters (Gemini refuses an empty object)


def test_no_tools_no_tool() -> None:
    with connect(MCPServer("nothing")) as client:
        assert Toolbox(client).gemini() == []


def test_a_recursive_schema_is_cut_and_reported_a_non_object_left_out() -> None:
    server = MCPServer("trees")
    tree = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    server.register_tool("tree", lambda args, ctx: "ok", input_schema=tree)
    server.register_tool("word", lambda args, ctx: "ok", input_schema={"type": "string"})
    with connect(server) as client:
        toolbox = Toolbox(client)
        with pytest.warns(SchemaConversionWarning) as caught:
            tools = toolbox.gemini()
        assert sorted(toolbox.problems) == ["tree", "word"]
        assert toolbox.problems["tree"].startswith(
            "given cut short: root.children[].children[]: the recursive reference"
        )
        assert toolbox.problems["word"] == "left out: its input schema describes a string, not an object"
        assert len(caught) == 2
        [tool] = types.GenerateContentConfig(tools=tools).tools or []
        [declaration] = tool.function_declarations or []
        parameters = declaration.parameters
        assert parameters is not None and parameters.properties is not None
        inner = parameters.properties["root"].properties["children"].items.properties["children"].items  # type: ignore[union-attr,index]
        assert inner.description == "More of the same structure (nested too deep to describe here)."  # type: ignore[union-attr]


def test_run_answers_with_one_user_content_of_function_responses(client: MCPClient) -> None:
    response = answer(
        {"text": "Checking."},
        call("weather", {"city": "Paris", "unit": None}, "g1"),
        call("fails", {}),
        call("nowhere", {}),
    )
    [content] = Toolbox(client).run(response)
    parsed = types.Content.model_validate(content)
    assert parsed.role == "user"
    responses = [part.function_response for part in parsed.parts or []]
    assert [(one.id, one.name) for one in responses if one] == [("g1", "weather"), (None, "fails"), (None, "nowhere")]
    assert content["parts"][0]["function_response"]["response"] == {"output": "sunny in Paris"}
    assert content["parts"][1]["function_response"]["response"] == {"error": "no such city"}
    assert "There is no tool named 'nowhere'" in content["parts"][2]["function_response"]["response"]["error"]
    # The SDK's own forms, and the REST API's spelling, are read the same way.
    assert Toolbox(client).run(response.candidates[0].content) == [content]  # type: ignore[index]
    assert Toolbox(client).run(response.candidates[0].content.parts) == [content]  # type: ignore[index,union-attr]
    assert Toolbox(client).run(response.function_calls) == [content]
    rest = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"id": "g1", "name": "weather", "args": {"city": "Paris"}}}],
                }
            }
        ]
    }
    assert Toolbox(client).run(rest)[0]["parts"][0] == content["parts"][0]


def test_run_with_no_function_call_gives_nothing(client: MCPClient) -> None:
    assert Toolbox(client).run(answer({"text": "Hello"})) == []
    assert Toolbox(client).run(types.GenerateContentResponse(candidates=[])) == []
    assert Toolbox(client).run({"candidates": [{}]}) == []
    assert Toolbox(client).run(types.GenerateContentResponse()) == []  # a blocked prompt: no candidates at all


def test_function_responses_carry_images_and_pdfs_as_inline_parts(client: MCPClient) -> None:
    [content] = Toolbox(client).run(answer(call("chart", {}), call("report", {})))
    parsed = types.Content.model_validate(content)
    chart, report = (part.function_response for part in parsed.parts or [])
    assert chart is not None and report is not None
    assert chart.response == {
        "output": "the chart:\n[an audio clip (audio/wav, 12 bytes) the tool returned, which cannot be shown here]"
    }
    assert [(part.inline_data.mime_type, part.inline_data.data) for part in chart.parts or [] if part.inline_data] == [
        ("image/png", base64.b64decode(PNG))
    ]
    assert [part.inline_data.mime_type for part in report.parts or [] if part.inline_data] == [
        "application/pdf",
        "image/png",
    ]
    assert report.parts[0].inline_data.data == base64.b64decode(PDF)  # type: ignore[index,union-attr]
    assert "[a file file:///all.zip" in report.response["output"]  # type: ignore[index]
