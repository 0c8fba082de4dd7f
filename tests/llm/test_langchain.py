"""``Toolbox.langchain()``: a server's tools as LangChain ``StructuredTool`` objects, run sync, async and by an agent.

Servers: an :class:`MCPServer` in memory with tools that answer each kind of
content, errors and a call that waits to be cancelled; ``examples/echo_server.py``
as a real stdio subprocess. The model of the agent loop is langchain-core's
``GenericFakeChatModel`` (scripted answers) with the ``bind_tools`` it lacks.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from mcp_sync import MCPClient, MCPServer, connect
from mcp_sync.llm import Toolbox
from mcp_sync.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

ROOT = Path(__file__).resolve().parents[2]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WA").decode()  # 10 bytes: "==" of padding
PDF = base64.b64encode(b"%PDF-1.4\n").decode()  # 9 bytes: no padding

FORECAST_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city, in English."},
        "unit": {"type": "string", "enum": ["C", "F"], "description": "Degrees Celsius or Fahrenheit."},
    },
    "required": ["city"],
}

MIXED = CallToolResult(
    content=[
        TextContent(text="Here is the chart."),
        ImageContent(data=PNG, mime_type="image/png"),
        AudioContent(data=WAV, mime_type="audio/wav"),
        ResourceLink(uri="file:///report.pdf", name="report", mime_type="application/pdf", description="Q3"),
        ResourceLink(uri="file:///notes", name="notes"),
        EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="alpha")),
        EmbeddedResource(resource=TextResourceContents(uri="file:///b", text="beta")),
        EmbeddedResource(resource=BlobResourceContents(uri="file:///c.png", mime_type="image/png", blob=PNG)),
        EmbeddedResource(resource=BlobResourceContents(uri="file:///d.pdf", mime_type="application/pdf", blob=PDF)),
    ],
    structured_content={"rows": 3},
    _meta={"trace": "t-1"},
)


class Lab:
    """A server with a tool for each case, and what its slow tool saw."""

    def __init__(self) -> None:
        self.server = MCPServer("lab")
        self.slow_started = threading.Event()
        self.slow_cancelled = threading.Event()
        self.client: MCPClient | None = None

        @self.server.tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        self.server.register_tool(
            "get.forecast",
            lambda args, ctx: f"{args['city']}: snow, -3 {args.get('unit', 'C')}",
            title="Weather forecast",
            description="Tomorrow's weather in a city.",
            input_schema=FORECAST_SCHEMA,
        )
        self.server.register_tool("ping", lambda args, ctx: "pong")
        self.server.register_tool("mixed", lambda args, ctx: MIXED)
        self.server.register_tool(
            "only_structured", lambda args, ctx: CallToolResult(content=[], structured_content=[1])
        )
        self.server.register_tool("fail", self.fail)
        self.server.register_tool("slow", self.slow)
        # Argument names LangChain gives its own meaning to in a tool's functions.
        names = ("config", "run_manager", "callbacks", "tool_call_id")
        schema = {"type": "object", "properties": {name: {"type": "string"} for name in names}}
        self.server.register_tool("settings", lambda args, ctx: json.dumps(args, sort_keys=True), input_schema=schema)

    @staticmethod
    def fail(args: dict[str, Any], ctx: Any) -> CallToolResult:
        if args.get("how") == "raise":
            raise RuntimeError("disk full")
        image = ImageContent(data=PNG, mime_type="image/png")
        content = [TextContent(text="bad chart"), image] if args.get("how") == "with_text" else [image]
        return CallToolResult(content=content, is_error=True)

    def slow(self, args: dict[str, Any], ctx: Any) -> str:
        self.slow_started.set()
        if ctx.cancelled.wait(10):
            self.slow_cancelled.set()
        return "finished"


@pytest.fixture
def lab() -> Iterator[tuple[Lab, dict[str, StructuredTool]]]:
    lab = Lab()
    with connect(lab.server, timeout=10) as client:
        lab.client = client
        yield lab, {tool.name: tool for tool in Toolbox(client).langchain()}


def tool_call(name: str, args: dict[str, Any], id: str = "call_1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def test_each_tool_keeps_its_model_name_description_and_schema(lab: tuple[Lab, dict[str, StructuredTool]]) -> None:
    _, tools = lab
    assert sorted(tools) == ["add", "fail", "get_forecast", "mixed", "only_structured", "ping", "settings", "slow"]
    forecast = tools["get_forecast"]
    assert forecast.description == "Weather forecast: Tomorrow's weather in a city."
    assert forecast.args_schema == FORECAST_SCHEMA
    assert all(tool.func is not None and tool.coroutine is not None for tool in tools.values())
    # What a chat model is given (bind_tools converts each tool so): descriptions, enum and required kept.
    assert convert_to_openai_tool(forecast) == {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "description": "Weather forecast: Tomorrow's weather in a city.",
            "parameters": FORECAST_SCHEMA,
        },
    }
    # A tool that declares no properties gets an empty object schema, which LangChain can read.
    assert tools["ping"].args == {}
    assert convert_to_openai_tool(tools["ping"])["function"]["parameters"] == {"type": "object", "properties": {}}
    added = convert_to_openai_tool(tools["add"])["function"]
    assert added["parameters"]["required"] == ["a", "b"]
    assert added["description"] == "Add two numbers."


def test_invoked_sync_with_arguments_or_a_tool_call(lab: tuple[Lab, dict[str, StructuredTool]]) -> None:
    _, tools = lab
    assert tools["add"].invoke({"a": 2, "b": 3}) == "5"
    assert tools["get_forecast"].invoke({"city": "Oslo", "unit": "F"}) == "Oslo: snow, -3 F"
    assert tools["ping"].invoke({}) == "pong"
    message = tools["add"].invoke(tool_call("add", {"a": 2, "b": 3}, "call_7"))
    assert isinstance(message, ToolMessage)
    assert (message.content, message.tool_call_id, message.name, message.status) == ("5", "call_7", "add", "success")
    # The artifact is the result as the server sent it, _meta included.
    assert message.artifact["content"] == [{"type": "text", "text": "5"}]
    assert message.artifact["structuredContent"] == {"result": 5}
    assert message.artifact["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "lab"


def test_invoked_async_the_call_runs_in_a_worker_thread(lab: tuple[Lab, dict[str, StructuredTool]]) -> None:
    _, tools = lab

    async def main() -> tuple[Any, ...]:
        loop_thread = threading.get_ident()
        # Two calls at once: the blocking calls run in worker threads, the event loop is free meanwhile.
        return (
            loop_thread,
            *await asyncio.gather(
                tools["add"].ainvoke({"a": 1, "b": 1}),
                tools["get_forecast"].ainvoke(tool_call("get_forecast", {"city": "Rome"}, "c2")),
                tools["mixed"].ainvoke(tool_call("mixed", {}, "c3")),
            ),
        )

    _, added, forecast, mixed = asyncio.run(main())
    assert added == "2"
    assert (forecast.content, forecast.tool_call_id, forecast.artifact["content"][0]["text"]) == (
        "Rome: snow, -3 C",
        "c2",
        "Rome: snow, -3 C",
    )
    assert mixed.content == tools["mixed"].invoke(tool_call("mixed", {})).content
    assert CallToolResult.model_validate(mixed.artifact).content == MIXED.content


def test_every_kind_of_content_reaches_the_model_and_the_artifact_keeps_the_whole_result(
    lab: tuple[Lab, dict[str, StructuredTool]],
) -> None:
    _, tools = lab
    message = tools["mixed"].invoke(tool_call("mixed", {}))
    assert message.content == [
        {"type": "text", "text": "Here is the chart."},
        {"type": "image", "base64": PNG, "mime_type": "image/png"},
        {"type": "text", "text": "[an audio clip (audio/wav, 10 bytes) the tool returned, which cannot be shown here]"},
        {"type": "text", "text": "[a link to the resource report (file:///report.pdf, application/pdf): Q3]"},
        {"type": "text", "text": "[a link to the resource notes (file:///notes)]"},
        {"type": "text", "text": "[the resource file:///a.txt (text/plain)]\nalpha"},
        {"type": "text", "text": "[the resource file:///b]\nbeta"},
        {"type": "image", "base64": PNG, "mime_type": "image/png"},
        {
            "type": "text",
            "text": "[a file file:///d.pdf (application/pdf, 9 bytes) the tool returned, which cannot be shown here]",
        },
        {"type": "text", "text": '{"rows": 3}'},  # read as every provider reads it: the structured content too
    ]
    assert message.artifact["structuredContent"] == {"rows": 3}
    assert message.artifact["_meta"]["trace"] == "t-1"
    assert CallToolResult.model_validate(message.artifact).content == MIXED.content
    # With no content blocks, the structured content is what the model reads.
    assert tools["only_structured"].invoke({}) == "[1]"


def test_arguments_named_as_langchain_names_its_own_reach_the_server(
    lab: tuple[Lab, dict[str, StructuredTool]],
) -> None:
    _, settings = lab[0], lab[1]["settings"]
    args = {"config": "strict", "run_manager": "ops", "callbacks": "none", "tool_call_id": "mine"}
    expected = json.dumps(args, sort_keys=True)
    assert settings.invoke(args) == expected
    assert asyncio.run(settings.ainvoke(args)) == expected
    assert settings.invoke(tool_call("settings", args, "call_s")).content == expected
    assert asyncio.run(settings.ainvoke(tool_call("settings", args, "call_s"))).content == expected


def test_response_format_content_gives_no_artifact(lab: tuple[Lab, dict[str, StructuredTool]]) -> None:
    lab_, _ = lab
    with connect(lab_.server, timeout=10) as client:
        [add] = Toolbox(client, include=["add"]).langchain(response_format="content")
        message = add.invoke(tool_call("add", {"a": 4, "b": 4}))
        assert (message.content, message.artifact) == ("8", None)
        assert add.invoke({"a": 1, "b": 2}) == "3"


def test_a_tool_error_is_a_tool_exception_that_langchain_hands_to_the_model(
    lab: tuple[Lab, dict[str, StructuredTool]],
) -> None:
    lab_, tools = lab
    fail = tools["fail"]
    message = fail.invoke(tool_call("fail", {"how": "raise"}, "c9"))
    assert (message.content, message.status, message.tool_call_id) == ("Error: disk full", "error", "c9")
    # The text of an error with an image is what the message says; an error with no text says so.
    assert fail.invoke(tool_call("fail", {"how": "with_text"})).content == "bad chart"
    assert fail.invoke(tool_call("fail", {})).content == "The tool failed without saying why."
    # Arguments the server refuses, and a tool gone since the list was made, are errors the model reads too.
    refused = tools["add"].invoke(tool_call("add", {"a": "two", "b": 3}))
    assert refused.status == "error"
    assert refused.content.startswith("The tool 'add' could not run: Invalid arguments for tool add")
    lab_.server.unregister_tool("ping")
    assert lab_.client is not None
    lab_.client.refresh_tools()  # as on the server's list_changed
    gone = tools["ping"].invoke(tool_call("ping", {}))
    assert (gone.status, gone.content.startswith("There is no tool named 'ping'.")) == ("error", True)
    # Turned off, the ToolException reaches the caller, sync and async.
    fail.handle_tool_error = False
    with pytest.raises(ToolException, match=r"^Error: disk full$"):
        fail.invoke({"how": "raise"})
    with pytest.raises(ToolException, match=r"^bad chart$"):
        asyncio.run(fail.ainvoke({"how": "with_text"}))


def test_cancelling_the_async_call_cancels_it_on_the_server(lab: tuple[Lab, dict[str, StructuredTool]]) -> None:
    lab_, tools = lab

    async def main() -> None:
        task = asyncio.ensure_future(tools["slow"].ainvoke({}))
        assert await asyncio.to_thread(lab_.slow_started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert lab_.slow_cancelled.wait(10)


def test_the_tools_of_a_stdio_server_run_sync_and_async() -> None:
    command = [sys.executable, str(ROOT / "examples" / "echo_server.py")]
    with connect(command, env={"PYTHONPATH": str(ROOT)}, timeout=10) as client:
        tools = {tool.name: tool for tool in Toolbox(client, prefix="echo_").langchain()}
        assert sorted(tools) == ["echo_add", "echo_echo"]
        assert tools["echo_echo"].invoke({"text": "over stdio"}) == "over stdio"
        message = asyncio.run(tools["echo_add"].ainvoke(tool_call("echo_add", {"a": 1.5, "b": 2})))
        assert (message.content, message.artifact["structuredContent"]) == ("3.5", {"result": 3.5})


class ToolCallingFakeModel(GenericFakeChatModel):
    """langchain-core's scripted chat model, with the ``bind_tools`` it lacks; it records each request."""

    requests: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.requests.append({"messages": list(messages), "tools": kwargs.get("tools")})
        return super()._generate(messages, stop, run_manager, **kwargs)


def run_agent(
    model: Runnable[Any, BaseMessage], tools: list[BaseTool], prompt: str, rounds: int = 5
) -> list[BaseMessage]:
    """The usual loop: the model answers, its tool calls run, their messages go back, until it answers in text."""
    by_name = {tool.name: tool for tool in tools}
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    for _ in range(rounds):
        answer = model.invoke(messages)
        messages.append(answer)
        assert isinstance(answer, AIMessage)
        if not answer.tool_calls:
            break
        messages.extend(by_name[call["name"]].invoke(call) for call in answer.tool_calls)
    return messages


def test_an_agent_loop_with_a_fake_chat_model_runs_the_tools_it_asks_for(
    lab: tuple[Lab, dict[str, StructuredTool]],
) -> None:
    _, tools = lab
    model = ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "add", "args": {"a": 20, "b": 22}, "id": "call_a", "type": "tool_call"},
                        {"name": "get_forecast", "args": {"city": "Oslo"}, "id": "call_f", "type": "tool_call"},
                    ],
                ),
                AIMessage("", tool_calls=[{"name": "fail", "args": {"how": "raise"}, "id": "call_x"}]),
                AIMessage("42, and snow in Oslo."),
            ]
        )
    )
    messages = run_agent(model.bind_tools(list(tools.values())), list(tools.values()), "Add 20 and 22; Oslo weather?")
    kinds = [type(message).__name__ for message in messages]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage", "ToolMessage", "AIMessage"]
    added, forecast, failed = messages[2], messages[3], messages[5]
    assert isinstance(added, ToolMessage) and isinstance(forecast, ToolMessage) and isinstance(failed, ToolMessage)
    assert (added.tool_call_id, added.content, added.artifact["structuredContent"]) == ("call_a", "42", {"result": 42})
    assert (forecast.tool_call_id, forecast.content) == ("call_f", "Oslo: snow, -3 C")
    assert (failed.tool_call_id, failed.status, failed.content) == ("call_x", "error", "Error: disk full")
    assert messages[-1].content == "42, and snow in Oslo."
    # Each request held the tools as the model gets them, and the second one the real tool results.
    assert len(model.requests) == 3
    given = {tool["function"]["name"]: tool["function"] for tool in model.requests[0]["tools"]}
    assert given["get_forecast"]["parameters"] == FORECAST_SCHEMA
    assert model.requests[1]["messages"][2:4] == [added, forecast]


MISSING_LANGCHAIN = """
import sys
from mcp_sync import MCPClient, MCPServer, connect
from mcp_sync.llm import Toolbox
import mcp_sync.llm.langchain_tools

server = MCPServer("s")
server.register_tool("t", lambda args, ctx: "x")
with connect(server) as client:
    toolbox = Toolbox(client)
    toolbox.tools()
    print(sorted(name for name in ("asyncio", "langchain_core") if name in sys.modules))
    sys.modules["langchain_core"] = None  # as if langchain-core were not installed
    try:
        toolbox.langchain()
    except ImportError as exc:
        print(exc)
"""


def test_without_langchain_core_the_error_names_the_extra() -> None:
    command = [sys.executable, "-c", MISSING_LANGCHAIN]
    done = subprocess.run(
        command, env={"PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60, check=True
    )
    # Neither the toolbox nor the module of the LangChain tools imports langchain_core (or asyncio) on import.
    assert done.stdout.splitlines() == [
        "[]",
        'langchain_core.tools is not installed: pip install "mcp-sync-py[langchain]"',
    ]
