"""The HTTP server at revision 2026-07-28 (stateless), over real loopback sockets.

Requests are raw ``requests`` and ``http.client`` calls shaped like those of
the official conformance harness: the headers ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` (and ``Mcp-Param-*``), and ``_meta`` with the
revision, client info and capabilities on every request. Everything the
server sends back is checked against the 2026-07-28 schema. Waits are
bounded by socket timeouts and Events.
"""

from __future__ import annotations

import gc
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import conformance
import pytest
import requests
from schema_util import validate_definition

from mcp_sync import Context, MCPServer
from mcp_sync.protocol.headers import InvalidHeaderDeclaration, header_declarations, header_text, param_header_problem
from mcp_sync.protocol.jsonrpc import error_response
from mcp_sync.protocol.stateless import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SUBSCRIPTION_ID,
)
from mcp_sync.protocol.versions import HANDSHAKE_REVISIONS
from mcp_sync.runtime.events import CONNECTION_OPENED
from mcp_sync.server import RunningHTTPServer, StreamableHTTPApp, start_http
from mcp_sync.server.http.sessions import Signal, StreamableSessionTransport, StreamEvent
from mcp_sync.types import JSONRPCNotification

REVISION = "2026-07-28"
TIMEOUT = 10.0
BOTH = "application/json, text/event-stream"
ROOT = Path(__file__).resolve().parent.parent.parent
EVERYTHING = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries."""
    return {
        PROTOCOL_VERSION: REVISION,
        CLIENT_INFO: {"name": "conformance-test-client", "version": "1.0.0"},
        CLIENT_CAPABILITIES: EVERYTHING if capabilities is None else capabilities,
        **extra,
    }


def standard_headers(method: str, params: dict[str, Any] | None) -> dict[str, str]:
    """The headers the harness sends: the revision, and the method and name mirrored from the body."""
    headers = {
        "Content-Type": "application/json",
        "Accept": BOTH,
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": method,
    }
    named = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    if named is not None and params is not None and isinstance(params.get(named), str):
        headers["Mcp-Name"] = params[named]
    return headers


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
    """The JSON-RPC messages of an answer (JSON or SSE), each checked against the 2026-07-28 schema."""
    if response.headers["Content-Type"].startswith("application/json"):
        found = [response.json()]
    else:
        assert response.headers["Content-Type"] == "text/event-stream"
        blocks = parse_sse(response.text)
        assert all("id" not in block and "retry" not in block for block in blocks)  # nothing to resume
        found = [json.loads(block["data"]) for block in blocks if block.get("data")]
    for message in found:
        validate_definition(REVISION, "JSONRPCMessage", message)
    return found


class Client:
    """A raw 2026-07-28 client: every POST self-contained, no session."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.next_id = 0

    def body(self, method: str, params: dict[str, Any] | None, id: Any = None) -> dict[str, Any]:
        if id is None:
            self.next_id += 1
            id = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        return message

    def post(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        id: Any = None,
        drop: tuple[str, ...] = (),
        **headers: str,
    ) -> requests.Response:
        """POST one request; ``headers`` replace the standard ones (``_`` for ``-``), ``drop`` removes some."""
        sent = standard_headers(method, params)
        sent.update({name.replace("_", "-"): value for name, value in headers.items()})
        for name in drop:
            del sent[name]
        response = self.http.post(self.url, json=self.body(method, params, id), headers=sent, timeout=TIMEOUT)
        assert "Mcp-Session-Id" not in response.headers
        return response

    def call(self, method: str, params: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        """The result of a request that must succeed (its last message)."""
        response = self.post(method, {**(params or {}), "_meta": meta(**options)})
        assert response.status_code == 200, response.text
        last = messages_of(response)[-1]
        assert "result" in last, last
        result: dict[str, Any] = last["result"]
        return result

    def refused(self, status: int, code: int, method: str, params: dict[str, Any] | None, **headers: Any) -> Any:
        """The error of a request that must be refused with ``status`` and ``code``, echoing its id."""
        response = self.post(method, params, **headers)
        assert response.status_code == status, response.text
        [message] = messages_of(response)
        assert message["id"] == self.next_id and message["error"]["code"] == code, message
        return message["error"]

    def stream(self, method: str, params: dict[str, Any], **headers: str) -> Stream:
        sent = {**standard_headers(method, params), **headers}
        return Stream(self.url, json.dumps(self.body(method, params)).encode(), sent)


def raw_post(client: Client, method: str, params: dict[str, Any], **headers: str) -> tuple[int, dict[str, Any]]:
    """POST with http.client, which sends header values as given (``requests`` refuses surrounding spaces)."""
    parts = urlsplit(client.url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    try:
        sent = {**standard_headers(method, params), **{k.replace("_", "-"): v for k, v in headers.items()}}
        connection.request("POST", parts.path, json.dumps(client.body(method, params)).encode(), sent)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


class Stream:
    """A POST whose SSE answer is read incrementally with http.client."""

    def __init__(self, url: str, body: bytes, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
        self.connection.request("POST", parts.path, body, headers)
        self.response = self.connection.getresponse()

    def message(self) -> dict[str, Any]:
        """The next message on the stream (comments skipped); EOFError at the end."""
        while True:
            line = self.response.readline()
            if not line:
                raise EOFError
            text = line.decode().rstrip("\r\n")
            if text.startswith("data: "):
                message: dict[str, Any] = json.loads(text[6:])
                validate_definition(REVISION, "JSONRPCMessage", message)
                return message

    def close(self) -> None:
        self.connection.close()


# ------------------------------------------------------------------- server


class Probe:
    """What the tools tell the test: a cancellation seen, a tool started."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.release = threading.Event()


def build_server(probe: Probe, **options: Any) -> MCPServer:
    server = MCPServer("http-modern", "2.0", cache_ttl_ms=1000, **options)

    @server.tool
    def echo(text: str) -> str:
        """Says it back."""
        return text

    @server.tool
    def steps(ctx: Context) -> str:
        """Reports progress three times and logs."""
        for step in range(1, 4):
            ctx.progress(step, 3, f"step {step}")
        ctx.log("info", "all steps done")
        return "stepped"

    @server.tool
    def greet(ctx: Context) -> str:
        """Asks a name (one round), then greets."""
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        answer = ctx.elicit("Your name?", schema, key="user_name")
        return f"Hello, {answer.data['name']}!" if answer.accepted and answer.data else "Hello, stranger!"

    @server.tool
    def needs_sampling(ctx: Context) -> str:
        """Samples the client's model."""
        return str(ctx.sample("Hi", max_tokens=5, key="sample").content)

    @server.tool
    def wait_cancel(ctx: Context) -> str:
        """Runs until cancelled."""
        probe.started.set()
        if ctx.cancelled.wait(TIMEOUT):
            probe.cancelled.set()
        return "cancelled"

    @server.tool
    def stubborn(ctx: Context) -> str:
        """Ignores cancellation until the test releases it."""
        probe.started.set()
        probe.release.wait(TIMEOUT)
        return "done at last"

    @server.tool
    def change_tools() -> str:
        """Adds a tool."""
        server.register_tool(f"extra_{time.monotonic_ns()}", lambda args, ctx: "x", description="Extra")
        return "changed"

    @server.tool
    def change_prompts() -> str:
        """Adds a prompt."""
        server.register_prompt(f"extra_{time.monotonic_ns()}", lambda args, ctx: "x", description="Extra")
        return "changed"

    server.register_tool(
        "locate",
        lambda args, ctx: json.dumps(args, sort_keys=True),
        description="Mirrors its arguments into headers",
        input_schema={
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
                "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
                "query": {"type": "string"},
            },
        },
    )
    server.register_tool(
        "badly_declared",
        lambda args, ctx: "ran",
        description="Its x-mcp-header is on a number: invalid, so not checked",
        input_schema={"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}},
    )

    @server.resource("memo://one", mime_type="text/plain")
    def memo() -> str:
        return "remember"

    @server.prompt
    def topic(ctx: Context) -> str:
        """Asks a topic first."""
        schema = {"type": "object", "properties": {"t": {"type": "string"}}}
        answer = ctx.elicit("Topic?", schema, key="topic")
        return f"Write about {answer.data['t'] if answer.data else 'nothing'}."

    return server


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
def serve(probe: Probe) -> Iterator[Callable[..., RunningHTTPServer]]:
    running: list[RunningHTTPServer] = []
    servers: list[MCPServer] = []

    def start(**options: Any) -> RunningHTTPServer:
        server = build_server(probe)
        servers.append(server)
        handle = start_http(server, ping_interval=0.2, **options)
        running.append(handle)
        return handle

    yield start
    probe.release.set()
    for handle in running:
        handle.close()
    for server in servers:
        server.stop()


@pytest.fixture
def running(serve: Callable[..., RunningHTTPServer]) -> RunningHTTPServer:
    return serve()


@pytest.fixture
def client(running: RunningHTTPServer) -> Client:
    return Client(running.url)


# ------------------------------------------------------------- the basics


def test_discover_is_served_without_a_session(client: Client) -> None:
    response = client.post("server/discover", {"_meta": meta()})
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    [message] = messages_of(response)
    validate_definition(REVISION, "DiscoverResultResponse", message)
    result = message["result"]
    assert REVISION in result["supportedVersions"] and "2025-11-25" in result["supportedVersions"]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "http-modern", "version": "2.0"}
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 1000, "public")


def test_every_request_stands_alone(client: Client, running: RunningHTTPServer) -> None:
    tools = client.call("tools/list")
    validate_definition(REVISION, "ListToolsResult", tools)
    assert [tool["name"] for tool in tools["tools"]][:2] == ["echo", "steps"]
    assert client.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})["content"][0]["text"] == "hi"
    read = client.call("resources/read", {"uri": "memo://one"})
    validate_definition(REVISION, "ReadResourceResult", read)
    assert read["contents"][0]["text"] == "remember" and read["ttlMs"] == 1000
    validate_definition(REVISION, "ListPromptsResult", client.call("prompts/list"))
    # The same id from two clients is no conflict: each request stands alone.
    other = Client(running.url)
    assert other.call("tools/call", {"name": "echo", "arguments": {"text": "again"}})["content"][0]["text"] == "again"
    # Nothing is kept between requests: the one session serving them all is the app's host, made once.
    (host,) = running.app.server.sessions
    assert host.per_request and host.client_info is None and host.revision is None


def test_session_headers_are_ignored_and_get_and_delete_are_refused(client: Client, running: RunningHTTPServer) -> None:
    response = client.post("tools/list", {"_meta": meta()}, Mcp_Session_Id="made-up", Last_Event_ID="x")
    assert response.status_code == 200
    for verb in ("GET", "DELETE"):
        refused = requests.request(verb, running.url, headers={"MCP-Protocol-Version": REVISION}, timeout=TIMEOUT)
        assert (refused.status_code, refused.headers["Allow"]) == (405, "POST")
    # An unknown revision on a GET is still answered with the supported ones.
    unknown = requests.get(running.url, headers={"MCP-Protocol-Version": "v999.0.0"}, timeout=TIMEOUT)
    assert unknown.status_code == 400 and unknown.json()["error"]["data"]["requested"] == "v999.0.0"


def test_notifications_are_accepted_and_ignored(client: Client) -> None:
    headers = standard_headers("notifications/cancelled", None)
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    accepted = client.http.post(client.url, json=body, headers=headers, timeout=TIMEOUT)
    assert (accepted.status_code, accepted.content) == (202, b"")
    unknown = client.http.post(client.url, json=body, headers={**headers, "MCP-Protocol-Version": "v9"})
    assert unknown.status_code == 400
    assert unknown.json()["id"] is None and unknown.json()["error"]["code"] == -32022


# ------------------------------------------------------- refusals, in order


def test_malformed_meta_is_refused_with_400(client: Client) -> None:
    without_version = {k: v for k, v in meta().items() if k != PROTOCOL_VERSION}
    without_capabilities = {k: v for k, v in meta().items() if k != CLIENT_CAPABILITIES}
    for params in ({}, {"_meta": without_version}, {"_meta": without_capabilities}, {"_meta": "text"}):
        error = client.refused(400, -32602, "server/discover", params)
        validate_definition(REVISION, "InvalidParamsError", error)
    bad_info = {**meta(), CLIENT_INFO: {"name": 5}}
    client.refused(400, -32602, "tools/list", {"_meta": bad_info})
    # clientInfo is only a SHOULD
    without_info = {k: v for k, v in meta().items() if k != CLIENT_INFO}
    assert client.post("server/discover", {"_meta": without_info}).status_code == 200


def test_versions_are_checked_mismatch_first(client: Client) -> None:
    v999 = {**meta(), PROTOCOL_VERSION: "v999.0.0"}
    error = client.refused(400, -32022, "server/discover", {"_meta": v999}, MCP_Protocol_Version="v999.0.0")
    validate_definition(REVISION, "UnsupportedProtocolVersionError", {"jsonrpc": "2.0", "id": 1, "error": error})
    assert error["data"] == {"requested": "v999.0.0", "supported": [REVISION, *reversed(HANDSHAKE_REVISIONS)]}
    mismatch = client.refused(400, -32020, "server/discover", {"_meta": v999})
    validate_definition(REVISION, "HeaderMismatchError", {"jsonrpc": "2.0", "id": 1, "error": mismatch})
    # no header: the body's _meta says 2026-07-28, and the header is required then
    client.refused(400, -32020, "tools/list", {"_meta": meta()}, drop=("MCP-Protocol-Version",))
    client.refused(400, -32020, "server/discover", {}, drop=("MCP-Protocol-Version",))
    # a handshake revision in the header and another in _meta
    client.refused(400, -32020, "tools/list", {"_meta": meta()}, MCP_Protocol_Version="2025-11-25")
    # an unknown revision with a handshake-era body is refused the same way
    client.refused(400, -32022, "ping", None, MCP_Protocol_Version="1999-01-01", drop=("Mcp-Method",))


def test_mcp_method_and_mcp_name_must_mirror_the_body(client: Client) -> None:
    params = {"_meta": meta()}
    client.refused(400, -32020, "tools/list", params, drop=("Mcp-Method",))
    client.refused(400, -32020, "tools/list", params, Mcp_Method="prompts/list")
    client.refused(400, -32020, "tools/list", params, Mcp_Method="TOOLS/LIST")  # values are case-sensitive
    assert client.post("tools/list", params, drop=("Mcp-Method",), **{"mcp-method": "tools/list"}).ok
    assert client.post("tools/list", params, drop=("Mcp-Method",), **{"MCP-METHOD": "tools/list"}).ok
    call = {"name": "echo", "arguments": {"text": "x"}, "_meta": meta()}
    client.refused(400, -32020, "tools/call", call, drop=("Mcp-Name",))
    client.refused(400, -32020, "tools/call", call, Mcp_Name="wrong_tool_name")
    client.refused(400, -32020, "tools/call", call, Mcp_Name="=?base64?ZWNobw?=")  # unpadded
    assert raw_post(client, "tools/call", call, Mcp_Name="  echo  ")[0] == 200  # whitespace is not part of a value
    assert client.post("tools/call", call, Mcp_Name="=?base64?ZWNobw==?=").ok
    read = {"uri": "memo://one", "_meta": meta()}
    client.refused(400, -32020, "resources/read", read, Mcp_Name="memo://two")
    prompt = {"name": "topic", "_meta": meta()}
    client.refused(400, -32020, "prompts/get", prompt, Mcp_Name="other")
    # A body without the name is for the method's own checks.
    nameless = client.post("tools/call", {"arguments": {}, "_meta": meta()}, Mcp_Name="echo")
    assert nameless.status_code == 200 and nameless.json()["error"]["code"] == -32602


def test_removed_and_unknown_methods_get_404(client: Client) -> None:
    for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "x/y"):
        error = client.refused(404, -32601, method, {"_meta": meta()})
        validate_definition(REVISION, "MethodNotFoundError", error)


def test_a_missing_client_capability_gets_400(client: Client) -> None:
    params = {"name": "needs_sampling", "arguments": {}, "_meta": meta(capabilities={})}
    error = client.refused(400, -32021, "tools/call", params)
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}}
    whole = {"jsonrpc": "2.0", "id": client.next_id, "error": error}
    validate_definition(REVISION, "MissingRequiredClientCapabilityError", whole)
    # Other errors keep 200, the result of the JSON-RPC post.
    unknown = client.post("tools/call", {"name": "nope", "arguments": {}, "_meta": meta()})
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32602
    missing = client.post("resources/read", {"uri": "memo://none", "_meta": meta()})
    assert missing.status_code == 200 and missing.json()["error"]["data"] == {"uri": "memo://none"}


def test_accept_must_allow_an_answer(client: Client) -> None:
    client.refused(406, -32600, "tools/list", {"_meta": meta()}, Accept="text/html")
    client.refused(
        406, -32600, "subscriptions/listen", {"_meta": meta(), "notifications": {}}, Accept="application/json"
    )
    only_sse = client.post("tools/list", {"_meta": meta()}, Accept="text/event-stream")
    assert only_sse.headers["Content-Type"] == "text/event-stream"
    assert messages_of(only_sse)[0]["result"]["tools"]


# ------------------------------------------------------ x-mcp-header headers


def locate(client: Client, arguments: dict[str, Any], **headers: str) -> requests.Response:
    return client.post("tools/call", {"name": "locate", "arguments": arguments, "_meta": meta()}, **headers)


def test_mirrored_arguments_must_match_their_headers(client: Client) -> None:
    everything = {"region": "us-west1", "count": 42, "dry": False, "where": {"zone": "b"}, "query": "q"}
    headers = {"Mcp_Param_Region": "us-west1", "Mcp_Param_Count": "42", "Mcp_Param_Dry_Run": "false"}
    ok = locate(client, everything, **headers, Mcp_Param_Zone="b")
    assert ok.status_code == 200 and json.loads(ok.json()["result"]["content"][0]["text"]) == everything
    assert locate(client, {"count": 42.0}, mcp_param_count="42").ok  # numbers compare as numbers
    assert locate(client, {"region": "Hello, 世界"}, Mcp_Param_Region="=?base64?SGVsbG8sIOS4lueVjA==?=").ok
    assert locate(client, {"region": "SGVsbG8="}, Mcp_Param_Region="SGVsbG8=").ok  # no sentinel: literal
    assert locate(client, {"region": None}).ok  # null: no header expected
    refusals = [
        ({"region": "us-west1"}, {}),  # the header is missing
        ({"region": "us-west1"}, {"Mcp_Param_Region": "eu-west1"}),
        ({"region": "Hello"}, {"Mcp_Param_Region": "=?base64?SGVsbG8?=", "Mcp_Param_Count": "1"}),
        ({"region": "Hello"}, {"Mcp_Param_Region": "=?base64?SGVs!!!bG8=?="}),
        ({"region": "x"}, {"Mcp_Param_Region": "=?base64?/w==?="}),  # not UTF-8
        ({"count": 42}, {"Mcp_Param_Count": "forty-two"}),
        ({"dry": True}, {"Mcp_Param_Dry_Run": "True"}),
        ({"where": {"zone": "a"}}, {"Mcp_Param_Zone": "b"}),
        ({"where": "a"}, {"Mcp_Param_Zone": "a"}),  # sent for a value the body does not have
        ({"region": ["a"]}, {"Mcp_Param_Region": "a"}),
    ]
    for arguments, sent in refusals:
        response = locate(client, arguments, **sent)
        assert response.status_code == 400, (arguments, sent)
        assert response.json()["error"]["code"] == -32020
        validate_definition(REVISION, "HeaderMismatchError", response.json())
    # An invalid declaration is not enforced.
    unchecked = client.post("tools/call", {"name": "badly_declared", "arguments": {"n": 1.5}, "_meta": meta()})
    assert unchecked.status_code == 200 and unchecked.json()["result"]["content"][0]["text"] == "ran"


def test_a_tool_registered_again_is_held_to_its_new_headers(client: Client, running: RunningHTTPServer) -> None:
    # The app works out a tool's declarations once: a tool replaced under the same name must not keep the old ones.
    assert locate(client, {"region": "eu"}, Mcp_Param_Region="eu").ok
    running.app.server.unregister_tool("locate")
    running.app.server.register_tool(
        "locate",
        lambda args, ctx: "new",
        description="Mirrors a different argument",
        input_schema={"type": "object", "properties": {"city": {"type": "string", "x-mcp-header": "City"}}},
    )
    assert locate(client, {"region": "eu"}).ok  # no longer declared: no header needed
    refused = locate(client, {"city": "Oslo"}, Mcp_Param_City="Bergen")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020
    assert locate(client, {"city": "Oslo"}, Mcp_Param_City="Oslo").json()["result"]["content"][0]["text"] == "new"


def test_header_helpers() -> None:
    assert header_text("=?base64??=") == ""
    assert header_text("tab\tinside") == "tab\tinside"
    assert header_text("caf\xe9") is None
    assert header_text("=?base64?SGVsbG8=") == "=?base64?SGVsbG8="
    string = {"type": "string", "x-mcp-header": "A"}
    invalid = [
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "object", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "a:b"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "Régión"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": 7}}},
        {"properties": {"a": string, "b": {"type": "string", "x-mcp-header": "a"}}},
        {"properties": {"a": {"type": "array", "items": string}}},
        {"properties": {"a": string}, "anyOf": [{"properties": {"b": string}}]},
        {"$defs": {"x": string}, "properties": {"a": {"$ref": "#/$defs/x"}}},
        {"properties": {"a": {"properties": {"b": {"type": "string", "x-mcp-header": "B/C"}}}}},
    ]
    for schema in invalid:  # one codec for both roles: an invalid declaration raises, and the server catches it
        with pytest.raises(InvalidHeaderDeclaration):
            header_declarations(schema)
    assert header_declarations({"properties": {"a": "not a schema", "b": string}}) == {"A": ("b",)}
    assert header_declarations({"properties": "odd"}) == {}
    assert header_declarations({"properties": {"o": {"properties": {"p": string}}}}) == {"A": ("o", "p")}
    assert param_header_problem("A", None, None) is None
    assert param_header_problem("A", "1", None) == "header Mcp-Param-A is sent, but the argument has no value"
    assert param_header_problem("A", "1e3", 1000) is None
    assert param_header_problem("A", "caf\xe9", "café") == "header Mcp-Param-A is not a valid value"


# --------------------------------------------------------------- streaming


def test_progress_and_logs_stream_before_the_result(client: Client) -> None:
    params = {"name": "steps", "arguments": {}, "_meta": {**meta(), "progressToken": "progress-test-1"}}
    response = client.post("tools/call", params)
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.text.startswith(": stream\n\n")
    *notifications, last = messages_of(response)
    assert [n["params"]["progress"] for n in notifications] == [1, 2, 3]
    assert {n["params"]["progressToken"] for n in notifications} == {"progress-test-1"}
    for notification in notifications:
        validate_definition(REVISION, "ProgressNotification", notification)
    validate_definition(REVISION, "CallToolResultResponse", last)
    # Log messages only for a request that names a level.
    logged = messages_of(
        client.post("tools/call", {"name": "steps", "arguments": {}, "_meta": meta(**{LOG_LEVEL: "info"})})
    )
    assert [m["method"] for m in logged[:-1]] == ["notifications/message"]
    validate_definition(REVISION, "LoggingMessageNotification", logged[0])
    quiet = client.post("tools/call", {"name": "steps", "arguments": {}, "_meta": meta()})
    assert quiet.headers["Content-Type"] == "application/json"


def test_json_only_apps_answer_in_json(serve: Callable[..., RunningHTTPServer]) -> None:
    client = Client(serve(json_response=True).url)
    params = {"name": "steps", "arguments": {}, "_meta": {**meta(), "progressToken": 7}}
    response = client.post("tools/call", params)
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "stepped"
    # A subscription is a stream all the same.
    stream = client.stream("subscriptions/listen", {"_meta": meta(), "notifications": {"toolsListChanged": True}})
    try:
        assert stream.response.getheader("Content-Type") == "text/event-stream"
        assert stream.message()["method"] == "notifications/subscriptions/acknowledged"
    finally:
        stream.close()


def test_stateless_apps_serve_2026_too(serve: Callable[..., RunningHTTPServer]) -> None:
    client = Client(serve(stateless=True).url)
    assert client.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})["resultType"] == "complete"


# ------------------------------------------------------ multi round-trip


def test_input_required_rounds_over_http(client: Client) -> None:
    first = client.call("tools/call", {"name": "greet", "arguments": {}})
    validate_definition(REVISION, "InputRequiredResult", first)
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
    answer = {"action": "accept", "content": {"name": "Ada"}}
    retry = {"name": "greet", "arguments": {}, "inputResponses": {"user_name": answer}}
    done = client.call("tools/call", {**retry, "requestState": first["requestState"]})
    validate_definition(REVISION, "CallToolResult", done)
    assert done["content"][0]["text"] == "Hello, Ada!"
    tampered = client.post(
        "tools/call", {**retry, "requestState": first["requestState"] + "-TAMPERED", "_meta": meta()}
    )
    assert tampered.status_code == 200 and tampered.json()["error"]["code"] == -32602
    prompt = client.call("prompts/get", {"name": "topic"})
    assert prompt["resultType"] == "input_required"
    retry_prompt = {"name": "topic", "inputResponses": {"topic": {"action": "accept", "content": {"t": "bees"}}}}
    got = client.call("prompts/get", {**retry_prompt, "requestState": prompt["requestState"]})
    validate_definition(REVISION, "GetPromptResult", got)
    assert got["messages"][0]["content"]["text"] == "Write about bees."


# ----------------------------------------------------------- subscriptions


def listen(client: Client, **notifications: Any) -> Stream:
    return client.stream("subscriptions/listen", {"_meta": meta(), "notifications": notifications})


def test_listen_streams_get_the_changes_they_asked_for(client: Client) -> None:
    tools = listen(client, toolsListChanged=True)
    prompts = listen(client, promptsListChanged=True)
    try:
        for stream in (tools, prompts):
            assert stream.response.status == 200
            assert stream.response.getheader("Content-Type") == "text/event-stream"
            assert stream.response.getheader("Mcp-Session-Id") is None
        ack = tools.message()
        validate_definition(REVISION, "SubscriptionsAcknowledgedNotification", ack)
        tools_id = ack["params"]["_meta"][SUBSCRIPTION_ID]
        prompts_id = prompts.message()["params"]["_meta"][SUBSCRIPTION_ID]
        assert tools_id != prompts_id
        assert client.call("tools/call", {"name": "change_tools", "arguments": {}})["content"][0]["text"] == "changed"
        assert client.call("tools/call", {"name": "change_prompts", "arguments": {}})["content"][0]["text"] == "changed"
        changed = tools.message()
        validate_definition(REVISION, "ToolListChangedNotification", changed)
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"][SUBSCRIPTION_ID] == tools_id
        # The prompts stream got the prompt change only: the tool change was not for it.
        changed = prompts.message()
        validate_definition(REVISION, "PromptListChangedNotification", changed)
        assert changed["params"]["_meta"][SUBSCRIPTION_ID] == prompts_id
    finally:
        tools.close()
        prompts.close()


def test_closing_a_listen_stream_ends_the_subscription(running: RunningHTTPServer, client: Client) -> None:
    stream = listen(client, toolsListChanged=True)
    assert stream.message()["method"] == "notifications/subscriptions/acknowledged"
    host = running.app._stateless_host.session
    assert host is not None and len(host._listening()) == 1
    stream.close()
    # The next keep-alive write fails: closing the stream is the listen's cancellation, which ends it.
    deadline = time.monotonic() + TIMEOUT
    while host._listening() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert host._listening() == [] and running.app.server.sessions == [host]


def test_closing_a_stream_cancels_the_request(running: RunningHTTPServer, client: Client, probe: Probe) -> None:
    stream = client.stream("tools/call", {"name": "wait_cancel", "arguments": {}, "_meta": meta()})
    assert probe.started.wait(TIMEOUT)
    assert stream.response.getheader("Content-Type") == "text/event-stream"  # streaming pings after 0.2 s
    stream.close()
    assert probe.cancelled.wait(TIMEOUT)


def test_shutdown_ends_subscriptions_with_their_result(running: RunningHTTPServer, client: Client) -> None:
    stream = listen(client, resourceSubscriptions=["memo://one"])
    try:
        ack = stream.message()
        running.app.server.mark_resource_updated("memo://one")
        updated = stream.message()
        validate_definition(REVISION, "ResourceUpdatedNotification", updated)
        assert updated["params"]["uri"] == "memo://one"
        running.close()
        ended = stream.message()
        validate_definition(REVISION, "SubscriptionsListenResultResponse", ended)
        assert ended["id"] == ack["params"]["_meta"][SUBSCRIPTION_ID] == ended["result"]["_meta"][SUBSCRIPTION_ID]
        with pytest.raises(EOFError):
            stream.message()
    finally:
        stream.close()


def test_shutdown_answers_handlers_that_do_not_stop(running: RunningHTTPServer, client: Client, probe: Probe) -> None:
    result: list[requests.Response] = []
    caller = threading.Thread(
        target=lambda: result.append(client.post("tools/call", {"name": "stubborn", "arguments": {}, "_meta": meta()}))
    )
    caller.start()
    assert probe.started.wait(TIMEOUT)
    running.app.close(timeout=0.3)
    probe.release.set()
    caller.join(TIMEOUT)
    [response] = result
    assert messages_of(response)[-1]["error"]["code"] == -32603  # the server is shutting down
    late = client.post("tools/list", {"_meta": meta()})
    assert late.status_code == 503


def test_a_request_arriving_as_the_app_closes_is_refused(probe: Probe) -> None:
    """The app closes between the first check and the request's own session: it is not served."""
    server = build_server(probe)
    apps: list[StreamableHTTPApp] = []

    def verify(token: str) -> dict[str, Any]:
        apps[0].close()
        return {"sub": "someone"}

    with start_http(server, token_verifier=verify) as running:
        apps.append(running.app)
        response = Client(running.url).post("tools/list", {"_meta": meta()}, Authorization="Bearer t")
        assert response.status_code == 503
    server.stop()


def test_subscription_routing_in_the_transport() -> None:
    """Tagged notifications go to the listen POST they name; anything else falls through."""
    transport = StreamableSessionTransport(event_store=None)
    listening = transport.open_post(5, priming=False)
    silent = transport.open_post(6, json_only=True, priming=False)

    def tagged(tag: Any) -> JSONRPCNotification:
        return JSONRPCNotification(method="notifications/tools/list_changed", params={"_meta": {SUBSCRIPTION_ID: tag}})

    for message in (tagged(True), tagged(6), tagged(99), tagged(None)):
        transport.send(message)  # no stream carries these: dropped
    transport.send(tagged(5))
    event = listening.queue.get_nowait()
    assert isinstance(event, StreamEvent) and event.message == tagged(5) and listening.mode == "sse"
    assert listening.queue.empty() and silent.queue.empty()
    transport.send(error_response(6, -32601, "nope"))
    assert isinstance(silent.queue.get_nowait(), StreamEvent)
    transport.close()
    assert listening.queue.get_nowait() is Signal.CLOSED


# ----------------------------------------------------------- scale-out


def start_example(port: int, secret: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "MCP_SYNC_REQUEST_STATE_SECRET": secret,
    }
    with open(log, "wb") as output:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "conformance_server.py"), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )


def stop_example(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(2)  # SIGINT: a normal exit, so that coverage is saved
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.timeout(120)
def test_two_processes_serve_one_client_interchangeably(tmp_path: Path) -> None:
    """Round robin over two server processes that share the request-state secret, as behind a load balancer."""
    ports = [conformance.free_port(), conformance.free_port()]
    processes = [start_example(port, "one secret for all", tmp_path / f"{port}.log") for port in ports]
    try:
        for port, process in zip(ports, processes, strict=True):
            conformance.wait_for_port(port, process=process)
        clients = [Client(f"http://127.0.0.1:{port}/mcp") for port in ports]
        turn = iter(range(1_000_000))

        def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
            balanced = clients[next(turn) % 2]
            balanced.next_id = sum(c.next_id for c in clients)  # one client: ids keep growing
            return balanced.call(method, params)

        assert call("server/discover", {})["supportedVersions"][-1] == REVISION
        names = [tool["name"] for tool in call("tools/list", {})["tools"]]
        assert names == [tool["name"] for tool in call("tools/list", {})["tools"]]
        first = call("tools/call", {"name": "test_input_required_result_multi_round", "arguments": {}})
        assert first["resultType"] == "input_required"
        second = call(
            "tools/call",
            {
                "name": "test_input_required_result_multi_round",
                "arguments": {},
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": first["requestState"],
            },
        )
        assert second["resultType"] == "input_required" and "favorite_color" in second["inputRequests"]
        third = call(
            "tools/call",
            {
                "name": "test_input_required_result_multi_round",
                "arguments": {},
                "inputResponses": {"favorite_color": {"action": "accept", "content": {"color": "blue"}}},
                "requestState": second["requestState"],
            },
        )
        assert third["content"][0]["text"] == "Ada likes blue"
    finally:
        for process in processes:
            stop_example(process)
    assert [process.returncode for process in processes] == [0, 0]


# ------------------------------------------------------ a session per request


@pytest.mark.timeout(120)
def test_a_request_makes_no_session_and_starts_no_thread(
    running: RunningHTTPServer, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What keeps a 2026-07-28 request cheap: it is served by the app's one host session (no session,
    dispatcher or transport is made for it), on the app's kept handler threads (nothing starts a thread
    per request)."""
    rounds = 100
    call = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}
    headers = standard_headers("tools/call", call)
    assert client.call("tools/call", call)["content"][0]["text"] == "hi"  # the host and a handler thread start
    server = running.app.server
    (host,) = server.sessions
    opened = threading.Semaphore(0)
    server.events.on(CONNECTION_OPENED, lambda event: opened.release())
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    for _ in range(rounds):
        response = client.http.post(client.url, json=client.body("tools/call", call), headers=headers, timeout=TIMEOUT)
        assert response.status_code == 200 and response.json()["result"]["content"][0]["text"] == "hi"
    monkeypatch.undo()
    assert not opened.acquire(timeout=0.1) and server.sessions == [host]
    # One more thread starts only when a request comes before the last one's thread is back waiting; a
    # thread per request would be a hundred.
    assert len(started) < rounds // 10, started
    assert set(started) <= {"mcp-sync-http-handler"}


def test_a_request_leaves_nothing_for_the_cycle_collector(
    running: RunningHTTPServer, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's parts (its context, its way back) hold no reference cycle: reference counting frees them
    once it is answered, so a busy server does not leave a heap of them for the cyclic collector to find."""
    call = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}
    assert client.call("tools/call", call)["content"][0]["text"] == "hi"  # threads, caches and the host warm
    (host,) = running.app.server.sessions
    made: list[weakref.ref[Any]] = []
    serve = host.dispatcher.serve

    def tracked(request: Any, handler: Any, **options: Any) -> None:
        def handle(params: Any, ctx: Any) -> Any:
            made.extend(weakref.ref(part) for part in (ctx, ctx.writer, ctx.cancelled))
            return handler(params, ctx)

        serve(request, handle, **options)

    monkeypatch.setattr(host.dispatcher, "serve", tracked)
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            assert client.call("tools/call", call)["content"][0]["text"] == "hi"
        # The handler thread lets go of its request just after the answer: wait for that, collector off.
        deadline = time.monotonic() + TIMEOUT
        while any(ref() is not None for ref in made) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(made) == 15 and [ref() for ref in made] == [None] * 15
    finally:
        gc.enable()


def test_closing_the_app_ends_its_handler_threads(running: RunningHTTPServer, client: Client) -> None:
    """The threads kept for 2026-07-28 requests do not outlive the server's close(): the handler thread that
    streamed an answer while its handler ran on the connection's thread, and the thread watching such handlers."""
    params = {"name": "steps", "arguments": {}, "_meta": {**meta(), "progressToken": "threads-1"}}
    assert client.post("tools/call", params).headers["Content-Type"] == "text/event-stream"
    names = ("mcp-sync-http-handler", "mcp-sync-http-lend-watch")
    kept = {name: [thread for thread in threading.enumerate() if thread.name == name] for name in names}
    assert all(kept.values())
    running.close()
    assert not [thread for threads in kept.values() for thread in threads if thread.is_alive()]


def test_the_host_session_builds_no_handshake_parts(running: RunningHTTPServer, client: Client) -> None:
    """The session serving 2026-07-28 requests makes no handshake Event (nothing waits for an ``initialize``);
    a request that streams its progress still gets both its notifications and its result."""
    call = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta()}
    assert client.call("tools/call", call)["content"][0]["text"] == "hi"
    (session,) = running.app.server.sessions
    assert session.per_request and session._initialized is None
    session.list_changed("tools")  # no handshake, no listen stream: nothing to tell, and no Event made for it
    assert session._initialized is None
    assert not session.initialized.is_set()  # made when asked for, unset
    params = {"name": "steps", "arguments": {}, "_meta": {**meta(), "progressToken": "lazy-1"}}
    *notifications, last = messages_of(client.post("tools/call", params))
    assert [n["params"]["progress"] for n in notifications] == [1, 2, 3]
    assert "result" in last and last["id"] == client.next_id
    assert running.app.server.sessions == [session]
