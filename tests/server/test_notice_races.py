"""What a server tells its clients, at the edges: a listen refused part-way, progress after the answer."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from helpers import RecordingTransport, wait_until

import mcp_sync
import mcp_sync.client.core
from mcp_sync import MCPClient, MCPError, MCPServer
from mcp_sync.protocol.errors import MCP_CODES
from mcp_sync.runtime.events import REQUEST_COMPLETED
from mcp_sync.server.context import Context
from mcp_sync.server.middleware import Call, Next
from mcp_sync.server.session import ServerSession
from mcp_sync.transports.memory import InMemoryTransport

WAIT = 10.0


def test_a_listen_refused_for_one_of_its_resources_ends_the_subscriptions_it_made_before() -> None:
    # The watchers (a mount passing subscriptions on, a proxy subscribing upstream) were told of the first URI and
    # never told it ended: the upstream subscription outlived the refused listen.
    server = MCPServer("demo")
    heard: list[tuple[str, bool]] = []

    def watch(session: ServerSession, uri: str, subscribed: bool) -> None:
        heard.append((uri, subscribed))
        if subscribed and uri == "notes://secret":
            raise MCPError(MCP_CODES.UNAUTHORIZED, "not this one")

    server.on_subscription(watch)
    client = MCPClient(era="stateless")
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client.connect(client_end)
    try:
        with pytest.raises(MCPError) as refused:
            client.listen(resource_uris=["notes://1", "notes://secret"], timeout=WAIT)
        assert refused.value.code == MCP_CODES.UNAUTHORIZED
        assert heard == [("notes://1", True), ("notes://secret", True), ("notes://1", False)]
    finally:
        client.disconnect()
        server.stop()


def test_no_progress_goes_out_for_a_request_already_answered() -> None:
    # A tool that hands its context to a thread of its own, which reports on after the tool returned: the spec
    # has progress end with the response.
    server = MCPServer("demo")
    kept: list[Context] = []

    @server.tool
    def start(ctx: Context) -> str:
        ctx.progress(1, 2, "half")
        kept.append(ctx)
        return "started"

    client = MCPClient(era="handshake")
    client_end, server_end = InMemoryTransport.pair()
    recorder = RecordingTransport(client_end)
    server.start(server_end)
    client.connect(recorder)  # type: ignore[arg-type]
    try:
        seen: list[Any] = []
        assert client.call_tool("start", {}, progress=seen.append).text == "started"
        assert [p.message for p in seen] == ["half"]
        (ctx,) = kept
        ctx.progress(2, 2, "late")  # after the answer
        ctx.log("info", "barrier")  # (not tied to the request: it goes out, after the late progress if any)
        wait_until(lambda: any(b'"notifications/message"' in line for line in recorder.received))
        methods = [json.loads(line).get("method", "response") for line in recorder.received]
        answered = methods.index("response", methods.index("notifications/progress"))
        assert "notifications/progress" not in methods[answered:], methods
    finally:
        client.disconnect()
        server.stop()


def _upstream_subscribed(target: MCPServer, uri: str) -> bool:
    return any(uri in session.subscriptions for session in target.sessions)


def test_a_proxy_ending_an_upstream_subscription_as_another_session_takes_it_up_keeps_it() -> None:
    # The last downstream session leaves: the proxy decides to end the upstream subscription, and its
    # unsubscribe reaches the target after another session's new subscribe did. The new subscriber was told
    # nothing more: its subscription had ended upstream.
    uri = "notes://readme"
    target = MCPServer("target")

    @target.resource(uri)
    def readme() -> str:
        return "read me"

    reached, release = threading.Event(), threading.Event()

    @target.middleware
    def slow_unsubscribe(call: Call, next: Next) -> Any:
        if call.method == "resources/unsubscribe":
            reached.set()
            release.wait(WAIT)  # (on its way: not ended upstream yet)
        return next(call)

    with (
        mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front,
        mcp_sync.connect(front, era="handshake") as leaving,
        mcp_sync.connect(front, era="handshake") as staying,
    ):
        leaving.subscribe_resource(uri)
        unsubscriber = threading.Thread(target=leaving.unsubscribe_resource, args=(uri,), name="test-unsubscriber")
        unsubscriber.start()
        try:
            assert reached.wait(WAIT)
            staying.subscribe_resource(uri)
        finally:
            release.set()
            unsubscriber.join(WAIT)
        assert _upstream_subscribed(target, uri)
        updated = threading.Event()
        staying.events.on(mcp_sync.client.core.RESOURCE_UPDATED, lambda payload: updated.set())
        target.mark_resource_updated(uri)
        assert updated.wait(WAIT)


def test_a_proxy_leaves_the_upstream_subscription_alone_when_a_session_unsubscribes_from_what_it_never_asked_for() -> (
    None
):
    uri = "notes://readme"
    target = MCPServer("target")

    @target.resource(uri)
    def readme() -> str:
        return "read me"

    unsubscribes: list[str] = []

    @target.middleware
    def count(call: Call, next: Next) -> Any:
        if call.method == "resources/unsubscribe":
            unsubscribes.append(call.params["uri"])
        return next(call)

    with (
        mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front,
        mcp_sync.connect(front, era="handshake") as client,
    ):
        client.unsubscribe_resource(uri)
        client.subscribe_resource(uri)
        client.unsubscribe_resource(uri)
        assert unsubscribes == [uri]  # the one it had


def test_a_server_wide_log_message_goes_to_no_2026_client_for_it_names_no_log_level() -> None:
    # 2026-07-28 has no connection-wide level: a message goes only on the response stream of a request that named
    # one. A message for every client (MCPServer.log) went, untagged, to a 2026-07-28 client's connection.
    server = MCPServer("demo")
    client = MCPClient(era="stateless")
    handshake = MCPClient(era="handshake")
    client_end, server_end = InMemoryTransport.pair()
    recorder = RecordingTransport(client_end)
    server.start(server_end)
    client.connect(recorder)  # type: ignore[arg-type]
    handshake_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    told = threading.Event()
    handshake.connect(handshake_end)
    try:
        handshake.on_notification("notifications/message", lambda params: told.set())
        server.log("error", "for everyone")
        assert told.wait(WAIT)  # a handshake-era client that set no level gets it
        client.ping()  # (sent after the message: answered after it would have come)
        assert not any(b'"notifications/message"' in line for line in recorder.received)
    finally:
        client.disconnect()
        handshake.disconnect()
        server.stop()


def test_two_listens_of_one_connection_on_one_resource_keep_it_subscribed_until_both_end() -> None:
    # Over stdio one 2026-07-28 connection may hold several listens. The watchers (a proxy ending the upstream
    # subscription, a mount) heard the resource given up as the first ended, while the second still wanted it.
    uri = "notes://readme"
    server = MCPServer("demo")
    heard: list[tuple[str, bool]] = []
    server.on_subscription(lambda session, changed, subscribed: heard.append((changed, subscribed)))
    listens_done = threading.Semaphore(0)
    server.events.on(
        REQUEST_COMPLETED,
        lambda done: listens_done.release() if done.method == "subscriptions/listen" else None,
    )
    client = MCPClient(era="stateless")
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client.connect(client_end)
    try:
        first = client.listen(resource_uris=[uri], timeout=WAIT)
        second = client.listen(resource_uris=[uri, uri], timeout=WAIT)  # (named twice: counted once)
        first.close()
        assert listens_done.acquire(timeout=WAIT)  # the first listen's handler has returned
        assert heard == [(uri, True)]
        second.close()
        assert listens_done.acquire(timeout=WAIT)
        assert heard == [(uri, True), (uri, False)]
    finally:
        client.disconnect()
        server.stop()
