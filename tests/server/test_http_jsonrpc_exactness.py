"""Seed 003: a JSON-RPC 2.0-exact handler behind ``POST /mcp``.

The seed's scenarios (initialize, request validation, unknown methods,
failing handlers, integration over HTTP) as Python tests against the
Streamable HTTP endpoint, with the HTTP status and content type of every
case. Where the seed and the specifications disagree, the specifications
win, and the test says so:

- The seed's ``initialize`` has ``params: {}``; MCP requires
  ``protocolVersion``, ``capabilities`` and ``clientInfo``, so that request
  gets ``-32602`` (invalid params) and a complete one gets the result.
- The seed expects HTTP 200 for ``{"invalid": "request"}``. A body that is
  not a JSON-RPC message is input the server "cannot accept", for which the
  transport section of the MCP spec asks for an HTTP error status (400); the
  body still carries the JSON-RPC error (``-32600``, ``id: null``). A valid
  request whose processing fails (unknown method, bad params, a crashing
  handler) is answered normally: HTTP 200 with the JSON-RPC error.
- The seed answers invalid requests with ``id: request.id || 0``; JSON-RPC
  2.0 says ``null`` when the id cannot be read, and the id itself (0
  included) when it can.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from schema_util import validate_definition

from mcp_sync.server import RunningHTTPServer, StreamableHTTPApp, start_http
from mcp_sync.server.core import MCPServer
from mcp_sync.server.http.wsgi import RequestBodyError, WSGIServer

REVISION = "2025-11-25"
TIMEOUT = 10.0
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE_PARAMS = {
    "protocolVersion": REVISION,
    "capabilities": {},
    "clientInfo": {"name": "seed-003", "version": "1.0.0"},
}


def build_server() -> MCPServer:
    server = MCPServer("mcp-todoist", "1.0.0")
    server.register_tool("echo", lambda args, ctx: str(args.get("text", "")), description="Echo the text")

    def crash(uri: str, ctx: Any) -> str:
        raise RuntimeError("the database is on fire")

    server.register_resource("todo://crash", crash, name="crash")
    return server


@pytest.fixture
def running() -> Iterator[RunningHTTPServer]:
    with start_http(build_server()) as running:
        yield running


@pytest.fixture
def url(running: RunningHTTPServer) -> str:
    return running.url


@pytest.fixture
def session(url: str) -> dict[str, str]:
    """The headers of an initialized session."""
    answer = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS})
    headers = {**HEADERS, "Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": REVISION}
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    return headers


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(url, data=data, headers=headers or HEADERS, timeout=TIMEOUT)


def assert_json_error(response: requests.Response, status: int, code: int, request_id: Any) -> dict[str, Any]:
    """``response`` is HTTP ``status`` with exactly one JSON-RPC error response; returns its error."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "error"}
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == request_id and type(body["id"]) is type(request_id)
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if request_id is not None:  # the MCP schema has no null id: that case is JSON-RPC's own
        validate_definition(REVISION, "JSONRPCErrorResponse", body)
    error: dict[str, Any] = body["error"]
    return error


# ------------------------------------------------------------ initialize


def test_initialize_over_http_returns_version_capabilities_and_server_info(url: str) -> None:
    response = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "result"}
    assert body["jsonrpc"] == "2.0" and body["id"] == 1
    result = body["result"]
    assert result["protocolVersion"] == REVISION
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts", "logging"}
    assert result["serverInfo"] == {"name": "mcp-todoist", "version": "1.0.0"}
    validate_definition(REVISION, "InitializeResult", result)
    assert response.headers["Mcp-Session-Id"]


def test_initialize_with_the_seeds_empty_params_is_invalid_params(url: str) -> None:
    response = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    error = assert_json_error(response, 200, -32602, 1)
    assert "protocolVersion" in error["message"] and "clientInfo" in error["message"]
    assert "Mcp-Session-Id" not in response.headers


def test_an_older_client_gets_its_own_revision(url: str) -> None:
    params = {**INITIALIZE_PARAMS, "protocolVersion": "2024-11-05"}
    response = post(url, {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
    assert response.json()["result"]["protocolVersion"] == "2024-11-05"
    assert response.json()["id"] == "init"


# ------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        ({}, None),
        ({"invalid": "request"}, None),
        ({"jsonrpc": "1.0"}, None),
        ({"jsonrpc": "1.0", "id": 3, "method": "ping"}, 3),
        ({"id": 4, "method": "ping"}, 4),
        ({"jsonrpc": "2.0", "id": 5}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": 42}, 6),
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1, 2]}, 7),
        ({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": "x"}, 8),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": 2.0, "id": 9, "method": "ping"}, 9),
        ({"jsonrpc": "2.0", "id": 0, "method": "ping", "params": [0]}, 0),
        ([], None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),
        ("ping", None),
        (42, None),
        (None, None),
    ],
)
def test_invalid_envelopes_are_invalid_request_with_the_id_when_readable(
    url: str, session: dict[str, str], body: Any, request_id: Any
) -> None:
    # In a session or not, the envelope is checked first: the same answer.
    for headers in (HEADERS, session):
        assert_json_error(post(url, body, headers), 400, -32600, request_id)


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": 5},
        {"jsonrpc": "2.0", "method": "notifications/x", "params": [1]},
        {"jsonrpc": "1.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "result": "not an object"},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "both"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "bad code"}},
    ],
)
def test_broken_notifications_and_responses_are_refused_with_400(url: str, session: dict[str, str], body: Any) -> None:
    """Nothing may answer a notification or a response: the HTTP status says it was refused."""
    assert_json_error(post(url, body, session), 400, -32600, None)


def test_a_valid_envelope_is_processed(url: str, session: dict[str, str]) -> None:
    response = post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session)
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    # The seed's own "valid" request names an unknown method: valid envelope, -32601.
    assert_json_error(post(url, {"jsonrpc": "2.0", "id": 1, "method": "test"}, session), 200, -32601, 1)


def test_invalid_params_of_a_valid_request_are_minus_32602(url: str, session: dict[str, str]) -> None:
    response = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"arguments": {}}}, session)
    error = assert_json_error(response, 200, -32602, 2)
    assert "name" in error["message"]


# ------------------------------------------------------------ errors


def test_unknown_method_is_method_not_found(url: str, session: dict[str, str]) -> None:
    response = post(url, {"jsonrpc": "2.0", "id": 1, "method": "unknown_method"}, session)
    error = assert_json_error(response, 200, -32601, 1)
    assert "unknown_method" in error["message"]


def test_a_crashing_handler_is_internal_error_without_a_traceback(url: str, session: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": "r1", "method": "resources/read", "params": {"uri": "todo://crash"}}
    response = post(url, body, session)
    error = assert_json_error(response, 200, -32603, "r1")
    assert "Traceback" not in response.text and ".py" not in response.text
    assert "data" not in error


@pytest.mark.parametrize(
    "raw",
    [b"{bad", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"NaN", b'{"id": Infinity}', b"", b"\xff\xfe", b"[1,]"],
)
def test_unparseable_bodies_are_parse_errors_with_a_null_id(url: str, session: dict[str, str], raw: bytes) -> None:
    for headers in (HEADERS, session):
        assert_json_error(post(url, raw, headers), 400, -32700, None)


# ------------------------------------------------------------ ids


@pytest.mark.parametrize(
    ("sent", "answered"),
    [
        (0, 0),
        (-7, -7),
        (2**53 + 1, 2**53 + 1),
        (1.0, 1.0),  # an integral float comes back as sent (issue 12)
        ("", ""),
        ("x" * 10_000, "x" * 10_000),
        ("ünïcødé ✓", "ünïcødé ✓"),
        ("1", "1"),
    ],
)
def test_odd_but_readable_ids_are_answered(url: str, session: dict[str, str], sent: Any, answered: Any) -> None:
    response = post(url, {"jsonrpc": "2.0", "id": sent, "method": "ping"}, session)
    assert response.status_code == 200  # never 202-and-dropped
    assert response.json() == {"jsonrpc": "2.0", "id": answered, "result": {}}
    assert type(response.json()["id"]) is type(answered)


def test_two_in_flight_requests_with_the_same_id_are_both_answered(url: str, session: dict[str, str]) -> None:
    answers: list[requests.Response] = []
    lock = threading.Lock()
    start = threading.Barrier(2, timeout=TIMEOUT)

    def call(text: str) -> None:
        start.wait()
        body = {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        }
        response = post(url, body, session)
        with lock:
            answers.append(response)

    threads = [threading.Thread(target=call, args=(text,)) for text in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert [a.status_code for a in answers] == [200, 200]
    assert [a.json()["id"] for a in answers] == [99, 99]
    assert sorted(a.json()["result"]["content"][0]["text"] for a in answers) == ["a", "b"]


# ------------------------------------------------------------ statuses


def test_notifications_and_responses_get_202_with_no_body(url: str, session: dict[str, str]) -> None:
    for body in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/unknown"},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}},
    ):
        response = post(url, body, session)
        assert (response.status_code, response.content) == (202, b"")


def test_a_tool_failure_is_a_result_not_a_protocol_error(url: str, session: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
    error = assert_json_error(post(url, body, session), 200, -32602, 1)
    assert "nope" in error["message"]
    ok = post(url, {**body, "params": {"name": "echo", "arguments": {"text": "hi"}}}, session)
    assert ok.json()["result"]["content"] == [{"type": "text", "text": "hi"}]
    validate_definition(REVISION, "JSONRPCResultResponse", ok.json())


# ------------------------------------------------------------ exactness (issue 12)

EXACT_TOKENS = [b"2.0", b"1e3", b"1E+2", b"-0.0", b"-0", b"7.000", b"2.5e1"]
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
STATELESS_HEADERS = {**HEADERS, "MCP-Protocol-Version": "2026-07-28"}
ECHO_HI = {"name": "echo", "arguments": {"text": "hi"}}
ECHOED_HI = b'"result":{"content":[{"type":"text","text":"hi"}]}}'


def raw_request(request_id: bytes | None, method: str, params: Any = None, **extra: Any) -> bytes:
    """A request whose id is written as ``request_id`` (no id when ``None``)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": "@ID@", "method": method}
    if request_id is None:
        del message["id"]
    if params is not None:
        message["params"] = params
    message.update(extra)
    return json.dumps(message, separators=(",", ":")).encode().replace(b'"@ID@"', request_id or b"")


def sse_data(response: requests.Response) -> list[bytes]:
    """The ``data:`` lines of an SSE answer, as sent."""
    assert response.headers["Content-Type"] == "text/event-stream"
    return [line[len(b"data: ") :] for line in response.content.splitlines() if line.startswith(b"data: ")]


@pytest.mark.parametrize("token", EXACT_TOKENS, ids=[t.decode() for t in EXACT_TOKENS])
def test_an_integral_number_id_is_answered_exactly_as_sent_over_http(
    url: str, session: dict[str, str], token: bytes
) -> None:
    head = b'{"jsonrpc":"2.0","id":' + token + b","
    answer = post(url, raw_request(token, "tools/call", ECHO_HI), session)
    assert (answer.status_code, answer.content) == (200, head + ECHOED_HI)
    assert post(url, raw_request(token, "no/such"), session).content.startswith(head + b'"error":{"code":-32601,')
    refused = post(url, raw_request(token, "ping", [1]), session)  # refused by the app itself
    assert refused.status_code == 400 and refused.content.startswith(head + b'"error":{"code":-32600,')
    # An SSE answer writes it the same way.
    streamed = post(url, raw_request(token, "tools/call", ECHO_HI), {**session, "Accept": "text/event-stream"})
    assert sse_data(streamed) == [head + ECHOED_HI]


@pytest.mark.parametrize("token", [b"2.0", b"1e3", b"-0"])
def test_an_integral_number_id_is_answered_exactly_as_sent_without_sessions(token: bytes) -> None:
    head = b'{"jsonrpc":"2.0","id":' + token + b","
    with start_http(build_server(), stateless=True) as running:
        answer = post(running.url, raw_request(token, "tools/call", ECHO_HI))
        assert answer.content == head + ECHOED_HI
    # The 2026-07-28 revision: every request served alone, and refused with its id when its headers disagree.
    with start_http(build_server()) as running:
        params = {**ECHO_HI, "_meta": STATELESS_META}
        headers = {**STATELESS_HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        answer = post(running.url, raw_request(token, "tools/call", params), headers)
        assert answer.status_code == 200 and answer.content.startswith(head + b'"result":{"content":')
        headers["Mcp-Name"] = "other"
        refused = post(running.url, raw_request(token, "tools/call", params), headers)
        assert refused.status_code == 400 and refused.content.startswith(head + b'"error":{"code":-32020,')


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":1234',  # the writer may have been cut inside 123456
        b'{"jsonrpc":"2.0","id":1234 ',
        b'{"jsonrpc":"2.0","id":"abc',
        b'{"jsonrpc":"2.0","id":"abc"',
        b'{"jsonrpc":"2.0","id":2.0',
    ],
    ids=lambda raw: raw[17:].decode(),
)
def test_an_id_cut_short_is_never_recovered_over_http(url: str, session: dict[str, str], raw: bytes) -> None:
    for headers in (HEADERS, session):
        assert_json_error(post(url, raw, headers), 400, -32700, None)


@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        (raw_request(b"5", "tools/call", ECHO_HI, result={}), 5),
        (raw_request(b'"six"', "tools/call", ECHO_HI, error={"code": 1, "message": "x"}), "six"),
        (raw_request(b"7.0", "tools/call", ECHO_HI, result={}), 7.0),
        (raw_request(None, "tools/call", ECHO_HI, result={}), None),
    ],
    ids=["result", "error", "result-exact-id", "result-without-id"],
)
def test_a_request_carrying_a_result_or_an_error_is_refused_and_never_executed_over_http(
    body: bytes, request_id: Any
) -> None:
    server = MCPServer("exact")
    calls: list[str] = []
    server.register_tool("echo", lambda args, ctx: calls.append("ran") or "hi", description="echo")
    with start_http(server) as running:
        answer = post(running.url, raw_request(b"1", "initialize", INITIALIZE_PARAMS))
        headers = {**HEADERS, "Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": REVISION}
        for sent in (HEADERS, headers):
            refused = post(running.url, body, sent)
            error = assert_json_error(refused, 400, -32600, request_id)
            assert "result" in error["message"]
        if request_id == 7.0:
            assert refused.content.startswith(b'{"jsonrpc":"2.0","id":7.0,')
        assert calls == []
        assert post(running.url, raw_request(b"8", "tools/call", ECHO_HI), headers).json()["result"]
        assert calls == ["ran"]


@pytest.mark.parametrize("token", [1.5, True, None, {}, [1]])
def test_an_invalid_progress_token_is_invalid_params_for_every_request_over_http(
    url: str, session: dict[str, str], token: Any
) -> None:
    meta = {"progressToken": token}
    for method, params in [
        ("tools/call", {**ECHO_HI, "_meta": meta}),
        ("tools/list", {"_meta": meta}),
        ("resources/list", {"_meta": meta}),
        ("prompts/list", {"_meta": meta}),
        ("ping", {"_meta": meta}),
    ]:
        error = assert_json_error(
            post(url, {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}, session), 200, -32602, 3
        )
        assert "progressToken" in error["message"], method
    # At 2026-07-28 too, where every request describes itself.
    params = {"_meta": {**STATELESS_META, "progressToken": token}}
    answer = post(
        url,
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": params},
        {**STATELESS_HEADERS, "Mcp-Method": "tools/list"},
    )
    assert answer.status_code == 200 and answer.json()["error"]["code"] == -32602


def test_a_valid_progress_token_is_accepted_over_http(url: str, session: dict[str, str]) -> None:
    for token in ("t", 0, -5, 2.0):
        body = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {**ECHO_HI, "_meta": {"progressToken": token}},
        }
        assert post(url, body, session).json()["result"]["content"] == [{"type": "text", "text": "hi"}]


# --------------------------------------------------- malformed chunked framing


CHUNK_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}).encode()
MALFORMED_CHUNKS = {
    "invalid-size": b"zz\r\n" + CHUNK_BODY + b"\r\n0\r\n\r\n",
    "no-crlf-after-the-data": b"%x\r\n" % len(CHUNK_BODY) + CHUNK_BODY + b"XX0\r\n\r\n",
    "chunk-longer-than-the-data": b"%x\r\n" % (len(CHUNK_BODY) + 50) + CHUNK_BODY + b"\r\n0\r\n\r\n",
    "ends-before-the-last-chunk": b"%x\r\n" % len(CHUNK_BODY) + CHUNK_BODY + b"\r\n",
    "ends-inside-a-chunk": b"%x\r\n" % len(CHUNK_BODY) + CHUNK_BODY[:20],
}


def send_chunked(host: str, port: int, chunks: bytes, framing: str = "Transfer-Encoding: chunked") -> bytes:
    """POST a body framed as given, end the sending side, and read everything until the server closes."""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{framing}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
        sock.sendall(head + chunks)
        # A body that ends early is only known to have ended when the client says so.
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while data := sock.recv(65536):  # b"" only when the server closes the connection
            received += data
    return received


def status_and_headers(received: bytes) -> tuple[int, dict[str, str]]:
    head = received.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), {name.lower(): value for name, value in fields.items()}


@pytest.mark.parametrize("chunks", MALFORMED_CHUNKS.values(), ids=MALFORMED_CHUNKS.keys())
def test_malformed_chunked_framing_is_a_400_that_closes_the_connection(
    running: RunningHTTPServer, chunks: bytes
) -> None:
    address = urlsplit(running.url)
    assert address.hostname is not None and address.port is not None
    received = send_chunked(address.hostname, address.port, chunks)
    status, headers = status_and_headers(received)
    assert (status, headers["connection"]) == (400, "close")
    assert received.count(b"HTTP/1.1 ") == 1  # one answer, then the connection was closed
    answer = json.loads(received.split(b"\r\n\r\n", 1)[1])
    assert answer["id"] is None and answer["error"]["code"] == -32600
    # A well-formed chunked body is served as usual.
    good = b"%x\r\n" % len(CHUNK_BODY) + CHUNK_BODY + b"\r\n0\r\n\r\n"
    status, headers = status_and_headers(send_chunked(address.hostname, address.port, good))
    assert status == 200 and "connection" not in headers


def test_a_body_shorter_than_its_content_length_is_a_400_that_closes_the_connection(running: RunningHTTPServer) -> None:
    address = urlsplit(running.url)
    assert address.hostname is not None and address.port is not None
    framing = f"Content-Length: {len(CHUNK_BODY) + 10}"
    received = send_chunked(address.hostname, address.port, CHUNK_BODY, framing)
    status, headers = status_and_headers(received)
    assert (status, headers["connection"]) == (400, "close") and received.count(b"HTTP/1.1 ") == 1


def test_an_application_that_answers_a_malformed_body_itself_still_gets_the_connection_closed() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        try:
            environ["wsgi.input"].read()
        except RequestBodyError:
            start_response("422 Unprocessable Entity", [("Content-Type", "text/plain")])
            return [b"bad body"]
        raise AssertionError("the malformed body was read without an error")

    server = WSGIServer(app).start()
    try:
        received = send_chunked(server.host, server.port, MALFORMED_CHUNKS["invalid-size"])
    finally:
        server.close()
    status, headers = status_and_headers(received)
    assert (status, headers["connection"]) == (422, "close") and received.endswith(b"bad body")


class HostError(OSError):
    """What a WSGI server's ``wsgi.input`` raises for a body it cannot read (each server has its own)."""


class FailingInput:
    def read(self, size: int = -1) -> bytes:
        raise HostError("invalid chunk size")


def post_to_the_app(body: Any, length: str | None) -> tuple[list[str], bytes]:
    """POST ``body`` (a ``wsgi.input``) straight to a new app, as a WSGI server would; the statuses and the body."""
    app = StreamableHTTPApp(build_server())
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/mcp",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "wsgi.input": body,
        "wsgi.input_terminated": True,
    }
    if length is not None:
        environ["CONTENT_LENGTH"] = length
    statuses: list[str] = []
    try:
        answer = b"".join(app(environ, lambda status, headers, exc_info=None: statuses.append(status)))
    finally:
        app.close()
    return statuses, answer


@pytest.mark.parametrize("length", [None, "10"])
def test_the_app_answers_a_body_its_server_cannot_read_with_400_not_500(length: str | None) -> None:
    statuses, body = post_to_the_app(FailingInput(), length)
    assert statuses == ["400 Bad Request"]
    answer = json.loads(body)
    assert answer["id"] is None and answer["error"]["code"] == -32600
    assert "invalid chunk size" in answer["error"]["message"]


class ShortInput:
    """A server that passes on a body cut short, without saying so."""

    def read(self, size: int = -1) -> bytes:
        return b'{"jsonrpc":"2.0","id":1'


@pytest.mark.parametrize(("length", "code"), [(None, -32700), ("100", -32600)])
def test_the_app_answers_a_truncated_body_with_400(length: str | None, code: int) -> None:
    statuses, body = post_to_the_app(ShortInput(), length)
    assert statuses == ["400 Bad Request"]
    assert json.loads(body)["error"]["code"] == code  # unreadable JSON, or a body shorter than announced


ROOT = Path(__file__).resolve().parent.parent.parent
HOSTS = {
    "gunicorn": [sys.executable, "-m", "gunicorn", "--no-control-socket", "-k", "gthread", "-b", "127.0.0.1:0"],
    "waitress": [sys.executable, "-m", "waitress", "--listen=127.0.0.1:0"],
}
LISTENING = re.compile(rb"(?:Listening at:|Serving on) http://127\.0\.0\.1:(\d+)")


@pytest.fixture(params=sorted(HOSTS), scope="module")
def hosted(request: pytest.FixtureRequest) -> Iterator[int]:
    """``examples/wsgi_app.py`` under gunicorn or waitress; its port, read from what the server logs."""
    pytest.importorskip(request.param)
    process = subprocess.Popen(
        [*HOSTS[request.param], "examples.wsgi_app:application"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    output = b""
    deadline = time.monotonic() + 30
    while (found := LISTENING.search(output)) is None:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(process.stdout.fileno(), 65536) if ready else b""
        assert chunk, f"{request.param} did not start:\n{output.decode(errors='replace')}"
        output += chunk
    try:
        yield int(found[1])
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        process.stdout.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("chunks", MALFORMED_CHUNKS.values(), ids=MALFORMED_CHUNKS.keys())
def test_malformed_chunked_framing_under_gunicorn_and_waitress_is_never_a_500(hosted: int, chunks: bytes) -> None:
    """A 400 (the server's or the app's) and the connection closed; or (waitress, a body that ended
    early) the connection closed without an answer, the app never called."""
    received = send_chunked("127.0.0.1", hosted, chunks)  # returns once the server has closed the connection
    if received:
        status, _ = status_and_headers(received)
        assert status == 400 and received.count(b"HTTP/1.1 ") == 1, received
