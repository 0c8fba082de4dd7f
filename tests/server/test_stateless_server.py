"""The server side of the stateless revision 2026-07-28, over a real in-memory connection.

The client here is a bare JSON-RPC dispatcher, so every request's ``_meta``
is exactly what the test writes; results are checked against the official
2026-07-28 schema.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from schema_util import validate_definition

from mcp_sync import MCP_CODES, Context, MCPError, MCPServer
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.transport import Route
from mcp_sync.server.context import HandshakeChannel, StatelessChannel
from mcp_sync.server.stateless import RequestStateSealer, StatelessRequest
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ListRootsRequest,
    RequestParams,
    SamplingMessage,
    TextContent,
)

REVISION = "2026-07-28"
ALL = {"sampling": {}, "elicitation": {}, "roots": {}}


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        PROTOCOL_VERSION: REVISION,
        CLIENT_CAPABILITIES: ALL if capabilities is None else capabilities,
        CLIENT_INFO: {"name": "modern-test", "version": "1"},
        **extra,
    }


class Person(dict[str, Any]):
    pass


def build_server() -> MCPServer:
    server = MCPServer("modern", "2.0", instructions="Ask me.", cache_ttl_ms=5000, cache_scope="public")

    @server.tool
    def greet(ctx: Context) -> str:
        """Asks for a name, then greets."""
        answer = ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
        return f"Hello, {answer.data['name']}!" if answer.accepted and answer.data else "Goodbye."

    @server.tool
    def two_rounds(ctx: Context) -> str:
        """Asks twice, one after the other."""
        first = ctx.sample("First?", max_tokens=5)
        second = ctx.list_roots()
        assert isinstance(first.content, TextContent)
        return f"{first.content.text} {[root.uri for root in second]}"

    @server.tool
    def everything_at_once(ctx: Context) -> str:
        """Asks three things in one round."""
        answers = ctx.ask_all(
            {
                "e": ElicitRequest(
                    params=ElicitRequestFormParams(message="ok?", requested_schema={"type": "object", "properties": {}})
                ),
                "s": CreateMessageRequest(
                    params=CreateMessageRequestParams(
                        messages=[SamplingMessage(role="user", content=TextContent(text="hi"))], max_tokens=3
                    )
                ),
                "r": ListRootsRequest(params=RequestParams()),
            }
        )
        return ",".join(sorted(answers))

    @server.tool
    def chatty(ctx: Context) -> str:
        """Logs at two levels."""
        ctx.log("debug", "fine detail")
        ctx.log("error", "bad news")
        return "logged"

    @server.tool
    def whoami(ctx: Context) -> str:
        """Says who is asking."""
        assert ctx.client_info is not None
        return f"{ctx.client_info.name} {sorted(ctx.client_capabilities.model_dump(exclude_none=True))}"

    @server.resource("memo://one")
    def memo() -> str:
        return "remember"

    @server.resource("memo://private", ttl_ms=60_000, cache_scope="private")
    def private_memo() -> str:
        return "just for you"

    @server.resource("memo://{n}/copy", ttl_ms=1)
    def memo_copy(n: int) -> str:
        return f"copy {n}"

    @server.prompt
    def ask_topic(ctx: Context) -> str:
        """A prompt that needs the user first."""
        topic = ctx.elicit("Topic?", {"type": "object", "properties": {"t": {"type": "string"}}}, key="topic")
        return f"Write about {topic.data['t'] if topic.data else 'nothing'}."

    return server


@pytest.fixture
def stateless() -> Iterator[tuple[MCPServer, JsonRpcDispatcher]]:
    server = build_server()
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client = JsonRpcDispatcher(client_end, side="client", timeout=10)
    client.start()
    yield server, client
    client.close()
    server.stop()


def call(client: JsonRpcDispatcher, method: str, params: dict[str, Any] | None = None, **meta_options: Any) -> Any:
    return client.request(method, {**(params or {}), "_meta": meta(**meta_options)})


def error(client: JsonRpcDispatcher, method: str, params: dict[str, Any]) -> MCPError:
    with pytest.raises(MCPError) as info:
        client.request(method, params)
    return info.value


# ------------------------------------------------------------------ discovery


def test_discover_names_versions_capabilities_and_the_server(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    result = call(client, "server/discover")
    validate_definition(REVISION, "DiscoverResult", result)
    assert result["resultType"] == "complete"
    assert REVISION in result["supportedVersions"] and "2025-11-25" in result["supportedVersions"]
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "modern", "version": "2.0"}
    assert (result["ttlMs"], result["cacheScope"], result["instructions"]) == (5000, "public", "Ask me.")
    # even discovery must say who is asking
    assert error(client, "server/discover", {}).jsonrpc_code == -32602


def test_malformed_meta_and_unknown_versions_are_refused(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    no_capabilities = {"_meta": {PROTOCOL_VERSION: REVISION}}
    assert error(client, "tools/list", no_capabilities).jsonrpc_code == -32602
    assert error(client, "server/discover", {"_meta": {CLIENT_CAPABILITIES: {}}}).jsonrpc_code == -32602
    unknown = error(client, "tools/list", {"_meta": {PROTOCOL_VERSION: "v999", CLIENT_CAPABILITIES: {}}})
    assert unknown.jsonrpc_code == -32022 and unknown.data == {"supported": [REVISION], "requested": "v999"}
    bad_info = {"_meta": {**meta(), CLIENT_INFO: {"name": 3}}}
    assert error(client, "tools/list", bad_info).jsonrpc_code == -32602


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/x"])
def test_removed_and_unknown_methods_are_method_not_found(
    stateless: tuple[MCPServer, JsonRpcDispatcher], method: str
) -> None:
    _, client = stateless
    assert error(client, method, {"_meta": meta(), "uri": "memo://one"}).jsonrpc_code == -32601


def test_stateless_only_methods_need_meta(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    assert error(client, "subscriptions/listen", {"notifications": {}}).jsonrpc_code == -32601


def test_lists_carry_result_type_cache_hints_and_a_stable_order(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    first = call(client, "tools/list")
    validate_definition(REVISION, "ListToolsResult", first)
    assert (first["resultType"], first["ttlMs"], first["cacheScope"]) == ("complete", 5000, "public")
    assert [t["name"] for t in call(client, "tools/list")["tools"]] == [t["name"] for t in first["tools"]]
    for method, definition in [
        ("resources/list", "ListResourcesResult"),
        ("resources/templates/list", "ListResourceTemplatesResult"),
        ("prompts/list", "ListPromptsResult"),
    ]:
        validate_definition(REVISION, definition, call(client, method))
    read = call(client, "resources/read", {"uri": "memo://one"})
    validate_definition(REVISION, "ReadResourceResult", read)
    assert read["contents"][0]["text"] == "remember"


def test_caching_hints_per_registration(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    private = call(client, "resources/read", {"uri": "memo://private"})
    assert (private["ttlMs"], private["cacheScope"]) == (60_000, "private")
    copy = call(client, "resources/read", {"uri": "memo://3/copy"})
    assert (copy["ttlMs"], copy["cacheScope"], copy["contents"][0]["text"]) == (1, "public", "copy 3")


def test_a_missing_resource_is_invalid_params_naming_the_uri(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    missing = error(client, "resources/read", {"uri": "memo://none", "_meta": meta()})
    assert missing.jsonrpc_code == -32602 and missing.data == {"uri": "memo://none"}


# ------------------------------------------------------------ multi round trip


def test_elicitation_becomes_an_input_required_round(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    first = call(client, "tools/call", {"name": "greet"})
    validate_definition(REVISION, "InputRequiredResult", first)
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["who"]["method"] == "elicitation/create"
    answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    done = call(
        client, "tools/call", {"name": "greet", "inputResponses": answer, "requestState": first["requestState"]}
    )
    validate_definition(REVISION, "CallToolResult", done)
    assert done["content"] == [{"type": "text", "text": "Hello, Ada!"}] and done["resultType"] == "complete"
    # answered directly, without any state: fine too
    direct = call(client, "tools/call", {"name": "greet", "inputResponses": answer, "extra_unknown": 1})
    assert direct["content"][0]["text"] == "Hello, Ada!"
    # an answer of the wrong kind: asked again
    sampled = {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
    assert call(client, "tools/call", {"name": "greet", "inputResponses": {"who": sampled}})["resultType"] == (
        "input_required"
    )
    # an answer under the wrong key: asked again
    wrong = call(client, "tools/call", {"name": "greet", "inputResponses": {"other": answer["who"]}})
    assert wrong["resultType"] == "input_required"


def test_several_rounds_each_with_new_state(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    first = call(client, "tools/call", {"name": "two_rounds"})
    [(key1, asked1)] = first["inputRequests"].items()
    assert asked1["method"] == "sampling/createMessage"
    sampled = {"role": "assistant", "content": {"type": "text", "text": "four"}, "model": "m"}
    second = call(
        client,
        "tools/call",
        {"name": "two_rounds", "inputResponses": {key1: sampled}, "requestState": first["requestState"]},
    )
    [(key2, asked2)] = second["inputRequests"].items()
    assert asked2["method"] == "roots/list" and second["requestState"] != first["requestState"]
    third = call(
        client,
        "tools/call",
        {
            "name": "two_rounds",
            "inputResponses": {key2: {"roots": [{"uri": "file:///r"}]}},
            "requestState": second["requestState"],
        },
    )
    assert third["content"][0]["text"] == "four ['file:///r']"


def test_several_questions_in_one_round(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    first = call(client, "tools/call", {"name": "everything_at_once"})
    assert {request["method"] for request in first["inputRequests"].values()} == {
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
    }
    answers = {
        "e": {"action": "decline"},
        "s": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
        "r": {"roots": []},
    }
    done = call(client, "tools/call", {"name": "everything_at_once", "inputResponses": answers})
    assert done["content"][0]["text"] == "e,r,s"


def test_tampered_or_foreign_request_state_is_refused(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    state = call(client, "tools/call", {"name": "greet"})["requestState"]
    for bad in (state + "-TAMPERED", "!!!", state[:-4] + "AAAA", "é"):
        refused = error(client, "tools/call", {"name": "greet", "requestState": bad, "_meta": meta()})
        assert refused.jsonrpc_code == -32602
    other = error(client, "tools/call", {"name": "two_rounds", "requestState": state, "_meta": meta()})
    assert "another request" in other.message


def test_the_handler_sees_the_requests_client(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    answer = call(client, "tools/call", {"name": "whoami"}, capabilities={"roots": {}})
    assert answer["content"][0]["text"] == "modern-test ['roots']"


def test_the_authorizer_gates_stateless_requests_too(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    server, client = stateless
    server.set_authorizer(lambda info: info.method != "tools/list")
    assert error(client, "tools/list", {"_meta": meta()}).jsonrpc_code == -32001
    assert call(client, "prompts/list")["resultType"] == "complete"


def test_ask_all_in_the_handshake_era_asks_one_by_one() -> None:
    from helpers import connect_pair

    from mcp_sync import MCPClient
    from mcp_sync.types import CreateMessageResult, ElicitResult, Root

    server = build_server()
    client = MCPClient(
        era="handshake",
        sampling_provider=lambda p: CreateMessageResult(role="assistant", content=TextContent(text="x"), model="m"),
        elicitation_provider=lambda p: ElicitResult(action="cancel"),
        roots_provider=lambda: [Root(uri="file:///")],
    )
    with connect_pair(server, client):
        assert client.call_tool("everything_at_once").text == "e,r,s"
    server.stop()


def test_a_missing_client_capability_is_a_typed_error(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    missing = error(client, "tools/call", {"name": "greet", "_meta": meta({"sampling": {}})})
    assert missing.jsonrpc_code == -32021
    assert missing.data == {"requiredCapabilities": {"elicitation": {}}}


def test_prompts_can_ask_too(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    first = call(client, "prompts/get", {"name": "ask_topic"})
    assert first["resultType"] == "input_required"
    done = call(
        client,
        "prompts/get",
        {"name": "ask_topic", "inputResponses": {"topic": {"action": "accept", "content": {"t": "owls"}}}},
    )
    validate_definition(REVISION, "GetPromptResult", done)
    assert done["messages"][0]["content"]["text"] == "Write about owls."


def test_log_messages_only_for_requests_that_ask_for_them(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    logs: list[dict[str, Any]] = []
    client.on_notification("notifications/message", logs.append)
    call(client, "tools/call", {"name": "chatty"})
    call(client, "tools/call", {"name": "chatty"}, **{LOG_LEVEL: "warning"})
    call(client, "tools/list")  # a round trip after the logs: they arrived before it
    assert [entry["data"] for entry in logs] == ["bad news"]


# --------------------------------------------------------------- subscriptions


def test_subscriptions_listen_delivers_only_what_was_asked(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    server, client = stateless
    got: dict[str, list[dict[str, Any]]] = {"tools": [], "prompts": [], "ack": [], "updated": []}
    acked = threading.Semaphore(0)
    client.on_notification(
        "notifications/subscriptions/acknowledged", lambda p: (got["ack"].append(p), acked.release())
    )
    client.on_notification("notifications/tools/list_changed", got["tools"].append)
    client.on_notification("notifications/prompts/list_changed", got["prompts"].append)
    client.on_notification("notifications/resources/updated", got["updated"].append)
    tools_listen = client.send_request(
        "subscriptions/listen",
        {"_meta": meta(), "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["memo://one"]}},
    )
    prompts_listen = client.send_request(
        "subscriptions/listen", {"_meta": meta(), "notifications": {"promptsListChanged": True}}
    )
    assert acked.acquire(timeout=5) and acked.acquire(timeout=5)
    ids = {tuple(p["notifications"]): p["_meta"]["io.modelcontextprotocol/subscriptionId"] for p in got["ack"]}
    server.tool(lambda: "new", name="added")
    server.mark_resource_updated("memo://one")

    @server.prompt
    def another() -> str:
        return "x"

    deadline = time.monotonic() + 5
    while not (got["tools"] and got["prompts"] and got["updated"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [p["_meta"]["io.modelcontextprotocol/subscriptionId"] for p in got["tools"]] == [tools_listen.id]
    assert [p["_meta"]["io.modelcontextprotocol/subscriptionId"] for p in got["prompts"]] == [prompts_listen.id]
    assert got["updated"][0]["uri"] == "memo://one"
    assert sorted(ids.values()) == sorted([tools_listen.id, prompts_listen.id])
    # the client ends one subscription; the server ends the other gracefully when it stops
    client.cancel(tools_listen)
    server.sessions[0].dispatcher.drain(timeout=5)
    ended = client.wait(prompts_listen, timeout=5)
    assert ended["_meta"]["io.modelcontextprotocol/subscriptionId"] == prompts_listen.id
    assert ended["resultType"] == "complete"


def test_a_change_raised_as_a_listen_is_acknowledged_is_told_on_it(
    stateless: tuple[MCPServer, JsonRpcDispatcher],
) -> None:
    # A client that has the acknowledgement goes on, and may change something at once: the listen is registered
    # before it is acknowledged, so the change is told on it (here raised by the acknowledgement's own sending).
    server, client = stateless
    call(client, "tools/list")
    (session,) = server.sessions
    send = session.notify

    def notify_then_change(method: str, params: Any = None, *, route: Route | None = None) -> None:
        send(method, params, route=route)
        if method == "notifications/subscriptions/acknowledged":
            session.list_changed("tools")

    session.notify = notify_then_change  # type: ignore[method-assign]
    heard: list[str] = []
    told = threading.Event()
    client.on_notification("notifications/subscriptions/acknowledged", lambda p: heard.append("ack"))
    client.on_notification("notifications/tools/list_changed", lambda p: (heard.append("tools"), told.set()))
    listen = client.send_request("subscriptions/listen", {"_meta": meta(), "notifications": {"toolsListChanged": True}})
    assert told.wait(5)
    assert heard == ["ack", "tools"]
    client.cancel(listen)


def test_both_eras_on_one_connection(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    _, client = stateless
    legacy = client.request(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
    )
    assert legacy["protocolVersion"] == "2025-11-25"
    assert "resultType" not in client.request("tools/list")
    assert call(client, "tools/list")["resultType"] == "complete"


def test_each_request_gets_the_channel_of_its_era(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    server, client = stateless
    contexts: list[Context] = []
    server.register_tool("record", lambda args, ctx: contexts.append(ctx))
    client.request(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
    )
    client.request("tools/call", {"name": "record"})
    call(client, "tools/call", {"name": "record"}, capabilities={"roots": {}})
    old_era, new_era = contexts
    assert isinstance(old_era.channel, HandshakeChannel) and old_era.stateless is None
    assert old_era.client_info is not None and old_era.client_info.name == "old"
    assert isinstance(new_era.channel, StatelessChannel)
    assert isinstance(new_era.stateless, StatelessRequest)
    assert new_era.stateless.revision == REVISION
    assert new_era.client_info is not None and new_era.client_info.name == "modern-test"
    assert new_era.client_capabilities.roots is not None and old_era.client_capabilities.roots is None


# ----------------------------------------------------------------- the sealer


def test_request_state_expires_and_is_bounded() -> None:
    sealer = RequestStateSealer(b"k" * 32, ttl=-1)
    state = sealer.seal("digest", {"a": 1})
    with pytest.raises(MCPError, match="expired"):
        sealer.open(state, "digest")
    small = RequestStateSealer(max_bytes=10)
    with pytest.raises(MCPError) as err:
        small.seal("digest", {"a": "x" * 100})
    assert err.value.code == MCP_CODES.INTERNAL_ERROR
    shared = RequestStateSealer(b"s" * 32)
    assert RequestStateSealer(b"s" * 32).open(shared.seal("d", {"k": 2}), "d") == {"k": 2}


def test_results_name_the_server_as_it_is_now(stateless: tuple[MCPServer, JsonRpcDispatcher]) -> None:
    from mcp_sync.types import Implementation

    server, client = stateless
    assert call(client, "tools/list")["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == "2.0"
    server.info = Implementation(name="modern", version="2.1")
    assert call(client, "tools/list")["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == "2.1"
