"""A 2026-07-28 request's client description (capabilities and info) is validated once per distinct pair.

Each request reads as it did when every one was validated afresh: the same
models for the same JSON, its own models for anything the JSON tells apart
(``true`` and ``1``, the order of members), and for params built in Python
that JSON cannot stand for (a tuple, a set, a key that is not a string).
Errors are never remembered. The last test drives a real server with two
clients of different capabilities in one process, alternating.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mcp_sync import MCP_CODES, Context, MCPClient, MCPError, MCPServer
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from mcp_sync.server.stateless import StatelessRequest
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import ClientCapabilities, ElicitResult, Implementation


def params(capabilities: Any, info: Any = None, **extra: Any) -> dict[str, Any]:
    meta = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: capabilities, **extra}
    if info is not None:
        meta[CLIENT_INFO] = info
    return {"name": "echo", "_meta": meta}


def read(capabilities: Any, info: Any = None, **extra: Any) -> StatelessRequest:
    return StatelessRequest.read(params(capabilities, info, **extra))


def test_the_same_description_reads_into_the_same_models_as_validation_gives() -> None:
    capabilities = {"elicitation": {"form": {}}, "extensions": {"io.example/feature": {"level": 2}}}
    info = {"name": "cache-test", "version": "1", "title": "Cache test"}
    first = read(copy.deepcopy(capabilities), copy.deepcopy(info))
    again = read(copy.deepcopy(capabilities), copy.deepcopy(info))
    assert again.client_capabilities is first.client_capabilities
    assert again.client_info is first.client_info
    assert first.client_capabilities == ClientCapabilities.model_validate(capabilities)
    assert first.client_info == Implementation.model_validate(info)
    # What is the request's own stays its own: answers and log level.
    assert again is not first and again.answers is not first.answers
    assert read(capabilities, info, **{LOG_LEVEL: "debug"}).log_level == "debug"
    assert read(capabilities, info, **{LOG_LEVEL: "loud"}).log_level is None
    assert read(capabilities, info, **{LOG_LEVEL: {"level": "debug"}}).log_level is None


def test_a_request_without_client_info_has_none() -> None:
    request = read({"roots": {}})
    assert request.client_info is None and request.client_capabilities.roots is not None
    assert read({"roots": {}}).client_capabilities is request.client_capabilities


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"x": {"flag": 1}}, {"x": {"flag": True}}),
        ({"x": {"flag": 1}}, {"x": {"flag": 1.0}}),
        ({"x": {"a": "1", "b": "2"}}, {"x": {"b": "2", "a": "1"}}),
        ({"a": {}, "b": {}}, {"b": {}, "a": {}}),
    ],
    ids=["int-bool", "int-float", "member-order", "extension-order"],
)
def test_descriptions_equal_in_python_but_not_in_json_each_read_as_their_own(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    assert one == other  # what Python's equality alone would mistake for one description
    first = read({"experimental": one, "extensions": one})
    second = read({"experimental": other, "extensions": other})
    assert second.client_capabilities is not first.client_capabilities
    for request, raw in ((first, one), (second, other)):
        expected = ClientCapabilities.model_validate({"experimental": raw, "extensions": raw})
        got = request.client_capabilities
        assert got == expected
        assert repr(got.experimental) == repr(raw) and repr(got.extensions) == repr(raw)


@pytest.mark.parametrize(
    "python_only",
    [
        {"x": {"pair": (1, 2)}},  # to JSON like [1, 2]
        {"x": {"names": {1: "one"}}},  # to JSON like {"1": "one"}
        {"x": {"pair": {1, 2}}},  # a set, to JSON like [1, 2]
    ],
    ids=["tuple", "integer-key", "set"],
)
def test_params_built_in_python_that_json_would_blur_are_validated_as_they_are(python_only: dict[str, Any]) -> None:
    json_like = {"x": {"pair": [1, 2]}} if "pair" in python_only["x"] else {"x": {"names": {"1": "one"}}}
    cached = read({"experimental": json_like})
    request = read({"experimental": python_only})
    assert request.client_capabilities is not cached.client_capabilities
    assert request.client_capabilities.experimental == python_only
    assert repr(request.client_capabilities.experimental) == repr(python_only)


def test_params_that_are_not_json_at_all_are_validated_each_time() -> None:
    thing = object()  # nothing in JSON stands for it
    capabilities = {"experimental": {"x": {"thing": thing}}}
    first, second = read(capabilities), read(capabilities)
    assert first.client_capabilities.experimental == {"x": {"thing": thing}}
    assert second.client_capabilities is not first.client_capabilities


def test_a_large_description_is_validated_each_time() -> None:
    capabilities = {"experimental": {"big": {"blob": "x" * 5000}}}
    first, second = read(capabilities), read(capabilities)
    assert first.client_capabilities == second.client_capabilities
    assert second.client_capabilities is not first.client_capabilities


def test_many_descriptions_start_the_memory_afresh() -> None:
    first = read({"experimental": {"n": {"i": -1}}})
    assert read({"experimental": {"n": {"i": -1}}}).client_capabilities is first.client_capabilities
    for i in range(100):
        read({"experimental": {"n": {"i": i}}})
    again = read({"experimental": {"n": {"i": -1}}})
    assert again.client_capabilities is not first.client_capabilities
    assert again.client_capabilities == first.client_capabilities


def test_a_handler_changing_its_params_does_not_change_what_the_next_request_reads() -> None:
    capabilities = {"experimental": {"mutable": {"v": "before"}}}
    sent = params(capabilities, {"name": "c", "version": "1"})
    first = StatelessRequest.read(sent)
    sent["_meta"][CLIENT_CAPABILITIES]["experimental"]["mutable"]["v"] = "after"  # the params, changed later
    again = read({"experimental": {"mutable": {"v": "before"}}}, {"name": "c", "version": "1"})
    assert again.client_capabilities is first.client_capabilities
    assert again.client_capabilities.experimental == {"mutable": {"v": "before"}}


@pytest.mark.parametrize(
    ("capabilities", "info"),
    [({"roots": {"listChanged": "maybe"}}, None), ({}, {"name": "no version"}), ({}, "a string")],
    ids=["capabilities", "info", "info-not-object"],
)
def test_an_invalid_description_is_refused_every_time(capabilities: dict[str, Any], info: Any) -> None:
    for _ in range(2):
        with pytest.raises(MCPError) as caught:
            read(capabilities, info)
        assert caught.value.code == MCP_CODES.INVALID_PARAMS


def test_two_clients_of_one_server_each_see_their_own_description() -> None:
    server = MCPServer("described")

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who asks, and what it can do."""
        info = ctx.client_info
        return {"name": info.name if info else None, "elicitation": ctx.client_capabilities.elicitation is not None}

    def ask(result: Any) -> ElicitResult:
        return ElicitResult(action="cancel")

    clients = []
    for name, elicitation in (("with-forms", ask), ("plain", None)):
        client_end, server_end = InMemoryTransport.pair()
        server.start(server_end)
        client = MCPClient(name, era="stateless", elicitation_provider=elicitation)
        client.connect(client_end)
        clients.append(client)
    try:
        for _ in range(3):
            assert clients[0].call_tool("whoami", {}).structured_content == {"name": "with-forms", "elicitation": True}
            assert clients[1].call_tool("whoami", {}).structured_content == {"name": "plain", "elicitation": False}
    finally:
        for client in clients:
            client.close()
        server.stop()
