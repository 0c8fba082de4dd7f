"""tools/call has one path: params read as they are answer exactly as params read by the model do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import MCPError, MCPServer
from mcp_sync.protocol.errors import JsonRpcCode
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, SERVER_INFO
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import CallToolResult, ImageContent, TextContent

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
STATELESS_META = {
    PROTOCOL_VERSION: "2026-07-28",
    CLIENT_CAPABILITIES: {},
    CLIENT_INFO: {"name": "t", "version": "1"},
}


def make_server() -> MCPServer:
    server = MCPServer("fast", "1.0")

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        return text

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def fail() -> str:
        raise ValueError("no luck")

    server.register_tool("nothing", lambda arguments, ctx: None)
    server.register_tool("picture", lambda arguments, ctx: [ImageContent(data="AAAA", mime_type="image/png")])
    server.register_tool("model", lambda arguments, ctx: CallToolResult(content=[TextContent(text="m")]))
    return server


def open_raw(server: MCPServer, *, initialize: bool = True) -> JsonRpcDispatcher:
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    raw = JsonRpcDispatcher(client_end, side="client", timeout=5.0)
    raw.start()
    if initialize:
        raw.request("initialize", INITIALIZE)
        raw.notify("notifications/initialized")
    return raw


@pytest.fixture
def server() -> Iterator[MCPServer]:
    server = make_server()
    yield server
    server.stop()


def both_ways(raw: JsonRpcDispatcher, params: dict[str, Any]) -> tuple[Any, Any]:
    """The answer (result or error) to ``params`` on the fast path, and with a member that takes the general one."""
    answers = []
    for sent in (params, {**params, "requestState": None}):
        try:
            answers.append(raw.request("tools/call", sent))
        except MCPError as exc:
            answers.append((exc.jsonrpc_code, exc.message))
    return answers[0], answers[1]


@pytest.mark.parametrize(
    "params",
    [
        {"name": "echo", "arguments": {"text": "hello"}},
        {"name": "echo", "arguments": {"text": "caf\u00e9 \U0001f600"}, "_meta": {"progressToken": 3}},
        {"name": "add", "arguments": {"a": 2, "b": 3}},
        {"name": "fail"},
        {"name": "nothing", "arguments": None, "_meta": None},
        {"name": "picture", "arguments": {}},
        {"name": "model"},
        {"name": "unknown", "arguments": {}},
        {"name": "echo", "arguments": {"text": 5}},
        {"name": "echo", "arguments": {}},
    ],
)
def test_the_fast_path_answers_as_the_general_path(server: MCPServer, params: dict[str, Any]) -> None:
    raw = open_raw(server)
    fast, general = both_ways(raw, params)
    assert fast == general
    raw.close()


def test_a_text_result_goes_out_as_plain_content(server: MCPServer) -> None:
    raw = open_raw(server)
    assert raw.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}}) == {
        "content": [{"type": "text", "text": "hi"}]
    }
    raw.close()


@pytest.mark.parametrize(
    "params",
    [
        {"name": 5, "arguments": {}},
        {"name": "echo", "arguments": ["hello"]},
        {"name": "echo", "arguments": 0},
        {"name": "echo", "arguments": {"text": "x"}, "_meta": 0},
        {"name": "echo", "arguments": {"text": "x"}, "_meta": []},
        {"arguments": {"text": "x"}},
    ],
)
def test_params_the_model_refuses_are_refused_as_before(server: MCPServer, params: dict[str, Any]) -> None:
    raw = open_raw(server)
    with pytest.raises(MCPError) as refused:
        raw.request("tools/call", params)
    assert refused.value.jsonrpc_code == JsonRpcCode.INVALID_PARAMS
    assert refused.value.message.startswith("Invalid params:")
    raw.close()


def test_middleware_still_sees_each_call(server: MCPServer) -> None:
    seen: list[str] = []

    @server.middleware
    def record(call: Any, next_: Any) -> Any:
        seen.append(call.method)
        return next_(call)

    raw = open_raw(server)
    assert raw.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})["content"][0]["text"] == "hi"
    assert seen[-1] == "tools/call"
    raw.close()


def test_a_stateless_call_on_the_fast_path(server: MCPServer) -> None:
    raw = open_raw(server, initialize=False)
    params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": STATELESS_META}
    result = raw.request("tools/call", params)
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO] == {"name": "fast", "version": "1.0"}
    fast, general = both_ways(raw, params)
    assert fast == general
    raw.close()


def test_a_server_overriding_invoke_tool_is_asked_every_time() -> None:
    class Counting(MCPServer):
        calls = 0

        def invoke_tool(self, name: str, arguments: Any = None, **kwargs: Any) -> CallToolResult:
            Counting.calls += 1
            return super().invoke_tool(name, arguments, **kwargs)

    server = Counting("counting")
    server.register_tool("hi", lambda arguments, ctx: "hello")
    assert not server.runs_own_tools
    raw = open_raw(server)
    assert raw.request("tools/call", {"name": "hi"}) == {"content": [{"type": "text", "text": "hello"}]}
    assert Counting.calls == 1
    raw.close()
    server.stop()
