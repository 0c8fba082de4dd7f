"""One bad HTTP answer fails one call, not the whole client: what a fuzz of the client's HTTP transports found.

A server that is there but answers a POST with what cannot be read (a
connection closed after ``100 Continue``, a body shorter than its
``Content-Length``, a chunked body cut short, a header over ``http.client``'s
64 KiB line limit, a bad status line, a redirect loop) closed the transport:
every later call got ``TRANSPORT_CLOSED``. Now only that call fails, with an
error naming what was wrong, and the client goes on. So does a connection
reset, or closed, before any answer (the process serving it died, a load
balancer dropped it): the error says the connection broke. A server that
cannot be reached (nothing listens, nor at the proxy) still closes the
transport.

Also: a legacy HTTP+SSE transport no client connects gives up on its stream
after ``connect_timeout`` (its reader waited until close()).

Real sockets on 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import struct
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from mcp_sync import MCP_CODES, MCPClient, MCPError, MCPTransportError
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.transports.http.sse import SSEClientTransport
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport
from tests.client.test_hostile_servers import WAIT, Redirecting, serving

BODY = b'{"jsonrpc": "2.0", "id": 1, "result": {}}'
BAD_ANSWERS: dict[str, bytes] = {
    "continue-then-close": b"HTTP/1.1 100 Continue\r\n\r\n",
    "short-body": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n" + BODY[:10],
    "cut-chunked": (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"%x\r\n%s\r\n" % (10, BODY[:10])
    ),
    "long-header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
    "bad-status": b"HTTQ/9 banana\r\n\r\n",
}
"""What the server writes before it closes the connection, by the name a test gives it."""
WHAT_WAS_WRONG = {
    "continue-then-close": "ClosedAfterInterim: the server closed the connection after an interim answer",
    "short-body": "IncompleteRead(10 bytes read, 90 more expected)",
    "cut-chunked": "ProtocolError: Response ended prematurely",
    "long-header": "LineTooLong: got more than 65536 bytes when reading header line",
    "bad-status": "BadStatusLine: HTTQ/9 banana",
    "redirect-loop": "TooManyRedirects: Exceeded 30 redirects.",
}


class BadAnswers(Redirecting):
    """The handshake-era endpoint of ``Redirecting``; a call whose arguments name ``bad`` gets that bad answer.

    A notification whose method is in ``bad_notifications`` gets the bad answer named there.
    """

    bad_notifications: ClassVar[dict[str, str]] = {}

    def _bad(self, how: str) -> None:
        if how == "redirect-loop":
            self._send(307, headers={"Location": "/loop"})
            return
        self.close_connection = True
        self.wfile.write(BAD_ANSWERS.get(how, b""))  # "hang-up": nothing
        self.wfile.flush()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/loop":
            self._bad("redirect-loop")
            return
        message = json.loads(raw)
        how = (message.get("params") or {}).get("arguments", {}).get("bad") or self.bad_notifications.get(
            message["method"] if "id" not in message else ""
        )
        if how:
            self._bad(how)
            return
        # Answered as Redirecting answers, from the body read here.
        wire, self.rfile = self.rfile, io.BytesIO(raw)
        try:
            super().do_POST()
        finally:
            self.rfile = wire


def http_client(base: str) -> MCPClient:
    return MCPClient.http(f"{base}/mcp", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT)


@pytest.mark.parametrize("how", [*BAD_ANSWERS, "redirect-loop"])
def test_a_bad_answer_fails_its_call_and_the_client_goes_on(how: str) -> None:
    with serving(BadAnswers) as base, http_client(base) as client:
        with pytest.raises(MCPError) as err:
            client.call_tool("echo", {"text": "x", "bad": how})
        assert err.value.code == MCP_CODES.INTERNAL_ERROR
        assert f"at {base}/mcp answered tools/call with an answer that could not be read" in err.value.message
        assert WHAT_WAS_WRONG[how] in err.value.message
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_a_bad_answer_to_a_notification_is_logged_and_the_client_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    handler = type("BadAnswers", (BadAnswers,), {"bad_notifications": {"notifications/initialized": "bad-status"}})
    with (
        caplog.at_level(logging.WARNING, logger="mcp_sync.transports.http.streamable"),
        serving(handler) as base,
        http_client(base) as client,
    ):
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    said = [record.getMessage() for record in caplog.records if record.name == "mcp_sync.transports.http.streamable"]
    assert said == [f"the MCP server at {base}/mcp answered a message badly: BadStatusLine: HTTQ/9 banana"]


# ------------------------------------------------------ servers that cannot be reached


@contextlib.contextmanager
def hanging_up(reset: bool) -> Iterator[str]:
    """A server that reads each request and closes its connection with no answer: reset (RST), or closed (FIN)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(WAIT)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # no connection within WAIT: nobody asks any more
            with connection:
                connection.settimeout(WAIT)
                received = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in received or not received.endswith(b"}"):
                        chunk = connection.recv(1 << 16)
                        if not chunk:
                            break
                        received += chunk
                if reset:
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, name="test-hanging-up", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        stop.set()
        # Closing the listener would not wake its accept(): a connection does, and the loop sees the stop.
        with contextlib.suppress(OSError), socket.create_connection(listener.getsockname(), timeout=WAIT):
            pass
        thread.join(WAIT)
        listener.close()


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])  # nothing listens there once it is closed


@contextlib.contextmanager
def unreachable(how: str) -> Iterator[StreamableHTTPClientTransport]:
    """A transport to a server that cannot be reached: nothing listens, or through a proxy where nothing listens."""
    transport = StreamableHTTPClientTransport(f"http://127.0.0.1:{free_port()}/mcp")
    if how == "proxy-refused":
        transport.session.trust_env = False
        transport.session.proxies = {"http": f"http://127.0.0.1:{free_port()}"}
    yield transport


@pytest.mark.parametrize("how", ["refused", "proxy-refused"])
def test_a_server_that_cannot_be_reached_closes_the_transport(how: str) -> None:
    with unreachable(how) as transport:
        dispatcher = JsonRpcDispatcher(transport)
        dispatcher.start()
        try:
            pending = dispatcher.send_request("ping")
            with pytest.raises(MCPTransportError) as err:
                dispatcher.wait(pending, timeout=WAIT)
            assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
            assert f"the MCP server at {transport.url} could not be reached" in str(transport.close_reason)
            assert transport.closed
        finally:
            dispatcher.close()


def test_a_notification_to_a_server_that_cannot_be_reached_closes_the_transport() -> None:
    with unreachable("refused") as transport:
        dispatcher = JsonRpcDispatcher(transport)
        dispatcher.start()
        try:
            with pytest.raises(MCPTransportError, match="could not be reached while sending a message"):
                dispatcher.notify("notifications/test")
            assert transport.closed
        finally:
            dispatcher.close()


BROKE = {"reset": "ConnectionResetError: [Errno 104] Connection reset by peer", "closed": "RemoteDisconnected: "}


@pytest.mark.parametrize("how", ["reset", "closed"])
def test_a_server_that_hangs_up_fails_each_message_not_the_transport(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A connection made, then reset or closed before any answer (the process serving it died, a load balancer
    dropped it): the server is there, the next connection may reach another of its processes. It closed the
    transport, as if nothing listened."""
    with hanging_up(reset=how == "reset") as url:
        transport = StreamableHTTPClientTransport(url)
        dispatcher = JsonRpcDispatcher(transport)
        dispatcher.start()
        try:
            for _ in range(2):
                pending = dispatcher.send_request("ping")
                with pytest.raises(MCPError) as err:
                    dispatcher.wait(pending, timeout=WAIT)
                assert err.value.code == MCP_CODES.INTERNAL_ERROR
                assert f"the connection to the MCP server at {url} broke before it answered ping" in err.value.message
                assert BROKE[how] in err.value.message
            logger = "mcp_sync.transports.http.streamable"
            with caplog.at_level(logging.WARNING, logger=logger):
                dispatcher.notify("notifications/test")
            [said] = [record.getMessage() for record in caplog.records if record.name == logger]
            assert said.startswith(f"the connection to the MCP server at {url} broke under a message: {BROKE[how]}")
            assert not transport.closed
        finally:
            dispatcher.close()


# --------------------------------------------------------------- legacy HTTP+SSE


class LegacyEndpoint(BadAnswers):
    """A legacy HTTP+SSE server: its stream names ``/mcp`` as the endpoint and stays open until the client goes."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: /mcp\n\n")
        self.wfile.flush()
        with contextlib.suppress(OSError):
            self.rfile.read(1)  # until the client shuts the connection down


def test_a_legacy_post_answered_badly_fails_that_message_only(caplog: pytest.LogCaptureFixture) -> None:
    with serving(LegacyEndpoint) as base:
        transport = SSEClientTransport(f"{base}/sse", connect_timeout=WAIT)
        dispatcher = JsonRpcDispatcher(transport)
        dispatcher.start()
        try:
            pending = dispatcher.send_request("tools/call", {"name": "echo", "arguments": {"bad": "bad-status"}})
            with pytest.raises(MCPError) as err:
                dispatcher.wait(pending, timeout=WAIT)
            assert err.value.code == MCP_CODES.INTERNAL_ERROR
            assert "answered the POST of tools/call with an answer that could not be read" in err.value.message
            assert "BadStatusLine: HTTQ/9 banana" in err.value.message
            logger = "mcp_sync.transports.http.sse"
            with caplog.at_level(logging.WARNING, logger=logger):
                dispatcher.notify("notifications/test", {"arguments": {"bad": "short-body"}})
            assert [record.getMessage() for record in caplog.records if record.name == logger] == [
                f"the server at {base}/mcp answered a message badly: IncompleteRead(10 bytes read, 90 more expected)"
            ]
            assert not transport.closed
        finally:
            dispatcher.close()


def test_a_legacy_post_whose_connection_breaks_fails_that_message_only(caplog: pytest.LogCaptureFixture) -> None:
    with serving(LegacyEndpoint) as base:
        transport = SSEClientTransport(f"{base}/sse", connect_timeout=WAIT)
        dispatcher = JsonRpcDispatcher(transport)
        dispatcher.start()
        try:
            pending = dispatcher.send_request("tools/call", {"name": "echo", "arguments": {"bad": "hang-up"}})
            with pytest.raises(MCPError) as err:
                dispatcher.wait(pending, timeout=WAIT)
            assert err.value.code == MCP_CODES.INTERNAL_ERROR
            assert err.value.message.startswith(
                f"the connection to the server at {base}/mcp broke under the POST of tools/call: RemoteDisconnected: "
            )
            logger = "mcp_sync.transports.http.sse"
            with caplog.at_level(logging.WARNING, logger=logger):
                dispatcher.notify("notifications/test", {"arguments": {"bad": "hang-up"}})
            [said] = [record.getMessage() for record in caplog.records if record.name == logger]
            assert said.startswith(f"the connection to the server at {base}/mcp broke under a message: RemoteDisc")
            assert not transport.closed
        finally:
            dispatcher.close()


def test_a_legacy_stream_no_client_connects_ends_after_the_connect_timeout() -> None:
    with serving(LegacyEndpoint) as base:
        transport = SSEClientTransport(f"{base}/sse", connect_timeout=2.0)
        try:
            assert transport.wait_closed(WAIT)
            reason = transport.close_reason
            assert isinstance(reason, MCPTransportError) and reason.code == MCP_CODES.TRANSPORT_ERROR
            assert f"no client connected the transport to the server at {base}/sse within 2 s" in reason.message
        finally:
            transport.close()
