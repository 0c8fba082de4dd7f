"""The HTTP server's per-request path does each piece of work once and keeps its answers exact.

Real sockets on 127.0.0.1 (raw ``requests`` calls), a real :class:`MCPServer`.
What is worked out once per header name or value (environ keys, the
``Content-Type``, ``Connection``) must still give each request its own
answer, and a 2026-07-28 request's ``_meta`` is read once, by the app, and
handed to the session that serves it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcp_sync import Context, MCPServer
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.stateless import StatelessRequest

REVISION = "2026-07-28"
TIMEOUT = 10.0


def _server() -> MCPServer:
    server = MCPServer("request-path")

    @server.tool(structured_output=False)
    def who(ctx: Context) -> str:
        """The name the calling client gave in its ``_meta``."""
        return str(ctx.meta.get(CLIENT_INFO, {}).get("name"))

    return server


@pytest.fixture
def running() -> Iterator[RunningHTTPServer]:
    with start_http(_server()) as handle:
        yield handle


def _call(url: str, name: str, request_id: Any = 1, **headers: str) -> requests.Response:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "who",
            "arguments": {},
            "_meta": {
                PROTOCOL_VERSION: REVISION,
                CLIENT_CAPABILITIES: {},
                CLIENT_INFO: {"name": name, "version": "1"},
            },
        },
    }
    sent = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "who",
        **headers,
    }
    return requests.post(url, json=body, headers=sent, timeout=TIMEOUT)


def test_a_stateless_request_has_its_meta_read_once_and_served_from_that_read(
    running: RunningHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[dict[str, Any]] = []
    real = StatelessRequest.read.__func__  # type: ignore[attr-defined]

    def counted(cls: type[StatelessRequest], params: dict[str, Any]) -> StatelessRequest:
        reads.append(params)
        return real(cls, params)  # type: ignore[no-any-return]

    monkeypatch.setattr(StatelessRequest, "read", classmethod(counted))
    for number, name in enumerate(["first", "second", "third"], start=1):
        answer = _call(running.url, name, number)
        assert answer.status_code == 200
        result = answer.json()["result"]
        assert result["content"] == [{"type": "text", "text": name}]
        assert result["resultType"] == "complete"
    assert [params["_meta"][CLIENT_INFO]["name"] for params in reads] == ["first", "second", "third"]


def test_a_malformed_meta_is_still_refused_before_the_tool_runs(running: RunningHTTPServer) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "who", "arguments": {}, "_meta": {PROTOCOL_VERSION: REVISION}},
    }
    headers = {
        "Accept": "application/json",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "who",
    }
    answer = requests.post(running.url, json=body, headers=headers, timeout=TIMEOUT)
    assert answer.status_code == 400
    assert answer.json()["id"] == 9
    assert answer.json()["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json", 200),
        ("text/plain", 415),
        ("application/json; charset=latin-1", 415),
        ('Application/JSON; Charset="UTF-8"', 200),
        ("application/json", 200),
    ],
)
def test_each_content_type_gets_its_own_answer_on_one_server(
    running: RunningHTTPServer, content_type: str, status: int
) -> None:
    assert _call(running.url, "typed", **{"Content-Type": content_type}).status_code == status


def _raw_exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_header_names_in_any_case_and_connection_tokens_are_judged_per_request(running: RunningHTTPServer) -> None:
    port = int(running.url.rsplit(":", 1)[1].split("/")[0])
    body = (
        b'{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"who","arguments":{},'
        b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{},'
        b'"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}'
    )

    def request(connection: bytes, names: tuple[bytes, bytes]) -> bytes:
        return (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + names[0]
            + b": application/json\r\n"
            + names[1]
            + b": %d\r\nAccept: application/json\r\nmcp-protocol-version: 2026-07-28\r\n"
            b"MCP-METHOD: tools/call\r\nMcp-Name: who\r\nConnection: " % len(body) + connection + b"\r\n\r\n" + body
        )

    # Two requests on one connection: the first keeps it open (keep-alive among other tokens), the second closes it.
    answer = _raw_exchange(
        port,
        request(b"x-other, Keep-Alive", (b"content-type", b"CONTENT-LENGTH"))
        + request(b"upgrade, Close", (b"Content-Type", b"Content-Length")),
    )
    heads = answer.split(b"HTTP/1.1 ")[1:]
    assert len(heads) == 2
    assert all(head.startswith(b"200 OK") and b'"text":"raw"' in head for head in heads)
    assert b"Connection: close" not in heads[0] and b"Connection: close" in heads[1]


def test_each_host_is_judged_against_the_apps_current_allowed_hosts(running: RunningHTTPServer) -> None:
    port = int(running.url.rsplit(":", 1)[1].split("/")[0])
    assert _call(running.url, "local", Host=f"127.0.0.1:{port}").status_code == 200
    assert _call(running.url, "elsewhere", Host="evil.example").status_code == 421
    running.app.allowed_hosts = ["evil.example"]  # a list, as a caller may set it
    assert _call(running.url, "elsewhere", Host="evil.example").status_code == 200
    assert _call(running.url, "local", Host=f"127.0.0.1:{port}").status_code == 421
