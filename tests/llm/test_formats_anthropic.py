"""Anthropic: tool definitions for ``messages.create(tools=...)``, and ``toolbox.run`` on a ``Message``.

Definitions and the user message ``run`` returns are checked with the
``anthropic`` SDK's own types; the answers ``run`` reads are its own models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from anthropic.types import Message, MessageParam, ToolParam
from kitchen import PDF, PNG, kitchen

from mcp_sync import MCPClient, connect
from mcp_sync.llm import Toolbox

TOOL = pydantic.TypeAdapter(ToolParam)
MESSAGE = pydantic.TypeAdapter(MessageParam)


@pytest.fixture
def client() -> Iterator[MCPClient]:
    with connect(kitchen()) as connected:
        yield connected


def message(*blocks: dict[str, Any]) -> Message:
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(blocks),
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


def tool_use(id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


def test_definitions_are_what_messages_create_takes(client: MCPClient) -> None:
    tools = Toolbox(client).anthropic()
    for tool in tools:
        TOOL.validate_python(tool)
        json.dumps(tool)
    assert tools[0] == {
        "name": "weather",
        "description": "Weather: The weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "Where"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    }
    assert tools[1]["input_schema"] == {"type": "object", "properties": {}}  # no schema: no arguments


def test_run_answers_every_tool_use_in_one_user_message_of_tool_results(client: MCPClient) -> None:
    answer = message(
        {"type": "text", "text": "Let me look."},
        tool_use("tu_1", "weather", {"city": "Oslo", "unit": None}),
        tool_use("tu_2", "nowhere", {}),
        tool_use("tu_3", "fails", {}),
    )
    messages = Toolbox(client).run(answer)
    assert len(messages) == 1
    MESSAGE.validate_python(messages[0])
    [reply] = messages
    assert reply["role"] == "user"
    assert reply["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "tu_1",
        "content": [{"type": "text", "text": "sunny in Oslo"}],
    }
    assert (
        reply["content"][1]["is_error"] is True
        and "There is no tool named 'nowhere'" in reply["content"][1]["content"][0]["text"]
    )
    assert reply["content"][2] == {
        "type": "tool_result",
        "tool_use_id": "tu_3",
        "content": [{"type": "text", "text": "no such city"}],
        "is_error": True,
    }
    assert Toolbox(client).run(answer.content) == messages
    assert Toolbox(client).run(answer.model_dump()) == messages
    assert Toolbox(client).run([block.model_dump() for block in answer.content]) == messages


def test_run_with_no_tool_use_gives_nothing(client: MCPClient) -> None:
    assert Toolbox(client).run(message({"type": "text", "text": "Hello"})) == []


def test_tool_results_carry_images_and_pdfs_and_describe_the_rest(client: MCPClient) -> None:
    [reply] = Toolbox(client).run(
        message(tool_use("a", "chart", {}), tool_use("b", "report", {}), tool_use("c", "empty", {}))
    )
    MESSAGE.validate_python(reply)
    chart, report, empty = (block["content"] for block in reply["content"])
    assert chart == [
        {"type": "text", "text": "the chart:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "[an audio clip (audio/wav, 12 bytes) the tool returned, which cannot be shown here]"},
    ]
    assert report[0] == {"type": "text", "text": "[the resource file:///notes.md (text/markdown)]\n# Notes"}
    assert report[1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
        "title": "file:///report.pdf",
    }
    assert report[2]["type"] == "image"
    assert report[3]["text"].startswith("[a file file:///all.zip (application/octet-stream, 15 bytes)")
    assert report[4] == {
        "type": "text",
        "text": "[a link to the resource big.csv (file:///big.csv, text/csv): All rows]",
    }
    assert empty == [{"type": "text", "text": "The tool returned no content."}]  # Anthropic refuses an empty text block
