"""HTTP framing an outside fuzzer sent the server: chunked bodies that would be read for ever, lowercase methods.

Trailer fields and chunk extensions are not body, so ``max_body_bytes`` did not bound them: a client
could keep a connection's thread reading at full speed (an outside fuzzer
sent 600 000 trailer lines in three seconds, with no answer). Now trailer
fields are bounded as header lines are (100), and chunk extensions to 64 KiB
in all; beyond, the body is malformed: 400, and the connection is closed.

Method names are case-sensitive (RFC 9110): ``post`` was served as ``POST``;
it is a method the endpoint does not allow (405).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from servers.wire_server import build_server

from mcp_sync.server import RunningHTTPServer, start_http

TIMEOUT = 10.0
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}},
    }
).encode()


@pytest.fixture
def running() -> Iterator[RunningHTTPServer]:
    with start_http(build_server()) as running:
        yield running


def post_chunked(running: RunningHTTPServer, chunks: bytes) -> tuple[int, bytes]:
    """POST a chunked body, framed as given; the status, and everything the server sent until it closed."""
    host, port = running.url.split("/")[2].split(":")
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(head + chunks)
        received = b""
        while data := sock.recv(65536):
            received += data
    return int(received.split(b" ", 2)[1]), received


def one_chunk(trailer_lines: int) -> bytes:
    return b"%x\r\n%s\r\n0\r\n%s\r\n" % (len(INITIALIZE), INITIALIZE, b"X-Trailer: 1\r\n" * trailer_lines)


def byte_chunks(extension: bytes) -> bytes:
    return b"".join(b"1;%s\r\n%c\r\n" % (extension, byte) for byte in INITIALIZE) + b"0\r\n\r\n"


def test_a_hundred_trailer_fields_are_read_past(running: RunningHTTPServer) -> None:
    status, received = post_chunked(running, one_chunk(100))
    assert status == 200 and b'"serverInfo"' in received


def test_more_trailer_fields_than_header_lines_are_a_bad_request(running: RunningHTTPServer) -> None:
    status, received = post_chunked(running, one_chunk(101))
    assert status == 400 and b"Connection: close" in received
    assert b"too many trailer fields" in received


def test_chunk_extensions_are_read_past_up_to_64_kib_in_all(running: RunningHTTPServer) -> None:
    per_chunk = 65536 // len(INITIALIZE)
    status, received = post_chunked(running, byte_chunks(b"e" * (per_chunk - 1)))  # the ";" counts too
    assert status == 200 and b'"serverInfo"' in received
    status, received = post_chunked(running, byte_chunks(b"e" * per_chunk))
    assert status == 400 and b"too many chunk extensions" in received


def test_method_names_are_case_sensitive(running: RunningHTTPServer) -> None:
    host, port = running.url.split("/")[2].split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(
            b"post /mcp HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (host.encode(), port.encode(), len(INITIALIZE), INITIALIZE)
        )
        received = b""
        while data := sock.recv(65536):
            received += data
    assert received.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, POST, DELETE\r\n" in received
    assert b"Method not allowed: post" in received
