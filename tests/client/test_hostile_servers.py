"""The client against hostile servers: what a seeded fuzzer of server answers found, each kept as a regression.

- A server that hands out a new cursor with every page: listing all pages
  ends within the call's timeout, with a typed ``TIMEOUT``, instead of
  following cursors for ever (a repeated cursor was already refused).
- A server that redirects a POST: the redirect is followed (it used to fail
  inside ``requests`` with an ``AttributeError``, the fast request path
  having left the cookie jar unset).
- A stdio server whose answer cannot be read (nested too deep, ``NaN``, a
  line over the limit): the call it names fails at once. It waited for its
  whole timeout, while the server got an error for a request it never sent;
  an unreadable request that shares the call's id still gets that error.
- A server that names a session id that is not visible ASCII (a line break
  that folds into a header of its own, bytes past ASCII, control bytes): the
  connection is refused with a typed error that does not quote the id (it
  was sent back in every request's headers as it came).
- A server whose JSON body never ends: the call fails once the body is over
  ``MAX_BODY_BYTES``, and the connection goes on (the client read it whole:
  gigabytes within the call's timeout).
- A server whose SSE event never ends (one endless line, or endless short
  ``data:`` lines): the stream breaks once the event is over
  ``MAX_BODY_BYTES``, or has too many lines for its size. ``sseclient``
  alone grew an event one line at a time, in time quadratic in its size:
  the reading thread spun on, past ``close()``. Events are now framed by
  :class:`~mcp_sync.transports.http._common.EventStream` before ``sseclient``
  parses them. The call fails; the client goes on (it used to close).
- A server that sends bytes that are not UTF-8 on an SSE stream: they are
  read as U+FFFD, as the SSE standard says (``sseclient`` raised on them,
  which ended the stream and lost the answer after them).
- A legacy HTTP+SSE server whose ``endpoint`` cannot be parsed (a bracketed
  host that is no IPv6 address, a port out of range): the error says so
  (it said the server "could not be reached").
- A server that sends the same list-changed notification thousands of times
  in a row: the client refreshes the list once or twice, not once for each
  (it asked for the list thousands of times).
- A server whose SSE ``retry:`` advice is huge, or a line of thousands of
  digits: the wait is capped at ``MAX_RECONNECT_DELAY`` (a huge wait
  overflowed the timer and killed the GET stream's thread; a digit line
  beyond ``int``'s limit raised ``ValueError``).

Real processes for stdio, real sockets on 127.0.0.1 for HTTP; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import requests

from mcp_sync import MCP_CODES, MCPClient, MCPError
from mcp_sync.transports.http import _common as common_module
from mcp_sync.transports.http import cursor as cursor_module
from mcp_sync.transports.http._common import MAX_BODY_BYTES
from mcp_sync.transports.stdio import ProcessTransport
from mcp_sync.types import TextResourceContents

HERE = Path(__file__).parent.parent
WAIT = 10.0
"""The bound of every wait for something that should happen at once."""


# ------------------------------------------------------------ endless pages


def test_listing_a_server_that_hands_out_new_cursors_for_ever_ends_within_the_timeout() -> None:
    said: list[str] = []
    command = [sys.executable, str(HERE / "servers" / "endless_pages.py")]
    with MCPClient.stdio(
        command, era="handshake", stderr=lambda line: said.append(line.strip()), connect_timeout=WAIT
    ) as client:
        with pytest.raises(MCPError) as err:
            client.refresh_tools(timeout=0.5)
        # Raised before the next page is asked for, or by the page that was being read when the time ran out.
        assert err.value.code == MCP_CODES.TIMEOUT and "tools/list" in err.value.message
        # It did follow the cursors, each one new, until its time was up (stderr is read on a thread of its own).
        deadline = time.monotonic() + WAIT
        while "listed page-2" not in said and time.monotonic() < deadline:
            time.sleep(0.01)
        assert said[:3] == ["listed None", "listed page-1", "listed page-2"]
        with pytest.raises(MCPError) as err:
            client.refresh_tools(timeout=0.0)  # no time at all: nothing is asked
        assert err.value.code == MCP_CODES.TIMEOUT and "(0 cursors followed)" in err.value.message


def test_listing_with_the_clients_default_timeout_is_bounded_by_it_too() -> None:
    command = [sys.executable, str(HERE / "servers" / "endless_pages.py")]
    with MCPClient.stdio(
        command, era="handshake", timeout=0.5, connect_timeout=WAIT, stderr=lambda line: None
    ) as client:
        with pytest.raises(MCPError) as err:
            client.refresh_prompts()
        assert err.value.code == MCP_CODES.TIMEOUT


# ---------------------------------------------------------------- redirects


LOG = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}'
SSE_BODIES: dict[str, Callable[[bytes], bytes]] = {
    # Every line ending there is; a comment; an event without data (dropped); a JSON text over two data lines;
    # blank lines in a row; the answer with no blank line after it, nor a line end, as the stream ends.
    "mixed": lambda answer: (
        b": a comment\r\nid: 1\r\nevent: message\r\ndata: " + LOG % b"crlf" + b"\r\n\r\n"
        b"retry: 5\rid: 2\r\r\n\n"
        b'data: {"jsonrpc": "2.0",\ndata: "method": "notifications/message",\n'
        b'data: "params": {"level": "info", "data": "lf"}}\n\n'
        b"unknown: field\nevent:\ndata: " + answer
    ),
    # The answer, its line ended, and the stream ends without a blank line.
    "unended": lambda answer: b"data: " + LOG % b"first" + b"\n\ndata: " + answer + b"\n",
}


class Redirecting(http.server.BaseHTTPRequestHandler):
    """A handshake-era MCP endpoint at ``/mcp``; any other path is sent there with the status in ``status``."""

    protocol_version = "HTTP/1.1"
    status = 307
    session_id: str | None = None
    """The ``Mcp-Session-Id`` its answer to ``initialize`` names (none if ``None``)."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(405)

    def do_DELETE(self) -> None:
        self._send(405)

    def _send_for_ever(self, status: int, start: bytes) -> None:
        """A JSON body that says it is 100 GB long and never ends: ``start``, then spaces until the client lets go."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(100 * 1024**3))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(start)
            while True:
                self.wfile.write(b" " * (1 << 20))

    def _send_sse_for_ever(self, piece: bytes) -> None:
        """An SSE stream of one event that never ends: ``piece`` again and again until the client lets go."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        with contextlib.suppress(OSError):
            while True:
                self.wfile.write(piece * 4096)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/mcp":
            self._send(self.status, headers={"Location": "/mcp"})
            return
        if "id" not in message:
            self._send(202)
            return
        method, params = message["method"], message.get("params") or {}
        result: dict[str, Any] = {}
        if method == "initialize":
            info = {"name": "redirected", "version": "1.0"}
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": params["arguments"]["text"]}]}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        if "endless" in params.get("arguments", {}):
            self._send_for_ever(params["arguments"]["endless"], body[:-2])
            return
        if "endless_sse" in params.get("arguments", {}):
            self._send_sse_for_ever(params["arguments"]["endless_sse"].encode())
            return
        if params.get("arguments", {}).get("bad_bytes"):
            # Bytes that are not UTF-8 in an event's id, in a notification's text, and cutting the last character.
            log = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a\xff"}}'
            events = b"id: \xff\xfe1\ndata: " + log + b"\n\nid: 2\ndata: " + body + b"\n\n:\xe2\x82"
            self._send(200, events, {"Content-Type": "text/event-stream"})
            return
        if "sse" in params.get("arguments", {}):
            self._send(200, SSE_BODIES[params["arguments"]["sse"]](body), {"Content-Type": "text/event-stream"})
            return
        named = {"Mcp-Session-Id": self.session_id} if method == "initialize" and self.session_id else {}
        self._send(200, body, named)


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="test-hostile-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


def logging_client(url: str, said: list[Any]) -> MCPClient:
    """A handshake-era Streamable HTTP client of ``url`` that puts each log message's data in ``said``."""
    return MCPClient.http(
        url,
        transport="streamable",
        era="handshake",
        connect_timeout=WAIT,
        timeout=WAIT,
        log_handler=lambda params: said.append(params.data),
    )


@pytest.mark.parametrize("status", [307, 308])
def test_a_post_the_server_redirects_is_followed(status: int) -> None:
    handler = type("Redirecting", (Redirecting,), {"status": status})
    with (
        serving(handler) as base,
        MCPClient.http(
            f"{base}/old", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT
        ) as client,
    ):
        assert client.server_info.name == "redirected"
        assert client.call_tool("echo", {"text": "moved"}).text == "moved"


# -------------------------------------------------------------- session ids


@pytest.mark.parametrize("session_id", ["s-1\r\n X-Injected: yes", "s\xff\xe9", "s\x01", "s 1"])
def test_a_session_id_that_is_not_visible_ascii_is_refused(session_id: str) -> None:
    handler = type("Redirecting", (Redirecting,), {"session_id": session_id})
    with serving(handler) as base, pytest.raises(MCPError) as err:
        MCPClient.http(f"{base}/mcp", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT)
    assert err.value.code == MCP_CODES.PROTOCOL_INVALID
    assert "named a session id that is not visible ASCII" in err.value.message
    assert session_id not in err.value.message


def test_a_session_id_of_visible_ascii_is_accepted() -> None:
    handler = type("Redirecting", (Redirecting,), {"session_id": "s-1~!"})
    with (
        serving(handler) as base,
        MCPClient.http(
            f"{base}/mcp", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT
        ) as client,
    ):
        assert client.call_tool("echo", {"text": "in session"}).text == "in session"


# ------------------------------------------------------------ endless bodies


def test_a_json_body_that_never_ends_fails_the_call_at_the_size_limit() -> None:
    with (
        serving(Redirecting) as base,
        MCPClient.http(
            f"{base}/mcp", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT
        ) as client,
    ):
        with pytest.raises(MCPError) as err:
            client.call_tool("echo", {"text": "x", "endless": 200})
        assert err.value.code == MCP_CODES.INTERNAL_ERROR
        assert f"answered tools/call with a body over {MAX_BODY_BYTES} bytes" in err.value.message
        # An HTTP error whose body never ends is reported by its status.
        with pytest.raises(MCPError) as err:
            client.call_tool("echo", {"text": "x", "endless": 500})
        assert "answered tools/call with HTTP 500" in err.value.message
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


# ---------------------------------------------------------------- SSE events


def test_sse_events_are_read_with_every_line_ending_and_at_the_end_of_the_stream() -> None:
    said: list[Any] = []
    with (
        serving(Redirecting) as base,
        logging_client(f"{base}/mcp", said) as client,
    ):
        assert client.call_tool("echo", {"text": "mixed", "sse": "mixed"}).text == "mixed"
        assert client.call_tool("echo", {"text": "unended", "sse": "unended"}).text == "unended"
        assert said == ["crlf", "lf", "first"]


@pytest.mark.parametrize(
    ("piece", "refusal"),
    [("data: a\n", "lines in"), ("x", f"the server sent an SSE event over {1 << 20} bytes")],
    ids=["short-lines", "one-line"],
)
def test_an_sse_event_that_never_ends_costs_bounded_time_and_memory(
    piece: str, refusal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A limit of 1 MiB, not 64: reading millions of short lines takes seconds, and the test would take them.
    monkeypatch.setattr(common_module, "MAX_BODY_BYTES", 1 << 20)
    with (
        serving(Redirecting) as base,
        MCPClient.http(
            f"{base}/mcp", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT
        ) as client,
    ):
        with pytest.raises(MCPError) as err:
            client.call_tool("echo", {"text": "x", "endless_sse": piece})
        # The client refused the event: that call fails, and the client goes on (it closed the transport).
        assert err.value.code == MCP_CODES.INTERNAL_ERROR
        assert "the stream answering tools/call" in err.value.message and refusal in err.value.message
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    # Closed, the client has no thread left behind, reading (the suite's fixture checks it).


# ----------------------------------------------------------- bytes not UTF-8


def test_bytes_that_are_not_utf8_in_an_sse_stream_do_not_end_it() -> None:
    said: list[Any] = []
    with (
        serving(Redirecting) as base,
        logging_client(f"{base}/mcp", said) as client,
    ):
        assert client.call_tool("echo", {"text": "after", "bad_bytes": True}).text == "after"
        assert said == ["a\ufffd"]


class CutCharacter(Redirecting):
    """Its first GET stream carries a log message with a byte that is not UTF-8, then ends inside a character."""

    gets: ClassVar[list[str]] = []
    reconnected = threading.Event()

    def do_GET(self) -> None:
        self.gets.append(self.headers.get("Last-Event-ID", ""))
        if len(self.gets) > 1:
            self._send(405)
            self.reconnected.set()
            return
        log = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"b\xff"}}'
        self._send(200, b"retry: 10\nid: g1\ndata: " + log + b"\n\n:\xe2\x82", {"Content-Type": "text/event-stream"})


def test_a_stream_that_ends_inside_a_character_is_read_to_its_end() -> None:
    said: list[Any] = []
    with (
        serving(CutCharacter) as base,
        logging_client(f"{base}/mcp", said) as client,
    ):
        # The client reconnects only once it has read the stream to its end.
        assert CutCharacter.reconnected.wait(WAIT)
        assert CutCharacter.gets == ["", "g1"]
        assert said == ["b\ufffd"]
        assert client.call_tool("echo", {"text": "fine"}).text == "fine"


# ------------------------------------------------------------- retry advice


class Event:
    def __init__(self, retry: str) -> None:
        self.id, self.retry, self.event, self.data = None, retry, "message", ""


@pytest.mark.parametrize("retry", ["99999999999999999999", "9" * 5000, "30001", "1000000000"])
def test_retry_advice_beyond_the_ceiling_waits_the_ceiling(retry: str) -> None:
    cursor = cursor_module.StreamCursor()
    cursor.saw(Event(retry))
    assert cursor.retry == cursor_module.MAX_RECONNECT_DELAY
    assert cursor.delay(0, 1.0) == cursor_module.MAX_RECONNECT_DELAY


def test_retry_advice_under_the_ceiling_is_followed() -> None:
    cursor = cursor_module.StreamCursor()
    cursor.saw(Event("29999"))
    assert cursor.retry == 29.999


class HugeRetry(Redirecting):
    """Its GET stream advises a retry of about three billion years, then ends."""

    served = threading.Event()

    def do_GET(self) -> None:
        body = b'retry: 99999999999999999999\nid: g1\ndata: {"jsonrpc": "2.0", "method": "notifications/x"}\n\n'
        self._send(200, body, {"Content-Type": "text/event-stream"})
        self.served.set()


def test_a_get_stream_advising_a_huge_retry_waits_for_close(monkeypatch: pytest.MonkeyPatch) -> None:
    crashed: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    with (
        serving(HugeRetry) as base,
        MCPClient.http(
            f"{base}/mcp", transport="streamable", era="handshake", connect_timeout=WAIT, timeout=WAIT
        ) as client,
    ):
        assert HugeRetry.served.wait(WAIT)
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    assert crashed == []


# ----------------------------------------------------- legacy SSE endpoints


class BadEndpoint(http.server.BaseHTTPRequestHandler):
    """A legacy HTTP+SSE server whose ``endpoint`` event names the URL in ``endpoint``, which cannot be parsed."""

    protocol_version = "HTTP/1.1"
    endpoint = b""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: " + self.endpoint + b"\n\n")
        self.wfile.flush()


@pytest.mark.parametrize("endpoint", [b"http://[not-ipv6/messages", b"http://127.0.0.1:99999/messages"])
def test_a_legacy_endpoint_that_cannot_be_parsed_is_named_as_invalid(endpoint: bytes) -> None:
    handler = type("BadEndpoint", (BadEndpoint,), {"endpoint": endpoint})
    with serving(handler) as base, pytest.raises(MCPError) as err:
        MCPClient.http(f"{base}/sse", transport="sse", connect_timeout=WAIT, timeout=WAIT)
    assert err.value.code == MCP_CODES.TRANSPORT_ERROR
    assert f"named an invalid endpoint {endpoint.decode()!r}" in err.value.message


# ----------------------------------------------------- notification floods


def test_a_flood_of_list_changes_costs_one_refresh_not_one_each() -> None:
    command = [sys.executable, str(HERE / "servers" / "notice_flood.py")]
    with MCPClient.stdio(command, era="handshake", connect_timeout=WAIT, timeout=WAIT) as client:
        client.subscribe_resource("flood://count")
        assert client.call_tool("flood", {"times": 2000}).text == "flooded"
        # The re-read of flood://count is queued behind the refreshes the flood started, on the same
        # single thread: when it has come, they have all run, and it says how many listings they asked for.
        deadline = time.monotonic() + WAIT
        while (contents := client.subscribed_contents("flood://count")) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert contents is not None
        counted = contents.contents[0]
        assert isinstance(counted, TextResourceContents)
        listings = int(counted.text)
        # One at connect, one started by the first change, one queued for all the others.
        assert 1 < listings <= 3


def test_an_event_stream_gives_each_field_and_closes_its_response() -> None:
    with serving(HugeRetry) as base, requests.get(f"{base}/mcp", stream=True, timeout=WAIT) as response:
        stream = common_module.default_sse_client(response)
        event = next(iter(stream.events()))
        assert (event.id, event.event, event.retry) == ("g1", "message", "99999999999999999999")
        assert json.loads(event.data) == {"jsonrpc": "2.0", "method": "notifications/x"}
        stream.close()
        assert response.raw.closed


# ------------------------------------------------------ unreadable answers


@pytest.fixture
def garbled() -> Iterator[MCPClient]:
    command = [sys.executable, str(HERE / "servers" / "garbled_answers.py")]
    transport = ProcessTransport(command, max_line_bytes=4096, stderr=lambda line: None)
    client = MCPClient(era="handshake", timeout=WAIT * 3)
    try:
        client.connect(transport, timeout=WAIT)
        yield client
    finally:
        client.close()


@pytest.mark.parametrize(
    ("how", "why"),
    [("deep", "recursion limit exceeded"), ("nan", "Parse error"), ("long", "larger than the limit of 4096 bytes")],
)
def test_an_unreadable_answer_fails_its_call_at_once(garbled: MCPClient, how: str, why: str) -> None:
    with pytest.raises(MCPError) as err:
        garbled.call_tool("x", {"how": how})
    assert err.value.code == MCP_CODES.PROTOCOL_INVALID
    assert "the peer answered tools/call with an invalid response" in err.value.message and why in err.value.message
    garbled.ping(timeout=WAIT)


def test_an_unreadable_request_that_shares_a_calls_id_is_refused_not_taken_for_its_answer(garbled: MCPClient) -> None:
    assert garbled.call_tool("x", {"how": "request"}).text == "-32700"
