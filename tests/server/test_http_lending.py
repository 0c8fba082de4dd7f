"""A request runs on the thread that brought it (the embedded server's), its answer streamed by a
handler thread only when it turns into a stream while the handler runs (mcp_sync/server/http/lending.py: Lent)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from mcp_sync import Context, MCPServer
from mcp_sync.protocol.jsonrpc import error_response
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.server import StreamableHTTPApp, start_http
from mcp_sync.server.http.answers import Answer
from mcp_sync.server.http.lending import HangUp, LendWatch, Lent
from mcp_sync.server.http.sessions import Signal, StreamableSessionTransport, StreamEvent
from mcp_sync.server.http.wire import Once

REVISION = "2026-07-28"
WAIT = 10.0
PAGE = "http://page.example"


def stateless_call(url: str, tool: str, *, origin: str | None = None, token: str | None = None) -> requests.Response:
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: REVISION,
        CLIENT_INFO: {"name": "lending-test", "version": "1"},
        CLIENT_CAPABILITIES: {},
    }
    if token is not None:
        meta["progressToken"] = token
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    if origin is not None:
        headers["Origin"] = origin
    with requests.Session() as http:
        http.trust_env = False  # loopback only
        return http.post(url, json=body, headers=headers, timeout=WAIT)


def build() -> MCPServer:
    server = MCPServer("lending")

    @server.tool
    def quick() -> str:
        """Answers at once."""
        return "quick"

    @server.tool
    def steps(ctx: Context) -> str:
        """Reports progress, so that its answer streams while it runs."""
        ctx.progress(1, 2)
        ctx.progress(2, 2)
        return "stepped"

    return server


def test_a_quick_answer_is_json_and_a_chatty_one_streams_with_its_cors_headers() -> None:
    with start_http(build(), cors_origins=[PAGE]) as running:
        quick = stateless_call(running.url, "quick", origin=PAGE)
        assert quick.headers["Content-Type"] == "application/json"
        assert quick.json()["result"]["content"][0]["text"] == "quick"
        streamed = stateless_call(running.url, "steps", origin=PAGE, token="t-1")
        assert streamed.headers["Content-Type"] == "text/event-stream"
        assert streamed.headers["Access-Control-Allow-Origin"] == PAGE
        assert streamed.text.count("notifications/progress") == 2 and '"text":"stepped"' in streamed.text


def lent_request(app: StreamableHTTPApp, transport: StreamableSessionTransport, request_id: int) -> Lent:
    post = transport.open_post(request_id, priming=False)
    answer = Answer(json_ok=True, sse_ok=True, priming=False, stateless=True)
    return app._lender.lend(transport, post, answer, Once(lambda: None), cancel=lambda: None)


def test_what_a_post_got_before_it_was_lent_is_kept() -> None:
    """A session that ended before its request was lent: the POST's queue already says so, and still does."""
    app = StreamableHTTPApp(MCPServer("lending"))
    transport = StreamableSessionTransport(event_store=None, inline=True)
    transport.close()
    try:
        lent = lent_request(app, transport, 1)
        assert lent.post.queue.get_nowait() is Signal.CLOSED
        assert lent.post.consumer is lent.post.queue
    finally:
        app.close()


def test_a_handler_done_before_its_deadline_is_looked_at_is_not_streamed() -> None:
    """The watch finds a lent request past its deadline whose response came first: it stays a JSON answer."""
    app = StreamableHTTPApp(MCPServer("lending"))
    transport = StreamableSessionTransport(event_store=None, inline=True)
    watch = LendWatch(0.02)
    try:
        lent = lent_request(app, transport, 7)
        transport.send(error_response(7, -32601, "Method not found: nope"))  # the response: the answer is JSON
        lent.deadline = time.monotonic() - 1
        watch.add(lent)
        deadline = time.monotonic() + WAIT
        while lent in watch._lent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lent not in watch._lent  # looked at, and let go
        assert lent.post.mode == "json" and lent.settle() is None
        item = lent.post.queue.get_nowait()
        assert isinstance(item, StreamEvent) and item.message is not None
    finally:
        watch.close(WAIT)
        transport.close()
        app.close()
    assert not [thread for thread in threading.enumerate() if thread.name == "mcp-sync-http-lend-watch"]


def test_a_request_the_watch_fails_on_is_let_go_and_the_watch_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    app = StreamableHTTPApp(MCPServer("lending"))
    transport = StreamableSessionTransport(event_store=None, inline=True)
    watch = LendWatch(0.02)
    cancelled: list[str] = []
    try:
        fine = lent_request(app, transport, 2)

        def exploding() -> bool:
            raise RuntimeError("a socket gone wrong")

        broken = HangUp(exploding, lambda: cancelled.append("broken"))
        gone = HangUp(lambda: True, lambda: cancelled.append("gone"))
        transport.send(error_response(2, -32601, "Method not found: nope"))  # fine's response came first
        fine.deadline = time.monotonic() - 1
        for watched in (broken, fine, gone):
            watch.add(watched)
        deadline = time.monotonic() + WAIT
        while watch._lent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not watch._lent  # all looked at: the failing one let go, the others handled
        assert fine.post.mode == "json"
        assert cancelled == ["gone"]  # a request answered on a handler thread whose client hung up is cancelled
        assert "the lend watch failed on a request" in caplog.text
    finally:
        watch.close(WAIT)
        transport.close()
        app.close()


def test_a_stream_asked_for_once_the_handler_is_done_is_not_started() -> None:
    app = StreamableHTTPApp(MCPServer("lending"))
    transport = StreamableSessionTransport(event_store=None, inline=True)
    try:
        lent = lent_request(app, transport, 3)
        assert lent.settle() is None
        transport.start_streaming(lent.post)
        lent.post.queue.put(Signal.END)  # after the handler is done: nothing starts a stream any more
        lent.stream()
        assert lent.streamed is None
    finally:
        transport.close()
        app.close()


def test_an_answer_given_elsewhere_while_the_handler_runs_is_written_at_once() -> None:
    """The app closes while a lent handler ignores being told to stop: the request is answered for it, and the POST
    gets that answer from another thread at once (as JSON), not once the handler lets go of the connection's thread."""
    server = MCPServer("lending")
    started, release = threading.Event(), threading.Event()

    @server.tool
    def stubborn() -> str:
        """Runs until released, whatever it is told."""
        started.set()
        release.wait(WAIT)
        return "late"

    answers: list[requests.Response] = []
    with start_http(server) as running:
        caller = threading.Thread(target=lambda: answers.append(stateless_call(running.url, "stubborn")))
        caller.start()
        try:
            assert started.wait(WAIT)
            running.app.close(timeout=0.2)
            caller.join(WAIT)
            assert answers and answers[0].headers["Content-Type"] == "application/json"
            assert answers[0].json()["error"]["message"] == "The server is shutting down"
            assert not release.is_set()  # answered while the handler still ran
        finally:
            release.set()
            caller.join(WAIT)


def raw_post(port: int, body: dict[str, Any], headers: dict[str, str]) -> socket.socket:
    """A POST sent on a raw connection, left open for the test to close."""
    data = json.dumps(body).encode()
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(data)}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    connection = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    connection.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    return connection


@pytest.mark.parametrize(
    ("revision", "reset", "accept"),
    [
        (REVISION, False, "application/json, text/event-stream"),
        (REVISION, True, "application/json, text/event-stream"),
        (REVISION, False, "text/event-stream"),  # no JSON answer: served on a handler thread, not lent
        ("2025-11-25", False, "application/json, text/event-stream"),
    ],
)
def test_a_2026_07_28_client_hanging_up_cancels_its_request(revision: str, reset: bool, accept: str) -> None:
    # 2026-07-28: closing the connection is the cancellation. Before it, a disconnection is none (the handler runs on).
    server = MCPServer("hang-up")
    started, ended = threading.Event(), threading.Event()
    outcome: list[bool] = []

    @server.tool
    def wait(ctx: Context) -> str:
        """Waits to be cancelled, up to a bound."""
        started.set()
        outcome.append(ctx.cancelled.wait(1.5 if revision != REVISION else WAIT))  # (the watch looks every 0.5 s)
        ended.set()
        return "waited"

    with start_http(server, stateless=True) as running:
        meta = {PROTOCOL_VERSION: revision, CLIENT_INFO: {"name": "t", "version": "1"}, CLIENT_CAPABILITIES: {}}
        params: dict[str, Any] = {"name": "wait", "arguments": {}}
        if revision == REVISION:
            params["_meta"] = meta
        headers = {
            "Content-Type": "application/json",
            "Accept": accept,
            "MCP-Protocol-Version": revision,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "wait",
        }
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        connection = raw_post(urlsplit(running.url).port or 0, call, headers)
        assert started.wait(WAIT)
        if reset:  # an abortive close: the server's next look sees a reset, not an end of file
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()
        assert ended.wait(WAIT)
    assert outcome == [revision == REVISION]


def test_a_2026_07_28_client_that_waits_is_not_taken_for_gone() -> None:
    # The watch looks at the connection (twice, here) and finds the client waiting: the handler runs to its end.
    server = MCPServer("patient")

    @server.tool
    def linger(ctx: Context) -> str:
        """Works for a second and a bit, unless cancelled."""
        return "cancelled" if ctx.cancelled.wait(1.2) else "done"

    with start_http(server) as running:
        answer = stateless_call(running.url, "linger")
        assert answer.json()["result"]["content"][0]["text"] == "done"


def session_call(http: requests.Session, url: str, tool: str, accept: str, token: str | None = None) -> str:
    """``tool`` called in a handshake-era session opened on ``http`` (once); the answer's body."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if "Mcp-Session-Id" not in http.headers:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        opened = http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, timeout=WAIT)
        http.headers.update({"Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"})
        done = http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=WAIT)
        assert done.status_code == 202
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    answer = http.post(url, json=call, headers={**headers, "Accept": accept}, timeout=WAIT)
    assert answer.status_code == 200
    return answer.text


@pytest.mark.parametrize(
    ("accept", "token", "thread"),
    [
        ("application/json, text/event-stream", None, "mcp-sync-http-conn"),  # lent: the connection's thread
        ("application/json, text/event-stream", "t-1", "mcp-sync-http-conn"),  # lent, its answer streamed meanwhile
        ("application/json", None, "mcp-sync-http-conn"),
        ("text/event-stream", None, "mcp-sync-server-handler"),  # no JSON answer: the session's handler pool
    ],
)
def test_a_sessions_request_runs_on_the_thread_that_brought_it(accept: str, token: str | None, thread: str) -> None:
    # Handshake-era sessions serve many requests; each of them is lent the thread of its POST as a session of one
    # request is, with no hand-off to a handler thread and back, unless its answer can only be a stream.
    server = build()
    ran_on: list[str] = []

    @server.tool
    def where(ctx: Context) -> str:
        """Says which thread runs it; with a progress token, reports progress first."""
        ran_on.append(threading.current_thread().name)
        ctx.progress(1, 1)
        return "here"

    with start_http(server) as running, requests.Session() as http:
        http.trust_env = False  # loopback only
        for _ in range(2):  # (the second call in the same session)
            body = session_call(http, running.url, "where", accept, token)
            assert '"text":"here"' in body
            assert body.count("notifications/progress") == (1 if token else 0)
    assert ran_on == [thread, thread]
