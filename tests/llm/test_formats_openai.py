"""OpenAI: tool definitions for Chat Completions and Responses (strict too), and ``toolbox.run`` on their answers.

Definitions and answers are checked with the ``openai`` SDK's own types; the
answers ``run`` reads are built with the SDK's own models.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from kitchen import PDF, PNG, kitchen
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
)
from openai.types.responses import FunctionToolParam, Response
from openai.types.responses.response_input_param import FunctionCallOutput

from mcp_sync import MCPClient, MCPServer, connect
from mcp_sync.llm import SchemaConversionWarning, Toolbox

CHAT_TOOL = pydantic.TypeAdapter(ChatCompletionToolParam)
RESPONSES_TOOL = pydantic.TypeAdapter(FunctionToolParam)
TOOL_MESSAGE = pydantic.TypeAdapter(ChatCompletionToolMessageParam)
CALL_OUTPUT = pydantic.TypeAdapter(FunctionCallOutput)


@pytest.fixture
def client() -> Iterator[MCPClient]:
    with connect(kitchen()) as connected:
        yield connected


def completion(*calls: tuple[str, str, str]) -> ChatCompletion:
    """A ChatCompletion whose message asks for ``calls`` (id, name, arguments)."""
    tool_calls = [
        {"id": id, "type": "function", "function": {"name": name, "arguments": args}} for id, name, args in calls
    ]
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": tool_calls or None},
                }
            ],
        }
    )


def response(*items: dict[str, Any]) -> Response:
    return Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-test",
            "output": list(items),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": arguments}


# ----------------------------------------------------------------- definitions


def test_chat_definitions_are_what_chat_completions_take_with_descriptions_and_titles(client: MCPClient) -> None:
    tools = Toolbox(client).openai()
    for tool in tools:
        CHAT_TOOL.validate_python(tool)
        json.dumps(tool)
    weather = next(tool for tool in tools if tool["function"]["name"] == "weather")
    assert weather == {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Weather: The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Where"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                },
                "required": ["city"],
            },
        },
    }


def test_responses_definitions_are_flat_and_say_strict(client: MCPClient) -> None:
    tools = Toolbox(client).openai("responses")
    for tool in tools:
        RESPONSES_TOOL.validate_python(tool)
    weather = next(tool for tool in tools if tool["name"] == "weather")
    assert weather["type"] == "function" and weather["strict"] is False
    assert weather["parameters"]["required"] == ["city"]


def test_strict_definitions_close_objects_and_make_optional_properties_nullable(client: MCPClient) -> None:
    toolbox = Toolbox(client)
    chat = next(tool for tool in toolbox.openai(strict=True) if tool["function"]["name"] == "weather")
    CHAT_TOOL.validate_python(chat)
    assert chat["function"]["strict"] is True
    assert chat["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where"},
            "unit": {"type": ["string", "null"], "enum": ["c", "f", None]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    }
    flat = next(tool for tool in toolbox.openai("responses", strict=True) if tool["name"] == "weather")
    assert flat["strict"] is True and flat["parameters"] == chat["function"]["parameters"]
    assert toolbox.problems == {}


def test_a_schema_that_cannot_be_strict_is_given_with_strict_false_and_reported() -> None:
    server = MCPServer("open")
    server.register_tool("tag", lambda args, ctx: "ok", input_schema={"properties": {"labels": {"type": "object"}}})
    server.register_tool("plain", lambda args, ctx: "ok")
    with connect(server) as client:
        toolbox = Toolbox(client)
        with pytest.warns(SchemaConversionWarning, match="OpenAI: the tool 'tag' is given with strict: false: labels"):
            tools = {tool["function"]["name"]: tool["function"] for tool in toolbox.openai(strict=True)}
        assert tools["tag"]["strict"] is False and tools["tag"]["parameters"]["properties"] == {
            "labels": {"type": "object"}
        }
        assert tools["plain"]["strict"] is True
        assert list(toolbox.problems) == ["tag"]


def test_a_schema_that_is_no_object_is_left_out_and_reported_by_name() -> None:
    server = MCPServer("odd")
    server.register_tool("text_only", lambda args, ctx: "ok", input_schema={"type": "string"})
    server.register_tool("fine", lambda args, ctx: "ok")
    with connect(server) as client:
        toolbox = Toolbox(client)
        with pytest.warns(
            SchemaConversionWarning, match="'text_only' is left out: its input schema describes a string"
        ):
            assert [tool["function"]["name"] for tool in toolbox.openai()] == ["fine"]
        assert toolbox.problems == {"text_only": "left out: its input schema describes a string, not an object"}
        with warnings.catch_warnings():
            warnings.simplefilter("error", SchemaConversionWarning)  # how a program that must have every tool stops
            with pytest.raises(SchemaConversionWarning):
                toolbox.openai("responses")


# ------------------------------------------------------------------- Chat: run


def test_run_answers_a_chat_completion_with_one_tool_message_per_call_in_order(client: MCPClient) -> None:
    messages = Toolbox(client).run(
        completion(
            ("call_1", "weather", '{"city": "Oslo", "unit": null}'),
            ("call_2", "nowhere", "{}"),
            ("call_3", "weather", '{"city": '),
            ("call_4", "fails", ""),
        )
    )
    for message in messages:
        TOOL_MESSAGE.validate_python(message)
    assert [message["tool_call_id"] for message in messages] == ["call_1", "call_2", "call_3", "call_4"]
    assert messages[0] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}  # the null left out
    assert messages[1]["content"].startswith("The tool reported an error:\nThere is no tool named 'nowhere'.")
    assert "are not valid JSON" in messages[2]["content"]
    assert messages[3]["content"] == "The tool reported an error:\nno such city"


def test_run_takes_the_message_its_dict_or_its_tool_calls(client: MCPClient) -> None:
    toolbox = Toolbox(client)
    answer = completion(("c1", "weather", '{"city": "Rome", "unit": "c"}'))
    message = answer.choices[0].message
    expected = [{"role": "tool", "tool_call_id": "c1", "content": "sunny in Rome (c)"}]
    assert toolbox.run(message) == expected
    assert toolbox.run(message.model_dump()) == expected
    assert toolbox.run(message.tool_calls) == expected
    assert toolbox.run(answer.model_dump()) == expected


def test_run_with_no_tool_calls_gives_nothing(client: MCPClient) -> None:
    toolbox = Toolbox(client)
    assert toolbox.run(completion()) == []
    assert toolbox.run(ChatCompletionMessage(role="assistant", content="Hello")) == []
    assert toolbox.run([]) == []
    empty = completion().model_dump()
    empty["choices"] = []
    assert toolbox.run(empty) == []


def test_chat_tool_messages_take_only_text_so_media_are_described(client: MCPClient) -> None:
    messages = Toolbox(client).run(completion(("a", "chart", "{}"), ("b", "report", "{}"), ("c", "stats", "{}")))
    chart, report, stats = (message["content"] for message in messages)
    assert chart == (
        "the chart:\n[an image (image/png, 18 bytes) the tool returned, which cannot be shown here]\n"
        "[an audio clip (audio/wav, 12 bytes) the tool returned, which cannot be shown here]"
    )
    assert report.splitlines() == [
        "[the resource file:///notes.md (text/markdown)]",
        "# Notes",
        "[a file file:///report.pdf (application/pdf, 19 bytes) the tool returned, which cannot be shown here]",
        "[a file file:///pic.png (image/png, 18 bytes) the tool returned, which cannot be shown here]",
        "[a file file:///all.zip (application/octet-stream, 15 bytes) the tool returned, which cannot be shown here]",
        "[a link to the resource big.csv (file:///big.csv, text/csv): All rows]",
    ]
    assert json.loads(stats) == {"mean": 2.5, "n": 4}


def test_structured_content_is_not_repeated_when_a_text_block_already_says_it(client: MCPClient) -> None:
    [both, empty] = Toolbox(client).run(completion(("a", "both", "{}"), ("b", "empty", "{}")))
    assert both["content"] == '{"n": 4}'
    assert empty["content"] == "The tool returned no content."


# -------------------------------------------------------------- Responses: run


def test_run_answers_a_response_with_function_call_outputs(client: MCPClient) -> None:
    answer = response(
        {"type": "reasoning", "id": "rs_1", "summary": []},
        function_call("call_a", "weather", '{"city": "Bern"}'),
        function_call("call_b", "fails", "{}"),
    )
    items = Toolbox(client).run(answer)
    for item in items:
        CALL_OUTPUT.validate_python(item)
    assert items == [
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny in Bern"},
        {"type": "function_call_output", "call_id": "call_b", "output": "The tool reported an error:\nno such city"},
    ]
    assert Toolbox(client).run(answer.output) == items
    assert Toolbox(client).run([item.model_dump() for item in answer.output]) == items
    assert Toolbox(client).run(response()) == []


def test_responses_outputs_carry_images_and_pdfs_as_they_are(client: MCPClient) -> None:
    chart, report = Toolbox(client).run(response(function_call("a", "chart", "{}"), function_call("b", "report", "{}")))
    CALL_OUTPUT.validate_python(chart)
    CALL_OUTPUT.validate_python(report)
    assert chart["output"] == [
        {"type": "input_text", "text": "the chart:"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
        {
            "type": "input_text",
            "text": "[an audio clip (audio/wav, 12 bytes) the tool returned, which cannot be shown here]",
        },
    ]
    assert [part["type"] for part in report["output"]] == [
        "input_text",
        "input_file",
        "input_image",
        "input_text",
        "input_text",
    ]
    assert report["output"][1] == {
        "type": "input_file",
        "filename": "report.pdf",
        "file_data": f"data:application/pdf;base64,{PDF}",
    }


def test_a_failed_call_with_an_image_says_so_first() -> None:
    from mcp_sync.protocol.types import BlobResourceContents, CallToolResult, EmbeddedResource, ImageContent

    server = MCPServer("pictures")
    server.register_tool(
        "shot",
        lambda args, ctx: CallToolResult(
            content=[
                ImageContent(data=PNG, mime_type="image/png"),
                EmbeddedResource(resource=BlobResourceContents(uri="blob:", mime_type="application/pdf", blob=PDF)),
            ],
            is_error=True,
        ),
    )
    with connect(server) as client:
        [item] = Toolbox(client).run([function_call("x", "shot", "{}")])
    assert item["output"][0] == {"type": "input_text", "text": "The tool reported an error:"}
    assert item["output"][2]["filename"] == "file.pdf"  # a URI with no file name in it


# ---------------------------------------------------------------- not an answer


@pytest.mark.parametrize("thing", [42, "text", {"what": "ever"}, [1, 2], [{"type": "nothing"}]])
def test_run_refuses_what_no_provider_returns(client: MCPClient, thing: Any) -> None:
    with pytest.raises(
        TypeError, match=r"Toolbox.run\(\) takes a model's answer from an OpenAI, Anthropic or Gemini SDK"
    ):
        Toolbox(client).run(thing)
