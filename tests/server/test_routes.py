"""Where what a handler sends goes is said by the sender (a Route), never found from the running thread."""

from __future__ import annotations

from typing import Any

from mcp_sync import Context, MCPClient, MCPServer
from mcp_sync.protocol.jsonrpc import error_response
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.runtime.transport import Route
from mcp_sync.server.context import NO_CLIENT
from mcp_sync.server.http.event_store import InMemoryEventStore
from mcp_sync.server.http.sessions import StreamableSessionTransport, StreamEvent
from mcp_sync.server.tasks import TaskChannel
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import JSONRPCNotification


def test_a_message_of_an_answered_request_does_not_reach_a_post_reusing_its_id() -> None:
    """A handler that goes on after its request was answered (a task, say) names that request; a new POST with
    the same id is another request's, so the message goes to the session's GET stream instead."""
    transport = StreamableSessionTransport(event_store=InMemoryEventStore())
    attached = transport.attach(None, priming=False)
    assert attached is not None
    standalone = attached[1]
    dispatcher = object()
    transport.dispatcher = dispatcher
    old = RequestContext(dispatcher, 7, "tools/call", {})  # type: ignore[arg-type]
    old.answered = True
    newer = transport.open_post(7, priming=False)
    note = JSONRPCNotification(method="notifications/message", params={"level": "info", "data": "late"})
    transport.send_routed(note, old)
    item = standalone.get_nowait()
    assert isinstance(item, StreamEvent) and item.message == note
    assert newer.queue.empty() and newer.context is None
    # The new request's own answer still reaches its POST.
    current = RequestContext(dispatcher, 7, "tools/call", {})  # type: ignore[arg-type]
    transport.send_routed(error_response(7, -32603, "its own"), current)
    answer = newer.queue.get_nowait()
    assert isinstance(answer, StreamEvent) and answer.message is not None
    transport.close()


def test_a_context_names_its_request_and_a_local_or_task_context_none() -> None:
    """``ctx.route`` is the request a handler serves (for calls through the session itself); none without one."""
    server = MCPServer("routes")
    seen: list[Any] = []

    @server.tool
    def where(ctx: Context) -> str:
        """Tells the route of its context."""
        seen.append(ctx.route)
        return "here"

    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client = MCPClient()
    client.connect(client_end)
    try:
        assert client.call_tool("where", {}).text == "here"
    finally:
        client.close()
        server.stop()
    (route,) = seen
    assert isinstance(route, Route) and route.request is not None and route.request.method == "tools/call"
    assert Context(channel=NO_CLIENT).route is None
    channel = TaskChannel(runner=None, task_id="t1", origin=NO_CLIENT, live=None)  # type: ignore[arg-type]
    assert channel.route is None
