"""The loop helpers: the real OpenAI and Anthropic SDKs against the loopback stub, tools run by a real MCP server.

What each request carried is read from the stub's record: the tools in every round, the model's tool calls
and the results in the provider's form in the next one, and the answer the model gave last.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from helpers import kernel_spec
from servers.llm_stub import LLMStub, ToolCall

from mcp_sync import MCPClient, MCPServer, connect
from mcp_sync.llm import Answer, Round, Toolbox, TooManyRounds, ask_anthropic, ask_openai

EXAMPLES = Path(__file__).parents[2] / "examples"
WAIT = 10


@pytest.fixture
def stub() -> Iterator[LLMStub]:
    with LLMStub() as running:
        yield running


@pytest.fixture
def client() -> Iterator[MCPClient]:
    server = MCPServer("maths")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool
    def shout(text: str) -> str:
        """The text in capitals."""
        return text.upper()

    with connect(server) as connected:
        yield connected


def openai_client(stub: LLMStub) -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0, timeout=WAIT)


def anthropic_client(stub: LLMStub) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0, timeout=WAIT)


def tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(tool.get("name") or tool["function"]["name"] for tool in body["tools"])


def test_openai_chat_runs_the_calls_until_the_model_answers(stub: LLMStub, client: MCPClient) -> None:
    stub.reply_tool_calls([ToolCall("add", {"a": 2, "b": 40}, id="call_a"), ToolCall("shout", {"text": "hi"})])
    stub.reply_tool_calls([ToolCall("add", {"a": 42, "b": 1}, id="call_c")])
    stub.reply_text("It is 43.")
    seen: list[Round] = []

    answer = ask_openai(
        openai_client(stub), Toolbox(client), "2 + 40, then + 1?", model="gpt-test", on_round=seen.append, seed=7
    )

    assert answer.text == "It is 43."
    assert [len(one.results) for one in answer.rounds] == [2, 1, 0]
    assert seen == answer.rounds
    assert answer.response.choices[0].message.content == "It is 43."
    first, second, last = (request.body for request in stub.requests)
    assert [body["model"] for body in (first, second, last)] == ["gpt-test"] * 3
    assert [body["seed"] for body in (first, second, last)] == [7] * 3  # options go to every request
    assert tool_names(first) == tool_names(last) == ["add", "shout"]
    assert first["messages"] == [{"role": "user", "content": "2 + 40, then + 1?"}]
    asked, *results = second["messages"][1:]
    assert asked["role"] == "assistant"
    assert next(call["id"] for call in asked["tool_calls"]) == "call_a"
    assert [(result["role"], result["content"]) for result in results] == [("tool", "42"), ("tool", "HI")]
    assert results[0]["tool_call_id"] == "call_a"
    assert last["messages"][-1] == {"role": "tool", "tool_call_id": "call_c", "content": "43"}
    assert answer.messages[: len(last["messages"])] == last["messages"]
    assert answer.messages[-1]["content"] == "It is 43."


def test_a_follow_up_goes_on_with_the_conversation(stub: LLMStub, client: MCPClient) -> None:
    stub.reply_text("Hello.")
    stub.reply_text("Goodbye.")
    answer = ask_openai(openai_client(stub), Toolbox(client), "Hi", model="gpt-test")

    again = ask_openai(
        openai_client(stub), Toolbox(client), [*answer.messages, {"role": "user", "content": "Bye"}], model="gpt-test"
    )

    assert again.text == "Goodbye."
    assert [message["content"] for message in stub.requests[1].body["messages"]] == ["Hi", "Hello.", "Bye"]
    assert len(answer.messages) == 2  # the first answer's conversation is not changed by the second


def test_openai_responses_sends_the_output_back_with_the_results(stub: LLMStub, client: MCPClient) -> None:
    stub.reply_tool_calls([ToolCall("add", {"a": 1, "b": 2}, id="call_r")], text="Adding.")
    stub.reply_text("Three.", thinking="The tool said 3.")

    answer = ask_openai(openai_client(stub), Toolbox(client), "1 + 2?", model="gpt-test", api="responses")

    assert answer.text == "Three."
    first, second = (request.body for request in stub.requests)
    assert tool_names(first) == ["add", "shout"]
    assert first["tools"][0]["type"] == "function"
    items = second["input"]
    assert items[0] == {"role": "user", "content": "1 + 2?"}
    call = next(item for item in items if item.get("type") == "function_call")
    output = next(item for item in items if item.get("type") == "function_call_output")
    assert (call["call_id"], call["name"]) == ("call_r", "add")
    assert output["call_id"] == "call_r"
    assert "3" in str(output["output"])
    assert any(item.get("type") == "message" for item in items)  # the text the model said with its call


def test_anthropic_sends_one_user_message_of_results_per_round(stub: LLMStub, client: MCPClient) -> None:
    stub.reply_tool_calls([ToolCall("add", {"a": 1, "b": 2}, id="toolu_1"), ToolCall("nope", {}, id="toolu_2")])
    stub.reply_text("Three, and nope does not exist.")

    answer = ask_anthropic(
        anthropic_client(stub), Toolbox(client), "1 + 2?", model="claude-test", max_tokens=100, system="Be brief."
    )

    assert answer.text == "Three, and nope does not exist."
    first, second = (request.body for request in stub.requests)
    assert (first["model"], first["max_tokens"], first["system"]) == ("claude-test", 100, "Be brief.")
    assert tool_names(first) == ["add", "shout"]
    assistant, results = second["messages"][1:]
    assert assistant["role"] == "assistant"
    assert [block["id"] for block in assistant["content"] if block["type"] == "tool_use"] == ["toolu_1", "toolu_2"]
    assert results["role"] == "user"
    blocks = results["content"]
    assert [(block["type"], block["tool_use_id"]) for block in blocks] == [
        ("tool_result", "toolu_1"),
        ("tool_result", "toolu_2"),
    ]
    assert "3" in str(blocks[0]["content"]) and not blocks[0].get("is_error")
    assert blocks[1]["is_error"] is True and "nope" in str(blocks[1]["content"])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_model_that_keeps_asking_stops_at_max_rounds(stub: LLMStub, client: MCPClient, provider: str) -> None:
    for _ in range(3):
        stub.reply_tool_calls([("add", {"a": 1, "b": 1})])

    with pytest.raises(TooManyRounds) as raised:
        if provider == "openai":
            ask_openai(openai_client(stub), Toolbox(client), "Loop", model="m", max_rounds=2)
        else:
            ask_anthropic(anthropic_client(stub), Toolbox(client), "Loop", model="m", max_rounds=2)

    answer = raised.value.answer
    assert isinstance(answer, Answer)
    assert len(answer.rounds) == 3 and stub.pending == 0  # two rounds of tools, then one more that still asked
    assert [len(one.results) for one in answer.rounds] == [1, 1, 0]
    assert "after 3 rounds" in str(raised.value)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_api_error_mid_conversation_reaches_the_caller_as_the_sdk_raised_it(
    stub: LLMStub, client: MCPClient, provider: str
) -> None:
    # One round of tools runs, then the API refuses the next request: the SDK's own error, not a wrapped one,
    # and nothing is left queued or half-run.
    stub.reply_tool_calls([("add", {"a": 2, "b": 3})])
    stub.reply_error(429, "Rate limit reached", error_type="rate_limit_error")
    ran: list[Round] = []

    if provider == "openai":
        with pytest.raises(openai.RateLimitError, match="Rate limit reached"):
            ask_openai(openai_client(stub), Toolbox(client), "Add", model="m", on_round=ran.append)
    else:
        with pytest.raises(anthropic.RateLimitError, match="Rate limit reached"):
            ask_anthropic(anthropic_client(stub), Toolbox(client), "Add", model="m", on_round=ran.append)

    assert stub.pending == 0 and len(stub.requests) == 2
    assert len(ran) == 1 and len(ran[0].results) == 1  # the round before the error ran its tool
    assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}  # the server is still fine


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_agent_example_answers_with_the_library_s_tools(stub: LLMStub, provider: str) -> None:
    stub.reply_tool_calls([("search", {"query": "python"})])
    stub.reply_text("Python Tricks and Fluent Python.")
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(EXAMPLES.parent)
    if provider == "openai":
        env.update(OPENAI_API_KEY="test", OPENAI_BASE_URL=stub.url + "/v1")
    else:
        env.update(ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=stub.url)

    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent.py"), "Python books?"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )

    lines = out.stdout.splitlines()
    assert lines[-1] == "Python Tricks and Fluent Python."
    assert lines[0] == "(the model used the library's tools; their results went back to it)"
    first, second = (request.body for request in stub.requests)
    assert tool_names(first) == ["reindex", "search"]  # borrow asks a person: left out
    assert "Fluent Python" in str(second["messages"])


def test_the_agent_notebook_runs_in_a_real_kernel(
    stub: LLMStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    name = "mcp-sync-agent"
    for variable, value in kernel_spec(tmp_path, name, [str(EXAMPLES.parent)]).items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url + "/v1")
    stub.reply_tool_calls([("search", {"query": "python"})])
    stub.reply_text("Python Tricks and Fluent Python.")
    stub.reply_text("Luciano Ramalho.")
    notebook = nbformat.read(EXAMPLES / "agent.ipynb", as_version=4)

    client = nbclient.NotebookClient(
        notebook, timeout=60, kernel_name=name, resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()

    listed, asked, followed, _ = [cell.outputs for cell in notebook.cells if cell.cell_type == "code"]
    assert listed[0]["data"]["text/plain"] == "['search', 'reindex']"
    assert "".join(output["text"] for output in asked) == (
        "round: 1 tool result(s) sent back\nround: 0 tool result(s) sent back\nPython Tricks and Fluent Python.\n"
    )
    assert "".join(output["text"] for output in followed) == "Luciano Ramalho.\n"
    _, second, third = (request.body for request in stub.requests)
    assert "Fluent Python" in second["messages"][-1]["content"]  # the real tool's answer went to the model
    assert third["messages"][-1] == {"role": "user", "content": "Who wrote the second one?"}
    assert third["messages"][:3] == second["messages"]
