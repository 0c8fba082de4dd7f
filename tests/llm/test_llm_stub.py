"""The loopback provider stub (tests/servers/llm_stub.py): the real SDKs accept its answers, in each API's form.

The sampling, loop and example tests rely on it; here it is held to what it promises: each API's reply shape
as the SDK parses it (text, tool calls, stop reasons, usage, reasoning), each API's error shape as the SDK
raises it, an unscripted request answered at once with an error, requests recorded without the key, and no
thread left once closed.
"""

from __future__ import annotations

import threading

import anthropic
import openai
import pytest
import requests
from servers.llm_stub import REDACTED, LLMStub, ToolCall

KEY = "sk-test-secret"
WAIT = 10


def openai_client(stub: LLMStub) -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url + "/v1", api_key=KEY, max_retries=0, timeout=WAIT)


def anthropic_client(stub: LLMStub) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stub.url, api_key=KEY, max_retries=0, timeout=WAIT)


def test_chat_completions_text_tool_calls_and_stop_reasons() -> None:
    with LLMStub() as stub:
        stub.reply_text("Hello.", model="gpt-4.1-2025-04-14")
        stub.reply_tool_calls([("add", {"a": 1}), ToolCall("now", '{"tz": "UTC"}', id="call_x")])
        stub.reply_text("Hel", stop="max_tokens")
        client = openai_client(stub)
        said, calls, cut = (
            client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}])
            for _ in range(3)
        )
        assert stub.pending == 0
    assert (said.model, said.choices[0].message.content, said.choices[0].finish_reason) == (
        "gpt-4.1-2025-04-14",
        "Hello.",
        "stop",
    )
    assert said.usage is not None and said.usage.total_tokens == said.usage.prompt_tokens + 1
    assert calls.model == "gpt-4.1"  # by default, the model asked for
    assert calls.choices[0].finish_reason == "tool_calls" and calls.choices[0].message.content is None
    made = [
        (call.id, call.function.name, call.function.arguments) for call in calls.choices[0].message.tool_calls or []
    ]
    assert made[0][0].startswith("call_") and made[1][0] == "call_x"  # an id made up unless the test gave one
    assert [call[1:] for call in made] == [("add", '{"a": 1}'), ("now", '{"tz": "UTC"}')]
    assert cut.choices[0].finish_reason == "length"


def test_responses_text_reasoning_tool_calls_and_an_incomplete_answer() -> None:
    with LLMStub() as stub:
        stub.reply_text("Hello.", thinking="A greeting.")
        stub.reply_tool_calls([ToolCall("add", {"a": 1}, id="call_9")])
        stub.reply_text("Hel", stop="max_tokens")
        client = openai_client(stub)
        tools = [{"type": "function", "name": "add", "parameters": {"type": "object"}}]
        said = client.responses.create(model="gpt-4.1", input="Hi", instructions="Be brief.")
        calls = client.responses.create(model="gpt-4.1", input="1+?", tools=tools)  # type: ignore[arg-type]
        cut = client.responses.create(model="gpt-4.1", input="Hi", max_output_tokens=16)
    assert (said.status, said.output_text, said.instructions) == ("completed", "Hello.", "Be brief.")
    assert [item.type for item in said.output] == ["reasoning", "message"]
    [call] = calls.output
    assert (call.type, call.call_id, call.name, call.arguments) == ("function_call", "call_9", "add", '{"a": 1}')
    assert calls.tools[0].type == "function"  # the request's tools, echoed as the API does
    assert cut.status == "incomplete" and cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"


def test_messages_text_thinking_tool_use_and_stop_reasons() -> None:
    with LLMStub() as stub:
        stub.reply_text("Hello.", thinking="A greeting.")
        stub.reply_tool_calls([ToolCall("add", '{"a": 1}')], text="Adding.")
        stub.reply_text("Hel", stop="max_tokens")
        stub.reply_text("Hello", stop="stop_sequence", stop_sequence="END")
        client = anthropic_client(stub)
        said, calls, cut, stopped = (
            client.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "Hi"}])
            for _ in range(4)
        )
    assert [block.type for block in said.content] == ["thinking", "text"]
    assert (said.stop_reason, said.stop_sequence, said.usage.output_tokens) == ("end_turn", None, 1)
    assert [block.type for block in calls.content] == ["text", "tool_use"]
    assert calls.stop_reason == "tool_use"
    tool_use = calls.content[1]
    assert tool_use.type == "tool_use" and tool_use.id.startswith("toolu_") and tool_use.input == {"a": 1}
    assert cut.stop_reason == "max_tokens"
    assert (stopped.stop_reason, stopped.stop_sequence) == ("stop_sequence", "END")


def test_scripted_errors_come_in_each_api_s_shape_and_the_sdk_raises_its_own_class() -> None:
    with LLMStub() as stub:
        stub.reply_error(401, "Bad key.", error_type="authentication_error")
        stub.reply_error(429, "Slow down.", error_type="rate_limit_error")
        with pytest.raises(openai.AuthenticationError) as refused:
            openai_client(stub).chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
        with pytest.raises(anthropic.RateLimitError) as limited:
            anthropic_client(stub).messages.create(
                model="m", max_tokens=1, messages=[{"role": "user", "content": "Hi"}]
            )
    assert refused.value.body == {"message": "Bad key.", "type": "authentication_error", "param": None, "code": None}
    assert limited.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down."},
        "request_id": "req_stub",
    }


def test_an_unscripted_request_is_answered_at_once_with_an_error_and_every_request_is_recorded() -> None:
    with LLMStub() as stub:
        with pytest.raises(openai.BadRequestError, match="no reply scripted for request 1"):
            openai_client(stub).responses.create(model="m", input="Hi")
        unknown = requests.post(stub.url + "/v1/embeddings", json={"input": "x"}, timeout=WAIT)
        fetched = requests.get(stub.url + "/v1/messages", timeout=WAIT)
        garbled = requests.post(stub.url + "/v1/messages", data=b"{not json", timeout=WAIT)
        stub.reply_text("unused")
        listed = requests.post(stub.url + "/v1/messages", json=[1], timeout=WAIT)
        recorded = stub.requests
        assert stub.pending == 1  # a request refused before its reply was read leaves the reply queued
    assert (unknown.status_code, unknown.json()["error"]["type"]) == (404, "not_found_error")
    assert (fetched.status_code, fetched.json()["type"]) == (404, "error")
    assert garbled.status_code == listed.status_code == 400
    assert garbled.json()["error"]["message"] == "llm stub: the body is not a JSON object"
    assert [(request.method, request.path) for request in recorded] == [
        ("POST", "/v1/responses"),
        ("POST", "/v1/embeddings"),
        ("GET", "/v1/messages"),
        ("POST", "/v1/messages"),
        ("POST", "/v1/messages"),
    ]
    assert recorded[0].headers["authorization"] == REDACTED
    assert KEY not in repr(recorded)
    assert (recorded[0].body, recorded[1].body, recorded[2].body, recorded[3].body) == (
        {"model": "m", "input": "Hi"},
        {"input": "x"},
        None,
        None,
    )


def test_closing_the_stub_leaves_no_thread_and_frees_its_port() -> None:
    before = set(threading.enumerate())
    stub = LLMStub()
    stub.reply_text("Hi")
    openai_client(stub).chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    stub.close()
    assert set(threading.enumerate()) <= before
    with pytest.raises(requests.ConnectionError):
        requests.post(stub.url + "/v1/messages", json={}, timeout=WAIT)
