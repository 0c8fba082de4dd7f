"""Server middleware, in both eras, over stdio (a real subprocess), Streamable HTTP and in memory.

The server is ``tests/servers/middleware_server.py``: the same chain (audit,
refusal, rewriting, error shaping) seen through each transport and era.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers import connect_pair

from mcp_sync import MCP_CODES, MCPError, MCPServer
from mcp_sync.client.core import MCPClient
from mcp_sync.server import start_http
from mcp_sync.server.context import Context
from mcp_sync.server.middleware import Call, Next, run_chain
from mcp_sync.types import ElicitResult, PromptReference

SCRIPT = Path(__file__).resolve().parents[1] / "servers" / "middleware_server.py"
ERAS = ("handshake", "stateless")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("middleware_server", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build: Callable[[], MCPServer] = _load().build


@pytest.fixture(params=["memory", "stdio", "http"])
def connected(request: pytest.FixtureRequest) -> Iterator[Callable[[str], MCPClient]]:
    """A way to get a client of a fresh middleware server, in the given era, over the transport of the param."""
    cleanups: list[Callable[[], None]] = []

    def connect(era: str) -> MCPClient:
        if request.param == "stdio":
            client = MCPClient.stdio([sys.executable, str(SCRIPT)], era=era)
            cleanups.append(client.disconnect)
            return client
        server = build()
        cleanups.append(server.stop)
        if request.param == "memory":
            client = connect_pair(server, MCPClient(era=era))
        else:
            running = start_http(server)
            cleanups.append(running.close)
            client = MCPClient.http(running.url, era=era)
        cleanups.append(client.disconnect)
        return client

    yield connect
    for cleanup in reversed(cleanups):
        cleanup()


@pytest.mark.parametrize("era", ERAS)
def test_the_chain_runs_around_requests_and_items(connected: Callable[[str], MCPClient], era: str) -> None:
    client = connected(era)
    assert client.negotiated_era == era

    # Params changed before the tool, the result replaced after.
    assert client.call_tool("echo", {"text": "hi"}).text == "HI!"

    # A refusal reaches the client as that JSON-RPC error.
    with pytest.raises(MCPError) as refused:
        client.call_tool("forbidden", {})
    assert refused.value.jsonrpc_code == -32001
    assert refused.value.message == "forbidden by policy"
    assert refused.value.data == {"tool": "forbidden"}
    with pytest.raises(MCPError) as private:
        client.complete(PromptReference(name="greet"), "name", "A")
    assert private.value.code == MCP_CODES.UNAUTHORIZED

    # Error shaping: the tool's own message never leaves the server.
    failed = client.call_tool("boom", {})
    assert failed.is_error and failed.text == "The tool failed."

    # Params replaced by a new dict; the result as sent changed at the request level.
    read = client.read_resource("mem://alias")
    assert read.contents[0].text == "a note"
    assert read.meta is not None and read.meta["audited"] is True

    assert "Hello Ada" in client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text

    seen = json.loads(client.call_tool("seen", {}).text)
    calls = [(kind, method, target) for kind, method, target, _auth in seen]
    assert ("request", "tools/call", "echo") in calls
    assert calls.index(("request", "tools/call", "echo")) == calls.index(("tool", "tools/call", "echo")) + 1
    assert ("tool", "tools/call", "forbidden") in calls
    assert ("request", "completion/complete", None) in calls
    # One Call goes down the chain: the audit, recording after next(), sees the URI as rewritten inside it.
    assert ("resource", "resources/read", "mem://note") in calls
    assert ("prompt", "prompts/get", "greet") in calls
    assert all(auth is None for *_, auth in seen)  # nothing authenticates these callers


def test_a_stateless_request_that_needs_input_passes_through_the_chain_each_round() -> None:
    server = MCPServer("asks")
    rounds: list[str] = []

    @server.tool
    def confirm(ctx: Context) -> str:
        answer = ctx.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return str(answer.action)

    @server.middleware
    def counted(call: Call, next: Next) -> Any:
        rounds.append(call.kind)
        return next(call)

    client = connect_pair(
        server,
        MCPClient(
            era="stateless", elicitation_provider=lambda params: ElicitResult(action="accept", content={"ok": True})
        ),
    )
    try:
        assert client.call_tool("confirm", {}).text == "accept"
    finally:
        client.disconnect()
        server.stop()
    assert rounds.count("tool") == 2  # the first round asked, the retry answered


def test_one_context_is_shared_by_the_middleware_and_the_handler() -> None:
    server = MCPServer("shared")
    contexts: list[Context] = []

    @server.tool
    def which(ctx: Context) -> str:
        contexts.append(ctx)
        return "ok"

    @server.middleware
    def remember(call: Call, next: Next) -> Any:
        contexts.append(call.ctx)
        return next(call)

    client = connect_pair(server, MCPClient(era="handshake"))
    try:
        client.call_tool("which", {})
    finally:
        client.disconnect()
        server.stop()
    assert contexts[-3] is contexts[-2] is contexts[-1]  # request, tool, handler


def test_call_names_only_what_its_params_name() -> None:
    call = Call("request", "ping", {"name": 3}, Context())
    assert call.name is None and call.uri is None
    order: list[str] = []

    def outer(call: Call, next: Next) -> Any:
        order.append("outer")
        return next(call)

    def inner(call: Call, next: Next) -> Any:
        order.append("inner")
        return next(call)

    assert run_chain([outer, inner], call, lambda c: c.method) == "ping"
    assert order == ["outer", "inner"]
