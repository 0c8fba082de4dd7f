"""The client in the stateless revision 2026-07-28, and the probe that chooses an era.

- Our client against our server: in memory (with every message recorded),
  over stdio (``examples/echo_server.py``, ``examples/library_server.py``)
  and over HTTP (:func:`mcp_sync.server.start_http`), in ``auto``
  (which lands on 2026-07-28), ``modern`` and ``legacy``: input rounds
  answered by the providers, ``_meta`` on every request, the response
  cache, subscriptions, logging, ``ping``.
- ``auto`` against servers that speak only the handshake revisions, each
  refusing the probe its own way: the reference "everything" server
  (TypeScript SDK 1.x) over stdio (``-32601``) and over Streamable HTTP
  (400, ``-32000``, null id), ``mcp-server-time`` forced into the SDK's
  handshake-only loop (``-32600``), a small ``http.server`` of our own
  answering 404 or 405, or our older server's 400 ``-32022`` naming only
  handshake revisions.
- The official Python SDK's client, in its default 2026-07-28 mode, against
  our servers over stdio and HTTP.
- Scripted JSON-RPC peers for what no real server does: an unknown input
  request, a server that never answers the probe, and the like.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import conformance
import peers
import pytest
import requests
from helpers import RecordingTransport

from mcp_sync import MCP_CODES, Context, MCPClient, MCPError, MCPServer
from mcp_sync.client import http_client, stdio_client
from mcp_sync.client.cache import ResponseCache
from mcp_sync.client.core import RESOURCE_UPDATED, ResourceUpdated
from mcp_sync.errors import MCPProtocolError, MCPTransportError
from mcp_sync.protocol.headers import header_declarations, header_value
from mcp_sync.protocol.stateless import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SUBSCRIPTION_ID,
)
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.events import REQUEST_RECEIVED
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.server import start_http
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    Root,
    TextContent,
)

pytestmark = pytest.mark.timeout(300)  # the first run installs the peers

HERE = Path(__file__).parent.parent
ROOT = HERE.parent
ECHO_SERVER = ROOT / "examples" / "echo_server.py"
LIBRARY_SERVER = ROOT / "examples" / "library_server.py"
REVISION = "2026-07-28"
LATEST = "2025-11-25"
CALL_TIMEOUT = 20.0
CHILD_ENV = {"PYTHONPATH": str(ROOT)}


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="blue"), model="test-model")


def elicit(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada", "weeks": 3, "t": "tea"})


def roots() -> list[Root]:
    return [Root(uri="file:///work", name="work")]


PROVIDERS: dict[str, Any] = {"sampling_provider": sample, "elicitation_provider": elicit, "roots_provider": roots}


# ------------------------------------------------------------------- our server


def build_server(**options: Any) -> MCPServer:
    server = MCPServer("modern", "2.0", instructions="Ask me.", **options)

    @server.tool
    def greet(ctx: Context) -> str:
        """Asks for a name, then greets."""
        answer = ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
        return f"Hello, {answer.data['name']}!" if answer.accepted and answer.data else "Goodbye."

    @server.tool
    def two_rounds(ctx: Context) -> str:
        """Samples, then asks for the roots: two rounds."""
        first = ctx.sample("Colour?", max_tokens=5)
        assert isinstance(first.content, TextContent)
        return f"{first.content.text} {[root.uri for root in ctx.list_roots()]}"

    @server.tool
    def endless(ctx: Context) -> str:
        """Never has enough answers."""
        for round_number in range(100):
            ctx.elicit(f"Once more ({round_number})?", {"type": "object", "properties": {}}, key=f"r{round_number}")
        return "unreachable"

    @server.tool
    def chatty(ctx: Context) -> str:
        """Logs at two levels."""
        ctx.log("debug", "fine detail")
        ctx.log("error", "bad news")
        return "logged"

    @server.tool
    def count(steps: int, ctx: Context) -> str:
        """Reports progress."""
        for step in range(1, steps + 1):
            ctx.progress(step, steps)
        return f"counted to {steps}"

    region = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    server.register_tool("locate", lambda args, ctx: f"in {args['region']}", input_schema=region)

    @server.resource("memo://one")
    def memo() -> str:
        return "remember"

    @server.prompt
    def ask_topic(ctx: Context) -> str:
        """A prompt that needs the user first."""
        topic = ctx.elicit("Topic?", {"type": "object", "properties": {"t": {"type": "string"}}}, key="topic")
        return f"Write about {topic.data['t'] if topic.data else 'nothing'}."

    return server


@pytest.fixture
def server() -> Iterator[MCPServer]:
    built = build_server(cache_ttl_ms=60_000)
    try:
        yield built
    finally:
        built.stop()


class Pair:
    """Our client connected in memory to ``server``, every message recorded."""

    def __init__(self, server: MCPServer, **options: Any) -> None:
        client_end, server_end = InMemoryTransport.pair()
        self.wire = RecordingTransport(client_end)
        server.start(server_end)
        options.setdefault("timeout", CALL_TIMEOUT)
        self.client = MCPClient(**options)
        self.client.connect(self.wire)

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.wire.sent]

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [m for m in self.sent() if "id" in m and "method" in m and method in (None, m["method"])]

    def received(self, method: str) -> list[dict[str, Any]]:
        """The notifications ``method`` the client received so far."""
        return [m for m in map(json.loads, self.wire.received) if m.get("method") == method]


@pytest.fixture
def pair(server: MCPServer) -> Iterator[Callable[..., Pair]]:
    made: list[Pair] = []

    def make(**options: Any) -> Pair:
        made.append(Pair(server, **{**PROVIDERS, **options}))
        return made[-1]

    try:
        yield make
    finally:
        for each in made:
            each.client.close()


# ------------------------------------------------------------- in memory


def test_auto_lands_on_2026_and_every_request_describes_itself(pair: Callable[..., Pair]) -> None:
    link = pair(name="probe", version="9")
    client = link.client
    assert client.negotiated_era == "stateless" and client.protocol_version == REVISION
    assert client.initialize_result is None and client.discover_result is not None
    assert REVISION in client.discover_result.supported_versions
    assert (client.server_info.name, client.server_info.version) == ("modern", "2.0")
    assert client.server_capabilities.tools is not None and client.initialized
    assert "greet" in client.tools and "memo://one" in [r.uri for r in client.resources()]
    sent = link.requests()
    assert sent[0]["method"] == "server/discover" and not link.requests("initialize")
    assert not [m for m in link.sent() if m.get("method") == "notifications/initialized"]
    for request in sent:
        meta = request["params"]["_meta"]
        assert meta[PROTOCOL_VERSION] == REVISION and meta[CLIENT_INFO] == {"name": "probe", "version": "9"}
        tasks = {"io.modelcontextprotocol/tasks": {}}  # any call may be answered with a task (SEP-2663)
        assert meta[CLIENT_CAPABILITIES] == {
            "sampling": {},
            "roots": {},
            "elicitation": {"form": {}},
            "extensions": tasks,
        }
        assert LOG_LEVEL not in meta
    assert repr(client) == "<MCPClient probe (connected)>"


def test_input_rounds_are_answered_by_the_providers(pair: Callable[..., Pair]) -> None:
    link = pair()
    client = link.client
    assert client.call_tool("greet").text == "Hello, Ada!"
    assert client.call_tool("two_rounds").text == "blue ['file:///work']"
    assert client.get_prompt("ask_topic").messages[0].content.text == "Write about tea."  # type: ignore[union-attr]
    calls = link.requests("tools/call")
    first, retry = calls[0], calls[1]
    assert first["id"] != retry["id"] and "inputResponses" not in first and "requestState" not in first
    assert retry["params"]["inputResponses"] == {"who": {"action": "accept", "content": elicit(None).content}}  # type: ignore[arg-type]
    assert isinstance(retry["params"]["requestState"], str)
    # Two rounds: the second retry carries the second answer only, and the newest state.
    rounds = [c for c in calls if c["params"]["name"] == "two_rounds"]
    assert len(rounds) == 3
    assert list(rounds[1]["params"]["inputResponses"]) == ["sampling-1"]
    assert list(rounds[2]["params"]["inputResponses"]) == ["roots-2"]
    assert rounds[2]["params"]["requestState"] != rounds[1]["params"]["requestState"]
    assert client.roots() == roots()


def test_the_rounds_are_bounded(pair: Callable[..., Pair]) -> None:
    client = pair(max_input_rounds=3).client
    with pytest.raises(MCPError) as caught:
        client.call_tool("endless")
    assert caught.value.code == MCP_CODES.PROTOCOL_INVALID and "after 3 rounds" in caught.value.message


def test_a_client_without_a_provider_does_not_declare_it_and_the_server_refuses(pair: Callable[..., Pair]) -> None:
    link = pair(elicitation_provider=None)
    with pytest.raises(MCPError) as caught:
        link.client.call_tool("greet")
    assert caught.value.code == MCP_CODES.MISSING_CAPABILITY
    assert "elicitation" not in link.requests("tools/call")[0]["params"]["_meta"][CLIENT_CAPABILITIES]


def test_results_are_cached_for_their_ttl_and_list_changes_refresh(
    server: MCPServer, pair: Callable[..., Pair]
) -> None:
    link = pair()
    client = link.client
    listed = len(link.requests("tools/list"))
    assert client.list_tools() == client.list_tools()
    assert client.read_resource("memo://one").text == client.read_resource("memo://one").text == "remember"
    assert len(link.requests("tools/list")) == listed and len(link.requests("resources/read")) == 1
    # A fetch named "refresh" always asks; pings always reach the server.
    assert "greet" in [tool.name for tool in client.refresh_tools()]
    client.ping()
    client.ping()
    assert len(link.requests("tools/list")) == listed + 1 and len(link.requests("server/discover")) == 3
    # A list change seen on a subscription makes the cached list stale and refreshes the tools.
    with client.listen(tools=True):
        server.register_tool("extra", lambda args, ctx: "extra")
        assert wait_for(lambda: "extra" in client.tools)
    assert "extra" in [tool.name for tool in client.list_tools().tools]


def test_without_a_cache_or_a_ttl_every_request_is_sent(server: MCPServer, pair: Callable[..., Pair]) -> None:
    uncached = pair(cache=False)
    assert uncached.client.read_resource("memo://one").text == "remember"
    assert uncached.client.read_resource("memo://one").text == "remember"
    assert len(uncached.requests("resources/read")) == 2
    with uncached.client.listen(prompts=True):
        server.register_prompt("extra", lambda args, ctx: "more")
        assert wait_for(lambda: "extra" in [prompt.name for prompt in uncached.client.prompts()])
    server.cache_ttl_ms = 0
    fresh = pair()
    assert fresh.client.read_resource("memo://one").text == "remember"
    assert fresh.client.read_resource("memo://one").text == "remember"
    assert len(fresh.requests("resources/read")) == 2


def test_the_cache_forgets_what_expired() -> None:
    now = [100.0]
    cache = ResponseCache(clock=lambda: now[0])
    cache.store("tools/list", {"_meta": {"x": 1}}, {"tools": [], "ttlMs": 1000})
    cache.store("resources/read", {"uri": "a"}, {"contents": [], "ttlMs": True})
    cache.store("resources/read", {"uri": "b"}, {"contents": [], "ttlMs": -5})
    assert cache.get("tools/list", {}) == {"tools": [], "ttlMs": 1000} and len(cache) == 1
    assert cache.get("tools/list", {"cursor": "2"}) is None
    now[0] += 1.0
    assert cache.get("tools/list", None) is None and len(cache) == 0


def test_log_level_goes_with_each_request(pair: Callable[..., Pair]) -> None:
    got: list[LoggingMessageNotificationParams] = []
    link = pair(log_handler=got.append)
    client = link.client
    assert client.call_tool("chatty").text == "logged"
    assert got == []  # no level asked for: a 2026-07-28 server logs nothing
    client.set_log_level("error")
    assert client.call_tool("chatty").text == "logged"
    assert [(m.level, m.data) for m in got] == [("error", "bad news")]
    assert link.requests("tools/call")[-1]["params"]["_meta"][LOG_LEVEL] == "error"
    assert not link.requests("logging/setLevel")


def test_progress_and_the_callers_meta_go_together(pair: Callable[..., Pair]) -> None:
    link = pair()
    seen: list[float] = []
    assert link.client.call_tool("count", {"steps": 3}, progress=lambda p: seen.append(p.progress)).text == (
        "counted to 3"
    )
    assert seen == [1, 2, 3]
    meta = link.requests("tools/call")[-1]["params"]["_meta"]
    assert "progressToken" in meta and meta[PROTOCOL_VERSION] == REVISION


def test_subscriptions_deliver_on_their_own_thread_until_closed(
    server: MCPServer, pair: Callable[..., Pair], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "mcp_sync.client")
    link = pair()
    client = link.client
    got: list[tuple[str, str, str]] = []

    def record(method: str, params: dict[str, Any]) -> None:
        got.append((method, params.get("uri", ""), threading.current_thread().name))
        raise RuntimeError("a failing callback is logged, not fatal")

    with client.listen(resources=True, resource_uris=["memo://one"], on_notification=record) as subscription:
        assert subscription.acknowledged is not None
        assert subscription.acknowledged.resource_subscriptions == ["memo://one"]
        assert subscription.requested.resources_list_changed is True
        assert repr(subscription) == f"<Subscription {subscription.id} (open)>"
        server.mark_resource_updated("memo://one")
        server.mark_resource_updated("memo://other")
        server.register_resource("memo://two", lambda uri, ctx: "two")
        assert wait_for(lambda: len(got) == 2)
    assert subscription.done.is_set() and subscription.error is None
    assert subscription.wait(0) and repr(subscription).endswith("(ended)>")
    assert sorted(got) == [
        ("notifications/resources/list_changed", "", "mcp-sync-subscription"),
        ("notifications/resources/updated", "memo://one", "mcp-sync-subscription"),
    ]
    assert [r.getMessage() for r in caplog.records] == [f"a subscription callback failed on {m}" for m, _, _ in got]
    listen = link.requests("subscriptions/listen")[0]
    cancelled = [m for m in link.sent() if m.get("method") == "notifications/cancelled"]
    assert cancelled[-1]["params"]["requestId"] == listen["id"]
    # An update tagged with the closed subscription still arrives (the server may not have seen the
    # cancellation yet); the ping's answer comes after it, so by then the client has dealt with it.
    (session,) = server.sessions
    tagged = {"uri": "memo://one", "_meta": {SUBSCRIPTION_ID: listen["id"]}}
    session.notify("notifications/resources/updated", tagged)
    client.ping()
    assert link.received("notifications/resources/updated")[-1]["params"] == tagged
    assert len(got) == 2
    subscription.close()  # again: nothing happens
    assert [m for m in link.sent() if m.get("method") == "notifications/cancelled"] == cancelled
    assert subscription.done.is_set() and subscription.error is None


def test_subscribing_to_a_resource_uses_a_subscription(server: MCPServer, pair: Callable[..., Pair]) -> None:
    server.register_resource("memo://two", lambda uri, ctx: "two")
    link = pair()
    client = link.client
    updates: list[ResourceUpdated] = []
    client.events.on(RESOURCE_UPDATED, updates.append)

    def cancelled() -> list[Any]:
        return [m["params"]["requestId"] for m in link.sent() if m.get("method") == "notifications/cancelled"]

    def reads_of_one() -> int:
        return len([m for m in link.requests("resources/read") if m["params"]["uri"] == "memo://one"])

    client.subscribe_resource("memo://one")
    client.subscribe_resource("memo://one")  # a second subscription replaces the first
    # Updates of memo://two mark how far the client got: its re-reads run one at a time, in order.
    client.subscribe_resource("memo://two")
    first, second, marker = link.requests("subscriptions/listen")
    assert [m["params"]["notifications"]["resourceSubscriptions"] for m in (first, second, marker)] == [
        ["memo://one"],
        ["memo://one"],
        ["memo://two"],
    ]
    assert cancelled() == [first["id"]]
    (session,) = server.sessions

    def update_on(stream: dict[str, Any], uri: str) -> None:
        session.notify("notifications/resources/updated", {"uri": uri, "_meta": {SUBSCRIPTION_ID: stream["id"]}})

    update_on(first, "memo://one")  # on the replaced stream, as a server that missed the cancellation would
    server.mark_resource_updated("memo://one")
    update_on(marker, "memo://two")
    assert wait_for(lambda: [u.uri for u in updates] == ["memo://one", "memo://two"])
    assert updates[0].contents.contents[0].text == "remember"  # type: ignore[union-attr]
    assert client.subscribed_contents("memo://one") == updates[0].contents
    assert reads_of_one() == 1
    client.unsubscribe_resource("memo://one")
    assert cancelled() == [first["id"], second["id"]]
    client.unsubscribe_resource("memo://one")  # no subscription left: nothing to end
    assert cancelled() == [first["id"], second["id"]]
    update_on(second, "memo://one")  # arrives all the same, after the unsubscription
    update_on(marker, "memo://two")
    assert wait_for(lambda: len(updates) == 3)
    assert [u.uri for u in updates] == ["memo://one", "memo://two", "memo://two"]
    assert reads_of_one() == 1 and client.subscribed_contents("memo://one") is None


def test_a_subscription_ends_with_its_connection(server: MCPServer, pair: Callable[..., Pair]) -> None:
    link = pair()
    subscription = link.client.listen(tools=True, on_notification=lambda method, params: None)
    link.client.close()
    assert subscription.wait(5)
    assert isinstance(subscription.error, MCPTransportError)


def test_listen_needs_2026(server: MCPServer) -> None:
    link = Pair(server, era="handshake")
    with link.client as client:
        assert client.negotiated_era == "handshake" and client.protocol_version == LATEST
        with pytest.raises(MCPError) as caught:
            client.listen(tools=True)
        assert caught.value.code == MCP_CODES.METHOD_NOT_FOUND and "2026-07-28" in caught.value.message


def test_a_handshake_revision_given_explicitly_skips_the_probe(server: MCPServer) -> None:
    link = Pair(server, protocol_version="2025-06-18")
    with link.client as client:
        assert client.protocol_version == "2025-06-18" and not link.requests("server/discover")
        assert client.refresh_roots() == []  # tells the server, in this era
        assert [m for m in link.sent() if m.get("method") == "notifications/roots/list_changed"] == [
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        ]


def test_era_must_be_known() -> None:
    with pytest.raises(ValueError, match="era must be"):
        MCPClient(era="future")  # type: ignore[arg-type]
    with pytest.raises(MCPError) as caught:
        MCPClient().negotiated_era  # noqa: B018
    assert caught.value.code == MCP_CODES.NOT_INITIALIZED


# --------------------------------------------------------- scripted peers


@contextlib.contextmanager
def scripted(**handlers: Callable[[dict[str, Any], RequestContext], Any]) -> Iterator[InMemoryTransport]:
    """A JSON-RPC peer answering with ``handlers`` (``server_discover`` for ``server/discover``)."""
    client_end, server_end = InMemoryTransport.pair()
    peer = JsonRpcDispatcher(server_end, side="server", timeout=5)
    for name, handler in handlers.items():
        peer.register_handler(name.replace("__", "/"), handler)
    peer.start()
    try:
        yield client_end
    finally:
        peer.close()


INIT = {"protocolVersion": LATEST, "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}


def discovered(versions: list[str] | None = None, **capabilities: Any) -> dict[str, Any]:
    return {"supportedVersions": versions or [REVISION], "capabilities": capabilities, "resultType": "complete"}


def unsupported(*supported: str) -> Callable[[dict[str, Any], RequestContext], Any]:
    def refuse(params: dict[str, Any], ctx: RequestContext) -> Any:
        raise MCPError(
            MCP_CODES.PROTOCOL_VERSION_MISMATCH, "Unsupported protocol version", data={"supported": list(supported)}
        )

    return refuse


def test_a_first_refusal_naming_our_revision_is_retried() -> None:
    asked: list[int] = []

    def discover(params: dict[str, Any], ctx: RequestContext) -> Any:
        asked.append(1)
        if len(asked) == 1:
            return unsupported(REVISION)(params, ctx)
        return {**discovered(), "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "picky", "version": "1"}}}

    with scripted(server__discover=discover) as end, MCPClient() as client:
        client.connect(end)
        assert client.negotiated_era == "stateless" and client.server_info.name == "picky" and len(asked) == 2


@pytest.mark.parametrize(
    ("era", "handler", "code"),
    [
        ("auto", unsupported(REVISION), MCP_CODES.PROTOCOL_VERSION_MISMATCH),  # refused twice
        ("auto", unsupported("2099-01-01"), MCP_CODES.PROTOCOL_VERSION_MISMATCH),
        ("stateless", unsupported(LATEST), MCP_CODES.PROTOCOL_VERSION_MISMATCH),
        ("auto", lambda p, c: {**discovered(["2099-01-01"])}, MCP_CODES.PROTOCOL_VERSION_MISMATCH),
        ("stateless", lambda p, c: {**discovered([LATEST])}, MCP_CODES.PROTOCOL_VERSION_MISMATCH),
        ("stateless", lambda p, c: {"nothing": True}, MCP_CODES.PROTOCOL_INVALID),
        ("stateless", lambda p, c: (_ for _ in ()).throw(MCPError(MCP_CODES.NOT_FOUND, "no")), MCP_CODES.NOT_FOUND),
        (
            "auto",
            lambda p, c: (_ for _ in ()).throw(MCPError(MCP_CODES.HEADER_MISMATCH, "h")),
            MCP_CODES.HEADER_MISMATCH,
        ),
    ],
    ids=["twice", "disjoint", "modern-only", "discover-disjoint", "discover-legacy", "bad", "error", "modern-error"],
)
def test_refusals_that_end_the_connect(era: str, handler: Any, code: str) -> None:
    with scripted(server__discover=handler, initialize=lambda p, c: INIT) as end:
        client = MCPClient(era=era)  # type: ignore[arg-type]
        with pytest.raises(MCPError) as caught:
            client.connect(end)
        assert caught.value.code == code and not client.initialized


@pytest.mark.parametrize(
    ("handler", "offered"),
    [
        (unsupported(LATEST, "2025-06-18"), LATEST),
        (unsupported("2024-11-05"), "2024-11-05"),
        (lambda p, c: discovered(["2025-03-26"]), "2025-03-26"),
        (lambda p, c: {"whatever": 1}, LATEST),
    ],
    ids=["old-server-32022", "oldest", "discover-legacy", "not-a-discover-result"],
)
def test_answers_that_show_a_handshake_server(handler: Any, offered: str) -> None:
    offers: list[str] = []

    def initialize(params: dict[str, Any], ctx: RequestContext) -> Any:
        offers.append(params["protocolVersion"])
        return {**INIT, "protocolVersion": params["protocolVersion"]}

    with scripted(server__discover=handler, initialize=initialize) as end, MCPClient(era="auto") as client:
        client.connect(end)
        assert client.negotiated_era == "handshake" and offers == [offered]


def test_a_server_silent_on_the_probe_is_taken_for_a_handshake_one() -> None:
    def silent(params: dict[str, Any], ctx: RequestContext) -> Any:
        ctx.cancelled.wait(5)

    with (
        scripted(server__discover=silent, initialize=lambda p, c: INIT) as end,
        MCPClient(probe_timeout=0.2, timeout=None) as client,
    ):
        client.connect(end)
        assert client.negotiated_era == "handshake"


def test_a_server_that_goes_away_during_the_probe_fails_the_connect() -> None:
    with scripted() as end:
        end.close()
        with pytest.raises(MCPTransportError):
            MCPClient().connect(end)


def interim(requests: Any, **extra: Any) -> dict[str, Any]:
    return {"resultType": "input_required", "inputRequests": requests, **extra}


@pytest.mark.parametrize(
    ("answer", "code", "fragment"),
    [
        (interim({"k": {"method": "tasks/get", "params": {}}}), MCP_CODES.METHOD_NOT_FOUND, "'tasks/get'"),
        (interim({"k": "nonsense"}), MCP_CODES.METHOD_NOT_FOUND, "None"),
        (interim(["not", "an", "object"]), MCP_CODES.PROTOCOL_INVALID, "not an object"),
        (interim({"k": {"method": "sampling/createMessage", "params": {}}}), MCP_CODES.MISSING_CAPABILITY, "sampling"),
        (interim({"k": {"method": "roots/list"}}), MCP_CODES.MISSING_CAPABILITY, "roots"),
        (interim({"k": {"method": "elicitation/create", "params": {}}}), MCP_CODES.PROTOCOL_INVALID, "elicitation"),
        ({"resultType": "task", "content": []}, MCP_CODES.PROTOCOL_INVALID, "'task'"),
    ],
    ids=["unknown-method", "not-a-request", "not-a-map", "no-sampler", "no-roots", "bad-elicitation", "odd-type"],
)
def test_interim_results_the_client_cannot_answer(answer: dict[str, Any], code: str, fragment: str) -> None:
    with (
        scripted(
            server__discover=lambda p, c: discovered(tools={}),
            tools__list=lambda p, c: {"tools": []},
            tools__call=lambda p, c: answer,
        ) as end,
        MCPClient(elicitation_provider=elicit) as client,
    ):
        client.connect(end)
        with pytest.raises(MCPError) as caught:
            client.call_tool("t")
        assert caught.value.code == code and fragment in caught.value.message


def test_an_interim_result_where_none_is_allowed_is_refused() -> None:
    with (
        scripted(
            server__discover=lambda p, c: discovered(tools={}),
            tools__list=lambda p, c: interim(None, requestState="x"),
        ) as end,
        pytest.raises(MCPProtocolError, match="input_required"),
    ):
        MCPClient().connect(end)


def test_an_interim_result_without_requests_is_retried_at_once_and_no_result_type_is_complete() -> None:
    seen: list[dict[str, Any]] = []

    def call(params: dict[str, Any], ctx: RequestContext) -> Any:
        seen.append(params)
        if len(seen) == 1:
            return interim(None, requestState="opaque")
        if len(seen) == 2:
            return interim({"where": {"method": "roots/list"}})  # no state this time: none may be sent back
        return {"content": [{"type": "text", "text": "done"}]}  # an older server: no resultType

    with (
        scripted(
            server__discover=lambda p, c: discovered(tools={}), tools__list=lambda p, c: {"tools": []}, tools__call=call
        ) as end,
        MCPClient(roots_provider=roots) as client,
    ):
        client.connect(end)
        assert client.call_tool("t").text == "done"
        assert seen[1]["requestState"] == "opaque" and "inputResponses" not in seen[1]
        assert "requestState" not in seen[2]
        assert seen[2]["inputResponses"] == {"where": {"roots": [roots()[0].to_wire()]}}


def test_subscriptions_the_server_never_acknowledges_or_ends_early() -> None:
    def hold(params: dict[str, Any], ctx: RequestContext) -> Any:
        ctx.dispatcher.notify(
            "notifications/subscriptions/acknowledged", {"notifications": 5, "_meta": {SUBSCRIPTION_ID: ctx.request_id}}
        )
        ctx.dispatcher.notify("notifications/tools/list_changed", {"_meta": {SUBSCRIPTION_ID: "unknown"}})
        ctx.cancelled.wait(5)

    calls: list[int] = []

    def listen(params: dict[str, Any], ctx: RequestContext) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return hold(params, ctx)
        if len(calls) == 2:
            return {}
        raise MCPError(MCP_CODES.INVALID_PARAMS, "no such filter")

    with (
        scripted(server__discover=lambda p, c: discovered(), subscriptions__listen=listen) as end,
        MCPClient() as client,
    ):
        client.connect(end)
        with pytest.raises(MCPError) as caught:
            client.listen(tools=True, timeout=0.3)
        assert caught.value.code == MCP_CODES.TIMEOUT
        with pytest.raises(MCPError, match="before acknowledging"):
            client.listen(tools=True)
        with pytest.raises(MCPError, match="no such filter"):
            client.listen(prompts=True)


def test_a_header_mismatch_on_a_call_lists_the_tools_again_then_retries_once() -> None:
    calls: list[int] = []
    listings: list[int] = []

    def call(params: dict[str, Any], ctx: RequestContext) -> Any:
        calls.append(1)
        if len(calls) < 3:
            raise MCPError(MCP_CODES.HEADER_MISMATCH, "Header mismatch: Mcp-Param-Region is missing")
        return {"content": []}

    def tools(params: dict[str, Any], ctx: RequestContext) -> Any:
        listings.append(1)
        return {"tools": []}

    with (
        scripted(server__discover=lambda p, c: discovered(tools={}), tools__list=tools, tools__call=call) as end,
        MCPClient() as client,
    ):
        client.connect(end)
        with pytest.raises(MCPError) as caught:
            client.call_tool("t")
        assert caught.value.code == MCP_CODES.HEADER_MISMATCH and len(calls) == 2 and len(listings) == 2
        # The connection goes on: the next call is sent as usual, and the server takes it this time.
        assert client.call_tool("t").content == []
        assert len(calls) == 3


def test_server_info_comes_from_the_result_meta_or_is_unknown() -> None:
    with (
        scripted(server__discover=lambda p, c: {**discovered(), "serverInfo": "not an object"}) as end,
        MCPClient() as client,
    ):
        client.connect(end)
        assert (client.server_info.name, client.server_info.version) == ("unknown", "unknown")


# -------------------------------------------------------------- headers


def test_header_values_and_declarations() -> None:
    assert [header_value(v) for v in ("us west", "", 7, -2.0, 2.5, False, None, [1])] == [
        "us west",
        "",
        "7",
        "-2",
        "2.5",
        "false",
        None,
        None,
    ]
    assert header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert header_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    assert header_value("\tindented") == "=?base64?CWluZGVudGVk?="
    nested = {
        "properties": {"where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}}
    }
    assert header_declarations(nested) == {"Zone": ("where", "zone")}
    assert header_declarations({"properties": {"n": 5}}) == {} and header_declarations(None) == {}
    bad = [
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": 3}}},
        {"properties": {"a": {"type": "array", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "My Region"}}},
        {"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]},
    ]
    for schema in bad:
        with pytest.raises(ValueError):
            header_declarations(schema)


# ------------------------------------------------------------------ stdio


def stdio(script: Path, **options: Any) -> MCPClient:
    options.setdefault("timeout", CALL_TIMEOUT)
    return stdio_client([sys.executable, str(script)], env=CHILD_ENV, **options)


@pytest.mark.parametrize("era", ["auto", "stateless", "handshake"])
def test_echo_server_over_stdio(era: str) -> None:
    with stdio(ECHO_SERVER, era=era) as client:
        assert client.negotiated_era == ("handshake" if era == "handshake" else "stateless")
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}


@pytest.mark.parametrize("era", ["auto", "handshake"])
def test_the_library_server_borrows_through_its_elicitation_in_either_era(era: str) -> None:
    asked: list[str] = []

    def borrower(params: ElicitRequestFormParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada", "weeks": 3})

    with stdio(LIBRARY_SERVER, era=era, elicitation_provider=borrower) as client:
        assert client.negotiated_era == ("handshake" if era == "handshake" else "stateless")
        found = client.call_tool_structured("search", {"query": "python"})
        assert [book["id"] for book in found["result"]] == [3, 4]
        assert client.call_tool("borrow", {"book_id": 3}).text == "'Python Tricks' is yours for 3 weeks, Ada."
        assert asked == ["Who is borrowing 'Python Tricks'?"]
        assert client.call_tool("borrow", {"book_id": 3}).text == "'Python Tricks' is already out."
        record = json.loads(client.read_resource("books://1").text)
        assert record["title"].startswith("Structure and Interpretation")
        progress: list[float] = []
        assert client.call_tool("reindex", progress=lambda p: progress.append(p.progress)).text == "4"
        assert progress == [1, 2, 3, 4]


# ------------------------------------------------------------------- HTTP


@pytest.mark.parametrize("era", ["auto", "stateless", "handshake"])
def test_our_client_and_server_over_http(server: MCPServer, era: str) -> None:
    with (
        start_http(server) as running,
        MCPClient.http(running.url, era=era, timeout=CALL_TIMEOUT, **PROVIDERS) as client,
    ):
        modern = era != "handshake"
        assert client.negotiated_era == ("stateless" if modern else "handshake")
        assert client.call_tool("greet").text == "Hello, Ada!"
        assert client.call_tool("two_rounds").text == "blue ['file:///work']"
        assert client.call_tool("locate", {"region": "Hello, 世界"}).text == "in Hello, 世界"
        assert client.get_prompt("ask_topic").messages[0].content.text == "Write about tea."  # type: ignore[union-attr]
        assert client.read_resource("memo://one").text == "remember"
        assert client.call_tool("locate", {}).is_error  # no argument, no header to mirror: the tool itself fails
        seen: list[float] = []
        assert client.call_tool("count", {"steps": 2}, progress=lambda p: seen.append(p.progress)).text == (
            "counted to 2"
        )
        assert seen == [1, 2]
        received: list[str] = []
        server.events.on(REQUEST_RECEIVED, lambda event: received.append(event.method))
        client.ping()
        assert received == ["server/discover" if modern else "ping"]
        if modern:
            got: list[str] = []
            with client.listen(tools=True, on_notification=lambda method, params: got.append(method)):
                server.register_tool("extra", lambda args, ctx: "extra")
                assert wait_for(lambda: got == ["notifications/tools/list_changed"])
                assert wait_for(lambda: "extra" in client.tools)


def test_over_http_a_tool_that_changed_unseen_is_listed_again(server: MCPServer) -> None:
    with start_http(server) as running, MCPClient.http(running.url, timeout=CALL_TIMEOUT) as client:
        schema = {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}
        server.register_tool("zoned", lambda args, ctx: f"zone {args['zone']}", input_schema=schema)
        # Nobody listens, so the client does not know the new tool's header: the server refuses, the client relists.
        assert client.call_tool("zoned", {"zone": " b "}).text == "zone  b "


def test_over_http_tools_with_invalid_headers_are_left_out(server: MCPServer, caplog: pytest.LogCaptureFixture) -> None:
    bad = {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
    server.register_tool("bad", lambda args, ctx: "bad", input_schema=bad)
    with start_http(server) as running:
        with caplog.at_level(logging.WARNING), MCPClient.http(running.url, timeout=CALL_TIMEOUT) as client:
            assert "bad" not in client.tools and "greet" in client.tools
        assert "tool 'bad' with an invalid header" in caplog.text
        with MCPClient.http(running.url, era="handshake", timeout=CALL_TIMEOUT) as client:
            assert "bad" in client.tools  # only 2026-07-28 mirrors arguments into headers


def test_auto_over_http_falls_back_to_our_legacy_sse_endpoint(server: MCPServer) -> None:
    with (
        start_http(server) as running,
        MCPClient.http(running.url.replace("/mcp", "/sse"), timeout=CALL_TIMEOUT, **PROVIDERS) as client,
    ):
        assert client.negotiated_era == "handshake" and client.call_tool("greet").text == "Hello, Ada!"


def test_a_subscription_over_http_is_closed_with_its_stream(server: MCPServer) -> None:
    # The server sees a closed stream when its next keep-alive comment cannot be written.
    with start_http(server, ping_interval=0.05) as running, MCPClient.http(running.url, timeout=CALL_TIMEOUT) as client:
        updates: list[ResourceUpdated] = []
        client.events.on(RESOURCE_UPDATED, updates.append)
        client.subscribe_resource("memo://one")
        server.mark_resource_updated("memo://one")
        assert wait_for(lambda: len(updates) == 1)
        host = running.app._stateless_host.session
        assert host is not None and len(host._listening()) == 1
        client.unsubscribe_resource("memo://one")
        assert wait_for(lambda: not host._listening())


class Handshake(ThreadingHTTPServer):
    """A handshake-era Streamable HTTP server of our own: ``refuse`` answers the probe; ``echo`` is its tool."""

    daemon_threads = True

    def __init__(
        self,
        refuse: Callable[[BaseHTTPRequestHandler, dict[str, Any]], None],
        intercept: Callable[[BaseHTTPRequestHandler, dict[str, Any]], bool] = lambda handler, message: False,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _HandshakeHandler)
        self.refuse = refuse
        self.intercept = intercept
        self.methods: list[str] = []
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(5)


class _HandshakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Handshake

    def reply(self, status: int, body: Any = None, **headers: str) -> None:
        data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if body is not None else "text/plain")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method = message.get("method")
        self.server.methods.append(method)
        if self.server.intercept(self, message):
            return
        if method == "server/discover":
            self.server.refuse(self, message)
        elif "id" not in message:
            self.reply(202)
        elif method == "initialize":
            self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": INIT}, Mcp_Session_Id="s1")
        elif method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object"}}
            self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [tool]}})
        else:
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
            self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    def do_GET(self) -> None:
        self.reply(405)

    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _status(status: int) -> Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]:
    return lambda handler, message: handler.reply(status, b"Not here")  # type: ignore[attr-defined]


def _old_ours(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
    error = {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": [LATEST], "requested": REVISION},
    }
    handler.reply(400, {"jsonrpc": "2.0", "id": None, "error": error})  # type: ignore[attr-defined]


@pytest.mark.parametrize("refuse", [_status(404), _status(405), _old_ours], ids=["404", "405", "old-ours-32022"])
def test_auto_over_http_against_a_handshake_server(refuse: Any) -> None:
    server = Handshake(refuse)
    try:
        with http_client(server.url, transport="streamable", timeout=CALL_TIMEOUT) as client:
            assert client.negotiated_era == "handshake" and client.protocol_version == LATEST
            assert client.call_tool("echo", {"text": "old"}).text == "old"
        assert server.methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    finally:
        server.stop()


def test_a_2026_tool_listing_without_tools_is_refused() -> None:
    def answer(handler: Any, message: dict[str, Any]) -> None:
        handler.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": discovered(tools={})})

    def no_tools(handler: Any, message: dict[str, Any]) -> bool:
        if message.get("method") != "tools/list":
            return False
        result = {"tools": "none", "resultType": "complete"}
        handler.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        return True

    server = Handshake(answer, no_tools)
    try:
        with pytest.raises(MCPProtocolError, match="tools"):
            http_client(server.url, transport="streamable", timeout=CALL_TIMEOUT)
    finally:
        server.stop()


def test_a_2026_stream_that_breaks_fails_its_call_not_the_connection() -> None:
    def answer(handler: Any, message: dict[str, Any]) -> None:
        handler.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": discovered(tools={})})

    def break_off(handler: Any, message: dict[str, Any]) -> bool:
        if message.get("method") != "tools/call" or message["params"]["arguments"]["text"] != "break":
            return False
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.write(b"40\r\n: a chunk cut short\n\n")  # 64 bytes announced, fewer sent
        handler.wfile.flush()
        handler.close_connection = True
        return True

    server = Handshake(answer, break_off)
    try:
        transport = StreamableHTTPClientTransport(server.url)
        with MCPClient(timeout=CALL_TIMEOUT) as client:
            client.connect(transport)
            with pytest.raises(MCPError, match="broke"):
                client.call_tool("echo", {"text": "break"})
            assert not transport.closed
            assert client.call_tool("echo", {"text": "fine"}).text == "fine"
    finally:
        server.stop()


# --------------------------------------------------- handshake-only peers


@pytest.fixture(scope="module")
def peer_python() -> str:
    return peers.peer_python()


@pytest.fixture(scope="module")
def everything_entry() -> list[str]:
    package = peers.npm_package_dir(peers.EVERYTHING_SERVER)
    return [peers.require("node"), str(peers.node_entry(package))]


@pytest.mark.interop
def test_auto_over_stdio_against_the_everything_server(everything_entry: list[str]) -> None:
    with stdio_client([*everything_entry, "stdio"], timeout=CALL_TIMEOUT, stderr=logging.getLogger("peer")) as client:
        assert client.negotiated_era == "handshake" and client.protocol_version == LATEST
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"


@pytest.mark.interop
def test_auto_over_http_against_the_everything_server(everything_entry: list[str], tmp_path: Path) -> None:
    port = conformance.free_port()
    with open(tmp_path / "everything.log", "wb") as log_file:
        process = subprocess.Popen(
            [*everything_entry, "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        conformance.wait_for_port(port, process=process)
        url = f"http://127.0.0.1:{port}/mcp"
        # Its answer to the probe: 400 with a JSON-RPC error -32000 and a null id.
        probe = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
        refusal = requests.post(url, json=probe, headers={"Accept": "application/json, text/event-stream"}, timeout=10)
        assert refusal.status_code == 400 and refusal.json()["error"]["code"] == -32000
        assert refusal.json()["id"] is None
        with http_client(url, timeout=CALL_TIMEOUT) as client:
            assert client.negotiated_era == "handshake" and client.protocol_version == LATEST
            assert client.call_tool("echo", {"message": "over http"}).text == "Echo: over http"
    finally:
        process.kill()
        process.wait(10)


LEGACY_TIME_SERVER = """
import mcp.server.lowlevel.server as lowlevel
import mcp.server.runner as runner


async def handshake_only(server, read_stream, write_stream, *, lifespan_state, session_id=None,
                         init_options=None, raise_exceptions=False):
    try:
        await runner._serve_legacy_stream(server, read_stream, write_stream, lifespan_state=lifespan_state,
                                          session_id=session_id, init_options=init_options,
                                          raise_exceptions=raise_exceptions)
    finally:
        await write_stream.aclose()


lowlevel.serve_dual_era_loop = handshake_only  # the SDK's own loop for handshake-era connections, always

from mcp_server_time import main

main()
"""


@pytest.mark.interop
@pytest.mark.parametrize("handshake_only", [False, True], ids=["dual-era", "handshake-only"])
def test_auto_over_stdio_against_mcp_server_time(peer_python: str, tmp_path: Path, handshake_only: bool) -> None:
    script = tmp_path / "time_server.py"
    script.write_text(LEGACY_TIME_SERVER)
    command = [peer_python, str(script)] if handshake_only else [peer_python, "-m", "mcp_server_time"]
    with stdio_client(
        [*command, "--local-timezone", "UTC"], timeout=CALL_TIMEOUT, stderr=logging.getLogger("peer")
    ) as client:
        assert client.negotiated_era == ("handshake" if handshake_only else "stateless")
        assert client.protocol_version == (LATEST if handshake_only else REVISION)
        assert client.server_info.name == "mcp-time"
        result = client.call_tool("get_current_time", {"timezone": "Europe/Paris"})
        assert json.loads(result.text)["timezone"] == "Europe/Paris"
        client.ping()


SDK_CLIENT = """
import json, sys
import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

target = json.loads(sys.argv[1])


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Grace", "weeks": 1})


async def main():
    server = target["url"] or StdioServerParameters(command=target["command"], args=target["args"], env=target["env"])
    out = {}
    with anyio.fail_after(60):
        async with Client(server, elicitation_callback=elicit) as client:
            out["version"] = client.protocol_version
            out["server"] = client.server_info.name
            out["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            for name, arguments in target["calls"]:
                result = await client.call_tool(name, arguments)
                out[name] = [block.text for block in result.content]
    print(json.dumps(out))


anyio.run(main)
"""


def drive_with_sdk_client(peer_python: str, tmp_path: Path, target: dict[str, Any]) -> dict[str, Any]:
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_CLIENT)
    done = subprocess.run(
        [peer_python, str(script), json.dumps(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env=peers.peer_environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"the SDK client failed:\n{done.stderr[-6000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.interop
def test_the_sdk_client_at_2026_drives_our_library_server_over_stdio(peer_python: str, tmp_path: Path) -> None:
    target = {
        "url": None,
        "command": sys.executable,
        "args": [str(LIBRARY_SERVER)],
        "env": {**os.environ, **CHILD_ENV},
        "calls": [["borrow", {"book_id": 1}], ["search", {"query": "knuth"}]],
    }
    report = drive_with_sdk_client(peer_python, tmp_path, target)
    assert report["version"] == REVISION and report["server"] == "library"
    assert report["tools"] == ["search", "borrow", "reindex"]
    assert report["borrow"] == ["'Structure and Interpretation of Computer Programs' is yours for 1 weeks, Grace."]
    assert "Donald Knuth" in report["search"][0]


@pytest.mark.interop
def test_the_sdk_client_at_2026_drives_our_server_over_http(
    peer_python: str, tmp_path: Path, server: MCPServer
) -> None:
    with start_http(server) as running:
        target = {"url": running.url, "calls": [["greet", {}], ["locate", {"region": "eu-north"}]]}
        report = drive_with_sdk_client(peer_python, tmp_path, target)
    assert report["version"] == REVISION and report["server"] == "modern"
    assert report["greet"] == ["Hello, Grace!"] and report["locate"] == ["in eu-north"]
