"""Bounds on what a peer can hold: a client trickling its request does not keep a connection (and its thread)
for ever, and handlers that never return on many connections do not multiply how long ``MCPServer.stop`` takes.

Each test would hang (or hold a thread) without the bound it checks; the generous ``WAIT`` only turns such a
hang into a failure.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterable

from mcp_sync import MCPClient, MCPServer
from mcp_sync.errors import MCPError
from mcp_sync.server.http.wsgi import WSGIServer
from tests.helpers import connect_pair

WAIT = 10.0
"""Far longer than any bound checked here: reaching it means the bound does not hold."""


def _ok(environ: dict[str, object], start_response: Callable[..., object]) -> Iterable[bytes]:
    body = environ["wsgi.input"].read()  # type: ignore[attr-defined]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"read %d" % len(body)]


def _trickle(sock: socket.socket, pieces: Iterable[bytes]) -> bytes:
    """Send one piece whenever the server has been quiet for a moment; what it answered once it closed.

    Each send comes well within the server's idle timeout, so only a bound on the whole request ends this.
    """
    received = b""
    deadline = time.monotonic() + WAIT
    pieces = iter(pieces)
    while time.monotonic() < deadline:
        if select.select([sock], [], [], 0.05)[0]:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:  # closed with our last piece unread: as closed, for this purpose
                return received
            if not data:
                return received
            received += data
            continue
        try:
            sock.sendall(next(pieces))
        except OSError:  # the server shut the connection: read what it said
            continue
    raise AssertionError(f"the server still holds the connection after {WAIT} s (received {received!r})")


def _endless(first: bytes, piece: bytes) -> Iterable[bytes]:
    yield first
    while True:
        yield piece


def test_a_request_head_trickled_byte_by_byte_is_cut_off() -> None:
    """A slow-loris client sends a header byte at a time, each within the idle timeout: the head as a whole
    must still arrive within it, or the connection (and its thread) is let go."""
    with WSGIServer(_ok, idle_timeout=0.5) as server, socket.create_connection((server.host, server.port), WAIT) as c:
        assert _trickle(c, _endless(b"GET / HTTP/1.1\r\nHost: t\r\n", b"X")) == b""
        ended = time.monotonic() + WAIT
        while server._connections and time.monotonic() < ended:
            time.sleep(0.01)
        assert not server._connections


def test_blank_lines_before_a_request_do_not_keep_a_connection_open() -> None:
    with WSGIServer(_ok, idle_timeout=0.5) as server, socket.create_connection((server.host, server.port), WAIT) as c:
        assert _trickle(c, _endless(b"", b"\r\n")) == b""


def test_a_trickled_request_body_is_cut_off_with_a_client_error() -> None:
    with WSGIServer(_ok, idle_timeout=0.5) as server, socket.create_connection((server.host, server.port), WAIT) as c:
        answer = _trickle(c, _endless(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n", b"x"))
        assert answer.startswith(b"HTTP/1.1 400 ") and b"bytes before the end of the request body" in answer


def test_a_prompt_request_on_a_kept_alive_connection_is_served_after_a_slow_one_ended() -> None:
    """The deadline is per request: a keep-alive connection serves request after request past idle_timeout."""
    with WSGIServer(_ok, idle_timeout=0.5) as server, socket.create_connection((server.host, server.port), WAIT) as c:
        started = time.monotonic()
        served = 0
        while time.monotonic() - started < 1.2:  # more than twice the idle timeout in all
            c.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
            answer = b""
            while not answer.endswith(b"read 2"):
                data = c.recv(65536)
                assert data, "the connection was closed"
                answer += data
            served += 1
        assert served > 1


def test_stop_waits_for_stuck_handlers_once_in_all_not_once_per_connection() -> None:
    """``MCPServer.stop(timeout)`` cancels every connection's handlers at once, then waits ``timeout`` in all:
    handlers that ignore their cancellation on many connections do not multiply the wait."""
    release = threading.Event()
    entered = threading.Semaphore(0)
    server = MCPServer("stuck")

    @server.tool()
    def stuck() -> str:
        """Ignores its cancellation until the test lets it go."""
        entered.release()
        release.wait(WAIT)
        return "late"

    failures: list[BaseException] = []

    def call(client: MCPClient) -> None:
        try:
            client.call_tool("stuck", {}, timeout=WAIT)
        except MCPError as error:
            failures.append(error)

    clients = [connect_pair(server) for _ in range(25)]
    callers = [threading.Thread(target=call, args=(client,)) for client in clients]
    try:
        for caller in callers:
            caller.start()
        for _ in clients:
            assert entered.acquire(timeout=WAIT)
        started = time.monotonic()
        server.stop(timeout=0.5)
        assert time.monotonic() - started < WAIT  # 25 waits of 0.5 s one after the other would pass it
        for caller in callers:
            caller.join(WAIT)
        assert len(failures) == len(clients)  # each call failed when its connection closed
    finally:
        release.set()
        for client in clients:
            client.close()
        server.stop()
