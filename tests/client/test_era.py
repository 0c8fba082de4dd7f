"""The era a connection speaks: chosen once, when negotiation ends, and what each era does differently.

Our client against our server in memory (every message recorded), and
against scripted JSON-RPC peers for answers no real server of ours gives:
which strategy each negotiation outcome settles, the old and new names of
the eras, and how each era refuses a question whose provider is missing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_sync.client.core import MCPClient
from mcp_sync.client.era import HandshakeEra, StatelessEra, resolve_era
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.server.context import Context
from mcp_sync.server.core import MCPServer
from mcp_sync.server.session import ServerSession
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    Root,
    TextContent,
)
from tests.helpers import RecordingTransport

STATELESS = "2026-07-28"
TIMEOUT = 10.0


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="blue"), model="m")


def elicit(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def roots() -> list[Root]:
    return [Root(uri="file:///work")]


@pytest.fixture
def server() -> Iterator[MCPServer]:
    built = MCPServer("eras", "1.0")

    @built.tool
    def colour_and_roots(ctx: Context) -> str:
        """Samples, then asks for the roots: two input rounds in 2026-07-28."""
        answer = ctx.sample("Colour?", max_tokens=5)
        assert isinstance(answer.content, TextContent)
        return f"{answer.content.text} {[root.uri for root in ctx.list_roots()]}"

    built.register_resource("mem://doc", lambda uri, ctx: "the doc")
    try:
        yield built
    finally:
        built.stop()


class Link:
    """A client connected in memory to ``server``; the messages it sent are kept."""

    def __init__(self, server: MCPServer, **options: Any) -> None:
        client_end, server_end = InMemoryTransport.pair()
        self.wire = RecordingTransport(client_end)
        self.session: ServerSession = server.start(server_end)
        self.client = MCPClient(timeout=TIMEOUT, **options)
        self.client.connect(self.wire)

    def methods(self) -> list[str]:
        return [message["method"] for message in map(json.loads, self.wire.sent) if "method" in message]


@pytest.fixture
def link(server: MCPServer) -> Iterator[Callable[..., Link]]:
    made: list[Link] = []

    def make(**options: Any) -> Link:
        made.append(Link(server, **options))
        return made[-1]

    try:
        yield make
    finally:
        for each in made:
            each.client.close()


@contextlib.contextmanager
def scripted(**handlers: Callable[[dict[str, Any], RequestContext], Any]) -> Iterator[InMemoryTransport]:
    """A JSON-RPC peer answering with ``handlers`` (``server__discover`` for ``server/discover``)."""
    client_end, server_end = InMemoryTransport.pair()
    peer = JsonRpcDispatcher(server_end, side="server", timeout=5)
    for name, handler in handlers.items():
        peer.register_handler(name.replace("__", "/"), handler)
    peer.start()
    try:
        yield client_end
    finally:
        peer.close()


def discovered(versions: list[str], **capabilities: Any) -> dict[str, Any]:
    return {"supportedVersions": versions, "capabilities": capabilities, "resultType": "complete"}


INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}


# ----------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("auto", "auto"),
        ("handshake", "handshake"),
        ("stateless", "stateless"),
    ],
)
def test_each_era_name(given: Any, meant: str) -> None:
    assert resolve_era(given) == meant
    assert MCPClient(era=given).era == meant


@pytest.mark.parametrize("old", ["x", "legacy", "modern"])
def test_an_unknown_era_names_the_accepted_ones(old: str) -> None:
    # "legacy" and "modern", the names of an unreleased draft, are refused like any other unknown word.
    with pytest.raises(ValueError, match=f"'auto', 'handshake' or 'stateless', not '{old}'"):
        MCPClient(era=old)  # type: ignore[arg-type]


# --------------------------------------------------------- negotiation


def test_the_stateless_era_is_settled_after_discovery(link: Callable[..., Link]) -> None:
    client = link().client
    era = client._connection()
    assert isinstance(era, StatelessEra) and era.revision == client._stateless_revision == STATELESS
    assert client.negotiated_era == "stateless"
    assert client._peer is era.peer and client.discover_result is era.discover_result is not None
    assert client.initialize_result is None
    client.ping()
    assert client._connection() is era  # decided once: later calls find the same strategy


def test_the_handshake_era_is_settled_after_initialize(link: Callable[..., Link]) -> None:
    conn = link(era="handshake")
    client = conn.client
    era = client._connection()
    assert isinstance(era, HandshakeEra) and client._stateless_revision is None
    assert client.negotiated_era == "handshake"
    assert client.initialize_result is era.peer is client._peer and client.discover_result is None
    assert conn.methods()[:2] == ["initialize", "notifications/initialized"]


class EraAwareWire(RecordingTransport):
    """A transport whose wire form depends on the era: it is told the era, and keeps what it was told."""

    def __init__(self, inner: InMemoryTransport) -> None:
        super().__init__(inner)
        self.told: list[str | None] = []

    def set_stateless_revision(self, revision: str | None) -> None:
        self.told.append(revision)


@pytest.mark.parametrize(
    ("era", "handlers", "told"),
    [
        ("stateless", {"server__discover": lambda p, c: discovered([STATELESS])}, [STATELESS]),
        ("handshake", {"initialize": lambda p, c: INIT}, [None]),
        # The probe goes at 2026-07-28; the server does not speak it, and the transport is told so before initialize.
        (
            "auto",
            {
                "server__discover": lambda p, c: (_ for _ in ()).throw(MCPError(MCP_CODES.METHOD_NOT_FOUND, "no")),
                "initialize": lambda p, c: INIT,
            },
            [STATELESS, None],
        ),
    ],
)
def test_the_negotiation_tells_an_era_aware_transport_its_era(
    era: str, handlers: dict[str, Callable[[dict[str, Any], RequestContext], Any]], told: list[str | None]
) -> None:
    with scripted(**handlers) as end, MCPClient(era=era, timeout=TIMEOUT) as client:  # type: ignore[arg-type]
        wire = EraAwareWire(end)
        client.connect(wire)
        assert wire.told == told
        assert client.negotiated_era == ("stateless" if told[-1] else "handshake")


def test_auto_with_a_handshake_revision_named_settles_the_handshake_without_probing(
    link: Callable[..., Link],
) -> None:
    conn = link(protocol_version="2025-06-18")
    assert isinstance(conn.client._connection(), HandshakeEra)
    assert "server/discover" not in conn.methods() and conn.client.protocol_version == "2025-06-18"


def test_each_connection_negotiates_its_own_era(server: MCPServer) -> None:
    """One client, two connections: a handshake-only peer first, then a stateless server."""
    client = MCPClient(timeout=TIMEOUT)

    def refuse(params: dict[str, Any], ctx: RequestContext) -> Any:
        raise MCPError(MCP_CODES.METHOD_NOT_FOUND, "what?")  # as servers of the handshake era answer the probe

    with scripted(server__discover=refuse, initialize=lambda p, c: INIT) as end:
        client.connect(end)
        assert client.negotiated_era == "handshake"
        client.disconnect()
    assert client._era is None and client._peer is None and client._stateless_revision is None
    with pytest.raises(MCPError) as caught:
        client.negotiated_era  # noqa: B018
    assert caught.value.code == MCP_CODES.NOT_INITIALIZED
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    with client:
        client.connect(client_end)
        assert client.negotiated_era == "stateless"


def test_a_discovery_listing_only_handshake_revisions_settles_the_handshake() -> None:
    offered: list[str] = []

    def initialize(params: dict[str, Any], ctx: RequestContext) -> Any:
        offered.append(params["protocolVersion"])
        return {**INIT, "protocolVersion": params["protocolVersion"]}

    with (
        scripted(server__discover=lambda p, c: discovered(["2025-03-26"]), initialize=initialize) as end,
        MCPClient() as client,
    ):
        client.connect(end)
        assert isinstance(client._connection(), HandshakeEra) and offered == ["2025-03-26"]
        assert client.discover_result is None


# ------------------------------------------------------- what differs


def test_the_operations_that_differ_go_to_the_era(link: Callable[..., Link]) -> None:
    handshake, stateless = link(era="handshake", roots_provider=roots), link(roots_provider=roots)
    sent: dict[str, list[str]] = {}
    for name, conn in (("handshake", handshake), ("stateless", stateless)):
        before = len(conn.methods())
        conn.client.ping()
        conn.client.set_log_level("error")
        conn.client.refresh_roots()
        conn.client.subscribe_resource("mem://doc")
        conn.client.unsubscribe_resource("mem://doc")
        sent[name] = conn.methods()[before:]
    assert sent["handshake"] == [
        "ping",
        "logging/setLevel",
        "notifications/roots/list_changed",
        "resources/subscribe",
        "resources/unsubscribe",
    ]
    assert sent["stateless"] == [
        "server/discover",  # ping; the level and the roots change send nothing
        "subscriptions/listen",  # the subscription is a stream; unsubscribing closes it
        "notifications/cancelled",
    ]
    assert stateless.client.request_meta.log_level == "error"


def test_a_second_subscription_to_a_uri_replaces_its_stream(link: Callable[..., Link]) -> None:
    client = link().client
    era = client._connection()
    assert isinstance(era, StatelessEra)
    client.subscribe_resource("mem://doc")
    first = era._streams["mem://doc"]
    client.subscribe_resource("mem://doc")
    assert first.done.wait(5) and era._streams["mem://doc"] is not first
    client.unsubscribe_resource("mem://doc")
    assert era._streams == {}


# -------------------------------------------------------------- providers


def test_the_same_providers_answer_in_both_eras(link: Callable[..., Link]) -> None:
    asked: list[str] = []

    def sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append("sampling")
        return sample(params)

    handshake = link(era="handshake", sampling_provider=sampler, roots_provider=roots)
    stateless = link(sampling_provider=sampler, roots_provider=roots)
    assert handshake.session.create_message(CreateMessageRequestParams(messages=[], max_tokens=1)).model == "m"
    assert handshake.session.list_roots().roots == roots()
    assert stateless.client.call_tool("colour_and_roots").text == "blue ['file:///work']"
    assert asked == ["sampling", "sampling"]
    assert handshake.client.roots() == stateless.client.roots() == roots()


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("sampling_provider", "this client does not support sampling"),
        ("roots_provider", "this client does not expose roots"),
        ("elicitation_provider", "this client does not support elicitation"),
    ],
)
def test_a_missing_provider_in_the_handshake_era_is_method_not_found(
    link: Callable[..., Link], provider: str, message: str
) -> None:
    conn = link(era="handshake", sampling_provider=sample, roots_provider=roots, elicitation_provider=elicit)
    setattr(conn.client, provider, None)  # declared at initialize, withdrawn since
    form = ElicitRequestFormParams.model_validate(
        {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
    )
    ask: dict[str, Callable[[], Any]] = {
        "sampling_provider": lambda: conn.session.create_message(CreateMessageRequestParams(messages=[], max_tokens=1)),
        "roots_provider": conn.session.list_roots,
        "elicitation_provider": lambda: conn.session.elicit(form),
    }
    with pytest.raises(MCPError) as caught:
        ask[provider]()
    assert (caught.value.code, caught.value.jsonrpc_code) == (MCP_CODES.METHOD_NOT_FOUND, -32601)
    assert caught.value.message == message


@pytest.mark.parametrize(
    ("wanted", "kind"),
    [("sampling/createMessage", "sampling"), ("roots/list", "roots"), ("elicitation/create", "elicitation")],
)
def test_a_missing_provider_in_the_stateless_era_is_a_missing_capability(wanted: str, kind: str) -> None:
    interim = {"resultType": "input_required", "inputRequests": {"k": {"method": wanted, "params": {}}}}
    with (
        scripted(
            server__discover=lambda p, c: discovered([STATELESS], tools={}),
            tools__list=lambda p, c: {"tools": []},
            tools__call=lambda p, c: interim,
        ) as end,
        MCPClient(timeout=TIMEOUT) as client,
    ):
        client.connect(end)
        with pytest.raises(MCPError) as caught:
            client.call_tool("t")
    assert caught.value.code == MCP_CODES.MISSING_CAPABILITY
    assert caught.value.message == (
        f"the server asked, while answering tools/call, for {kind} (input 'k'), but this client has no {kind} provider"
    )
    assert caught.value.context == {"method": "tools/call", "input": "k"}
