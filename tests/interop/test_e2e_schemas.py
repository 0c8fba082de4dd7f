"""The full MCP method surface, end to end, over the in-memory transport.

A real MCPServer and MCPClient walk every method in the seed's order, for
each handshake revision; every message that crosses the wire is checked
against that revision's official JSON schema, and none is a JSON-RPC error.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import RecordingTransport
from schema_util import validate_definition

from mcp_sync import MCP_CODES, InMemoryTransport, MCPClient, MCPError, MCPServer
from mcp_sync.protocol.versions import HANDSHAKE_REVISIONS
from mcp_sync.runtime.events import REQUEST_COMPLETED
from mcp_sync.server.context import Context
from mcp_sync.types import (
    AudioContent,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ProgressNotificationParams,
    PromptArgument,
    PromptReference,
    Root,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)

REQUESTS = {
    "initialize": ("InitializeRequest", "InitializeResult"),
    "ping": ("PingRequest", "EmptyResult"),
    "tools/list": ("ListToolsRequest", "ListToolsResult"),
    "tools/call": ("CallToolRequest", "CallToolResult"),
    "resources/list": ("ListResourcesRequest", "ListResourcesResult"),
    "resources/templates/list": ("ListResourceTemplatesRequest", "ListResourceTemplatesResult"),
    "resources/read": ("ReadResourceRequest", "ReadResourceResult"),
    "resources/subscribe": ("SubscribeRequest", "EmptyResult"),
    "resources/unsubscribe": ("UnsubscribeRequest", "EmptyResult"),
    "prompts/list": ("ListPromptsRequest", "ListPromptsResult"),
    "prompts/get": ("GetPromptRequest", "GetPromptResult"),
    "completion/complete": ("CompleteRequest", "CompleteResult"),
    "logging/setLevel": ("SetLevelRequest", "EmptyResult"),
    "sampling/createMessage": ("CreateMessageRequest", "CreateMessageResult"),
    "roots/list": ("ListRootsRequest", "ListRootsResult"),
    "elicitation/create": ("ElicitRequest", "ElicitResult"),
}
NOTIFICATIONS = {
    "notifications/initialized": "InitializedNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/roots/list_changed": "RootsListChangedNotification",
}


def check_wire(revision: str, recorder: RecordingTransport) -> list[str]:
    """Validate every recorded message; return the methods seen, in order.

    A response is checked against the result definition of the request it
    answers, which the other side sent (both sides number their own requests).
    """
    sent = [json.loads(raw) for raw in recorder.sent]
    received = [json.loads(raw) for raw in recorder.received]
    seen = []
    for messages, others in ((sent, received), (received, sent)):
        asked = {m["id"]: m["method"] for m in others if "method" in m and "id" in m}
        for message in messages:
            validate_definition(revision, "JSONRPCMessage", message)
            assert "error" not in message, message
            if "method" not in message:
                validate_definition(revision, REQUESTS[asked[message["id"]]][1], message["result"])
                continue
            seen.append(message["method"])
            if "id" in message:
                validate_definition(revision, REQUESTS[message["method"]][0], message)
            else:
                validate_definition(revision, NOTIFICATIONS[message["method"]], message)
    return seen


def build_server() -> MCPServer:
    server = MCPServer("e2e-server", "1.0", title="End to end", instructions="Use the tools.")

    def slow(arguments: dict[str, Any], ctx: Context) -> str:
        steps = int(arguments.get("steps", 3))
        for step in range(1, steps + 1):
            ctx.progress(step, steps, f"step {step}")
        if arguments.get("wait_for_cancel"):
            ctx.cancelled.wait(10)
            return "cancelled" if ctx.cancelled.is_set() else "not cancelled"
        return f"done after {steps} steps"

    server.register_tool(
        "echo",
        lambda args, ctx: args["text"],
        title="Echo",
        description="Say it back.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        annotations=ToolAnnotations(read_only_hint=True),
    )
    server.register_tool("slow", slow, description="Counts steps, reporting progress.")
    server.register_tool(
        "weather",
        lambda args, ctx: {"type": "text", "text": '{"celsius": 21}'},
        description="Structured output.",
        output_schema={"type": "object", "properties": {"celsius": {"type": "number"}}},
    )
    server.register_tool(
        "sound",
        lambda args, ctx: [AudioContent(data="UklGRg==", mime_type="audio/wav"), TextContent(text="a beep")],
        description="Audio content.",
    )
    server.register_resource(
        "mem://x", lambda uri, ctx: "first", name="x", title="X", mime_type="text/plain", description="A note."
    )
    server.register_resource_template(
        "users://{id}/profile", lambda uri, params, ctx: f"user {params['id']}", name="profile"
    )
    server.register_prompt(
        "greet",
        lambda args, ctx: f"Say hello to {args['name']}.",
        title="Greeting",
        description="Greets someone.",
        arguments=[PromptArgument(name="name", title="Name", required=True)],
    )
    server.set_completion_provider(
        lambda params, ctx: [v for v in ("Ada", "Alan") if v.startswith(params.argument.value)]
    )
    return server


@pytest.fixture
def server() -> Iterator[MCPServer]:
    server = build_server()
    yield server
    server.stop()


def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    return CreateMessageResult(role="assistant", content=TextContent(text=f"echo: {question.text}"), model="test-model")


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_walks_the_full_mcp_method_surface(server: MCPServer, revision: str) -> None:
    client_end, server_end = InMemoryTransport.pair()
    recorder = RecordingTransport(client_end)
    session = server.start(server_end)
    client = MCPClient(
        protocol_version=revision,
        sampling_provider=sampling,
        roots_provider=lambda: [Root(uri="file:///work", name="work")],
        elicitation_provider=lambda params: ElicitResult(action="accept", content={"name": "Ada"}),
    )
    updated = threading.Event()
    client.events.on("resource:updated", lambda payload: updated.set())
    try:
        initialize = client.connect(recorder)
        assert initialize.protocol_version == revision
        assert client.initialized
        assert session.initialized.wait(5)

        # tools/list and tools/call, plain, with progress, and abandoned
        assert [t.name for t in client.refresh_tools()] == ["echo", "slow", "weather", "sound"]
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        progress: list[ProgressNotificationParams] = []
        assert client.call_tool("slow", {"steps": 3}, progress=progress.append).text == "done after 3 steps"
        assert [(p.progress, p.total) for p in progress] == [(1, 3), (2, 3), (3, 3)]
        assert client.call_tool("weather").text == '{"celsius": 21}'
        sound = client.call_tool("sound")
        assert sound.content[-1] == TextContent(text="a beep")
        cancel = threading.Event()
        with pytest.raises(MCPError) as cancelled:
            client.call_tool(
                "slow", {"steps": 1, "wait_for_cancel": True}, cancel=cancel, progress=lambda p: cancel.set()
            )
        assert cancelled.value.code == MCP_CODES.REQUEST_CANCELLED

        # resources
        assert [r.uri for r in client.refresh_resources()] == ["mem://x"]
        assert [t.uri_template for t in client.refresh_resource_templates()] == ["users://{id}/profile"]
        assert client.read_resource("mem://x").text == "first"
        assert client.read_resource("users://42/profile").text == "user 42"
        client.subscribe_resource("mem://x")
        server.mark_resource_updated("mem://x")
        assert updated.wait(5)
        contents = client.subscribed_contents("mem://x")
        assert contents is not None and contents.text == "first"
        client.unsubscribe_resource("mem://x")

        # prompts and completion
        assert [p.name for p in client.refresh_prompts()] == ["greet"]
        prompt = client.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content == TextContent(text="Say hello to Ada.")
        completion = client.complete(PromptReference(name="greet"), "name", "A")
        assert completion.completion.values == ["Ada", "Alan"]

        # the server's requests to the client
        answer = session.create_message(
            CreateMessageRequestParams(
                messages=[SamplingMessage(role="user", content=TextContent(text="2+2?"))], max_tokens=10
            )
        )
        assert answer.content == TextContent(text="echo: 2+2?")
        assert [r.uri for r in session.list_roots().roots] == ["file:///work"]
        if revision >= "2025-06-18":
            elicited = session.elicit(
                ElicitRequestFormParams(
                    message="Your name?",
                    requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
                )
            )
            assert elicited.content == {"name": "Ada"}

        # logging, ping both ways
        logs: list[str] = []
        got_log = threading.Event()
        client.log_handler = lambda message: (logs.append(message.data), got_log.set())
        client.set_log_level("warning")
        session.log("info", "filtered out")
        session.log("error", "disk full")
        assert got_log.wait(5)
        assert logs == ["disk full"]
        client.ping()
        session.ping()
    finally:
        client.disconnect()
    assert not client.initialized

    seen = check_wire(revision, recorder)
    assert seen[:2] == ["initialize", "notifications/initialized"]
    for method in ("tools/call", "notifications/progress", "notifications/cancelled", "resources/subscribe"):
        assert method in seen
    for method in ("notifications/resources/updated", "sampling/createMessage", "roots/list", "ping"):
        assert method in seen


def test_progress_and_cancellation_propagate_over_the_wire(server: MCPServer) -> None:
    outcomes: list[str] = []
    server.events.on(REQUEST_COMPLETED, lambda payload: outcomes.append(payload.outcome))
    client_end, server_end = InMemoryTransport.pair()
    recorder = RecordingTransport(client_end)
    server.start(server_end)
    with MCPClient() as client:
        client.connect(recorder)
        cancel = threading.Event()
        with pytest.raises(MCPError) as err:
            client.call_tool(
                "slow", {"steps": 2, "wait_for_cancel": True}, cancel=cancel, progress=lambda p: cancel.set()
            )
        assert err.value.code == MCP_CODES.REQUEST_CANCELLED
        # The server handler saw the cancellation and sent no response for it.
        client.ping()
    sent = [json.loads(m) for m in recorder.sent]
    cancelled = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert len(cancelled) == 1
    call_id = cancelled[0]["params"]["requestId"]
    assert not [m for m in map(json.loads, recorder.received) if m.get("id") == call_id]
    deadline = time.monotonic() + 10
    while "cancelled" not in outcomes and time.monotonic() < deadline:
        time.sleep(0.01)  # the server records the outcome as its handler returns, after the client saw the error
    assert "cancelled" in outcomes


def test_resource_subscriptions_deliver_updates(server: MCPServer) -> None:
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    seen: list[str] = []
    got = threading.Event()
    with MCPClient() as client:
        client.events.on("resource:updated", lambda payload: (seen.append(payload.uri), got.set()))
        client.connect(client_end)
        client.subscribe_resource("mem://x")
        server.mark_resource_updated("mem://other")
        server.mark_resource_updated("mem://x")
        assert got.wait(5)
    assert seen == ["mem://x"]
