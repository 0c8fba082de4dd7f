"""MCPClient in the handshake era, against a real MCPServer and against scripted fake servers.

Every client here is made with ``era="handshake"``: these tests are about the
``initialize`` handshake and what follows it (``tests/test_modern_client.py``
covers the 2026-07-28 era and the probe that chooses between the two).

The fake servers are plain :class:`JsonRpcDispatcher` peers that answer
``initialize`` the way a test needs (a wrong version, a malformed result, no
capabilities at all).
"""

from __future__ import annotations

import datetime
import json
import logging
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
from mcp_sync.client.core import RESOURCE_UPDATED, MCPClient, ResourceUpdated
from mcp_sync.errors import MCP_CODES, MCPError, MCPProtocolError, MCPTransportError
from mcp_sync.protocol.versions import HANDSHAKE_REVISIONS
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.events import CONNECTION_CLOSED
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.runtime.telemetry import Telemetry
from mcp_sync.server.context import Context
from mcp_sync.server.core import MCPServer
from mcp_sync.server.session import ServerSession
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CallToolResult,
    CompleteResult,
    Completion,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    Implementation,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    PromptArgument,
    PromptMessage,
    PromptReference,
    Root,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    Tool,
)
from tests.helpers import RecordingTransport, connect_pair

# ----------------------------------------------------------------- helpers


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            return False
        pause.wait(0.005)
    return True


def wire(messages: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(m) for m in messages]


def methods(messages: list[bytes]) -> list[str]:
    return [m["method"] for m in wire(messages) if "method" in m]


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@dataclass
class Link:
    client: MCPClient
    session: ServerSession
    client_wire: RecordingTransport
    server_wire: RecordingTransport


@pytest.fixture
def server() -> Iterator[MCPServer]:
    srv = MCPServer("srv", "2.0")
    srv.register_tool("echo", lambda args, ctx: str(args.get("msg", "")), description="Echo")
    srv.register_resource("mem://doc", lambda uri, ctx: "the doc", mime_type="text/plain")
    srv.register_resource_template("mem://{name}/page", lambda uri, params, ctx: f"page of {params['name']}")
    srv.register_prompt(
        "greet", lambda args, ctx: f"Hello {args['name']}", arguments=[PromptArgument(name="name", required=True)]
    )
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def clients() -> Iterator[list[MCPClient]]:
    """Clients made by a test, disconnected at the end whatever happens."""
    made: list[MCPClient] = []
    try:
        yield made
    finally:
        for client in made:
            client.disconnect()


@pytest.fixture
def link(server: MCPServer, clients: list[MCPClient]) -> Callable[..., Link]:
    def make(client: MCPClient | None = None, **connect: Any) -> Link:
        client = client or MCPClient(era="handshake")
        clients.append(client)
        client_end, server_end = InMemoryTransport.pair()
        client_wire, server_wire = RecordingTransport(client_end), RecordingTransport(server_end)
        session = server.start(server_wire)
        client.connect(client_wire, **connect)
        return Link(client, session, client_wire, server_wire)

    return make


@contextmanager
def fake_server(
    initialize: Callable[[dict[str, Any], RequestContext], dict[str, Any]],
    **handlers: Callable[[dict[str, Any], RequestContext], Any],
) -> Iterator[tuple[InMemoryTransport, JsonRpcDispatcher, list[str]]]:
    """A scripted server; yields the client's end, the fake and the methods it was sent."""
    client_end, server_end = InMemoryTransport.pair()
    fake = JsonRpcDispatcher(server_end, side="server", timeout=5)
    seen: list[str] = []

    def recording(method: str, fn: Callable[[dict[str, Any], RequestContext], Any]) -> Any:
        def run(params: dict[str, Any], ctx: RequestContext) -> Any:
            seen.append(method)
            return fn(params, ctx)

        return run

    fake.register_handler("initialize", recording("initialize", initialize))
    for method, fn in handlers.items():
        fake.register_handler(method.replace("_", "/"), recording(method.replace("_", "/"), fn))
    fake.on_notification("notifications/initialized", lambda params: seen.append("notifications/initialized"))
    fake.start()
    try:
        yield client_end, fake, seen
    finally:
        fake.close()


def _init_result(version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": capabilities if capabilities is not None else {},
        "serverInfo": {"name": "fake", "version": "0"},
    }


# ------------------------------------------------------------------ connect


def test_connect_performs_the_initialize_handshake(server: MCPServer, link: Callable[..., Link]) -> None:
    conn = link(MCPClient("my-client", "3.1", era="handshake"))
    client = conn.client
    assert client.initialized is True
    received = methods(conn.server_wire.received)
    assert received[:2] == ["initialize", "notifications/initialized"]
    assert set(received[2:]) == {"tools/list", "resources/list", "resources/templates/list", "prompts/list"}
    initialize = next(m for m in wire(conn.server_wire.received) if m.get("method") == "initialize")
    assert initialize["params"] == {
        "protocolVersion": "2025-11-25",
        # Tool calls may become tasks: 2025-11-25's form here (the extension too, for servers that offer it here)
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}, "tasks": {}},
        "clientInfo": {"name": "my-client", "version": "3.1"},
    }
    assert conn.session.initialized.is_set()
    assert (client.server_info.name, client.server_info.version) == ("srv", "2.0")
    assert client.server_capabilities.tools is not None
    assert client.protocol_version == "2025-11-25"
    assert client.initialize_result is not None
    assert [t.name for t in client.tools()] == ["echo"]
    assert [r.uri for r in client.resources()] == ["mem://doc"]
    assert [t.uri_template for t in client.resource_templates()] == ["mem://{name}/page"]
    assert [p.name for p in client.prompts()] == ["greet"]
    assert repr(client) == "<MCPClient my-client (connected)>"


def test_declared_capabilities_follow_the_providers(link: Callable[..., Link]) -> None:
    client = MCPClient(
        era="handshake",
        sampling_provider=lambda params: CreateMessageResult(role="assistant", content=[], model="m"),
        roots_provider=lambda: [Root(uri="file:///a")],
        elicitation_provider=lambda params: ElicitResult(action="cancel"),
    )
    assert client.capabilities().to_wire() == {
        "sampling": {},
        "roots": {"listChanged": True},
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }
    conn = link(client, timeout=5)
    initialize = next(m for m in wire(conn.server_wire.received) if m.get("method") == "initialize")
    assert initialize["params"]["capabilities"] == {**client.capabilities().to_wire(), "tasks": {}}
    assert conn.session.client_capabilities.roots is not None
    assert client.roots() == [Root(uri="file:///a")]


NOT_CONNECTED_CALLS: list[tuple[str, Callable[[MCPClient], Any]]] = [
    ("call_tool", lambda c: c.call_tool("echo", {"msg": "x"})),
    ("ping", lambda c: c.ping()),
    ("list_tools", lambda c: c.list_tools()),
    ("refresh_tools", lambda c: c.refresh_tools()),
    ("tools", lambda c: c.tools()),
    ("list_resources", lambda c: c.list_resources()),
    ("resources", lambda c: c.resources()),
    ("list_resource_templates", lambda c: c.list_resource_templates()),
    ("resource_templates", lambda c: c.resource_templates()),
    ("read_resource", lambda c: c.read_resource("mem://doc")),
    ("subscribe_resource", lambda c: c.subscribe_resource("mem://doc")),
    ("unsubscribe_resource", lambda c: c.unsubscribe_resource("mem://doc")),
    ("list_prompts", lambda c: c.list_prompts()),
    ("prompts", lambda c: c.prompts()),
    ("get_prompt", lambda c: c.get_prompt("greet", {"name": "x"})),
    ("complete", lambda c: c.complete(PromptReference(name="greet"), "name", "")),
    ("set_log_level", lambda c: c.set_log_level("info")),
    ("server_info", lambda c: c.server_info),
    ("server_capabilities", lambda c: c.server_capabilities),
]


@pytest.mark.parametrize("call", [c for _, c in NOT_CONNECTED_CALLS], ids=[n for n, _ in NOT_CONNECTED_CALLS])
def test_methods_before_connect_raise_not_initialized(call: Callable[[MCPClient], Any]) -> None:
    client = MCPClient(era="handshake")
    with pytest.raises(MCPError) as caught:
        call(client)
    assert caught.value.code == MCP_CODES.NOT_INITIALIZED
    assert client.initialized is False
    assert repr(client) == "<MCPClient mcp-sync (not connected)>"


LIBRARY_SERVER = f"{shlex.quote(sys.executable)} {Path(__file__).parents[2] / 'examples' / 'library_server.py'}"


@pytest.mark.parametrize(
    ("options", "spoken"),
    [
        ({}, "2026-07-28"),
        ({"era": "handshake"}, "2025-11-25"),
        ({"era": "handshake", "protocol_version": "2025-06-18"}, "2025-06-18"),
        ({"era": "auto", "protocol_version": "2024-11-05"}, "2024-11-05"),
    ],
)
def test_protocol_version_is_the_revision_the_connection_speaks(options: dict[str, Any], spoken: str) -> None:
    client = mcp_sync.connect(LIBRARY_SERVER, **options)
    try:
        assert client.protocol_version == spoken
        assert client.offered_version == options.get("protocol_version", "2025-11-25")
        with pytest.deprecated_call():
            assert client.negotiated_version == spoken
    finally:
        client.close()
    assert client.protocol_version is None
    with pytest.deprecated_call(), pytest.raises(MCPError) as caught:
        _ = client.negotiated_version
    assert caught.value.code == MCP_CODES.NOT_INITIALIZED


def test_protocol_version_is_none_before_connecting() -> None:
    client = MCPClient(protocol_version="2025-06-18")
    assert client.protocol_version is None
    assert client.offered_version == "2025-06-18"


def test_connect_twice_raises_already_connected(server: MCPServer, link: Callable[..., Link]) -> None:
    conn = link()
    other_end, other_server_end = InMemoryTransport.pair()
    server.start(other_server_end)
    with pytest.raises(MCPError) as caught:
        conn.client.connect(other_end)
    assert caught.value.code == MCP_CODES.ALREADY_CONNECTED
    assert conn.client.initialized
    assert text_of(conn.client.call_tool("echo", {"msg": "still here"})) == "still here"


def test_protocol_version_mismatch_closes_the_transport(
    server: MCPServer, link: Callable[..., Link], clients: list[MCPClient]
) -> None:
    client = MCPClient(era="handshake")
    clients.append(client)
    with fake_server(lambda params, ctx: _init_result("1999-01-01")) as (client_end, _fake, seen):
        with pytest.raises(MCPError) as caught:
            client.connect(client_end)
        assert caught.value.code == MCP_CODES.PROTOCOL_VERSION_MISMATCH
        accepted = [*HANDSHAKE_REVISIONS, "2026-07-28"]
        assert caught.value.context == {"server_version": "1999-01-01", "accepted": accepted}
        assert client_end.closed
        assert client.initialized is False
        assert "notifications/initialized" not in seen
    # The client is free to connect elsewhere afterwards.
    assert link(client).client.initialized


def test_the_accepted_versions_are_the_clients_choice(link: Callable[..., Link], clients: list[MCPClient]) -> None:
    old = link(MCPClient(era="handshake", protocol_version="2024-11-05", accepted_versions=("2024-11-05",)))
    assert old.client.protocol_version == "2024-11-05"
    assert old.session.revision == "2024-11-05"

    picky = MCPClient(era="handshake", protocol_version="2026-07-28", accepted_versions=("2026-07-28",))
    clients.append(picky)
    with pytest.raises(MCPError) as caught:
        link(picky)  # the server answers the latest handshake revision instead
    assert caught.value.code == MCP_CODES.PROTOCOL_VERSION_MISMATCH


def test_a_malformed_initialize_result_is_a_protocol_error(clients: list[MCPClient]) -> None:
    client = MCPClient(era="handshake")
    clients.append(client)
    with fake_server(lambda params, ctx: {"protocolVersion": 2025}) as (client_end, _fake, _seen):
        with pytest.raises(MCPProtocolError) as caught:
            client.connect(client_end)
        assert caught.value.code == MCP_CODES.PROTOCOL_INVALID
        assert caught.value.context == {"method": "initialize"}
        assert "capabilities: Field required" in caught.value.message
        assert client_end.closed
        assert not client.initialized


def test_connect_lists_only_what_the_server_offers(clients: list[MCPClient]) -> None:
    client = MCPClient(era="handshake", roots_provider=lambda: [Root(uri="file:///r")])
    clients.append(client)
    with fake_server(lambda params, ctx: _init_result()) as (client_end, _fake, seen):
        client.connect(client_end)
        assert client.initialized
        with pytest.raises(MCPError) as caught:
            client.ping()  # the fake has no ping: its answer comes after it saw everything before
        assert caught.value.code == MCP_CODES.METHOD_NOT_FOUND
        assert seen == ["initialize", "notifications/initialized"]
        assert (client.tools(), client.resources(), client.resource_templates(), client.prompts()) == ([], [], [], [])
        assert client.roots() == [Root(uri="file:///r")]


def test_a_server_without_resource_templates_is_accepted(
    clients: list[MCPClient], caplog: pytest.LogCaptureFixture
) -> None:
    """Servers with resources but no resources/templates/list (the official SDK's answer -32601)."""
    client = MCPClient(era="handshake")
    clients.append(client)
    listings = [0]

    def resources_list(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        listings[0] += 1
        return {"resources": [{"uri": f"mem://{listings[0]}", "name": "r"}]}

    init = _init_result(capabilities={"resources": {"listChanged": True}})
    with fake_server(lambda params, ctx: init, resources_list=resources_list) as (client_end, fake, _seen):
        client.connect(client_end)
        assert [r.uri for r in client.resources()] == ["mem://1"]
        assert client.resource_templates() == []
        with pytest.raises(MCPError) as caught:
            client.refresh_resource_templates()  # asked for explicitly, the answer is not hidden
        assert caught.value.code == MCP_CODES.METHOD_NOT_FOUND

        with caplog.at_level(logging.WARNING, logger="mcp_sync.client"):
            fake.notify("notifications/resources/list_changed")
            fake.notify("notifications/resources/list_changed")
            # Background refreshes run in order: the first is over once the second has listed.
            assert wait_until(lambda: [r.uri for r in client.resources()] == ["mem://3"])
            assert [r.message for r in caplog.records if r.name.startswith("mcp_sync.client.")] == []
        assert client.resource_templates() == []


def test_a_server_that_repeats_a_cursor_is_a_protocol_error(clients: list[MCPClient]) -> None:
    client = MCPClient(era="handshake")
    clients.append(client)
    pages = {None: "a", "a": "b", "b": "a"}

    def tools_list(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        cursor = params.get("cursor")
        return {"tools": [{"name": f"after-{cursor}", "inputSchema": {}}], "nextCursor": pages[cursor]}

    init = _init_result(capabilities={"tools": {}})
    with fake_server(lambda params, ctx: init, tools_list=tools_list) as (client_end, _fake, seen):
        with pytest.raises(MCPProtocolError) as caught:
            client.connect(client_end, timeout=5)
        assert caught.value.code == MCP_CODES.PROTOCOL_INVALID
        assert "repeated the cursor 'a'" in caught.value.message
        assert seen.count("tools/list") == 3
        assert not client.initialized


@pytest.mark.parametrize("refused", ["prompts/list", "resources/templates/list"])
def test_a_failing_cache_fill_leaves_the_client_disconnected(
    server: MCPServer, link: Callable[..., Link], clients: list[MCPClient], refused: str
) -> None:
    server.set_authorizer(lambda info: info.method != refused)
    client = MCPClient(era="handshake")
    with pytest.raises(MCPError) as caught:
        link(client)
    assert caught.value.code == MCP_CODES.UNAUTHORIZED
    assert client.initialized is False
    with pytest.raises(MCPError) as not_connected:
        client.tools()
    assert not_connected.value.code == MCP_CODES.NOT_INITIALIZED
    server.set_authorizer(None)
    assert link(client).client.initialized


# -------------------------------------------------------------- disconnect


def test_disconnect_is_idempotent_and_fails_pending_calls(server: MCPServer, link: Callable[..., Link]) -> None:
    started, release = threading.Event(), threading.Event()

    def hang(args: Any, ctx: Context) -> str:
        started.set()
        release.wait(5)
        return "too late"

    server.register_tool("hang", hang)
    conn = link()
    client = conn.client
    errors: list[MCPError] = []

    def call() -> None:
        try:
            client.call_tool("hang")
        except MCPError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        assert started.wait(5)
        client.disconnect()
        caller.join(5)
    finally:
        release.set()
    assert len(errors) == 1
    assert isinstance(errors[0], MCPTransportError)
    assert errors[0].code == MCP_CODES.TRANSPORT_CLOSED
    assert client.initialized is False
    client.disconnect()
    client.close()
    assert conn.client_wire.closed

    again = link(client)  # a new transport, the same client
    assert text_of(again.client.call_tool("echo", {"msg": "back"})) == "back"


def test_a_connection_ended_by_the_server_can_be_replaced(server: MCPServer, link: Callable[..., Link]) -> None:
    conn = link()
    closed = threading.Event()
    conn.client.events.on(CONNECTION_CLOSED, lambda payload: closed.set())
    conn.session.close()
    assert closed.wait(5)
    assert conn.client.initialized is False
    with pytest.raises(MCPTransportError) as caught:
        conn.client.ping()
    assert caught.value.code == MCP_CODES.TRANSPORT_CLOSED
    again = link(conn.client)
    assert again.client.initialized
    assert text_of(again.client.call_tool("echo", {"msg": "new"})) == "new"


def test_the_client_is_a_context_manager(server: MCPServer) -> None:
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    with MCPClient(era="handshake") as client:
        client.connect(client_end)
        assert client.initialized
    assert not client.initialized
    assert client_end.closed


# ----------------------------------------------------------------- calling


def test_call_tool_round_trips(server: MCPServer, link: Callable[..., Link]) -> None:
    seen: list[Any] = []
    server.register_tool("record", lambda args, ctx: seen.append(args) or "ok")
    conn = link()
    assert text_of(conn.client.call_tool("echo", {"msg": "hi"})) == "hi"
    assert text_of(conn.client.call_tool("record")) == "ok"
    assert text_of(conn.client.call_tool("record", {"a": [1, 2]}, timeout=5)) == "ok"
    assert seen == [{}, {"a": [1, 2]}]
    calls = [m["params"] for m in wire(conn.client_wire.sent) if m.get("method") == "tools/call"]
    assert calls == [
        {"name": "echo", "arguments": {"msg": "hi"}},
        {"name": "record"},
        {"name": "record", "arguments": {"a": [1, 2]}},
    ]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_call_tool_sends_its_arguments_as_json_holds_them(server: MCPServer, era: str) -> None:
    """Dates become their ISO text, sets lists, NaN null and models their wire objects (camelCase, no nulls), as a
    dumped params model made them; a null in a plain object stays."""
    server.register_tool("show", lambda args, ctx: json.dumps(args, sort_keys=True))
    arguments = {
        "at": datetime.date(2026, 12, 5),
        "tags": {"a"},
        "ratio": float("nan"),
        "who": Implementation(name="x", version="1"),
        "tool": Tool(name="t", input_schema={"type": "object"}),
        "raw": b"bytes",
        "plain": {"gone": None},
    }
    with mcp_sync.connect(server, era=era) as client:
        shown = json.loads(text_of(client.call_tool("show", arguments)))
        started = client.start_tool("show", {"at": datetime.datetime(2026, 12, 5, 8, 30)})
        again = json.loads(text_of(started.result(timeout=10)))
    assert shown == {
        "at": "2026-12-05",
        "tags": ["a"],
        "ratio": None,
        "who": {"name": "x", "version": "1"},
        "tool": {"name": "t", "inputSchema": {"type": "object"}},
        "raw": "bytes",
        "plain": {"gone": None},
    }
    assert again == {"at": "2026-12-05T08:30:00"}


def test_call_tool_refuses_a_name_or_argument_names_that_are_not_strings(link: Callable[..., Link]) -> None:
    """Nothing is sent: the mistake is the caller's, told in a TypeError that names what was wrong."""
    conn = link()
    with pytest.raises(TypeError, match="a tool's name is a string, not int"):
        conn.client.call_tool(7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"the arguments of tool 'echo' are named by strings, not 1"):
        conn.client.call_tool("echo", {1: "one"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="a tool's name is a string, not NoneType"):
        conn.client.start_tool(None)  # type: ignore[arg-type]
    assert not [m for m in wire(conn.client_wire.sent) if m.get("method") == "tools/call"]


def test_resources_and_prompts_round_trip(link: Callable[..., Link]) -> None:
    client = link().client
    assert client.read_resource("mem://doc").contents == [
        TextResourceContents(uri="mem://doc", mime_type="text/plain", text="the doc")
    ]
    assert client.read_resource("mem://x/page", timeout=5).contents[0] == TextResourceContents(
        uri="mem://x/page", text="page of x"
    )
    assert client.get_prompt("greet", {"name": "Ada"}).messages == [
        PromptMessage(role="user", content=TextContent(text="Hello Ada"))
    ]
    assert client.complete(PromptReference(name="greet"), "name", "A") == CompleteResult(
        completion=Completion(values=[], total=0, has_more=False)
    )


def test_progress_notifications_reach_on_progress(server: MCPServer, link: Callable[..., Link]) -> None:
    def work(args: Any, ctx: Context) -> str:
        for step in (1, 2, 3):
            ctx.progress(step, 3, f"step {step}")
        return "done"

    server.register_tool("work", work)
    got: list[ProgressNotificationParams] = []
    assert text_of(link().client.call_tool("work", progress=got.append)) == "done"
    assert [(p.progress, p.total, p.message) for p in got] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_a_cancel_event_sends_notifications_cancelled(server: MCPServer, link: Callable[..., Link]) -> None:
    started, stopped = threading.Event(), threading.Event()

    def slow(args: Any, ctx: Context) -> str:
        started.set()
        if ctx.cancelled.wait(5):
            stopped.set()
        return "never seen"

    server.register_tool("slow", slow)
    conn = link()
    cancel = threading.Event()
    errors: list[MCPError] = []

    def call() -> None:
        try:
            conn.client.call_tool("slow", cancel=cancel)
        except MCPError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert started.wait(5)
    cancel.set()
    caller.join(5)
    assert [e.code for e in errors] == [MCP_CODES.REQUEST_CANCELLED]
    assert stopped.wait(5)
    assert "notifications/cancelled" in methods(conn.server_wire.received)
    assert text_of(conn.client.call_tool("echo", {"msg": "after"})) == "after"


# Every public method that asks the server something, called with a cancel event (and the method it sends).
CANCELLABLE: dict[str, tuple[str, Callable[[MCPClient, threading.Event], object]]] = {
    "ping": ("ping", lambda c, cancel: c.ping(cancel=cancel)),
    "list_tools": ("tools/list", lambda c, cancel: c.list_tools(cancel=cancel)),
    "refresh_tools": ("tools/list", lambda c, cancel: c.refresh_tools(cancel=cancel)),
    "call_tool": ("tools/call", lambda c, cancel: c.call_tool("t", cancel=cancel)),
    "call_tool_structured": ("tools/call", lambda c, cancel: c.call_tool_structured("t", cancel=cancel)),
    "list_resources": ("resources/list", lambda c, cancel: c.list_resources(cancel=cancel)),
    "refresh_resources": ("resources/list", lambda c, cancel: c.refresh_resources(cancel=cancel)),
    "list_resource_templates": (
        "resources/templates/list",
        lambda c, cancel: c.list_resource_templates(cancel=cancel),
    ),
    "refresh_resource_templates": (
        "resources/templates/list",
        lambda c, cancel: c.refresh_resource_templates(cancel=cancel),
    ),
    "read_resource": ("resources/read", lambda c, cancel: c.read_resource("mem://x", cancel=cancel)),
    "subscribe_resource": ("resources/subscribe", lambda c, cancel: c.subscribe_resource("mem://x", cancel=cancel)),
    "unsubscribe_resource": (
        "resources/unsubscribe",
        lambda c, cancel: c.unsubscribe_resource("mem://x", cancel=cancel),
    ),
    "list_prompts": ("prompts/list", lambda c, cancel: c.list_prompts(cancel=cancel)),
    "refresh_prompts": ("prompts/list", lambda c, cancel: c.refresh_prompts(cancel=cancel)),
    "get_prompt": ("prompts/get", lambda c, cancel: c.get_prompt("p", cancel=cancel)),
    "complete": (
        "completion/complete",
        lambda c, cancel: c.complete(PromptReference(name="p"), "a", "", cancel=cancel),
    ),
    "set_log_level": ("logging/setLevel", lambda c, cancel: c.set_log_level("info", cancel=cancel)),
}


@pytest.mark.parametrize("name", sorted(CANCELLABLE))
def test_every_request_method_takes_cancel_and_tells_the_server(name: str) -> None:
    method, call = CANCELLABLE[name]
    armed, told, cancel = threading.Event(), threading.Event(), threading.Event()
    listings = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}
    listings["resources/templates/list"] = "resourceTemplates"

    def answer(method: str) -> Callable[[dict[str, Any], RequestContext], dict[str, Any]]:
        def run(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
            if armed.is_set():  # connecting lists everything: answered at once
                cancel.set()  # the caller cancels once the server has the request
                if ctx.cancelled.wait(5):
                    told.set()
            return {listings[method]: []} if method in listings else {}

        return run

    handlers = {m.replace("/", "_"): answer(m) for m in {method, *listings}}
    everything = {"tools": {}, "resources": {"subscribe": True}, "prompts": {}, "logging": {}, "completions": {}}
    with fake_server(lambda params, ctx: _init_result(capabilities=everything), **handlers) as (client_end, _, seen):
        client = MCPClient(era="handshake", timeout=3)
        client.connect(client_end)
        armed.set()
        try:
            with pytest.raises(MCPError) as caught:
                call(client, cancel)
            assert caught.value.code == MCP_CODES.REQUEST_CANCELLED
            assert told.wait(5), f"{method} was never told it was cancelled"
            assert seen[-1] == method
        finally:
            client.disconnect()


def test_listen_takes_cancel_too() -> None:
    server = MCPServer("listener")
    client = connect_pair(server, MCPClient(era="stateless", timeout=3))
    try:
        cancel = threading.Event()
        cancel.set()
        with pytest.raises(MCPError) as caught:
            client.listen(tools=True, cancel=cancel)
        assert caught.value.code == MCP_CODES.REQUEST_CANCELLED
        with client.listen(tools=True) as subscription:  # the client is still fine
            assert subscription.acknowledged is not None and subscription.acknowledged.tools_list_changed
    finally:
        client.disconnect()
        server.stop()


def test_many_threads_share_one_client(server: MCPServer, link: Callable[..., Link]) -> None:
    client = link().client
    results: dict[tuple[int, int], str] = {}
    failures: list[BaseException] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            for i in range(20):
                text = text_of(client.call_tool("echo", {"msg": f"{n}-{i}"}))
                with lock:
                    results[(n, i)] = text
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert failures == []
    assert results == {(n, i): f"{n}-{i}" for n in range(8) for i in range(20)}


# -------------------------------------------------------------- subscribing


def test_subscribe_update_and_unsubscribe(server: MCPServer, link: Callable[..., Link]) -> None:
    version = [1]
    server.register_resource("mem://live", lambda uri, ctx: f"v{version[0]}")
    conn = link()
    client = conn.client
    updates: list[ResourceUpdated] = []
    updated = threading.Event()
    client.events.on(RESOURCE_UPDATED, lambda p: (updates.append(p), updated.set()))

    client.subscribe_resource("mem://live")
    assert conn.session.subscriptions == {"mem://live"}
    assert client.subscribed_contents("mem://live") is None
    version[0] = 2
    server.mark_resource_updated("mem://live")
    assert updated.wait(5)
    expected = [TextResourceContents(uri="mem://live", text="v2")]
    assert updates[0].uri == "mem://live"
    assert updates[0].contents.contents == expected
    contents = client.subscribed_contents("mem://live")
    assert contents is not None and contents.contents == expected

    client.unsubscribe_resource("mem://live")
    assert conn.session.subscriptions == frozenset()
    assert client.subscribed_contents("mem://live") is None
    server.mark_resource_updated("mem://live")
    client.ping()
    assert methods(conn.client_wire.received).count("notifications/resources/updated") == 1


def test_an_update_that_races_an_unsubscribe_is_dropped(server: MCPServer, link: Callable[..., Link]) -> None:
    reading, release = threading.Event(), threading.Event()
    gate = [False]

    def slow_read(uri: str, ctx: Context) -> str:
        if gate[0]:
            reading.set()
            release.wait(5)
        return "contents"

    server.register_resource("mem://slow", slow_read)
    client = link().client
    updates: list[ResourceUpdated] = []
    client.events.on(RESOURCE_UPDATED, updates.append)
    client.subscribe_resource("mem://slow")
    gate[0] = True
    server.mark_resource_updated("mem://slow")
    try:
        assert reading.wait(5)  # the client is reading the resource again, off its reader thread
        client.unsubscribe_resource("mem://slow")
    finally:
        release.set()
    # The client's background work runs in order: once a later refresh is done, so is the re-read.
    server.register_tool("marker", lambda args, ctx: None)
    assert wait_until(lambda: "marker" in [t.name for t in client.tools()])
    assert updates == []
    assert client.subscribed_contents("mem://slow") is None


def test_a_listener_may_disconnect_the_client(server: MCPServer, link: Callable[..., Link]) -> None:
    client = link().client
    done = threading.Event()
    errors: list[BaseException] = []

    def on_update(payload: ResourceUpdated) -> None:
        try:
            client.disconnect()  # runs on the client's own background thread
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    client.events.on(RESOURCE_UPDATED, on_update)
    client.subscribe_resource("mem://doc")
    server.mark_resource_updated("mem://doc")
    assert done.wait(5)
    assert errors == []
    assert client.initialized is False


# ------------------------------------------------------------- list changes


def test_refreshes_update_the_cached_lists(server: MCPServer, link: Callable[..., Link]) -> None:
    client = link().client
    server.register_tool("second", lambda args, ctx: None)
    server.register_resource("mem://second", lambda uri, ctx: "")
    server.register_resource_template("mem://{x}/second", lambda uri, params, ctx: "")
    server.register_prompt("second", lambda args, ctx: "")
    assert [t.name for t in client.refresh_tools()] == ["echo", "second"]
    assert [t.name for t in client.tools()] == ["echo", "second"]
    assert [r.uri for r in client.refresh_resources(timeout=5)] == ["mem://doc", "mem://second"]
    assert [r.uri for r in client.resources()] == ["mem://doc", "mem://second"]
    assert len(client.refresh_resource_templates()) == 2
    assert len(client.resource_templates()) == 2
    assert [p.name for p in client.refresh_prompts()] == ["greet", "second"]
    assert [p.name for p in client.prompts()] == ["greet", "second"]
    assert [t.name for t in client.list_tools().tools] == ["echo", "second"]
    assert len(client.list_resources().resources) == 2
    assert len(client.list_resource_templates().resource_templates) == 2
    assert len(client.list_prompts().prompts) == 2


def test_list_changed_notifications_refresh_in_the_background(server: MCPServer, link: Callable[..., Link]) -> None:
    conn = link()
    client = conn.client
    conn.session.notify("notifications/prompts/list_changed")
    server.unregister_prompt("greet")
    assert wait_until(lambda: client.prompts() == [])
    server.unregister_resource("mem://{name}/page")
    assert wait_until(lambda: client.resource_templates() == [])
    server.unregister_tool("echo")
    assert wait_until(lambda: client.tools() == [])


def test_failed_background_refreshes_are_logged_and_swallowed(
    server: MCPServer, link: Callable[..., Link], caplog: pytest.LogCaptureFixture
) -> None:
    client = link().client
    server.set_authorizer(lambda info: info.method != "tools/list")
    with caplog.at_level(logging.WARNING, logger="mcp_sync.client"):
        server.register_tool("hidden", lambda args, ctx: None)
        assert wait_until(lambda: any("background _refresh('tools') failed" in r.message for r in caplog.records))
    assert [t.name for t in client.tools()] == ["echo"]
    assert text_of(client.call_tool("echo", {"msg": "fine"})) == "fine"


class _PausingTelemetry(Telemetry):
    """Holds the client's reader thread when a chosen notification arrives."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.method = method
        self.arrived = threading.Event()
        self.release = threading.Event()

    def record_notification(self, direction: str, method: str) -> None:
        super().record_notification(direction, method)
        if direction == "received" and method == self.method:
            self.arrived.set()
            self.release.wait(5)


def test_a_list_change_that_arrives_while_disconnecting_starts_no_work(
    server: MCPServer, link: Callable[..., Link]
) -> None:
    telemetry = _PausingTelemetry("notifications/tools/list_changed")
    conn = link(MCPClient(era="handshake", telemetry=telemetry))
    client = conn.client
    server.register_tool("late", lambda args, ctx: None)
    disconnecting = threading.Thread(target=client.disconnect)
    try:
        assert telemetry.arrived.wait(5)  # the reader is about to hand the notification to the client
        disconnecting.start()
        assert wait_until(lambda: not client.initialized)
    finally:
        telemetry.release.set()
    disconnecting.join(5)
    assert not disconnecting.is_alive()
    assert methods(conn.client_wire.sent).count("tools/list") == 1  # only the one at connect


# -------------------------------------------------- answering the server


def test_providers_answer_the_servers_requests(server: MCPServer, link: Callable[..., Link]) -> None:
    sampled: list[CreateMessageRequestParams] = []

    def sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(text="sampled"), model="m")

    elicited: list[ElicitRequestFormParams] = []

    def elicitor(params: ElicitRequestFormParams) -> ElicitResult:
        elicited.append(params)
        return ElicitResult(action="accept", content={"ok": True})

    roots = [Root(uri="file:///one", name="one")]
    conn = link(
        MCPClient(
            era="handshake", sampling_provider=sampler, roots_provider=lambda: roots, elicitation_provider=elicitor
        )
    )
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text="q"))], max_tokens=5
    )
    assert conn.session.create_message(params).content == TextContent(text="sampled")
    assert sampled == [params]
    roots.append(Root(uri="file:///two"))
    assert conn.session.list_roots().roots == roots
    assert conn.client.roots() == roots  # what the provider last said
    form = ElicitRequestFormParams.model_validate(
        {"message": "ok?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
    )
    assert conn.session.elicit(form) == ElicitResult(action="accept", content={"ok": True})
    assert elicited[0].message == "ok?"


def test_without_providers_the_server_gets_errors(server: MCPServer, link: Callable[..., Link]) -> None:
    client = MCPClient(
        era="handshake",
        sampling_provider=lambda params: CreateMessageResult(role="assistant", content=[], model="m"),
        roots_provider=lambda: [],
        elicitation_provider=lambda params: ElicitResult(action="cancel"),
    )
    conn = link(client)
    # Declared at connect, withdrawn since: the client answers "method not found".
    client.set_sampling_provider(None)
    client.set_roots_provider(None)
    client.set_elicitation_provider(None)
    params = CreateMessageRequestParams(messages=[], max_tokens=1)
    form = ElicitRequestFormParams.model_validate(
        {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
    )
    for request in (
        lambda: conn.session.create_message(params),
        conn.session.list_roots,
        lambda: conn.session.elicit(form),
    ):
        with pytest.raises(MCPError) as caught:
            request()
        assert (caught.value.code, caught.value.jsonrpc_code) == (MCP_CODES.METHOD_NOT_FOUND, -32601)
    client.set_sampling_provider(lambda p: CreateMessageResult(role="assistant", content=[], model="again"))
    assert conn.session.create_message(params).model == "again"


def test_refresh_roots_tells_the_server(link: Callable[..., Link]) -> None:
    roots = [Root(uri="file:///a")]
    client = MCPClient(era="handshake", roots_provider=lambda: roots)
    assert client.refresh_roots() == roots  # not connected: nothing to tell
    conn = link(client)
    roots.append(Root(uri="file:///b"))
    assert client.refresh_roots() == roots
    assert client.roots() == roots
    client.ping()
    assert methods(conn.server_wire.received).count("notifications/roots/list_changed") == 1
    client.set_roots_provider(None)
    assert client.refresh_roots() == []
    assert client.roots() == []


def test_ping_both_ways(link: Callable[..., Link]) -> None:
    conn = link()
    conn.client.ping()
    conn.client.ping(timeout=5)
    conn.session.ping()
    assert methods(conn.client_wire.sent).count("ping") == 2
    assert methods(conn.client_wire.received).count("ping") == 1


# ------------------------------------------------------------------ logging


def test_set_log_level_reaches_the_session(link: Callable[..., Link]) -> None:
    conn = link()
    conn.client.set_log_level("warning")
    assert conn.session.log_level == "warning"
    params = [m["params"] for m in wire(conn.client_wire.sent) if m.get("method") == "logging/setLevel"]
    assert params == [{"level": "warning"}]


def test_server_logs_go_to_python_logging_by_default(
    server: MCPServer, link: Callable[..., Link], caplog: pytest.LogCaptureFixture
) -> None:
    client = link().client
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.server_log"):
        server.log("warning", "disk low", logger="fs")
        server.log("notice", {"a": 1})
        server.log("emergency", "down")
        client.ping()
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name == "mcp_sync.server_log"]
    assert records == [
        ("mcp_sync.server_log", logging.WARNING, "[fs] disk low"),
        ("mcp_sync.server_log", logging.INFO, "{'a': 1}"),
        ("mcp_sync.server_log", logging.CRITICAL, "down"),
    ]


def test_malformed_notifications_are_ignored(server: MCPServer, link: Callable[..., Link]) -> None:
    got: list[LoggingMessageNotificationParams] = []
    conn = link(MCPClient(era="handshake", log_handler=got.append))
    updates: list[ResourceUpdated] = []
    updated = threading.Event()
    conn.client.events.on(RESOURCE_UPDATED, lambda p: (updates.append(p), updated.set()))
    conn.client.subscribe_resource("mem://doc")

    conn.session.notify("notifications/message", {"level": "shouting", "data": "x"})
    conn.session.notify("notifications/resources/updated", {"url": "mem://doc"})
    conn.session.notify("notifications/resources/updated", {"uri": "mem://not-subscribed"})
    conn.session.notify("notifications/message", {"level": "info", "data": "valid"})
    conn.session.notify("notifications/resources/updated", {"uri": "mem://doc"})
    assert updated.wait(5)
    assert [(m.level, m.data) for m in got] == [("info", "valid")]
    assert [u.uri for u in updates] == ["mem://doc"]
    assert conn.client.initialized


def test_a_list_change_heard_as_the_client_disconnects_starts_no_background_work(
    link: Callable[..., Link],
) -> None:
    # A listener can run on the reader thread just as disconnect() lets go of the connection: the
    # refresh it asks for is dropped, rather than a background thread started for a closed client.
    client = link().client
    listener = client._dispatcher._listeners["notifications/tools/list_changed"][0]  # type: ignore[union-attr]
    client.disconnect()
    listener({})
    assert client._background is None
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync-client-background")]
