"""Each 2026-07-28 request carries the client's ``_meta`` merged over its own; neither changes the other.

The client keeps one ``_meta`` and merges it into each request it sends:
a request with ``_meta`` of its own keeps those keys beside the client's,
and what one request carried never shows up in the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import Context, MCPClient, MCPServer
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import CallToolRequestParams, CallToolResult

OURS = {PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO}


@pytest.fixture
def client() -> Iterator[MCPClient]:
    server = MCPServer("meta-echo")

    @server.tool
    def meta(ctx: Context) -> dict[str, Any]:
        """The request's _meta as the server read it."""
        return {"meta": ctx.meta}

    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    connected = MCPClient("meta-test", era="stateless", timeout=10.0)
    connected.connect(client_end)
    try:
        yield connected
    finally:
        connected.close()
        server.stop()


def seen(client: MCPClient, own: dict[str, Any] | None) -> dict[str, Any]:
    params = CallToolRequestParams(name="meta", arguments={}, _meta=own)
    result = client.send_request("tools/call", params, CallToolResult)
    assert result.structured_content is not None
    found: dict[str, Any] = result.structured_content["meta"]
    return found


def test_a_request_with_meta_of_its_own_carries_both(client: MCPClient) -> None:
    plain = seen(client, None)
    assert set(plain) == OURS and plain[CLIENT_INFO] == {"name": "meta-test", "version": "0.1.0"}
    tagged = seen(client, {"example.com/tag": "one"})
    assert tagged == {**plain, "example.com/tag": "one"}
    # The client's own keys win over a request's: the revision is the connection's.
    forced = seen(client, {PROTOCOL_VERSION: "1999-01-01"})
    assert forced == plain
    assert seen(client, None) == plain and seen(client, {}) == plain
    meta = client.request_meta
    assert meta.copy("2026-07-28") == plain and meta.copy("2026-07-28") is not meta.copy("2026-07-28")
