"""Races between what a client's listeners and callers do and what its transports do meanwhile.

- A stdio reader thread kept in a listener past close() must not select or read on the descriptors close()
  closed (the numbers may belong to someone else by then).
- A Streamable HTTP call given up while the connection it was sent on is already back in the pool (an auth
  retry about to resend it, or urllib3 giving the connection back as the answer is read to its end) must
  leave alone the request that took that connection from the pool meanwhile.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import queue
import select
import threading
from collections.abc import Callable
from typing import Any

import pytest
import requests
import requests.auth
from helpers import KeepAliveJSONHandler, PutHookAdapter, wait_until

import mcp_sync
import mcp_sync.client.core
from mcp_sync import MCP_CODES, MCPError, MCPServer
from mcp_sync.runtime.http import new_session
from mcp_sync.server.middleware import Call, Next
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport
from mcp_sync.transports.stdio import StdioTransport
from mcp_sync.types import JSONRPCMessage, JSONRPCNotification, JSONRPCRequest

WAIT = 10.0


# ------------------------------------------------------------------ stdio: a reader kept in a listener past close


def test_a_reader_returning_from_a_listener_after_close_leaves_the_closed_descriptors_alone() -> None:
    inbound_r, inbound_w = os.pipe()
    outbound_r, outbound_w = os.pipe()
    readable = io.FileIO(inbound_r, "rb")
    transport = StdioTransport(readable, io.FileIO(outbound_w, "wb"))
    assert transport._wakeup is not None
    wakeup_r = transport._wakeup[0]
    in_listener, leave = threading.Event(), threading.Event()

    def listener(message: JSONRPCMessage | Any) -> None:
        in_listener.set()
        leave.wait(WAIT)  # a listener slower than close() waits for the reader threads

    transport.on_message(listener)
    os.write(inbound_w, b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
    assert in_listener.wait(WAIT)
    (reader,) = [t for t in threading.enumerate() if t.name == "mcp-sync-stdio-reader"]
    theirs_r, theirs_w = os.pipe()
    quiet_r, quiet_w = os.pipe()
    transport.close()  # gives up joining the reader, and closes the descriptors
    assert reader.is_alive()
    # The numbers are taken again by someone else: pipes of theirs now sit on the reader's old descriptors.
    os.dup2(theirs_r, inbound_r)
    os.dup2(quiet_r, wakeup_r)
    try:
        os.write(theirs_w, b"not yours\n")
        leave.set()
        reader.join(WAIT)
        stopped = not reader.is_alive()
        ready, _, _ = select.select([inbound_r], [], [], 0)
        assert ready and os.read(inbound_r, 100) == b"not yours\n", "the reader read from a descriptor it had closed"
        assert stopped, "the reader went on waiting on descriptors it had closed"
    finally:
        for fd in (theirs_w, quiet_w):  # (ends a reader that went astray)
            os.close(fd)
        reader.join(WAIT)
        for fd in (theirs_r, quiet_r, inbound_r, wakeup_r, outbound_r, inbound_w):
            os.close(fd)


# ------------------------------------------------------------------ HTTP: a connection back in the pool while noted


class _Scripted(KeepAliveJSONHandler):
    """``initialize`` gets session s1; a ``ping`` without an Authorization header gets 401, with one (or any
    other request) a result; notifications 202; a POST to ``/other`` (another request on the same pool) waits
    until the test lets it answer."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"null")
        server: Any = self.server
        if self.path == "/other":
            server.other_arrived.set()
            server.other_may_answer.wait(WAIT)
            self._send(200, {"other": True})
        elif "id" not in body:
            self._send(202, None)
        elif body["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
            self._send(200, {"jsonrpc": "2.0", "id": body["id"], "result": result}, {"Mcp-Session-Id": "s1"})
        elif body["method"] == "ping" and "Authorization" not in self.headers:
            self._send(401, None)
        else:
            self._send(200, {"jsonrpc": "2.0", "id": body["id"], "result": {}})


class _Rig:
    """The scripted server, a transport on ``session`` past its handshake, and a way to race another request."""

    def __init__(self, session: requests.Session, auth: requests.auth.AuthBase | None = None) -> None:
        self.server: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
        self.server.daemon_threads = True
        self.server.other_arrived = threading.Event()
        self.server.other_may_answer = threading.Event()
        self.serving = threading.Thread(target=self.server.serve_forever, name="test-scripted-http", daemon=True)
        self.serving.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.session = session
        self.transport = StreamableHTTPClientTransport(
            f"{self.base}/mcp", session=session, auth=auth, open_get_stream=False, timeout=WAIT
        )
        self.answers: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.transport.on_message(self.answers.put)
        self.other: list[Any] = []
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
        self.transport.send(JSONRPCRequest(id="init", method="initialize", params=params))
        assert self.answers.get(timeout=WAIT).id == "init"
        self.transport.send(JSONRPCNotification(method="notifications/initialized"))

    def another_request_takes_the_connection_and_the_caller_gives_up_on(self, request_id: str) -> None:
        """On the thread whose connection just went back to the pool: another request takes it from there,
        and meanwhile the caller gives up on ``request_id``."""

        def post_other() -> None:
            try:
                self.other.append(self.session.post(f"{self.base}/other", data=b"{}", timeout=WAIT).status_code)
            except requests.RequestException as error:
                self.other.append(error)

        poster = threading.Thread(target=post_other, name="test-other-request")
        poster.start()
        assert self.server.other_arrived.wait(WAIT)
        self.transport.send(JSONRPCNotification(method="notifications/cancelled", params={"requestId": request_id}))
        self.server.other_may_answer.set()
        poster.join(WAIT)

    def close(self) -> None:
        self.server.other_may_answer.set()
        self.transport.close()
        self.session.close()
        self.server.shutdown()
        self.server.server_close()
        self.serving.join(WAIT)


def _loopback_session(adapter: requests.adapters.HTTPAdapter | None = None) -> requests.Session:
    session = new_session()
    session.trust_env = False  # loopback only
    if adapter is not None:
        session.mount("http://", adapter)
    return session


class _ChallengedOnce(requests.auth.AuthBase):
    """Answers a 401 the way requests' own auths do: read the refusal, give its connection back, send again
    with credentials. ``between`` runs after the connection went back and before the request is sent again."""

    def __init__(self) -> None:
        self.between: Callable[[], None] = lambda: None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.register_hook("response", self._retry)
        return request

    def _retry(self, response: requests.Response, **options: Any) -> requests.Response:
        if response.status_code != 401:
            return response
        _ = response.content
        response.close()
        self.between()
        again = response.request.copy()
        again.headers["Authorization"] = "Bearer granted"
        answer: requests.Response = response.connection.send(again, **options)
        answer.history.append(response)
        return answer


def test_a_call_given_up_between_an_auth_retrys_refusal_and_its_resend_spares_the_connection_it_gave_back() -> None:
    auth = _ChallengedOnce()
    rig = _Rig(_loopback_session(), auth)
    try:
        auth.between = lambda: rig.another_request_takes_the_connection_and_the_caller_gives_up_on("a")
        rig.transport.send(JSONRPCRequest(id="a", method="ping"))
        wait_until(lambda: len(rig.other) == 1)
        assert rig.other == [200], f"the request that took the connection from the pool failed: {rig.other[0]!r}"
    finally:
        rig.close()


def test_a_call_given_up_as_its_answer_is_read_to_the_end_spares_the_connection_given_back() -> None:
    # Reading the last byte of the answer gives the connection back to the pool, inside the read, before the
    # transport is done with the response: giving up then stopped "its" response, on a socket now another's.
    adapter = PutHookAdapter()
    rig = _Rig(_loopback_session(adapter))
    try:
        adapter.on_put = lambda connection: rig.another_request_takes_the_connection_and_the_caller_gives_up_on("b")
        rig.transport.send(JSONRPCRequest(id="b", method="tools/list"))
        wait_until(lambda: len(rig.other) == 1)
        assert rig.other == [200], f"the request that took the connection from the pool failed: {rig.other[0]!r}"
    finally:
        rig.close()


# ------------------------------------------------------------------ a change told before the subscription's answer


def test_a_change_told_before_the_subscribe_is_answered_is_not_lost() -> None:
    # The server subscribed the client, and the resource changed before the answer went out: the notification
    # came before the client noted the subscription, which dropped it as one for a resource it did not follow.
    uri = "notes://readme"
    server = MCPServer("demo")
    text = ["first"]

    @server.resource(uri)
    def readme() -> str:
        return text[0]

    @server.middleware
    def change_at_once(call: Call, next: Next) -> Any:
        answer = next(call)
        if call.method == "resources/subscribe":
            text[0] = "second"
            server.mark_resource_updated(uri)  # (told before the answer goes out)
        return answer

    with mcp_sync.connect(server, era="handshake") as client:
        updated = threading.Event()
        client.events.on(mcp_sync.client.core.RESOURCE_UPDATED, lambda payload: updated.set())
        client.subscribe_resource(uri)
        assert updated.wait(WAIT)
        contents = client.subscribed_contents(uri)
        assert contents is not None and contents.text == "second"


def test_a_refused_subscribe_leaves_followed_only_what_was_followed_before() -> None:
    uri, other = "notes://readme", "notes://other"
    server = MCPServer("demo")
    refusing = threading.Event()

    @server.resource(uri)
    def readme() -> str:
        return "read me"

    @server.resource(other)
    def other_note() -> str:
        return "other"

    def refuse(session: Any, changed: str, subscribed: bool) -> None:
        if subscribed and refusing.is_set():
            raise MCPError(MCP_CODES.UNAUTHORIZED, "no more")

    server.on_subscription(refuse)
    with mcp_sync.connect(server, era="handshake") as client:
        client.subscribe_resource(uri)
        refusing.set()
        for refused in (uri, other):
            with pytest.raises(MCPError):
                client.subscribe_resource(refused)
        assert client._subscriptions == {uri: None}  # the one it had stays followed; the refused one is not
