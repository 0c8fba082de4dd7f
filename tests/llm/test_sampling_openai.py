"""OpenAISampling: a server's sampling requests answered through the real ``openai`` client, against the loopback stub.

The server (tests/servers/sampler.py) asks with ``ctx.sample`` or runs a sampling loop with tools; the client
answers with ``OpenAISampling(openai.OpenAI(base_url=stub))``. Each test checks what the SDK actually sent (the
stub's recorded request) and what the server got back, in both eras.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from servers import sampler
from servers.llm_stub import REDACTED, LLMStub, ToolCall

import mcp_sync
from mcp_sync import MCPClient, MCPError
from mcp_sync.llm import OpenAISampling
from mcp_sync.server import start_http

ERAS = ["handshake", "stateless"]
KEY = "sk-test-0123456789abcdef"
SAMPLER = [sys.executable, str(Path(__file__).resolve().parents[1] / "servers" / "sampler.py")]
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
AUDIO = {"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"}


@pytest.fixture
def stub() -> Iterator[LLMStub]:
    with LLMStub() as running:
        yield running


def provider(stub: LLMStub, **options: Any) -> OpenAISampling:
    client = openai.OpenAI(base_url=stub.url + "/v1", api_key=KEY, max_retries=0, timeout=10)
    return OpenAISampling(client, **{"model": "gpt-4o", **options})


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def sample(client: MCPClient, **arguments: Any) -> Any:
    return json.loads(client.call_tool("sample", arguments).text)


@pytest.mark.parametrize("era", ERAS)
def test_a_request_reaches_openai_as_chat_messages_and_the_answer_reaches_the_server(stub: LLMStub, era: str) -> None:
    stub.reply_text("A pixel; a beep.", model="gpt-4.1-mini-2025-04-14")
    sampling = provider(stub, models={"gpt-4.1": "gpt-4.1", "mini": "gpt-4.1-mini"})
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Describe these."}, IMAGE, AUDIO]},
        {"role": "assistant", "content": {"type": "text", "text": "A pixel and a beep."}},
        user("Shorter."),
    ]
    with mcp_sync.connect(sampler.build(), era=era, sampling_provider=sampling) as client:
        got = sample(
            client,
            messages=messages,
            system_prompt="Be terse.",
            max_tokens=50,
            temperature=0.2,
            stop_sequences=["END"],
            hints=["claude-3-5-sonnet", "mini"],  # the first matches no key: the second picks the model
        )
    assert got == {
        "role": "assistant",
        "content": {"type": "text", "text": "A pixel; a beep."},
        "model": "gpt-4.1-mini-2025-04-14",  # the model the API says it used
        "stopReason": "endTurn",
    }
    [sent] = stub.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == REDACTED  # the SDK sent the user's key; the stub did not keep it
    assert sent.body == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe these."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}},
                ],
            },
            {"role": "assistant", "content": "A pixel and a beep."},
            {"role": "user", "content": "Shorter."},
        ],
        "max_completion_tokens": 50,
        "temperature": 0.2,
        "stop": ["END"],
    }


def test_without_a_matching_hint_the_default_model_answers_and_a_cut_answer_says_max_tokens(stub: LLMStub) -> None:
    stub.reply_text("Once upon", stop="max_tokens")
    stub.reply_text("Once upon a time.")
    with mcp_sync.connect(sampler.build(), sampling_provider=provider(stub, models={"mini": "gpt-4.1-mini"})) as client:
        cut = sample(client, messages=[user("A story?")], max_tokens=2, hints=["opus"])
        whole = sample(client, messages=[user("A story?")])
    assert (cut["model"], cut["stopReason"], cut["content"]["text"]) == ("gpt-4o", "maxTokens", "Once upon")
    assert (whole["model"], whole["stopReason"]) == ("gpt-4o", "endTurn")
    assert [request.body["model"] for request in stub.requests] == ["gpt-4o", "gpt-4o"]
    assert [request.body["max_completion_tokens"] for request in stub.requests] == [2, 100]
    assert all("temperature" not in request.body and "stop" not in request.body for request in stub.requests)


@pytest.mark.parametrize("era", ERAS)
def test_a_sampling_loop_with_tools_over_http(stub: LLMStub, era: str) -> None:
    stub.reply_tool_calls([ToolCall("add", {"a": 2, "b": 3}, id="call_7")], text="Let me add.")
    stub.reply_text("2 + 3 = 5")
    server = sampler.build()
    with (
        start_http(server) as running,
        mcp_sync.connect(running.url, era=era, sampling_provider=provider(stub)) as client,
    ):
        answers = json.loads(client.call_tool("add_with_model", {"question": "2+3?", "tool_choice": "required"}).text)
    assert answers == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "call_7", "name": "add", "input": {"a": 2, "b": 3}},
            ],
            "model": "gpt-4o",
            "stopReason": "toolUse",
        },
        {
            "role": "assistant",
            "content": {"type": "text", "text": "2 + 3 = 5"},
            "model": "gpt-4o",
            "stopReason": "endTurn",
        },
    ]
    first, second = (request.body for request in stub.requests)
    definition = {"name": "add", "description": "Add two integers.", "parameters": sampler.ADD.input_schema}
    assert first["tools"] == [{"type": "function", "function": definition}]
    assert first["tool_choice"] == "required"
    assert first["messages"] == [{"role": "user", "content": "2+3?"}]
    assert second["messages"] == [
        {"role": "user", "content": "2+3?"},
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                {"id": "call_7", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "5"},
    ]


def test_tool_choices_and_tools_without_a_description(stub: LLMStub) -> None:
    bare = {"name": "now", "inputSchema": {"type": "object"}}
    stub.reply_text("No tool needed.")
    stub.reply_text("Still none.")
    stub.reply_tool_calls([ToolCall("add", {"a": 1, "b": 1})])  # no text: the answer is the tool call alone
    stub.reply_text("2")
    with mcp_sync.connect(sampler.build(), sampling_provider=provider(stub)) as client:
        client.call_tool("add_with_model", {"question": "Time?", "tool_choice": "none", "tools": [bare]})
        client.call_tool("add_with_model", {"question": "Time?", "tools": [bare]})
        answers = json.loads(client.call_tool("add_with_model", {"question": "1+1?", "tool_choice": "auto"}).text)
    none, unset, auto, _ = (request.body for request in stub.requests)
    assert none["tools"] == [{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}]
    assert (none["tool_choice"], "tool_choice" in unset, auto["tool_choice"]) == ("none", False, "auto")
    call_id = answers[0]["content"]["id"]
    assert answers[0]["content"] == {"type": "tool_use", "id": call_id, "name": "add", "input": {"a": 1, "b": 1}}
    assert stub.requests[3].body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}
        ],
    }


def test_tool_results_of_every_kind_reach_openai_as_tool_messages_of_text(stub: LLMStub) -> None:
    stub.reply_text("Done.")
    results = [
        {"type": "tool_result", "toolUseId": "t1", "content": [{"type": "text", "text": "3"}]},
        {
            "type": "tool_result",
            "toolUseId": "t2",
            "content": [
                IMAGE,
                AUDIO,
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "alpha"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAEC"}},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///c.pdf", "blob": "AAEC", "mimeType": "application/pdf"},
                },
                {"type": "resource_link", "uri": "file:///d.txt", "name": "d"},
            ],
        },
        {"type": "tool_result", "toolUseId": "t3", "content": [], "structuredContent": {"mean": 2}},
        {"type": "tool_result", "toolUseId": "t4", "content": [{"type": "text", "text": "boom"}], "isError": True},
        {"type": "text", "text": "Now answer."},
    ]
    with mcp_sync.connect(sampler.build(), sampling_provider=provider(stub)) as client:
        got = sample(client, messages=[user("Go."), {"role": "user", "content": results}])
    assert got["content"]["text"] == "Done."
    assert stub.requests[0].body["messages"][1:] == [
        {"role": "tool", "tool_call_id": "t1", "content": "3"},
        {
            "role": "tool",
            "tool_call_id": "t2",
            "content": "\n".join(
                [
                    "[image/png image left out: OpenAI takes none in a tool result]",
                    "[audio/wav audio left out: OpenAI takes none in a tool result]",
                    "alpha",
                    "[resource file:///b.bin (binary) left out: it is not text]",
                    "[resource file:///c.pdf (application/pdf) left out: it is not text]",
                    "[resource link: file:///d.txt]",
                ]
            ),
        },
        {"role": "tool", "tool_call_id": "t3", "content": '{"mean": 2}'},
        {"role": "tool", "tool_call_id": "t4", "content": "Error: boom"},
        {"role": "user", "content": "Now answer."},
    ]


@pytest.mark.parametrize("era", ERAS)
def test_an_api_error_reaches_the_server_as_an_error_without_the_key(stub: LLMStub, era: str) -> None:
    stub.reply_error(401, f"Incorrect API key provided: {KEY}", error_type="authentication_error")
    expected = "OpenAI refused the sampling request (HTTP 401): Incorrect API key provided: [redacted]"
    with mcp_sync.connect(sampler.build(), era=era, sampling_provider=provider(stub)) as client:
        if era == "handshake":  # the server's ctx.sample raised it
            assert sample(client, messages=[user("Hi")]) == {"error": expected}
        else:  # an input round's answer cannot be an error: the client's call fails with it
            with pytest.raises(MCPError) as caught:
                sample(client, messages=[user("Hi")])
            assert caught.value.message == expected
    assert len(stub.requests) == 1


def test_an_unreachable_api_and_a_model_s_bad_arguments_are_errors_the_server_reads() -> None:
    with LLMStub() as gone:
        pass  # closed: nothing listens on its port any more
    server = sampler.build()
    with LLMStub() as stub, mcp_sync.connect(server, era="handshake", sampling_provider=provider(stub)) as client:
        stub.reply_tool_calls([ToolCall("add", '{"a": 1, "b": ')])  # cut short: not JSON
        bad = sample(client, messages=[user("1+2?")])
        client.sampling_provider = provider(gone)
        unreachable = sample(client, messages=[user("Hi")])
    assert bad == {"error": """the model's arguments for tool 'add' are not a JSON object: '{"a": 1, "b": '"""}
    assert unreachable == {
        "error": "OpenAI could not be reached for the sampling request: APIConnectionError: Connection error."
    }


def test_audio_the_chat_api_cannot_take_is_refused_before_anything_is_sent(stub: LLMStub) -> None:
    ogg = {"type": "audio", "data": "T2dnUw==", "mimeType": "audio/ogg"}
    with mcp_sync.connect(sampler.build(), era="handshake", sampling_provider=provider(stub)) as client:
        got = sample(client, messages=[{"role": "user", "content": ogg}])
    assert got == {"error": "OpenAI's chat API takes WAV or MP3 audio, not audio/ogg"}
    assert stub.requests == []


@pytest.mark.parametrize("era", ERAS)
def test_a_client_with_openai_sampling_declares_sampling_with_tools_over_stdio(stub: LLMStub, era: str) -> None:
    with mcp_sync.connect(SAMPLER, era=era, sampling_provider=provider(stub)) as client:
        declared = json.loads(client.call_tool("sampling_capability", {}).text)
    assert declared == {"tools": {}}


def test_the_providers_import_no_sdk_and_call_any_client_with_the_same_methods() -> None:
    script = """
import sys
from mcp_sync.llm import AnthropicSampling, OpenAISampling
from mcp_sync.types import CreateMessageRequestParams

class Completions:
    def create(self, **request):
        message = type("M", (), {"content": request["model"], "tool_calls": None})
        choice = type("C", (), {"message": message, "finish_reason": "stop"})
        return type("R", (), {"choices": [choice], "model": request["model"]})

client = type("Client", (), {"chat": type("Chat", (), {"completions": Completions()})})
params = CreateMessageRequestParams.model_validate(
    {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 5}
)
print(OpenAISampling(client, model="local-model")(params).content.text, AnthropicSampling.supports_tools)
print(sorted(name for name in ("openai", "anthropic", "httpx") if name in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == ["local-model True", "[]"]
