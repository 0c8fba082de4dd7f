"""AnthropicSampling: a server's sampling requests answered through the real ``anthropic`` client, against the stub.

The server (tests/servers/sampler.py) asks with ``ctx.sample`` or runs a sampling loop with tools; the client
answers with ``AnthropicSampling(anthropic.Anthropic(base_url=stub))``. Each test checks what the SDK actually sent
(the stub's recorded request) and what the server got back, in both eras.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from servers import sampler
from servers.llm_stub import REDACTED, LLMStub, ToolCall

import mcp_sync
from mcp_sync import MCPClient, MCPError
from mcp_sync.llm import AnthropicSampling
from mcp_sync.server import start_http

ERAS = ["handshake", "stateless"]
KEY = "sk-ant-test-0123456789abcdef"
SAMPLER = [sys.executable, str(Path(__file__).resolve().parents[1] / "servers" / "sampler.py")]
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
AUDIO = {"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"}


@pytest.fixture
def stub() -> Iterator[LLMStub]:
    with LLMStub() as running:
        yield running


def provider(stub: LLMStub, **options: Any) -> AnthropicSampling:
    client = anthropic.Anthropic(base_url=stub.url, api_key=KEY, max_retries=0, timeout=10)
    return AnthropicSampling(client, **{"model": "claude-haiku-4-5", **options})


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def sample(client: MCPClient, **arguments: Any) -> Any:
    return json.loads(client.call_tool("sample", arguments).text)


@pytest.mark.parametrize("era", ERAS)
def test_a_request_reaches_anthropic_as_a_messages_call_and_the_answer_reaches_the_server(
    stub: LLMStub, era: str
) -> None:
    stub.reply_text("A red pixel.", model="claude-sonnet-4-5-20250929", thinking="It is one pixel.")
    sampling = provider(stub, models={"opus": "claude-opus-4-1", "claude-sonnet": "claude-sonnet-4-5"})
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Describe this."}, IMAGE]},
        {"role": "assistant", "content": {"type": "text", "text": "A pixel."}},
        user("Which colour?"),
    ]
    with mcp_sync.connect(sampler.build(), era=era, sampling_provider=sampling) as client:
        got = sample(
            client,
            messages=messages,
            system_prompt="Be terse.",
            max_tokens=50,
            temperature=0.2,
            stop_sequences=["END"],
            hints=["sonnet"],  # within the key "claude-sonnet"
        )
    assert got == {
        "role": "assistant",
        "content": {"type": "text", "text": "A red pixel."},  # the thinking block is not MCP content
        "model": "claude-sonnet-4-5-20250929",
        "stopReason": "endTurn",
    }
    [sent] = stub.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == REDACTED  # SDK 2.x sends the key as a bearer token
    # No temperature: the API version the SDK speaks (2026-10-21) refuses it for every model.
    assert sent.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 50,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe this."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "A pixel."}]},
            {"role": "user", "content": [{"type": "text", "text": "Which colour?"}]},
        ],
        "system": "Be terse.",
        "stop_sequences": ["END"],
    }


def test_hints_pick_from_the_table_else_the_default_model_and_each_stop_reason_is_mapped(stub: LLMStub) -> None:
    stub.reply_text("Once", stop="max_tokens")
    stub.reply_text("Once upon", stop="stop_sequence", stop_sequence="END")
    stub.reply_text("Once upon a time.")
    table = {"claude": "claude-sonnet-4-5", "haiku": "claude-haiku-4-5"}
    with mcp_sync.connect(
        sampler.build(), sampling_provider=provider(stub, model="claude-opus-4-1", models=table)
    ) as c:
        cut = sample(c, messages=[user("A story?")], hints=["claude-3-haiku"])  # the key "claude" is in the hint
        stopped = sample(c, messages=[user("A story?")], stop_sequences=["END"], hints=["gpt-4o"])
        whole = sample(c, messages=[user("A story?")], hints=["", "HAIKU"])  # case aside, equal wins
    assert [request.body["model"] for request in stub.requests] == [
        "claude-sonnet-4-5",
        "claude-opus-4-1",
        "claude-haiku-4-5",
    ]
    assert [answer["stopReason"] for answer in (cut, stopped, whole)] == ["maxTokens", "stopSequence", "endTurn"]


@pytest.mark.parametrize("era", ERAS)
def test_a_sampling_loop_with_tools_over_http(stub: LLMStub, era: str) -> None:
    stub.reply_tool_calls([ToolCall("add", {"a": 2, "b": 3}, id="toolu_7")], text="Let me add.")
    stub.reply_text("2 + 3 = 5")
    with (
        start_http(sampler.build()) as running,
        mcp_sync.connect(running.url, era=era, sampling_provider=provider(stub)) as client,
    ):
        answers = json.loads(client.call_tool("add_with_model", {"question": "2+3?", "tool_choice": "required"}).text)
    assert answers == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "toolu_7", "name": "add", "input": {"a": 2, "b": 3}},
            ],
            "model": "claude-haiku-4-5",
            "stopReason": "toolUse",
        },
        {
            "role": "assistant",
            "content": {"type": "text", "text": "2 + 3 = 5"},
            "model": "claude-haiku-4-5",
            "stopReason": "endTurn",
        },
    ]
    first, second = (request.body for request in stub.requests)
    definition = {"name": "add", "description": "Add two integers.", "input_schema": sampler.ADD.input_schema}
    assert (first["tools"], first["tool_choice"]) == ([definition], {"type": "any"})  # "required" is Anthropic's any
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "2+3?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "toolu_7", "name": "add", "input": {"a": 2, "b": 3}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_7", "content": [{"type": "text", "text": "5"}]}],
        },
    ]


def test_tool_choices_and_tools_without_a_description(stub: LLMStub) -> None:
    bare = {"name": "now", "inputSchema": {"type": "object"}}
    for _ in range(3):
        stub.reply_text("No tool needed.")
    with mcp_sync.connect(sampler.build(), sampling_provider=provider(stub)) as client:
        for choice in ("none", "auto", None):
            client.call_tool("add_with_model", {"question": "Time?", "tool_choice": choice, "tools": [bare]})
    none, auto, unset = (request.body for request in stub.requests)
    assert none["tools"] == [{"name": "now", "input_schema": {"type": "object"}}]
    assert (none["tool_choice"], auto["tool_choice"], "tool_choice" in unset) == (
        {"type": "none"},
        {"type": "auto"},
        False,
    )


def test_tool_results_keep_text_images_and_errors_and_name_what_anthropic_cannot_take(stub: LLMStub) -> None:
    stub.reply_text("Done.")
    results = [
        {
            "type": "tool_result",
            "toolUseId": "t1",
            "content": [
                {"type": "text", "text": "3"},
                IMAGE,
                AUDIO,
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "alpha"}},
                {"type": "resource_link", "uri": "file:///d.txt", "name": "d"},
            ],
        },
        {"type": "tool_result", "toolUseId": "t2", "content": [], "structuredContent": {"mean": 2}},
        {"type": "tool_result", "toolUseId": "t3", "content": [{"type": "text", "text": "boom"}], "isError": True},
    ]
    with mcp_sync.connect(sampler.build(), sampling_provider=provider(stub)) as client:
        sample(client, messages=[user("Go."), {"role": "user", "content": results}])
    assert stub.requests[0].body["messages"][1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {"type": "text", "text": "3"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "[audio/wav audio left out: Anthropic takes none in a tool result]"},
                    {"type": "text", "text": "alpha"},
                    {"type": "text", "text": "[resource link: file:///d.txt]"},
                ],
            },
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": '{"mean": 2}'}]},
            {
                "type": "tool_result",
                "tool_use_id": "t3",
                "content": [{"type": "text", "text": "boom"}],
                "is_error": True,
            },
        ],
    }


@pytest.mark.parametrize("era", ERAS)
def test_an_api_error_reaches_the_server_as_an_error_without_the_key(stub: LLMStub, era: str) -> None:
    stub.reply_error(429, f"Rate limited for key {KEY}", error_type="rate_limit_error")
    expected = "Anthropic refused the sampling request (HTTP 429): Rate limited for key [redacted]"
    with mcp_sync.connect(sampler.build(), era=era, sampling_provider=provider(stub)) as client:
        if era == "handshake":  # the server's ctx.sample raised it
            assert sample(client, messages=[user("Hi")]) == {"error": expected}
        else:  # an input round's answer cannot be an error: the client's call fails with it
            with pytest.raises(MCPError) as caught:
                sample(client, messages=[user("Hi")])
            assert caught.value.message == expected
    assert len(stub.requests) == 1


def test_audio_in_a_message_is_refused_before_anything_is_sent(stub: LLMStub) -> None:
    with mcp_sync.connect(sampler.build(), era="handshake", sampling_provider=provider(stub)) as client:
        got = sample(client, messages=[{"role": "user", "content": [{"type": "text", "text": "Hear this."}, AUDIO]}])
    assert got == {"error": "Anthropic's Messages API takes no audio (audio/wav): this request cannot be sampled"}
    assert stub.requests == []


@pytest.mark.parametrize("era", ERAS)
def test_a_client_with_anthropic_sampling_declares_sampling_with_tools_over_stdio(stub: LLMStub, era: str) -> None:
    with mcp_sync.connect(SAMPLER, era=era, sampling_provider=provider(stub)) as client:
        declared = json.loads(client.call_tool("sampling_capability", {}).text)
    assert declared == {"tools": {}}
