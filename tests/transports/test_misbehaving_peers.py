"""The client against servers that misbehave, over stdio (real processes) and HTTP (raw servers on 127.0.0.1).

- A stdio server that closes its stdout and keeps running: the pending call
  fails, and ``close()`` still ends the process (close stdin, SIGTERM,
  SIGKILL) and every thread of the transport, though the transport had
  already failed.
- A stdio server that prints a banner, a JSON log record or a stray line on
  stdout: the lines are skipped and go to the stderr target; nothing is
  answered, so a strict server is not upset, and the connection goes on.
- A response for a pending call whose ``error`` is malformed (or whose
  ``result`` is not an object): the call fails at once with an
  ``MCPProtocolError``, over stdio and HTTP.
- An HTTP server that never answers a POST: closing leaves no thread blocked
  in the socket read.

Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import logging
import pickle
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import mcp_threads

from mcp_sync import MCP_CODES, MCPClient, MCPError, MCPProtocolError, MCPTransportError
from mcp_sync.client import http_client, stdio_client
from mcp_sync.protocol.stateless import PROTOCOL_VERSION
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.http import new_session
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.transports.stdio import ProcessTransport, StdioTransport
from mcp_sync.types import JSONRPCRequest

HERE = Path(__file__).parent.parent
MISBEHAVING = [sys.executable, str(HERE / "servers" / "misbehaving.py")]
# The scripted servers import nothing of mcp_sync, but misbehaving.py does at its top.
ENV = {"PYTHONPATH": str(HERE.parent)}
WAIT = 10.0
"""The bound of every wait for something that should happen at once."""


def new_threads(before: set[threading.Thread]) -> list[str]:
    """The mcp_sync threads alive now that were not before."""
    return [thread.name for thread in mcp_threads() if thread not in before and thread.is_alive()]


# ------------------------------------------------ a server that closes stdout and keeps running


def test_close_ends_a_server_that_closed_its_stdout_and_kept_running() -> None:
    before = set(mcp_threads())
    lines: list[str] = []
    transport = ProcessTransport([*MISBEHAVING, "closes_stdout"], env=ENV, stderr=lines.append, shutdown_timeout=1.0)
    client = MCPClient()
    client.connect(transport, timeout=WAIT)
    with pytest.raises(MCPTransportError) as err:
        client.call_tool("echo", {"text": "hi"}, timeout=WAIT * 3)
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert "closing stdout" in err.value.message
    # The transport failed (its reader met the end of stdout) while the process runs on.
    assert transport.closed
    client.close()
    # close() waited for every stage: stdin closed and SIGTERM ignored, so SIGKILL.
    assert transport.returncode == -signal.SIGKILL
    assert new_threads(before) == []


def test_close_of_a_transport_whose_server_closed_stdout_waits_for_the_process() -> None:
    """No client: the transport alone, closed after its reader met the end and started releasing it."""
    before = set(mcp_threads())
    transport = ProcessTransport(
        [*MISBEHAVING, "closes_stdout"], env=ENV, stderr=lambda line: None, shutdown_timeout=1.0
    )
    ended = threading.Event()
    transport.on_close(lambda reason: ended.set())
    transport.on_message(lambda message: None)
    transport.send(JSONRPCRequest(id=1, method="tools/call", params={"name": "echo"}))
    assert ended.wait(WAIT)
    transport.close()
    assert transport.returncode == -signal.SIGKILL
    assert new_threads(before) == []
    transport.close()  # idempotent


def test_close_after_the_peer_closed_waits_for_the_reader_that_released_the_transport() -> None:
    left, right = InMemoryTransport.pair()
    left.on_message(lambda message: None)  # starts its reader
    right.close()
    assert left.wait_closed(WAIT)  # its reader met the end and is releasing it
    left.close()
    assert left._reader is not None and not left._reader.is_alive()


def test_close_after_another_thread_closed_the_transport_returns_once_it_is_released() -> None:
    left, right = InMemoryTransport.pair()
    closer = threading.Thread(target=left.close, name="test-closer")
    closer.start()
    closer.join(WAIT)
    left.close()  # closed by a thread that is not the transport's: nothing to join
    assert left.closed
    right.close()


def test_a_close_handler_may_close_the_transport_it_is_told_of() -> None:
    """close() from the thread that is closing (inside a close handler) returns at once, without waiting for itself."""
    transport = ProcessTransport(
        [*MISBEHAVING, "closes_stdout"], env=ENV, stderr=lambda line: None, shutdown_timeout=1.0
    )
    reentered: list[bool] = []

    def again(reason: BaseException | None) -> None:
        transport.close()
        reentered.append(transport.closed)

    transport.on_close(again)
    transport.close()
    assert reentered == [True]
    assert transport.returncode is not None


# ------------------------------------------------ text that is not JSON-RPC on stdout


def test_a_banner_and_stray_lines_on_stdout_are_skipped_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync.transports.stdio")
    lines: list[str] = []
    with stdio_client([*MISBEHAVING, "chatty"], env=ENV, stderr=lines.append, connect_timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "still fine"}, timeout=WAIT).text == "still fine"
        client.ping(timeout=WAIT)
        transport = client._dispatcher.transport if client._dispatcher else None
        assert isinstance(transport, ProcessTransport)
        strays = transport.stray_lines
    # The strict server saw nothing but requests and notifications (it exits on anything else).
    assert "Welcome to my server! Listening on stdio...\n" in lines
    assert '{"level": "info", "msg": "starting"}\n' in lines
    assert "handling tools/call\n" in lines
    assert "handling ping\n" in lines
    assert not any("unexpected message" in line for line in lines)
    assert strays == sum(1 for line in lines if line.startswith(("Welcome", '{"level"', "handling")))
    warnings = [r.getMessage() for r in caplog.records if r.name == "mcp_sync.transports.stdio"]
    assert len(warnings) == 1
    assert "not a JSON-RPC message" in warnings[0] and "Welcome to my server!" in warnings[0]


def test_a_server_still_answers_what_is_not_json_rpc() -> None:
    """Only a client skips such lines: a server reading one answers it with -32700, as JSON-RPC asks."""
    got: list[Any] = []
    transport = StdioTransport(io.BytesIO(b"hello\n"), io.BytesIO())
    transport.on_message(got.append)
    assert transport.wait_closed(WAIT)  # at the end of its input
    assert [type(message).__name__ for message in got] == ["InvalidMessage"]
    assert got[0].error.code == -32700 and got[0].id is None and got[0].reply


def test_a_failing_stderr_target_does_not_stop_the_skipping(caplog: pytest.LogCaptureFixture) -> None:
    def explode(line: str) -> None:
        raise RuntimeError("the target is broken")

    with stdio_client([*MISBEHAVING, "chatty"], env=ENV, stderr=explode, connect_timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "on"}, timeout=WAIT).text == "on"
    assert "the stderr target of" in caplog.text


# ------------------------------------------------ malformed answers to a pending call, over stdio

MALFORMED = [
    pytest.param({"error": {"code": "oops", "message": "bad"}}, id="code-not-an-integer"),
    pytest.param({"error": {"code": 1.5, "message": "bad"}}, id="code-a-fraction"),
    pytest.param({"error": {"code": True, "message": "bad"}}, id="code-a-boolean"),
    pytest.param({"error": {"code": -32000, "message": 7}}, id="message-not-a-string"),
    pytest.param({"error": {"message": "no code"}}, id="code-missing"),
    pytest.param({"error": {"code": -32000}}, id="message-missing"),
    pytest.param({"error": "just text"}, id="error-not-an-object"),
    pytest.param({"result": "not an object"}, id="result-not-an-object"),
]


@pytest.mark.parametrize("answer", MALFORMED)
def test_a_malformed_answer_fails_the_pending_call_at_once_over_stdio(answer: dict[str, Any]) -> None:
    with stdio_client([*MISBEHAVING, "bad_answer"], env=ENV, stderr=lambda line: None, connect_timeout=WAIT) as client:
        with pytest.raises(MCPProtocolError) as err:
            client.call_tool("echo", {"answer": answer}, timeout=WAIT * 3)
        assert err.value.code == MCP_CODES.PROTOCOL_INVALID
        assert "tools/call" in err.value.message
        assert "Invalid error response" in err.value.message or "Invalid response" in err.value.message
        # The connection goes on.
        assert client.call_tool("echo", {"text": "after"}, timeout=WAIT).text == "after"


def test_a_broken_notification_fails_no_call(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.runtime.dispatcher")
    transport = StdioTransport(io.BytesIO(b'{"jsonrpc":"2.0","method":"notifications/x","params":[1]}\n'), io.BytesIO())
    dispatcher = JsonRpcDispatcher(transport)
    dispatcher.start()
    assert transport.wait_closed(WAIT)
    dispatcher.close()
    assert 'dropped invalid message: Invalid request: "params" must be an object' in caplog.text


def test_a_malformed_answer_to_no_pending_call_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.runtime.dispatcher")
    with stdio_client([*MISBEHAVING, "bad_answer"], env=ENV, stderr=lambda line: None, connect_timeout=WAIT) as client:
        answer = {"result": "not an object", "id": "nobody-asked"}
        assert client.call_tool("echo", {"answer": answer, "then": "fine"}, timeout=WAIT).text == "fine"
    assert "dropped invalid message: Invalid response" in caplog.text


# ------------------------------------------------ malformed answers over HTTP


class ScriptedHTTP(http.server.BaseHTTPRequestHandler):
    """A handshake-era MCP endpoint that answers ``tools/call`` with the call's ``answer`` argument as given.

    ``as`` says how: ``"json"`` (one JSON body) or ``"sse"`` (one SSE event).
    """

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(405, b"")

    def do_DELETE(self) -> None:
        self._send(405, b"")

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in message or "method" not in message:
            self._send(202, b"")
            return
        method, params = message["method"], message.get("params") or {}
        outcome: dict[str, Any]
        if method == "initialize":
            info = {"name": "scripted-http", "version": "1.0"}
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
            outcome = {"result": result}
        elif method == "tools/list":
            outcome = {"result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}}
        elif method == "tools/call" and "answer" in params["arguments"]:
            outcome = params["arguments"]["answer"]
        elif method == "tools/call":
            outcome = {"result": {"content": [{"type": "text", "text": params["arguments"]["text"]}]}}
        else:
            outcome = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], **outcome}).encode()
        if params.get("arguments", {}).get("as") == "sse":
            self._send(200, b"event: message\ndata: " + body + b"\n\n", "text/event-stream")
        else:
            self._send(200, body)


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="test-http-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


@pytest.mark.parametrize("kind", ["json", "sse"])
@pytest.mark.parametrize("answer", MALFORMED)
def test_a_malformed_answer_fails_the_pending_call_at_once_over_http(answer: dict[str, Any], kind: str) -> None:
    with serving(ScriptedHTTP) as url, http_client(url, transport="streamable", connect_timeout=WAIT) as client:
        with pytest.raises(MCPProtocolError) as err:
            client.call_tool("echo", {"answer": answer, "as": kind}, timeout=WAIT * 3)
        assert err.value.code == MCP_CODES.PROTOCOL_INVALID
        assert "invalid answer to tools/call" in err.value.message
        assert "Invalid error response" in err.value.message or "Invalid response" in err.value.message
        assert client.call_tool("echo", {"text": "after", "as": kind}, timeout=WAIT).text == "after"


# ------------------------------------------------ an HTTP server that never answers


class Silent:
    """A raw socket server on 127.0.0.1 that accepts connections, reads what comes, and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.requests = threading.Semaphore(0)
        """Released once for each complete request head received."""
        self.hung_up = threading.Semaphore(0)
        """Released once for each connection the client ended."""
        self._threads = [threading.Thread(target=self._accept, name="test-silent-accept", daemon=True)]
        self._connections: list[socket.socket] = []
        self._threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # the listener was shut down
            self._connections.append(connection)
            reader = threading.Thread(target=self._read, args=(connection,), name="test-silent-read", daemon=True)
            self._threads.append(reader)
            reader.start()

    def _read(self, connection: socket.socket) -> None:
        received = b""
        with contextlib.suppress(OSError):
            while chunk := connection.recv(65536):
                before, received = received, received + chunk
                if b"\r\n\r\n" in received and b"\r\n\r\n" not in before:
                    self.requests.release()
        self.hung_up.release()

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (Linux)
        self.listener.close()
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(WAIT)
        for connection in self._connections:
            connection.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


def test_close_leaves_no_thread_blocked_on_a_post_the_server_never_answers(silent: Silent) -> None:
    before = set(mcp_threads())
    transport = StreamableHTTPClientTransport(silent.url, timeout=(WAIT, 300.0))
    dispatcher = JsonRpcDispatcher(transport)
    dispatcher.start()
    # A 2026-07-28 request: giving up on it sends nothing (that revision has no cancellation to POST).
    pending = dispatcher.send_request("tools/list", {"_meta": {PROTOCOL_VERSION: "2026-07-28"}})
    assert silent.requests.acquire(timeout=WAIT)  # the POST is out, its thread waits for the response
    with pytest.raises(MCPError) as err:
        dispatcher.wait(pending, timeout=0.2)
    assert err.value.code == MCP_CODES.TIMEOUT
    assert "mcp-sync-http-post" in new_threads(before)  # still blocked in the socket read
    dispatcher.close()
    assert new_threads(before) == []
    assert silent.hung_up.acquire(timeout=WAIT)  # the connection was shut down


def test_close_fails_a_post_still_waiting_and_leaves_no_thread(silent: Silent) -> None:
    before = set(mcp_threads())
    transport = StreamableHTTPClientTransport(silent.url, timeout=(WAIT, 300.0))
    dispatcher = JsonRpcDispatcher(transport)
    dispatcher.start()
    pending = dispatcher.send_request("ping")
    assert silent.requests.acquire(timeout=WAIT)
    dispatcher.close()
    with pytest.raises(MCPTransportError) as err:
        dispatcher.wait(pending, timeout=WAIT)
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert new_threads(before) == []
    assert silent.hung_up.acquire(timeout=WAIT)


def test_close_shuts_down_posts_waiting_on_a_proxy_that_never_answers(silent: Silent) -> None:
    before = set(mcp_threads())
    transport = StreamableHTTPClientTransport("http://mcp.example/mcp", timeout=(WAIT, 300.0))
    transport.session.proxies = {"http": silent.url.removesuffix("/mcp")}
    transport.session.trust_env = False
    dispatcher = JsonRpcDispatcher(transport)
    dispatcher.start()
    dispatcher.send_request("ping")
    dispatcher.send_request("ping")  # the proxy's pool manager is made once, then reused
    assert silent.requests.acquire(timeout=WAIT) and silent.requests.acquire(timeout=WAIT)
    dispatcher.close()
    assert new_threads(before) == []
    assert silent.hung_up.acquire(timeout=WAIT) and silent.hung_up.acquire(timeout=WAIT)


def test_a_transport_that_failed_on_its_worker_is_released_before_close_returns() -> None:
    """A server that cannot be reached closes the transport from the POST's thread; close() waits for that thread."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"
    # Nothing listens there any more: the POST fails to connect.
    before = set(mcp_threads())
    transport = StreamableHTTPClientTransport(url)
    dispatcher = JsonRpcDispatcher(transport)
    dispatcher.start()
    pending = dispatcher.send_request("ping")
    with pytest.raises(MCPTransportError) as err:
        dispatcher.wait(pending, timeout=WAIT)
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    dispatcher.close()
    assert new_threads(before) == []


def test_a_session_passed_in_is_left_alone_on_close() -> None:
    """Its connections may serve others: closing the transport does not shut them down."""
    session = new_session()
    with serving(ScriptedHTTP) as url:
        transport = StreamableHTTPClientTransport(url, session=session)
        with MCPClient() as client:
            client.connect(transport, timeout=WAIT)
            assert client.call_tool("echo", {"text": "hi"}, timeout=WAIT).text == "hi"
        assert transport.closed
        assert session.get(url, timeout=WAIT).status_code == 405  # the session still works
    session.close()


def test_abort_connections_leaves_other_adapters_alone_and_survives_pickling() -> None:
    from mcp_sync.runtime.http import ClosableAdapter, abort_connections

    plain = requests.Session()
    abort_connections(plain)  # nothing to do: its adapters cannot abort
    plain.close()
    session = pickle.loads(pickle.dumps(new_session()))
    adapter = session.get_adapter("http://127.0.0.1/")
    assert isinstance(adapter, ClosableAdapter)

    class NotConnected:
        sock = None

    never = NotConnected()
    adapter._note(never)
    abort_connections(session)  # a connection without a socket is skipped
    session.close()
