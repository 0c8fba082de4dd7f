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
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from schema_util import validate_definition

from mcp_sync.server.core import MCPServer
from mcp_sync.server.http.app import RunningHTTPServer, start_http

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
        (1.0, 1),
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
