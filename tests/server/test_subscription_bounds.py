"""A session follows at most ``MAX_SUBSCRIPTIONS`` resources: one more is refused, in both eras."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mcp_sync.server.session
from mcp_sync import MCPClient, MCPError, MCPServer
from mcp_sync.protocol.errors import MCP_CODES
from mcp_sync.server.session import ServerSession
from mcp_sync.transports.memory import InMemoryTransport

WAIT = 10.0


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MCPServer]:
    monkeypatch.setattr(mcp_sync.server.session, "MAX_SUBSCRIPTIONS", 3)
    srv = MCPServer("bounded")
    try:
        yield srv
    finally:
        srv.stop()


def connect(server: MCPServer, era: str) -> MCPClient:
    client = MCPClient(era=era)
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client.connect(client_end)
    return client


def test_a_subscription_past_the_bound_is_invalid_params_until_one_ends(server: MCPServer) -> None:
    client = connect(server, "handshake")
    try:
        for n in range(3):
            client.subscribe_resource(f"notes://{n}", timeout=WAIT)
        client.subscribe_resource("notes://0", timeout=WAIT)  # one followed already takes no more room
        with pytest.raises(MCPError) as refused:
            client.subscribe_resource("notes://3", timeout=WAIT)
        assert refused.value.code == MCP_CODES.INVALID_PARAMS
        assert "already follows 3 resources" in str(refused.value)
        (session,) = server.sessions
        assert session.subscriptions == {"notes://0", "notes://1", "notes://2"}

        client.unsubscribe_resource("notes://1", timeout=WAIT)
        client.subscribe_resource("notes://3", timeout=WAIT)
        assert session.subscriptions == {"notes://0", "notes://2", "notes://3"}
    finally:
        client.disconnect()


def test_a_listen_past_the_bound_is_refused_and_follows_nothing(server: MCPServer) -> None:
    heard: list[tuple[str, bool]] = []

    def watch(session: ServerSession, uri: str, subscribed: bool) -> None:
        heard.append((uri, subscribed))

    server.on_subscription(watch)
    client = connect(server, "stateless")
    try:
        with pytest.raises(MCPError) as refused:
            client.listen(resource_uris=[f"notes://{n}" for n in range(4)], timeout=WAIT)
        assert refused.value.code == MCP_CODES.INVALID_PARAMS
        # The three it took were given back when the fourth was refused.
        assert sorted(uri for uri, on in heard if on) == sorted(uri for uri, on in heard if not on)
        assert len(heard) == 6

        with client.listen(resource_uris=[f"notes://{n}" for n in range(3)], timeout=WAIT):
            assert [on for _, on in heard[6:]] == [True, True, True]
    finally:
        client.disconnect()
