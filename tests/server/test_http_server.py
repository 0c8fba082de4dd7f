"""The Streamable HTTP server (and the legacy HTTP+SSE transport) over real loopback sockets.

Clients here are raw ``requests`` and ``http.client`` calls: what goes on the
wire is what is tested. Waits are bounded by socket timeouts and Events.
"""

from __future__ import annotations

import http.client
import io
import json
import queue
import subprocess
import threading
import wsgiref.validate
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import peers
import pytest
import requests
from schema_util import validate_definition

from mcp_sync import MCP_CODES, MCPError
from mcp_sync.protocol.jsonrpc import error_response
from mcp_sync.protocol.oauth import bearer_challenge as challenge
from mcp_sync.protocol.oauth import bearer_token
from mcp_sync.protocol.versions import HANDSHAKE_REVISIONS
from mcp_sync.runtime.events import CONNECTION_CLOSED
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.runtime.workers import ElasticPool
from mcp_sync.server import RunningHTTPServer, StreamableHTTPApp, start_http
from mcp_sync.server.authorization.tokens import token_expired, token_principal, token_scopes
from mcp_sync.server.core import MCPServer
from mcp_sync.server.http.event_store import EventStore, InMemoryEventStore
from mcp_sync.server.http.security import accepts, host_allowed, origin_allowed
from mcp_sync.server.http.sessions import (
    HTTPSession,
    SessionRegistry,
    Signal,
    StreamableSessionTransport,
    StreamEvent,
)
from mcp_sync.server.http.wsgi import WRITE_FROM_ANY_THREAD, WSGIServer
from mcp_sync.types import (
    CreateMessageRequestParams,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    SamplingMessage,
    TextContent,
)

LATEST = "2025-11-25"
TIMEOUT = 10.0
BOTH = "application/json, text/event-stream"
CLIENT_INFO = {"name": "raw-test-client", "version": "1.0"}


# ------------------------------------------------------------------ helpers


def parse_sse(text: str) -> list[dict[str, str]]:
    """The blocks of an SSE body as dicts of their fields (``comment`` for ``: ...`` lines)."""
    blocks = []
    for raw in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in raw.split("\n"):
            if line:
                name, _, value = line.partition(":")
                fields[name or "comment"] = value[1:] if value.startswith(" ") else value
        if fields:
            blocks.append(fields)
    return blocks


def messages_of(response: requests.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages in a POST's answer, JSON or SSE."""
    if response.headers["Content-Type"].startswith("application/json"):
        return [response.json()]
    assert response.headers["Content-Type"] == "text/event-stream"
    return [json.loads(b["data"]) for b in parse_sse(response.text) if b.get("data")]


class Stream:
    """An SSE response read incrementally with http.client."""

    def __init__(
        self, url: str, method: str = "GET", body: bytes | None = None, *, wait: bool = True, **headers: str
    ) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
        self.connection.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body, headers)
        if wait:
            self.start()

    def start(self) -> None:
        """Wait for the response's head."""
        self.response = self.connection.getresponse()
        self.status = self.response.status

    def block(self) -> dict[str, str]:
        """The next SSE block (an event, a retry field, a comment); EOFError at the end."""
        fields: dict[str, str] = {}
        while True:
            line = self.response.readline()
            if not line:
                raise EOFError
            text = line.decode().rstrip("\r\n")
            if not text:
                if fields:
                    return fields
                continue
            name, _, value = text.partition(":")
            fields[name or "comment"] = value[1:] if value.startswith(" ") else value

    def message(self) -> tuple[str | None, dict[str, Any]]:
        """The next event carrying a message: its id and the message."""
        while True:
            block = self.block()
            if block.get("data"):
                return block.get("id"), json.loads(block["data"])

    def rest(self) -> list[dict[str, str]]:
        blocks = []
        try:
            while True:
                blocks.append(self.block())
        except EOFError:
            return blocks

    def close(self) -> None:
        self.connection.close()


class Peer:
    """One raw client of the Streamable HTTP endpoint."""

    def __init__(self, url: str, protocol: str = LATEST, **headers: str) -> None:
        self.url = url
        self.protocol = protocol
        self.extra = headers
        self.http = requests.Session()
        self.session_id: str | None = None
        self.next_id = 0

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Accept": BOTH, "Content-Type": "application/json", "MCP-Protocol-Version": self.protocol}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        headers.update(self.extra)
        headers.update(extra)
        return headers

    def post(self, payload: Any, **headers: str) -> requests.Response:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return self.http.post(self.url, data=data, headers=self.headers(**headers), timeout=TIMEOUT)

    def initialize(self, capabilities: dict[str, Any] | None = None, **headers: str) -> dict[str, Any]:
        params = {"protocolVersion": self.protocol, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}
        response = self.http.post(
            self.url,
            json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
            headers={"Accept": BOTH, "Content-Type": "application/json", **self.extra, **headers},
            timeout=TIMEOUT,
        )
        assert response.status_code == 200, response.text
        self.session_id = response.headers["Mcp-Session-Id"]
        assert self.notify("notifications/initialized").status_code == 202
        result: dict[str, Any] = response.json()["result"]
        return result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> requests.Response:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return self.post(message)

    def request(self, method: str, params: dict[str, Any] | None = None, **headers: str) -> requests.Response:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        return self.post(message, **headers)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.request(method, params)
        assert response.status_code == 200, response.text
        last = messages_of(response)[-1]
        assert "result" in last, last
        result: dict[str, Any] = last["result"]
        return result

    def stream(self, method: str = "GET", body: Any = None, *, wait: bool = True, **headers: str) -> Stream:
        data = None if body is None else json.dumps(body).encode()
        return Stream(self.url, method, data, wait=wait, **self.headers(**headers))

    def delete(self) -> requests.Response:
        return self.http.delete(self.url, headers=self.headers(), timeout=TIMEOUT)


def tool_call(name: str, arguments: dict[str, Any] | None = None, token: Any = None, id: Any = 1) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


class Gates:
    """Events a tool waits on, and that tell the test a tool has started."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.noted = threading.Event()


def build_server(gates: Gates) -> MCPServer:
    server = MCPServer("http-test", "1.0")
    server.register_tool("add", lambda args, ctx: str(args["a"] + args["b"]), description="Add two numbers")

    def progress(args: Any, ctx: Any) -> str:
        for step in range(1, 4):
            ctx.progress(step, 3, f"step {step}")
        ctx.log("info", "halfway")
        return "done"

    def ask(args: Any, ctx: Any) -> str:
        params = CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(text="2+2?"))], max_tokens=5
        )
        # Through the session itself: the route puts the question on this call's stream, as ctx.sample would.
        result = ctx.session.create_message(params, timeout=TIMEOUT, route=ctx.route)
        return f"the model said {result.content.text}"

    def hold(args: Any, ctx: Any) -> str:
        if args.get("notify"):
            ctx.log("info", "holding")
        gates.started.set()
        for _ in range(int(TIMEOUT / 0.01)):
            if gates.release.is_set() or ctx.cancelled.wait(0.01):
                break
        return "released"

    def wait_cancel(args: Any, ctx: Any) -> str:
        gates.started.set()
        ctx.cancelled.wait(TIMEOUT)
        return "cancelled"

    def note(args: Any, ctx: Any) -> str:
        gates.noted.set()
        return "noted"

    server.register_tool("note", note, description="Tells the test it ran")
    server.register_tool("progress", progress, description="Reports progress")
    server.register_tool("ask", ask, description="Samples the client's model")
    server.register_tool("hold", hold, description="Waits for the test")
    server.register_tool("wait_cancel", wait_cancel, description="Waits to be cancelled")
    server.set_log_level("debug")

    def crash(uri: str, ctx: Any) -> str:
        raise RuntimeError("resource exploded")

    server.register_resource("test://crash", crash, name="crash")
    return server


@pytest.fixture
def gates() -> Iterator[Gates]:
    gates = Gates()
    yield gates
    gates.release.set()


@pytest.fixture
def server(gates: Gates) -> MCPServer:
    return build_server(gates)


@pytest.fixture
def serve(server: MCPServer) -> Iterator[Callable[..., RunningHTTPServer]]:
    running: list[RunningHTTPServer] = []

    def start(**options: Any) -> RunningHTTPServer:
        handle = start_http(server, **options)
        running.append(handle)
        return handle

    yield start
    for handle in running:
        handle.close()


@pytest.fixture
def url(serve: Callable[..., RunningHTTPServer]) -> str:
    return serve().url


@pytest.fixture
def peer(url: str) -> Peer:
    peer = Peer(url)
    peer.initialize()
    return peer


# ------------------------------------------------------------ session lifecycle


def test_initialize_issues_a_session_id_that_later_requests_need(url: str) -> None:
    peer = Peer(url)
    result = peer.initialize()
    validate_definition(LATEST, "InitializeResult", result)
    assert result["protocolVersion"] == LATEST
    assert peer.session_id is not None and len(peer.session_id) >= 32
    assert all(0x21 <= ord(c) <= 0x7E for c in peer.session_id)
    listed = peer.request("tools/list")
    assert listed.status_code == 200
    assert listed.headers["Content-Type"] == "application/json"
    assert listed.headers["Mcp-Session-Id"] == peer.session_id
    validate_definition(LATEST, "JSONRPCResultResponse", listed.json())
    assert {t["name"] for t in listed.json()["result"]["tools"]} >= {"add", "progress"}


def test_requests_without_or_with_an_unknown_session_id(url: str, peer: Peer) -> None:
    missing = Peer(url).request("tools/list")
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == -32600
    assert "Mcp-Session-Id" in missing.json()["error"]["message"]
    unknown = Peer(url)
    unknown.session_id = "no-such-session"
    answer = unknown.request("tools/list")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == -32001
    assert answer.json()["id"] is None


def test_delete_ends_the_session(peer: Peer) -> None:
    assert peer.delete().status_code == 204
    assert peer.request("tools/list").status_code == 404
    assert peer.delete().status_code == 404


def test_two_sessions_are_independent(url: str) -> None:
    first, second = Peer(url), Peer(url)
    first.initialize()
    second.initialize()
    assert first.session_id != second.session_id
    assert first.delete().status_code == 204
    assert second.call("tools/call", tool_call("add", {"a": 1, "b": 2})["params"])["content"][0]["text"] == "3"


def test_a_failed_initialize_opens_no_session(url: str, serve: Callable[..., RunningHTTPServer]) -> None:
    response = requests.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 5}},
        headers={"Accept": BOTH, "Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32602
    assert "Mcp-Session-Id" not in response.headers


def test_initialize_again_in_a_session_is_an_error(peer: Peer) -> None:
    response = peer.post({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {}})
    assert response.status_code == 200
    assert response.json()["id"] == 5 and "error" in response.json()


def test_max_sessions_refuses_with_503_and_retry_after(serve: Callable[..., RunningHTTPServer]) -> None:
    url = serve(max_sessions=1).url
    Peer(url).initialize()
    refused = requests.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={"Accept": BOTH, "Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "5"
    legacy = requests.get(url.replace("/mcp", "/sse"), headers={"Accept": "text/event-stream"}, timeout=TIMEOUT)
    assert legacy.status_code == 503


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_idle_sessions_expire(serve: Callable[..., RunningHTTPServer]) -> None:
    clock = FakeClock()
    url = serve(session_idle_timeout=60.0, clock=clock).url
    idle, listening = Peer(url), Peer(url)
    idle.initialize()
    listening.initialize()
    stream = listening.stream()
    assert stream.block() == {"retry": "1000"}  # the stream is open
    clock.now += 30
    assert idle.request("ping").status_code == 200  # the idle time starts again
    clock.now += 59
    assert idle.request("ping").status_code == 200
    clock.now += 61
    assert idle.request("ping").status_code == 404
    # A session with an open stream is not idle.
    assert listening.request("ping").status_code == 200
    stream.close()


def test_sessions_closed_by_the_server_are_gone(server: MCPServer, url: str, peer: Peer) -> None:
    server.stop()
    assert peer.request("ping").status_code == 404


# ------------------------------------------------------------ HTTP-level checks


def test_other_methods_get_405_with_allow(url: str, serve: Callable[..., RunningHTTPServer]) -> None:
    response = requests.put(url, timeout=TIMEOUT)
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, POST, DELETE"
    stateless = serve(stateless=True).url
    for method in ("GET", "DELETE"):
        refused = requests.request(method, stateless, headers={"Accept": "text/event-stream"}, timeout=TIMEOUT)
        assert refused.status_code == 405
        assert refused.headers["Allow"] == "POST"


def test_unknown_paths_get_404(url: str) -> None:
    assert requests.get(url.replace("/mcp", "/other"), timeout=TIMEOUT).status_code == 404


def test_accept_negotiation(url: str, peer: Peer) -> None:
    refused = peer.request("ping", Accept="text/html")
    assert refused.status_code == 406
    only_sse = peer.post(tool_call("add", {"a": 1, "b": 1}), Accept="text/event-stream")
    assert only_sse.headers["Content-Type"] == "text/event-stream"
    assert messages_of(only_sse)[-1]["result"]["content"][0]["text"] == "2"
    only_json = peer.post(tool_call("progress", token="p"), Accept="application/json")
    assert only_json.headers["Content-Type"] == "application/json"
    assert only_json.json()["result"]["content"][0]["text"] == "done"
    anything = peer.post(tool_call("add", {"a": 2, "b": 2}), Accept="*/*")
    assert anything.json()["result"]["content"][0]["text"] == "4"
    get = requests.get(url, headers=peer.headers(Accept="application/json"), timeout=TIMEOUT)
    assert get.status_code == 406


def test_content_type_must_be_json(peer: Peer) -> None:
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    assert peer.post(ping, **{"Content-Type": "text/plain"}).status_code == 415
    assert peer.post(ping, **{"Content-Type": "application/json; charset=latin-1"}).status_code == 415
    accepted = peer.post(ping, **{"Content-Type": "Application/JSON; charset=UTF-8"})
    assert accepted.status_code == 200


def test_body_limits(serve: Callable[..., RunningHTTPServer]) -> None:
    peer = Peer(serve(max_body_bytes=300).url)
    peer.initialize()
    big = tool_call("add", {"a": 1, "b": 2, "padding": "x" * 400})
    assert peer.post(big).status_code == 413
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    chunked = peer.http.post(peer.url, data=iter([ping[:10], ping[10:]]), headers=peer.headers(), timeout=TIMEOUT)
    assert chunked.status_code == 200
    too_long = peer.http.post(peer.url, data=iter([ping] * 10), headers=peer.headers(), timeout=TIMEOUT)
    assert too_long.status_code == 413
    assert peer.post(tool_call("add", {"a": 1, "b": 2})).status_code == 200


def test_protocol_version_header(url: str, peer: Peer) -> None:
    refused = peer.request("ping", **{"MCP-Protocol-Version": "1999-01-01"})
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert "MCP-Protocol-Version" in error["message"]
    # The shape of 2026-07-28's UnsupportedProtocolVersionError, so newer clients can fall back.
    assert error["code"] == -32022
    assert error["data"] == {"requested": "1999-01-01", "supported": ["2026-07-28", *reversed(HANDSHAKE_REVISIONS)]}
    assert refused.json()["id"] == peer.next_id  # the request's id, read from the body
    validate_definition("2026-07-28", "UnsupportedProtocolVersionError", refused.json())
    assert peer.http.get(url, headers={"MCP-Protocol-Version": "1999-01-01"}).json()["id"] is None
    # The conformance harness sends 2025-03-26 in a session that negotiated 2025-11-25.
    assert peer.request("tools/list", **{"MCP-Protocol-Version": "2025-03-26"}).status_code == 200
    headers = peer.headers()
    del headers["MCP-Protocol-Version"]
    assert peer.http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers).status_code == 200


def test_client_notifications_and_responses_get_202_without_body(peer: Peer) -> None:
    notified = peer.notify("notifications/roots/list_changed")
    assert (notified.status_code, notified.content) == (202, b"")
    answered = peer.post({"jsonrpc": "2.0", "id": 12345, "result": {}})
    assert (answered.status_code, answered.content) == (202, b"")


def test_wsgi_compliance(server: MCPServer) -> None:
    """The app passes wsgiref's PEP 3333 validator for JSON, SSE and error answers."""
    app = StreamableHTTPApp(server)
    checked = wsgiref.validate.validator(app)

    def run(environ: dict[str, Any]) -> tuple[list[str], dict[str, str], bytes]:
        seen: list[str] = []
        headers: dict[str, str] = {}

        def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            seen.append(status)
            headers.update(response_headers)
            return lambda data: None

        result = checked(environ, start_response)
        body = b"".join(result)
        result.close()
        return seen, headers, body

    params = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": CLIENT_INFO}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    status, headers, body = run(environ_for("POST", json.dumps(init).encode()))
    assert status == ["200 OK"] and json.loads(body)["result"]["protocolVersion"] == LATEST
    session = {"Mcp-Session-Id": headers["Mcp-Session-Id"], "MCP-Protocol-Version": LATEST}
    status, headers, body = run(environ_for("POST", json.dumps(tool_call("progress", token=1)).encode(), **session))
    assert status == ["200 OK"] and headers["Content-Type"] == "text/event-stream"
    assert json.loads(parse_sse(body.decode())[-1]["data"])["result"]["content"][0]["text"] == "done"
    status, _, _ = run(environ_for("PUT"))
    assert status == ["405 Method Not Allowed"]
    status, _, body = run(environ_for("DELETE", **session))
    assert status == ["204 No Content"] and body == b""
    app.close()


def environ_for(method: str, body: bytes = b"", path: str = "/mcp", **headers: str) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_ACCEPT": BOTH,
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    return environ


def call_app(app: StreamableHTTPApp, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        seen.update(status=status, headers=dict(headers))
        return lambda data: None

    result = app(environ, start_response)
    body = b"".join(result)
    getattr(result, "close", lambda: None)()
    return seen["status"], seen["headers"], body


def test_body_reading_edge_cases(server: MCPServer) -> None:
    app = StreamableHTTPApp(server, max_body_bytes=64)
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    status, _, _ = call_app(app, environ_for("POST", ping, CONTENT_LENGTH="abc"))
    assert status == "400 Bad Request"
    status, _, body = call_app(app, environ_for("POST", ping[:10], CONTENT_LENGTH=str(len(ping))))
    assert status == "400 Bad Request" and b"ended early" in body
    unknown_length = environ_for("POST", ping, CONTENT_LENGTH="")
    assert call_app(app, unknown_length)[0] == "411 Length Required"
    empty = environ_for("POST", b"", CONTENT_LENGTH="0")
    status, _, body = call_app(app, empty)
    assert status == "400 Bad Request" and json.loads(body)["error"]["code"] == -32700
    app.close()


def test_an_unexpected_failure_is_a_500_without_details(server: MCPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    app = StreamableHTTPApp(server)

    def explode(request: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(app, "_handle", explode)
    status, _, body = call_app(app, environ_for("POST", b"{}"))
    assert status == "500 Internal Server Error"
    assert b"secret" not in body and b"Traceback" not in body
    assert json.loads(body)["error"]["code"] == -32603
    app.close()


def test_a_closed_app_answers_503(server: MCPServer) -> None:
    app = StreamableHTTPApp(server)
    app.close()
    assert call_app(app, environ_for("POST", b"{}"))[0] == "503 Service Unavailable"


# ------------------------------------------------------------ JSON or SSE


def test_a_plain_request_is_answered_with_json(peer: Peer) -> None:
    response = peer.post(tool_call("add", {"a": 2, "b": 3}))
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "5"


def test_progress_and_logs_stream_before_the_result(peer: Peer) -> None:
    response = peer.post(tool_call("progress", token="tok"))
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["Mcp-Session-Id"] == peer.session_id
    blocks = parse_sse(response.text)
    assert blocks[0] == {"retry": "1000"}
    assert blocks[1]["data"] == "" and "id" in blocks[1]  # priming event at 2025-11-25
    events = [b for b in blocks[2:]]
    assert all(b["event"] == "message" and b["id"] for b in events)
    assert len({b["id"] for b in blocks if "id" in b}) == len(events) + 1
    messages = [json.loads(b["data"]) for b in events]
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + ["notifications/message", None]
    for message in messages[:3]:
        validate_definition(LATEST, "ProgressNotification", message)
        assert message["params"]["progressToken"] == "tok"
    assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
    validate_definition(LATEST, "LoggingMessageNotification", messages[3])
    validate_definition(LATEST, "JSONRPCResultResponse", messages[4])
    assert messages[4]["result"]["content"][0]["text"] == "done"


def test_no_priming_event_for_older_revisions(peer: Peer) -> None:
    response = peer.post(tool_call("progress", token=7), **{"MCP-Protocol-Version": "2025-03-26"})
    blocks = parse_sse(response.text)
    assert blocks[0] == {"retry": "1000"}
    assert all(b.get("data") for b in blocks[1:])


def test_sampling_request_from_a_tool_is_answered_by_a_client_post(url: str) -> None:
    peer = Peer(url)
    peer.initialize(capabilities={"sampling": {}})
    stream = peer.stream("POST", tool_call("ask", id="call-1"))
    assert stream.status == 200
    assert stream.response.getheader("Content-Type") == "text/event-stream"
    _, request = stream.message()
    validate_definition(LATEST, "JSONRPCRequest", request)
    assert request["method"] == "sampling/createMessage"
    answer = {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"},
    }
    assert peer.post(answer).status_code == 202
    _, final = stream.message()
    assert final["id"] == "call-1"
    assert final["result"]["content"][0]["text"] == "the model said 4"
    assert stream.rest() == []
    stream.close()


def test_a_question_the_server_withdraws_is_withdrawn_on_its_call_s_stream(server: MCPServer, url: str) -> None:
    # The withdrawal belongs to the call, like the question: with a GET stream open it must still come on the call's
    # own stream, between the question and the answer, or a client reading each stream on its own thread could
    # hear of the withdrawal before the question it withdraws (and keep that question for ever).
    def impatient(args: Any, ctx: Any) -> str:
        try:
            ctx.sample("2+2?", timeout=0.1)
        except MCPError as error:
            return error.code
        return "answered"

    server.register_tool("impatient", impatient)
    peer = Peer(url)
    peer.initialize(capabilities={"sampling": {}})
    listening = peer.stream()
    assert listening.block() == {"retry": "1000"}
    call = peer.stream("POST", tool_call("impatient", id="call-1"))
    _, question = call.message()
    assert question["method"] == "sampling/createMessage"  # left unanswered
    _, withdrawal = call.message()
    assert withdrawal["method"] == "notifications/cancelled"
    assert withdrawal["params"]["requestId"] == question["id"]
    _, final = call.message()
    assert final["id"] == "call-1" and final["result"]["content"][0]["text"] == MCP_CODES.TIMEOUT
    call.close()
    listening.close()


def test_json_response_mode_sends_related_messages_to_the_get_stream(serve: Callable[..., RunningHTTPServer]) -> None:
    peer = Peer(serve(json_response=True).url)
    peer.initialize(capabilities={"sampling": {}})
    no_stream = peer.post(tool_call("ask"))
    assert no_stream.headers["Content-Type"] == "application/json"
    assert no_stream.json()["result"]["isError"] is True  # no stream could carry the sampling request
    listening = peer.stream()
    assert listening.block() == {"retry": "1000"}
    assert listening.block()["data"] == ""  # the priming event
    response = peer.post(tool_call("progress", token="t"))
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "done"
    methods = [listening.message()[1]["method"] for _ in range(4)]
    assert methods == ["notifications/progress"] * 3 + ["notifications/message"]
    listening.close()


@pytest.fixture
def unlent() -> Iterator[Callable[[RunningHTTPServer], str]]:
    """Host a running server's app again, on a server that does not say other threads may write (as waitress):
    no request is lent the thread of its connection. Gives the URL."""
    hosts: list[WSGIServer] = []

    def host(running: RunningHTTPServer) -> str:
        app = running.app

        def without_lending(environ: dict[str, Any], start_response: Any) -> Any:
            return app({k: v for k, v in environ.items() if k != WRITE_FROM_ANY_THREAD}, start_response)

        hosts.append(WSGIServer(without_lending, port=0).start())
        return f"http://127.0.0.1:{hosts[-1].port}/mcp"

    yield host
    for server in hosts:
        server.close()


@pytest.mark.parametrize("lent", [True, False])
def test_a_long_wait_turns_into_a_stream_with_pings(
    serve: Callable[..., RunningHTTPServer], unlent: Callable[[RunningHTTPServer], str], gates: Gates, lent: bool
) -> None:
    # Lent, the lend watch turns the answer into a stream; otherwise the connection's thread, waiting for it, does.
    running = serve(ping_interval=0.05)
    peer = Peer(running.url if lent else unlent(running))
    peer.initialize()
    stream = peer.stream("POST", tool_call("hold"))
    assert stream.response.getheader("Content-Type") == "text/event-stream"
    assert stream.block() == {"retry": "1000"}
    assert stream.block()["data"] == ""  # priming
    assert stream.block() == {"comment": "ping"}
    gates.release.set()
    _, final = stream.message()
    assert final["result"]["content"][0]["text"] == "released"
    stream.close()


def test_json_response_mode_refuses_clients_that_only_take_sse(serve: Callable[..., RunningHTTPServer]) -> None:
    peer = Peer(serve(json_response=True).url)
    peer.initialize()
    assert peer.request("ping", Accept="text/event-stream").status_code == 406


def test_json_response_mode_waits_without_streaming(serve: Callable[..., RunningHTTPServer], gates: Gates) -> None:
    peer = Peer(serve(ping_interval=0.05, json_response=True).url)
    peer.initialize()
    answers: list[requests.Response] = []
    worker = threading.Thread(target=lambda: answers.append(peer.post(tool_call("hold"))))
    worker.start()
    assert gates.started.wait(TIMEOUT)
    gates.release.set()
    worker.join(TIMEOUT)
    assert answers[0].headers["Content-Type"] == "application/json"


def test_two_in_flight_requests_with_the_same_id_both_get_an_answer(peer: Peer, gates: Gates) -> None:
    """Responses to a reused id go to the waiting POSTs first come, first served."""
    answers: dict[str, requests.Response] = {}

    def post(name: str) -> None:
        answers[name] = peer.post(tool_call(name, id=42))

    first = threading.Thread(target=post, args=("hold",))
    first.start()
    assert gates.started.wait(TIMEOUT)
    second = threading.Thread(target=post, args=("note",))
    second.start()
    assert gates.noted.wait(TIMEOUT)
    first.join(TIMEOUT)  # the first response for id 42 answered the first POST
    assert answers["hold"].json()["result"]["content"][0]["text"] == "noted"
    gates.release.set()
    second.join(TIMEOUT)
    assert answers["note"].json()["id"] == 42
    assert answers["note"].json()["result"]["content"][0]["text"] == "released"


def test_concurrent_calls_on_one_session(peer: Peer) -> None:
    failures: list[str] = []

    def work(worker: int) -> None:
        client = Peer(peer.url)
        client.session_id = peer.session_id
        for n in range(20):
            message = tool_call("add", {"a": worker, "b": n}, id=f"{worker}-{n}")
            response = client.post(message)
            got = response.json()
            if got["id"] != f"{worker}-{n}" or got["result"]["content"][0]["text"] != str(worker + n):
                failures.append(response.text)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 3)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []


def test_cancelling_a_request_ends_its_post(peer: Peer, gates: Gates, serve: Callable[..., RunningHTTPServer]) -> None:
    stream = peer.stream("POST", tool_call("wait_cancel", id=77), wait=False, **{"MCP-Protocol-Version": "2025-06-18"})
    assert gates.started.wait(TIMEOUT)
    cancel = peer.notify("notifications/cancelled", {"requestId": 77, "reason": "changed my mind"})
    assert cancel.status_code == 202
    stream.start()
    assert stream.response.getheader("Content-Type") == "text/event-stream"
    assert stream.rest() == [{"retry": "1000"}]  # ended without a response
    stream.close()
    # Malformed cancellations are passed on and change nothing here.
    assert peer.notify("notifications/cancelled", {"requestId": True}).status_code == 202


def test_cancelling_in_json_response_mode(serve: Callable[..., RunningHTTPServer], gates: Gates) -> None:
    peer = Peer(serve(json_response=True).url)
    peer.initialize()
    answers: list[requests.Response] = []
    worker = threading.Thread(target=lambda: answers.append(peer.post(tool_call("wait_cancel", id="c"))))
    worker.start()
    assert gates.started.wait(TIMEOUT)
    assert peer.notify("notifications/cancelled", {"requestId": "c"}).status_code == 202
    worker.join(TIMEOUT)
    assert answers[0].json() == {"jsonrpc": "2.0", "id": "c", "error": {"code": -32800, "message": "Request cancelled"}}


def test_a_session_ended_while_a_request_waits(peer: Peer, gates: Gates) -> None:
    answers: list[requests.Response] = []
    worker = threading.Thread(target=lambda: answers.append(peer.post(tool_call("hold", id=3))))
    worker.start()
    assert gates.started.wait(TIMEOUT)
    assert peer.delete().status_code == 204
    worker.join(TIMEOUT)
    assert answers[0].status_code == 200
    assert answers[0].json()["error"]["code"] == -32603
    assert "session ended" in answers[0].json()["error"]["message"]


def test_a_session_ended_while_streaming(peer: Peer, gates: Gates) -> None:
    stream = peer.stream("POST", tool_call("hold", {"notify": True}, id=4))
    _, log = stream.message()
    assert log["method"] == "notifications/message"
    assert peer.delete().status_code == 204
    _, final = stream.message()
    assert final == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32603, "message": "The session ended before the request was answered"},
    }
    assert stream.rest() == []
    stream.close()


# ------------------------------------------------------------ GET stream


def test_get_stream_receives_unrelated_notifications(server: MCPServer, peer: Peer) -> None:
    stream = peer.stream()
    assert stream.status == 200
    assert stream.response.getheader("Mcp-Session-Id") == peer.session_id
    assert stream.block() == {"retry": "1000"}
    assert stream.block()["data"] == ""
    server.register_tool("late", lambda args, ctx: "late", description="Registered later")
    event_id, message = stream.message()
    assert event_id is not None
    validate_definition(LATEST, "ToolListChangedNotification", message)
    second = peer.stream()
    assert second.status == 409
    second.close()
    stream.close()


def test_get_without_priming_before_2025_11_25(server: MCPServer, peer: Peer) -> None:
    stream = peer.stream(**{"MCP-Protocol-Version": "2025-06-18"})
    assert stream.block() == {"retry": "1000"}
    server.log("warning", "to everyone")
    _, message = stream.message()
    assert message["method"] == "notifications/message"
    stream.close()


def test_a_server_request_on_the_get_stream(server: MCPServer, peer: Peer) -> None:
    stream = peer.stream()
    assert stream.block() == {"retry": "1000"}
    assert stream.block()["data"] == ""  # priming
    (session,) = server.sessions
    outcome: list[Any] = []
    pinger = threading.Thread(target=lambda: outcome.append(session.ping(timeout=TIMEOUT)))
    pinger.start()
    _, request = stream.message()
    assert request["method"] == "ping"
    assert peer.post({"jsonrpc": "2.0", "id": request["id"], "result": {}}).status_code == 202
    pinger.join(TIMEOUT)
    assert outcome == [None]
    stream.close()


def test_resuming_the_get_stream_replays_missed_events(server: MCPServer, peer: Peer) -> None:
    stream = peer.stream()
    assert stream.block() == {"retry": "1000"}
    assert stream.block()["data"] == ""  # priming
    server.log("info", "one")
    last_id, first = stream.message()
    assert first["params"]["data"] == "one"
    stream.close()
    # Nothing reads the stream now: what the server sends meanwhile is kept for a resumption.
    server.log("info", "two")
    server.log("info", "three")
    resumed = resumed_stream(peer, last_id)
    replayed = [resumed.message()[1]["params"]["data"] for _ in range(2)]
    assert replayed == ["two", "three"]
    server.log("info", "four")
    assert resumed.message()[1]["params"]["data"] == "four"
    resumed.close()


def resumed_stream(peer: Peer, last_event_id: str | None) -> Stream:
    """A GET with Last-Event-ID, answered with a stream that starts with the retry advice."""
    assert last_event_id is not None
    stream = peer.stream(**{"Last-Event-ID": last_event_id})
    assert stream.status == 200
    assert stream.block() == {"retry": "1000"}
    return stream


def test_resuming_a_post_stream_after_its_connection_dropped(
    serve: Callable[..., RunningHTTPServer], gates: Gates
) -> None:
    peer = Peer(serve(ping_interval=0.02).url)
    peer.initialize()
    stream = peer.stream("POST", tool_call("hold", {"notify": True}, id="resume-me"))
    last_id, log = stream.message()
    assert log["method"] == "notifications/message"
    stream.close()
    resumed = resumed_stream(peer, last_id)
    gates.release.set()
    _, final = resumed.message()
    assert final["id"] == "resume-me"
    assert final["result"]["content"][0]["text"] == "released"
    assert resumed.rest() == []
    resumed.close()
    # After the end, the stream can still be resumed from that id: the response again, then the end.
    again = peer.stream(**{"Last-Event-ID": last_id})
    assert again.block() == {"retry": "1000"}
    assert again.message()[1]["id"] == "resume-me"
    assert again.rest() == []
    again.close()


@pytest.mark.parametrize("lent", [True, False])
def test_resuming_takes_over_from_a_connection_still_open(
    serve: Callable[..., RunningHTTPServer], unlent: Callable[[RunningHTTPServer], str], gates: Gates, lent: bool
) -> None:
    running = serve()
    peer = Peer(running.url if lent else unlent(running))
    peer.initialize()
    stream = peer.stream("POST", tool_call("hold", {"notify": True}, id="busy"))
    last_id, log = stream.message()
    assert log["method"] == "notifications/message"
    resumed = resumed_stream(peer, last_id)
    if not lent:
        assert stream.rest() == []  # the old connection ends at once, without the response
    gates.release.set()
    assert resumed.message()[1]["id"] == "busy"  # the response goes on the stream that took over
    assert resumed.rest() == []
    if lent:
        # The old connection ends without the response once the handler is done: the handler runs on that
        # connection's thread (the embedded server lends it; the stream went on from another thread meanwhile).
        assert stream.rest() == []
    stream.close()
    resumed.close()


def test_an_unknown_last_event_id_opens_the_standalone_stream(server: MCPServer, peer: Peer) -> None:
    stream = peer.stream(**{"Last-Event-ID": "nope:3"})
    assert stream.status == 200
    assert stream.block() == {"retry": "1000"}
    assert stream.block()["data"] == ""  # the standalone stream's priming event: nothing replayed
    server.log("info", "fresh")
    assert stream.message()[1]["params"]["data"] == "fresh"
    stream.close()


def test_another_sessions_event_ids_replay_nothing(server: MCPServer, url: str, peer: Peer) -> None:
    other = Peer(url)
    other.initialize()
    theirs = other.stream()
    assert theirs.block() == {"retry": "1000"}
    theirs_id = theirs.block()["id"]
    theirs.close()
    server.log("info", "private")
    mine = peer.stream(**{"Last-Event-ID": theirs_id})
    assert mine.status == 200
    assert mine.block() == {"retry": "1000"}
    priming = mine.block()  # my own priming event, not their messages
    assert priming["data"] == "" and priming["id"].split(":")[0] != theirs_id.split(":")[0]
    server.log("info", "public")
    assert mine.message()[1]["params"]["data"] == "public"
    mine.close()


# ------------------------------------------------------------ stateless and JSON-only


def test_stateless_mode(serve: Callable[..., RunningHTTPServer]) -> None:
    url = serve(stateless=True).url
    peer = Peer(url, protocol="2025-06-18")
    response = peer.post(tool_call("add", {"a": 20, "b": 22}))
    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response.headers
    assert response.json()["result"]["content"][0]["text"] == "42"
    initialize = peer.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": CLIENT_INFO},
        }
    )
    assert initialize.json()["result"]["protocolVersion"] == LATEST
    assert "Mcp-Session-Id" not in initialize.headers
    assert peer.notify("notifications/initialized").status_code == 202
    streamed = peer.post(tool_call("progress", token=1))
    blocks = parse_sse(streamed.text)
    assert all("id" not in block for block in blocks)  # nothing to resume without sessions
    assert json.loads(blocks[-1]["data"])["result"]["content"][0]["text"] == "done"
    sampled = peer.post(tool_call("ask"))
    assert messages_of(sampled)[-1]["result"]["isError"] is True  # the client could not answer a request


def test_stateless_sessions_end_when_the_app_closes(server: MCPServer, gates: Gates) -> None:
    running = start_http(server, stateless=True)
    peer = Peer(running.url)
    answers: list[requests.Response] = []
    worker = threading.Thread(target=lambda: answers.append(peer.post(tool_call("hold"))))
    worker.start()
    assert gates.started.wait(TIMEOUT)
    running.app.close()
    worker.join(TIMEOUT)
    assert answers[0].json()["error"]["code"] == -32603
    running.close()
    running.close()  # idempotent
    with pytest.raises(requests.ConnectionError):
        peer.post(tool_call("add", {"a": 1, "b": 1}))  # nothing listens any more


# ------------------------------------------------------------ legacy HTTP+SSE


def test_legacy_http_sse_round_trip(url: str) -> None:
    base = url.removesuffix("/mcp")
    stream = Stream(base + "/sse", Accept="text/event-stream")
    assert stream.status == 200
    endpoint = stream.block()
    assert endpoint["event"] == "endpoint"
    assert endpoint["data"].startswith("/messages/?session_id=")
    post_url = base + endpoint["data"]
    headers = {"Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": CLIENT_INFO},
    }
    accepted = requests.post(post_url, json=init, headers=headers, timeout=TIMEOUT)
    assert (accepted.status_code, accepted.content) == (202, b"")
    event = stream.block()
    assert event["event"] == "message"
    result = json.loads(event["data"])["result"]
    validate_definition("2024-11-05", "InitializeResult", result)
    assert result["protocolVersion"] == "2024-11-05"
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert requests.post(post_url, json=initialized, headers=headers, timeout=TIMEOUT).status_code == 202
    call = tool_call("add", {"a": 5, "b": 6}, id=2)
    assert requests.post(post_url, json=call, headers=headers, timeout=TIMEOUT).status_code == 202
    assert json.loads(stream.block()["data"])["result"]["content"][0]["text"] == "11"
    bad = requests.post(post_url, data=b"[]", headers=headers, timeout=TIMEOUT)
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, -32600)
    stream.close()


def test_legacy_http_sse_errors(url: str, peer: Peer) -> None:
    base = url.removesuffix("/mcp")
    headers = {"Content-Type": "application/json"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert requests.post(base + "/messages/", json=ping, headers=headers, timeout=TIMEOUT).status_code == 400
    unknown = requests.post(base + "/messages/?session_id=nope", json=ping, headers=headers, timeout=TIMEOUT)
    assert unknown.status_code == 404
    # A Streamable HTTP session is not a legacy one, and the other way round.
    crossed = f"{base}/messages/?session_id={peer.session_id}"
    assert requests.post(crossed, json=ping, headers=headers, timeout=TIMEOUT).status_code == 404
    assert requests.get(base + "/messages/", timeout=TIMEOUT).status_code == 405
    assert requests.post(base + "/sse", timeout=TIMEOUT).status_code == 405
    refused = requests.get(base + "/sse", headers={"Accept": "application/json"}, timeout=TIMEOUT)
    assert refused.status_code == 406
    assert requests.post(base + "/messages/?session_id=x", data=b"{}", timeout=TIMEOUT).status_code == 415


def test_legacy_session_ends_with_its_stream(server: MCPServer, serve: Callable[..., RunningHTTPServer]) -> None:
    url = serve(ping_interval=0.02).url
    base = url.removesuffix("/mcp")
    stream = Stream(base + "/sse", Accept="text/event-stream")
    post_url = base + stream.block()["data"]
    legacy = Peer(url)
    legacy.session_id = post_url.rsplit("=", 1)[1]
    assert legacy.request("ping").status_code == 404  # not a Streamable HTTP session
    ended = threading.Event()
    server.events.on(CONNECTION_CLOSED, lambda payload: ended.set())
    stream.close()
    # The server learns that the client left at its next write: a ping.
    assert ended.wait(TIMEOUT)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    answer = requests.post(post_url, json=ping, headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    assert answer.status_code == 404


def test_legacy_can_be_turned_off(serve: Callable[..., RunningHTTPServer]) -> None:
    base = serve(legacy_sse=False).url.removesuffix("/mcp")
    assert requests.get(base + "/sse", headers={"Accept": "text/event-stream"}, timeout=TIMEOUT).status_code == 404


# ------------------------------------------------------------ security


def test_dns_rebinding_cases_of_the_conformance_suite(url: str) -> None:
    port = urlsplit(url).port
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": CLIENT_INFO},
    }
    base = {"Accept": BOTH, "Content-Type": "application/json"}
    evil = requests.post(
        url, json=body, headers={**base, "Host": "evil.example.com", "Origin": "http://evil.example.com"}, timeout=10
    )
    assert 400 <= evil.status_code < 500
    assert "Mcp-Session-Id" not in evil.headers
    good = requests.post(
        url, json=body, headers={**base, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}, timeout=10
    )
    assert good.status_code == 200 and "Mcp-Session-Id" in good.headers


def test_host_and_origin_statuses(url: str, serve: Callable[..., RunningHTTPServer]) -> None:
    port = urlsplit(url).port
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": BOTH, "Content-Type": "application/json"}
    bad_host = requests.post(url, json=ping, headers={**headers, "Host": "evil.example.com"}, timeout=10)
    assert bad_host.status_code == 421
    bad_origin = requests.post(url, json=ping, headers={**headers, "Origin": "http://evil.example.com"}, timeout=10)
    assert bad_origin.status_code == 403
    null_origin = requests.post(url, json=ping, headers={**headers, "Origin": "null"}, timeout=10)
    assert null_origin.status_code == 403
    ipv6 = requests.post(url, json=ping, headers={**headers, "Host": f"[::1]:{port}"}, timeout=10)
    assert ipv6.status_code == 400  # allowed host; then: no session id
    custom = serve(allowed_hosts=["mcp.example.com"], allowed_origins=["https://app.example.com"]).url
    allowed = {**headers, "Host": "mcp.example.com", "Origin": "https://app.example.com"}
    assert requests.post(custom, json=ping, headers=allowed, timeout=10).status_code == 400
    assert requests.post(custom, json=ping, headers=headers, timeout=10).status_code == 421
    other_origin = {**allowed, "Origin": "https://evil.example.com"}
    assert requests.post(custom, json=ping, headers=other_origin, timeout=10).status_code == 403


class Tokens:
    """A token verifier for the tests."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {
            "alice": {"sub": "alice", "scope": "mcp:read mcp:write"},
            "bob": {"sub": "bob", "scope": "mcp:read mcp:write"},
            "reader": {"sub": "carol", "scope": "mcp:read"},
            "old": {"sub": "alice", "scope": "mcp:read mcp:write", "exp": 1},
        }

    def __call__(self, token: str) -> dict[str, Any] | None:
        if token == "boom":
            raise RuntimeError("verifier down")
        return self.tokens.get(token)


METADATA = {"authorization_servers": ["https://auth.example.com"], "scopes_supported": ["mcp:read", "mcp:write"]}


def test_bearer_tokens(serve: Callable[..., RunningHTTPServer]) -> None:
    url = serve(token_verifier=Tokens(), required_scopes=["mcp:write"], resource_metadata=METADATA).url
    metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    peer = Peer(url)
    missing = peer.request("ping")
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == (
        f'Bearer error_description="Missing bearer token", scope="mcp:write", resource_metadata="{metadata_url}"'
    )
    for token in ("unknown", "old", "boom"):
        refused = peer.request("ping", Authorization=f"Bearer {token}")
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
        assert refused.json()["error"] == "invalid_token"
    scope = peer.request("ping", Authorization="Bearer reader")
    assert scope.status_code == 403
    assert 'error="insufficient_scope"' in scope.headers["WWW-Authenticate"]
    peer.extra["Authorization"] = "Bearer alice"
    peer.initialize()
    assert peer.call("tools/call", tool_call("add", {"a": 1, "b": 1})["params"]) is not None
    # The session belongs to alice: bob's token does not open it.
    bob = peer.request("ping", Authorization="Bearer bob")
    assert bob.status_code == 404
    assert peer.request("ping", Authorization="Bearer alice").status_code == 200


def test_protected_resource_metadata(serve: Callable[..., RunningHTTPServer]) -> None:
    url = serve(token_verifier=Tokens(), resource_metadata=METADATA).url
    base = url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        document = requests.get(base + path, timeout=TIMEOUT)
        assert document.status_code == 200
        assert document.headers["Content-Type"] == "application/json"
        assert document.json() == {**METADATA, "resource": url}
    assert requests.post(base + "/.well-known/oauth-protected-resource", timeout=TIMEOUT).status_code == 405
    fixed = serve(resource_metadata={**METADATA, "resource": "https://mcp.example.com/api/mcp"}).url
    refused = Peer(fixed)
    assert requests.get(fixed.replace("/mcp", "/.well-known/oauth-protected-resource")).json()["resource"] == (
        "https://mcp.example.com/api/mcp"
    )
    assert refused.request("ping").status_code == 400  # no token verifier: metadata only
    with pytest.raises(ValueError, match="authorization_servers"):
        StreamableHTTPApp(MCPServer("x"), resource_metadata={"resource": "https://x"})


def test_tokens_without_metadata_challenge_without_a_url(serve: Callable[..., RunningHTTPServer]) -> None:
    url = serve(token_verifier=Tokens()).url
    refused = Peer(url).request("ping")
    assert refused.headers["WWW-Authenticate"] == 'Bearer error_description="Missing bearer token"'
    assert requests.get(url.replace("/mcp", "/.well-known/oauth-protected-resource")).status_code == 404
    base = url.removesuffix("/mcp")
    assert requests.get(base + "/sse", headers={"Accept": "text/event-stream"}, timeout=TIMEOUT).status_code == 401
    post = requests.post(base + "/messages/?session_id=x", json={}, timeout=TIMEOUT)
    assert post.status_code == 401


# ------------------------------------------------------------ closing


def test_closing_the_app_ends_streams_and_sessions(server: MCPServer, gates: Gates) -> None:
    running = start_http(server)
    peer = Peer(running.url)
    peer.initialize()
    listening = peer.stream()
    assert listening.block() == {"retry": "1000"}
    legacy = Stream(running.url.replace("/mcp", "/sse"), Accept="text/event-stream")
    assert legacy.block()["event"] == "endpoint"
    answers: list[requests.Response] = []
    worker = threading.Thread(target=lambda: answers.append(peer.post(tool_call("hold", id="x"))))
    worker.start()
    assert gates.started.wait(TIMEOUT)
    running.app.close()
    worker.join(TIMEOUT)
    assert answers[0].json()["error"]["code"] == -32603
    assert listening.rest()[-1]["data"] == ""  # the priming event, then the end
    assert legacy.rest() == []
    listening.close()
    legacy.close()
    assert server.sessions == []
    assert peer.request("ping").status_code == 503
    running.close()


def test_closing_the_server_wakes_everything(server: MCPServer, gates: Gates) -> None:
    running = start_http(server)
    peer = Peer(running.url)
    peer.initialize()
    listening = peer.stream()
    assert listening.block() == {"retry": "1000"}
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(peer.post(tool_call("hold")).json()["error"]["code"])
        except requests.ConnectionError:
            outcome.append("connection closed")  # the answer lost the race with the socket's shutdown

    worker = threading.Thread(target=call)
    worker.start()
    assert gates.started.wait(TIMEOUT)
    running.close()
    worker.join(TIMEOUT)
    assert outcome in ([-32603], ["connection closed"])
    with pytest.raises((EOFError, ConnectionError)):
        while True:
            listening.block()
    listening.close()
    assert server.sessions == []


def test_a_failure_mid_request_releases_the_session(
    server: MCPServer, serve: Callable[..., RunningHTTPServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    running = serve()
    peer = Peer(running.url)
    peer.initialize()
    stateless = Peer(serve(stateless=True).url)

    def broken(self: StreamableSessionTransport, message: Any) -> None:
        raise RuntimeError("broken transport")

    monkeypatch.setattr(StreamableSessionTransport, "receive", broken)
    monkeypatch.setattr(StreamableSessionTransport, "serve_here", broken)
    for accept in ("application/json, text/event-stream", "text/event-stream"):  # its thread lent, or not
        failed = peer.request("ping", Accept=accept)
        assert failed.status_code == 500 and "broken" not in failed.text
        (entry,) = [running.app.sessions.get(peer.session_id or "")]
        assert entry is not None and entry.active == 1  # only the lookup just made
        running.app.sessions.release(entry)
    # A session of its own for one request: the connection's thread passes the request on, and fails.
    answered = stateless.request("ping")
    assert answered.status_code == 200 and answered.json()["error"]["code"] == -32603
    assert [s for s in server.sessions if s.revision is None] == []  # the throw-away session was closed
    # A client that takes only a stream gets its request served on a handler thread: none to be had.
    monkeypatch.setattr(ElasticPool, "submit", lambda self, task: broken(None, None))
    assert stateless.request("ping", Accept="text/event-stream").status_code == 500
    assert [s for s in server.sessions if s.revision is None] == []


def test_start_http_as_a_context_manager(server: MCPServer) -> None:
    with start_http(server, port=0) as running:
        assert Peer(running.url).initialize()["serverInfo"]["name"] == "http-test"


def test_serve_http_blocks_until_its_server_closes(server: MCPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_sync.server.http.embedded as module

    made: list[Any] = []
    ready = threading.Event()
    original = module.embed

    def capture(app: StreamableHTTPApp, host: str, port: int, max_connections: int) -> Any:
        embedded = original(app, host, port, max_connections)
        made.append(embedded)
        ready.set()
        return embedded

    monkeypatch.setattr(module, "embed", capture)
    options = {"port": 0, "stateless": True, "max_connections": 7}
    serving = threading.Thread(target=module.serve_http, args=(server,), kwargs=options)
    serving.start()
    assert ready.wait(TIMEOUT)
    assert made[0].max_connections == 7 and made[0].app.stateless
    answer = Peer(made[0].url + "/mcp").request("ping")
    assert answer.json()["result"] == {}
    made[0].close()
    serving.join(TIMEOUT)
    assert not serving.is_alive()


# ------------------------------------------------------------ the official SDK as client

SDK_DRIVER = """
import json, sys, warnings
import anyio
import mcp.client.session as sdk_session
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

warnings.simplefilter("ignore")
config = json.loads(sys.argv[1])


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main():
    out, logs, progress = {}, [], []
    if config["version"] is not None:
        sdk_session.LATEST_HANDSHAKE_VERSION = config["version"]

    async def on_log(params):
        logs.append(dump(params))

    async def on_progress(value, total, message):
        progress.append([value, total, message])

    async def sample(context, params):
        text = types.TextContent(type="text", text="4")
        return types.CreateMessageResult(role="assistant", content=text, model="sdk")

    url = config["url"]
    transport = streamable_http_client(url) if config["transport"] == "streamable" else sse_client(url)
    with anyio.fail_after(30):
        async with transport as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, logging_callback=on_log, sampling_callback=sample) as session:
                out["initialize"] = dump(await session.initialize())
                out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
                out["add"] = dump(await session.call_tool("add", {"a": 2, "b": 40}))
                out["progress"] = dump(await session.call_tool("progress", {}, progress_callback=on_progress))
                out["ask"] = dump(await session.call_tool("ask", {}))
                out["ping"] = dump(await session.send_ping())
    out["logs"] = logs
    out["progress_seen"] = progress
    print(json.dumps(out))


anyio.run(main)
"""


@pytest.mark.interop
@pytest.mark.parametrize(("transport", "version"), [("streamable", None), ("streamable", "2025-03-26"), ("sse", None)])
def test_the_official_python_sdk_client(server: MCPServer, tmp_path: Path, transport: str, version: str | None) -> None:
    """The SDK's Streamable HTTP and SSE clients: progress and logs arrive, sampling is answered."""
    peer_python = peers.peer_python()
    driver = tmp_path / "driver.py"
    driver.write_text(SDK_DRIVER)
    with start_http(server) as running:
        url = running.url if transport == "streamable" else running.url.removesuffix("/mcp") + "/sse"
        config = json.dumps({"url": url, "transport": transport, "version": version})
        done = subprocess.run(
            [peer_python, str(driver), config],
            capture_output=True,
            text=True,
            timeout=120,
            env=peers.peer_environment(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["initialize"]["protocolVersion"] == (version or LATEST)
    assert report["add"]["content"] == [{"type": "text", "text": "42"}]
    assert report["progress_seen"] == [[1.0, 3.0, "step 1"], [2.0, 3.0, "step 2"], [3.0, 3.0, "step 3"]]
    assert report["logs"] == [{"level": "info", "data": "halfway"}]
    assert report["ask"]["content"] == [{"type": "text", "text": "the model said 4"}]
    assert report["ping"] == {}


# ------------------------------------------------------------ units


def test_session_transport_routing_units() -> None:
    transport = StreamableSessionTransport(event_store=InMemoryEventStore())
    # An unrelated request needs the GET stream.
    with pytest.raises(Exception, match="GET stream"):
        transport.send(JSONRPCRequest(id=1, method="ping"))
    attached = transport.attach(None, priming=False)  # a GET connection reads the standalone stream from now on
    assert attached is not None and attached[0] is transport.standalone
    standalone = attached[1]
    # A response nobody waits for is dropped: no stream carries it.
    transport.send(error_response(99, -32603, "late"))
    assert standalone.empty()
    # A related message whose request has no POST waiting goes to the standalone stream.
    fake_dispatcher = object()
    transport.dispatcher = fake_dispatcher
    context = RequestContext(fake_dispatcher, 5, "tools/call", {})  # type: ignore[arg-type]
    note = JSONRPCNotification(method="notifications/message", params={"level": "info", "data": 1})
    transport.send_routed(note, context)
    related = standalone.get_nowait()
    assert isinstance(related, StreamEvent) and isinstance(related.message, JSONRPCNotification)
    assert related.message.params == {"level": "info", "data": 1}
    # Two POSTs wait for id 5; the handler's messages and response keep to the one it was bound to.
    first = transport.open_post(5, priming=False)
    second = transport.open_post(5, priming=False)
    second.context = context
    note = JSONRPCNotification(method="notifications/message", params={"level": "info", "data": 2})
    transport.send_routed(note, context)
    transport.send_routed(error_response(5, -32603, "for the second"), context)
    item = second.queue.get_nowait()
    assert isinstance(item, StreamEvent) and isinstance(item.message, JSONRPCNotification)
    assert item.message.params == {"level": "info", "data": 2}
    final = second.queue.get_nowait()
    assert (
        isinstance(final, StreamEvent) and final.message is not None and final.message.error.message == "for the second"
    )
    assert second.queue.get_nowait() is Signal.END
    assert first.queue.empty() and standalone.empty()
    # A response sent for no request in particular goes to the POST that waits for its id.
    transport.send(error_response(5, -32603, "for the first"))
    answer = first.queue.get_nowait()
    assert isinstance(answer, StreamEvent) and isinstance(answer.message, JSONRPCErrorResponse)
    assert answer.message.error.message == "for the first"
    # A post whose response came first does not start streaming.
    assert first.mode == "json"
    transport.start_streaming(first)
    assert first.mode == "json"
    # Closing ends the standalone stream's connection; a post opened after close is told at once.
    transport.close()
    assert standalone.get_nowait() is Signal.CLOSED
    late = transport.open_post(6, priming=False)
    assert late.queue.get_nowait() is Signal.CLOSED
    # So is a GET connection: it gets the standalone stream, closed.
    transport.detach(attached[0], standalone)
    again = transport.attach(None, priming=False)
    assert again is not None and again[1].get_nowait() is Signal.CLOSED


def test_responses_prefer_unbound_posts_then_the_oldest() -> None:
    transport = StreamableSessionTransport(event_store=None)
    bound, unbound = transport.open_post(1, priming=False), transport.open_post(1, priming=False)
    # Without sessions there is no standalone stream: unrelated notifications are dropped.
    assert transport.standalone is None
    transport.send(JSONRPCNotification(method="notifications/tools/list_changed"))
    assert bound.queue.empty() and unbound.queue.empty()
    bound.context = RequestContext(object(), 1, "x", {})  # type: ignore[arg-type]
    transport.send(error_response(1, -1, "a"))
    assert unbound.mode == "json" and bound.mode == "undecided"
    transport.send(error_response(1, -1, "b"))
    assert bound.mode == "json"
    transport.close()


def test_an_sse_body_runs_its_close_callback_once() -> None:
    from mcp_sync.server.http.answers import SSEBody

    closed: list[int] = []
    body = SSEBody(queue.SimpleQueue(), first=b"retry: 1\n\n", ping_interval=0.01, on_close=lambda: closed.append(1))
    assert next(body) == b"retry: 1\n\n"
    body.close()
    body.close()
    assert closed == [1]


def test_finished_post_streams_are_forgotten_beyond_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_sync.server.http.sessions as sessions

    monkeypatch.setattr(sessions, "MAX_FINISHED_STREAMS", 1)
    store = InMemoryEventStore()
    transport = StreamableSessionTransport(event_store=store)
    ids = []
    for request_id in range(3):
        post = transport.open_post(request_id, priming=True)
        transport.start_streaming(post)
        ids.append(post.stream_id)
        transport.send(error_response(request_id, -1, "done"))
    kept = [i for i in ids if store.replay_after(f"{i}:0", lambda eid, msg: None) is not None]
    assert kept == ids[1:]
    transport.close()


def test_registry_units() -> None:
    clock = FakeClock()
    registry = SessionRegistry(max_sessions=2, idle_timeout=10.0, clock=clock)
    server = MCPServer("units")
    transport = StreamableSessionTransport(event_store=None)
    entry = HTTPSession("a", transport, server.start(transport), None, 0.0)
    assert registry.add(entry)
    assert len(registry) == 1 and entry.active == 1  # added busy, as a request is opening it
    registry.release(entry)
    assert entry.active == 0
    clock.now += 11
    registry.sweep()
    assert len(registry) == 0 and entry.session.closed
    assert registry.remove("a") is None
    assert registry.take_all() == []
    other = StreamableSessionTransport(event_store=None)
    late = HTTPSession("b", other, server.start(other), None, 0.0)
    assert not registry.add(late)
    late.session.close()


def test_adding_sessions_sweeps_at_most_once_a_second_unless_full() -> None:
    clock = FakeClock()
    registry = SessionRegistry(max_sessions=3, idle_timeout=0.5, clock=clock)
    server = MCPServer("sweeps")

    def entry(name: str) -> HTTPSession:
        transport = StreamableSessionTransport(event_store=None)
        made = HTTPSession(name, transport, server.start(transport), None, 0.0)
        assert registry.add(made)
        registry.release(made)
        return made

    first = entry("a")  # the first add sweeps (nothing to sweep)
    clock.now += 0.6
    second = entry("b")  # half a second passed (the idle timeout): this add sweeps out "a"
    assert first.session.closed and len(registry) == 1
    clock.now += 0.1
    second.session.close()
    third = entry("c")  # too soon for a sweep: the closed "b" is still counted
    assert len(registry) == 2
    clock.now += 0.1
    fourth = entry("d")  # still too soon; the registry is now full (b, c, d)
    assert len(registry) == 3
    clock.now += 0.1
    fifth = entry("e")  # full: this add sweeps, and "b" makes room
    assert len(registry) == 3 and registry.get("b") is None
    for made in (third, fourth, fifth):
        made.session.close()


def test_event_store_units() -> None:
    store = InMemoryEventStore(max_events=2, max_streams=2)
    message = JSONRPCNotification(method="notifications/x")
    ids = [store.store("a", message) for _ in range(3)]
    got: list[str] = []
    assert store.replay_after(ids[0], lambda eid, msg: got.append(eid)) == "a"
    assert got == ids[1:]  # the first event fell out of the window
    assert store.replay_after("a:99", got.append) is None
    assert store.replay_after("a:x", got.append) is None
    assert store.replay_after("nowhere", got.append) is None
    store.store("b", message)
    store.store("a", message)  # "a" is used again: "b" is now the oldest stream
    store.store("c", message)
    assert store.replay_after("b:0", got.append) is None
    store.forget("a")
    assert store.replay_after("a:1", got.append) is None
    with pytest.raises(ValueError):
        InMemoryEventStore(max_events=0)

    class Keeping(EventStore):
        """Only what an event store must have: forgetting is left to the default hook."""

        def __init__(self) -> None:
            self.streams: dict[str, str] = {}

        def store(self, stream_id: str, message: JSONRPCMessage | None) -> str:
            self.streams[f"{stream_id}:1"] = stream_id
            return f"{stream_id}:1"

        def replay_after(self, event_id: str, send: Any) -> str | None:
            return self.streams.get(event_id)

    keeping = Keeping()
    kept_id = keeping.store("a", message)
    keeping.forget("a")  # the default hook does nothing: the stream can still be resumed
    assert keeping.replay_after(kept_id, got.append) == "a"


def test_security_units() -> None:
    assert accepts(None, "application/json") and accepts("  ", "text/event-stream")
    assert accepts("application/*", "application/json")
    assert not accepts("application/json;q=0, */*", "application/json")
    assert accepts("text/event-stream;q=0.5;charset=x", "text/event-stream")
    assert accepts("text/event-stream;level=1", "text/event-stream")
    assert not accepts("text/event-stream;q=abc", "text/event-stream")
    assert not accepts("text/html", "text/event-stream")
    assert accepts("*/*;q=0.1, application/json;q=0", "text/event-stream")
    assert host_allowed("LOCALHOST", ["localhost:*"])
    assert not host_allowed("localhost:", ["localhost:*"]) and not host_allowed("localhostx:1", ["localhost:*"])
    assert host_allowed("anything", ["*"]) and host_allowed("h:8000", ["h:8000"])
    assert not origin_allowed("file://", None, ["*"])
    assert origin_allowed("null", ["null"], [])
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    assert bearer_token(None) is None and bearer_token("Basic abc") is None and bearer_token("Bearer ") is None
    assert token_scopes({"scope": "a b"}) == {"a", "b"}
    assert token_scopes({"scp": ["x"]}) == {"x"} and token_scopes({"scopes": ("y",)}) == {"y"}
    assert token_scopes({"scope": 5}) == frozenset()
    assert token_expired({"exp": 10}, now=11) and not token_expired({"exp": 10}, now=9)
    assert not token_expired({"exp": True}) and not token_expired({})
    assert token_principal({"client_id": 7}) == "7" and token_principal({"sub": ""}) is None
    assert challenge() == "Bearer"
    assert challenge(error_description='say "hi" \\') == 'Bearer error_description="say \\"hi\\" \\\\"'


def test_assume_initialized_serves_without_a_handshake() -> None:
    server = MCPServer("stateless")
    transport = StreamableSessionTransport(event_store=None)
    session = server.start(transport)
    session.assume_initialized("2099-01-01")
    assert session.revision == LATEST and session.initialized.is_set()
    session.close()


def test_start_http_bounds_the_connections_it_serves_at_once() -> None:
    # Each open stream holds a connection: a server meant for many listeners raises the bound.
    with start_http(MCPServer("bounded"), max_connections=1) as running:
        host, port = urlsplit(running.url).netloc.split(":")
        held = http.client.HTTPConnection(host, int(port), timeout=10)
        held.request("GET", "/elsewhere")
        assert held.getresponse().status == 404  # served, and the connection stays open
        refused = http.client.HTTPConnection(host, int(port), timeout=10)
        refused.request("GET", "/elsewhere")
        answer = refused.getresponse()
        assert answer.status == 503 and b"too many connections" in answer.read()
        held.close()
        refused.close()
