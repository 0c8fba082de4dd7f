"""Races found by a hostile review of the cancellation and give-up paths, each pinned down deterministically.

No test here sleeps to order threads: where an interleaving matters, the test
holds one thread at the exact point of the race (a future's done-callback, a
connection pool's put) until the other has done its part, then checks what the
peer saw.
"""

from __future__ import annotations

import concurrent.futures
import http.server
import json
import logging
import queue
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from helpers import KeepAliveJSONHandler, PutHookAdapter, wait_until

from mcp_sync import Context, MCPServer
from mcp_sync.client.core import MCPClient
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.runtime.cancellation import CancelEvent
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher, PendingRequest
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.server import StreamableHTTPApp, start_http
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import JSONRPCNotification, JSONRPCRequest

WAIT = 5.0
"""Upper bound of every wait; a passing test never comes near it."""


# --------------------------------------------------------------- CancelEvent


def test_a_callback_that_raises_does_not_keep_the_others_from_being_called(caplog: pytest.LogCaptureFixture) -> None:
    # A dispatcher's close sets every running handler's event in a loop: one failing
    # callback must not end that loop (calls left waiting) or hide the others.
    cancelled = CancelEvent()
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("a broken callback")

    cancelled.call_when_set(broken)
    cancelled.call_when_set(lambda: heard.append("after"))
    with caplog.at_level(logging.ERROR, logger="mcp_sync.runtime.cancellation"):
        cancelled.set()
    assert heard == ["after"] and cancelled.is_set()
    assert "a broken callback" in caplog.text


# ------------------------------------------------ a question withdrawn by a cancel


def test_a_question_withdrawn_by_the_cancellation_of_its_request_is_always_told_to_the_peer() -> None:
    """The handler's wait is woken by its question's future failing; the peer must still hear of the withdrawal.

    The callback that fails the question runs on the thread delivering the
    cancellation and completes the future before it noted that it did: the
    woken handler thread, finding nothing noted, told the peer nothing. Here
    that thread is held just after the future completes (a done-callback)
    until the handler has finished waiting.
    """
    client_end, server_end = InMemoryTransport.pair()
    client = JsonRpcDispatcher(client_end, side="client", timeout=WAIT)
    server = JsonRpcDispatcher(server_end, side="server", timeout=WAIT)
    question_cancelled = threading.Event()
    handler_done = threading.Event()
    outcome: list[str] = []

    def question(params: Any, ctx: RequestContext) -> dict[str, Any]:
        # The client side of the question: answered only once the server withdraws it.
        if ctx.cancelled.wait(WAIT):
            question_cancelled.set()
        return {}

    def outer(params: Any, ctx: RequestContext) -> dict[str, Any]:
        try:
            server.request("question", cancel=ctx.cancelled)
        except MCPError as error:
            outcome.append(error.code)
        finally:
            handler_done.set()
        return {}

    client.register_handler("question", question)
    server.register_handler("outer", outer)
    client.start()
    server.start()
    try:
        pending = client.send_request("outer")
        wait_until(lambda: any(p.method == "question" for p in list(server._pending.values())))
        asked: PendingRequest = next(p for p in list(server._pending.values()) if p.method == "question")
        # Held where the race lies: the question's future just failed, on the delivering thread.
        asked.future.add_done_callback(lambda _: handler_done.wait(WAIT))
        client.cancel(pending, "the user gave up")
        assert handler_done.wait(WAIT)
        assert outcome == [MCP_CODES.REQUEST_CANCELLED]
        assert question_cancelled.wait(WAIT), "the client never heard that the question was withdrawn"
    finally:
        client.close()
        server.close()


def test_a_question_asked_under_a_cancel_set_already_is_withdrawn_and_told_once() -> None:
    # The callback (called at once) and the timeout of zero both try to end the call: one does, the peer hears once.
    client_end, server_end = InMemoryTransport.pair()
    server = JsonRpcDispatcher(server_end, side="server", timeout=WAIT)
    heard: list[Any] = []
    client_end.on_message(heard.append)
    server.start()
    try:
        cancelled = CancelEvent()
        pending = server.send_request("question")
        cancelled.set()
        with pytest.raises(MCPError) as caught:
            server.wait(pending, 0.0, cancelled)
        assert caught.value.code == MCP_CODES.REQUEST_CANCELLED
        wait_until(lambda: len(heard) >= 2)
        told = [m for m in heard if getattr(m, "method", None) == "notifications/cancelled"]
        assert len(told) == 1 and told[0].params["requestId"] == pending.id
        with pytest.raises(concurrent.futures.InvalidStateError):
            pending.future.set_result({})
    finally:
        server.close()
        client_end.close()


# ------------------------------------- the HTTP client giving up before the response


class _Scripted(KeepAliveJSONHandler):
    """A Streamable HTTP server reduced to what the test needs: it forgets the session at the first ``ping``.

    ``initialize`` gets a session; ``ping`` gets 404 (the session expired); a POST to ``/other`` (another
    request on the same connection pool) waits until the test lets it answer.
    """

    other_arrived: threading.Event
    other_may_answer: threading.Event

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"null")
        if self.path == "/other":
            self.server.other_arrived.set()  # type: ignore[attr-defined]
            self.server.other_may_answer.wait(WAIT)  # type: ignore[attr-defined]
            self._send(200, {"other": True})
        elif isinstance(body, dict) and body.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
            self._send(200, {"jsonrpc": "2.0", "id": body["id"], "result": result}, {"Mcp-Session-Id": "s1"})
        elif isinstance(body, dict) and body.get("method") == "ping":
            self._send(404, {"error": "no such session"})
        else:
            self._send(202, None)


def test_giving_up_on_a_request_whose_connection_went_back_to_the_pool_spares_the_request_now_using_it() -> None:
    """A request answered 404 (the session expired) gives its connection back before it is sent again on a
    new session. A give-up arriving in between shut down the connection it had noted, which another request
    had taken from the pool meanwhile: that other request failed."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.daemon_threads = True
    server.other_arrived = threading.Event()  # type: ignore[attr-defined]
    server.other_may_answer = threading.Event()  # type: ignore[attr-defined]
    serving = threading.Thread(target=server.serve_forever, name="test-scripted-http", daemon=True)
    serving.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    adapter = PutHookAdapter()
    session = requests.Session()
    session.trust_env = False  # loopback only
    session.mount("http://", adapter)
    transport = StreamableHTTPClientTransport(f"{base}/mcp", session=session, open_get_stream=False, timeout=WAIT)
    answers: queue.SimpleQueue[Any] = queue.SimpleQueue()
    transport.on_message(answers.put)
    other: list[Any] = []

    def meanwhile(connection: Any) -> None:
        # On the POST thread, just after the 404's connection went back to the pool: another request takes it...
        def post_other() -> None:
            try:
                other.append(session.post(f"{base}/other", data=b"{}", timeout=WAIT).status_code)
            except requests.RequestException as error:
                other.append(error)

        poster = threading.Thread(target=post_other, name="test-other-request")
        poster.start()
        assert server.other_arrived.wait(WAIT)  # type: ignore[attr-defined]
        # ...and the caller gives up on the expired request before it is sent again.
        transport.send(JSONRPCNotification(method="notifications/cancelled", params={"requestId": "a"}))
        server.other_may_answer.set()  # type: ignore[attr-defined]
        poster.join(WAIT)

    try:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
        transport.send(JSONRPCRequest(id="init", method="initialize", params=params))
        assert answers.get(timeout=WAIT).id == "init"
        transport.send(JSONRPCNotification(method="notifications/initialized"))
        adapter.on_put = meanwhile
        transport.send(JSONRPCRequest(id="a", method="ping"))
        wait_until(lambda: len(other) == 1)
        assert other == [200], f"the request that took the connection from the pool failed: {other[0]!r}"
    finally:
        server.other_may_answer.set()  # type: ignore[attr-defined]
        transport.close()
        session.close()
        server.shutdown()
        server.server_close()
        serving.join(WAIT)


# ------------------------------------------- a 2026-07-28 client that half-closes


def test_a_2026_07_28_client_that_half_closes_is_taken_for_gone_and_its_pipelined_request_still_answered() -> None:
    """Decided, not a defect: a client that shuts down its sending side after its requests cancels the one in flight.

    A peek at the socket sees the same end of input for a half-close and for a
    close; telling them apart would take a write, which a JSON answer not yet
    decided cannot make. Closing the connection is the 2026-07-28
    cancellation, so an end of input is taken for it (as nginx takes it for a
    client's abort, and Go's server for the end of a request's context). A
    request already sent behind it on the connection is still read and answered.
    """
    server = MCPServer("half-close")
    started = threading.Event()
    outcome: list[bool] = []

    @server.tool
    def wait(ctx: Context) -> str:
        """Waits to be cancelled, up to a bound."""
        started.set()
        outcome.append(ctx.cancelled.wait(WAIT))
        return "waited"

    @server.tool
    def quick() -> str:
        """Answers at once."""
        return "quick"

    def post(port: int, name: str, request_id: int, *extra: str) -> bytes:
        meta = {PROTOCOL_VERSION: "2026-07-28", CLIENT_INFO: {"name": "t", "version": "1"}, CLIENT_CAPABILITIES: {}}
        params = {"name": name, "arguments": {}, "_meta": meta}
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()
        head = [
            "POST /mcp HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            f"Content-Length: {len(body)}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: tools/call",
            f"Mcp-Name: {name}",
            *extra,
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body

    with start_http(server, stateless=True) as running:
        port = urlsplit(running.url).port or 0
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as connection:
            connection.sendall(post(port, "wait", 1) + post(port, "quick", 2, "Connection: close"))
            assert started.wait(WAIT)
            connection.shutdown(socket.SHUT_WR)
            received = b""
            while chunk := connection.recv(65536):
                received += chunk
    assert outcome == [True]
    assert b'"id":1' not in received  # cancelled: no answer
    assert b'"id":2' in received and b'"text":"quick"' in received


# ------------------------------------------ the server's own sampling provider


def test_the_cancellation_of_a_request_reaches_the_sampling_provider_answering_for_a_client_that_cannot_sample() -> (
    None
):
    """A tool's question answered by the server's own provider (the client cannot sample) is withdrawn with it:
    the provider's ``ctx.cancelled`` is the request's, not an event nothing ever sets."""
    server = MCPServer("provider")
    started = threading.Event()
    heard: list[bool] = []

    def provider(params: Any, ctx: Context) -> Any:
        started.set()
        heard.append(ctx.cancelled.wait(WAIT))
        raise MCPError(MCP_CODES.REQUEST_CANCELLED, "given up")

    server.set_sampling_provider(provider)

    @server.tool
    def ask(ctx: Context) -> str:
        """Asks for a message."""
        ctx.sample("hi")
        return "answered"

    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client = MCPClient(era="handshake")
    client.connect(client_end)
    try:
        cancel = threading.Event()
        codes: list[str] = []

        def call() -> None:
            try:
                client.call_tool("ask", cancel=cancel, timeout=WAIT)
            except MCPError as error:
                codes.append(error.code)

        caller = threading.Thread(target=call, name="test-caller")
        caller.start()
        assert started.wait(WAIT)
        cancel.set()
        caller.join(WAIT)
        assert codes == [MCP_CODES.REQUEST_CANCELLED]
        wait_until(lambda: bool(heard))
        assert heard == [True]
    finally:
        client.disconnect()
        server.stop()


@pytest.mark.parametrize("interval", [0.0, -1.0, float("nan")])
def test_a_ping_interval_that_is_not_positive_is_refused(interval: float) -> None:
    # Zero had every idle stream ping without pause and the lend watch look at its requests in a busy loop.
    with pytest.raises(ValueError, match="ping_interval must be a positive number of seconds"):
        StreamableHTTPApp(MCPServer("pings"), ping_interval=interval)
