"""Tests of mcp_sync.errors: the code registry, the exceptions and the JSON-RPC mapping."""

from __future__ import annotations

import pytest

from mcp_sync.errors import (
    MCP_CODES,
    CodeRegistry,
    JsonRpcCode,
    MCPError,
    MCPProtocolError,
    MCPTransportError,
    define_codes,
    jsonrpc_code_for,
    mcp_code_for,
)

SEED_LEAVES = (
    "PROTOCOL_INVALID",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "UNAUTHORIZED",
    "REQUEST_CANCELLED",
    "TIMEOUT",
    "TRANSPORT_CLOSED",
    "TRANSPORT_ERROR",
    "NOT_INITIALIZED",
    "ALREADY_CONNECTED",
    "DUPLICATE_REGISTRATION",
    "NOT_FOUND",
    "PROTOCOL_VERSION_MISMATCH",
    "HANDLER_FAILED",
)
EXTRA_LEAVES = ("PARSE_ERROR", "HEADER_MISMATCH", "MISSING_CAPABILITY")

# (MCP code, JSON-RPC code): the mapping, which must hold in both directions.
WIRE_MAPPING = [
    (MCP_CODES.PARSE_ERROR, -32700),
    (MCP_CODES.PROTOCOL_INVALID, -32600),
    (MCP_CODES.METHOD_NOT_FOUND, -32601),
    (MCP_CODES.INVALID_PARAMS, -32602),
    (MCP_CODES.INTERNAL_ERROR, -32603),
    (MCP_CODES.UNAUTHORIZED, -32001),
    (MCP_CODES.NOT_FOUND, -32002),
    (MCP_CODES.HEADER_MISMATCH, -32020),
    (MCP_CODES.MISSING_CAPABILITY, -32021),
    (MCP_CODES.PROTOCOL_VERSION_MISMATCH, -32022),
]


# ----------------------------------------------------------------- registry


def test_codes_are_namespaced_strings() -> None:
    assert MCP_CODES.UNAUTHORIZED == "MCP.UNAUTHORIZED"
    assert MCP_CODES.namespace == "MCP"
    demo = define_codes("DEMO", ["BROKEN", "SLOW"])
    assert isinstance(demo, CodeRegistry)
    assert demo.BROKEN == "DEMO.BROKEN"
    assert demo.SLOW == "DEMO.SLOW"


def test_registry_has_exactly_the_seed_leaves_and_the_wire_extras() -> None:
    assert MCP_CODES.leaves == SEED_LEAVES + EXTRA_LEAVES
    assert len(MCP_CODES) == 18
    for leaf in SEED_LEAVES + EXTRA_LEAVES:
        assert getattr(MCP_CODES, leaf) == f"MCP.{leaf}"


def test_registry_iterates_full_codes_in_definition_order() -> None:
    demo = define_codes("DEMO", ["A", "B", "C"])
    assert list(demo) == ["DEMO.A", "DEMO.B", "DEMO.C"]
    assert len(demo) == 3
    assert demo.leaves == ("A", "B", "C")


def test_membership_is_by_full_code() -> None:
    assert "MCP.TIMEOUT" in MCP_CODES
    assert "TIMEOUT" not in MCP_CODES
    assert "OTHER.TIMEOUT" not in MCP_CODES
    assert 42 not in MCP_CODES


def test_registry_accepts_any_iterable_of_leaves() -> None:
    demo = define_codes("GEN", (leaf for leaf in ["X", "Y"]))
    assert demo.leaves == ("X", "Y")


def test_registry_is_immutable() -> None:
    with pytest.raises(AttributeError, match="immutable"):
        MCP_CODES.TIMEOUT = "MCP.SOMETHING_ELSE"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        MCP_CODES.NEW_CODE = "MCP.NEW_CODE"
    with pytest.raises(AttributeError, match="immutable"):
        del MCP_CODES.TIMEOUT
    with pytest.raises(AttributeError, match="immutable"):
        MCP_CODES.namespace = "X"  # type: ignore[misc]
    assert MCP_CODES.TIMEOUT == "MCP.TIMEOUT"
    assert MCP_CODES.namespace == "MCP"


def test_unknown_leaf_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="MCP has no code 'NOPE'"):
        _ = MCP_CODES.NOPE
    assert not hasattr(MCP_CODES, "timeout")  # leaves are case-sensitive


def test_duplicate_leaves_are_rejected() -> None:
    with pytest.raises(ValueError, match="unique"):
        define_codes("DUP", ["A", "B", "A"])


def test_repr_names_namespace_and_leaves() -> None:
    assert repr(define_codes("DEMO", ["A", "B"])) == "CodeRegistry('DEMO', ['A', 'B'])"


# --------------------------------------------------------------- exceptions


def test_error_carries_code_message_context_data_and_wire_code() -> None:
    root = OSError("pipe closed")
    err = MCPError(
        MCP_CODES.NOT_FOUND,
        "no tool 'x'",
        cause=root,
        context={"name": "x"},
        data={"uri": "file:///x"},
    )
    assert err.code == "MCP.NOT_FOUND"
    assert err.message == "no tool 'x'"
    assert err.cause is root
    assert err.__cause__ is root
    assert err.context == {"name": "x"}
    assert err.data == {"uri": "file:///x"}
    assert err.jsonrpc_code == -32002
    assert str(err) == "[MCP.NOT_FOUND] no tool 'x'"
    assert repr(err) == "MCPError('MCP.NOT_FOUND', \"no tool 'x'\")"
    assert err.args == ("no tool 'x'",)


def test_error_defaults() -> None:
    err = MCPError(MCP_CODES.TIMEOUT, "too slow")
    assert err.cause is None
    assert err.context == {}
    assert err.data is None
    # A local-only code travels as an internal error.
    assert err.jsonrpc_code == JsonRpcCode.INTERNAL_ERROR


def test_context_is_copied() -> None:
    context = {"method": "ping"}
    err = MCPError(MCP_CODES.TIMEOUT, "too slow", context=context)
    context["method"] = "changed"
    assert err.context == {"method": "ping"}


def test_explicit_jsonrpc_code_wins() -> None:
    err = MCPError(MCP_CODES.HANDLER_FAILED, "app error", jsonrpc_code=-32000)
    assert err.jsonrpc_code == -32000


def test_unknown_code_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown MCP error code 'MCP\.NOPE'"):
        MCPError("MCP.NOPE", "x")
    with pytest.raises(ValueError, match="unknown MCP error code"):
        MCPError("TIMEOUT", "a bare leaf is not a code")


@pytest.mark.parametrize(
    ("cls", "code"), [(MCPTransportError, "MCP.TRANSPORT_ERROR"), (MCPProtocolError, "MCP.PROTOCOL_INVALID")]
)
def test_subclasses_behave_like_mcp_error(cls: type[MCPError], code: str) -> None:
    root = ValueError("bad")
    err = cls(code, "broken", cause=root, context={"k": 1}, data=[1], jsonrpc_code=-32099)
    assert isinstance(err, MCPError)
    assert (err.code, err.message, err.cause, err.context, err.data, err.jsonrpc_code) == (
        code,
        "broken",
        root,
        {"k": 1},
        [1],
        -32099,
    )
    assert repr(err) == f"{cls.__name__}({code!r}, 'broken')"
    with pytest.raises(ValueError, match="unknown MCP error code"):
        cls("MCP.NOPE", "x")


def test_raising_keeps_the_cause_chain() -> None:
    root = KeyError("k")
    with pytest.raises(MCPError) as info:
        raise MCPTransportError(MCP_CODES.TRANSPORT_ERROR, "lost", cause=root)
    assert info.value.__cause__ is root


# ------------------------------------------------------------------ mapping


@pytest.mark.parametrize(("code", "wire"), WIRE_MAPPING)
def test_mapping_both_directions(code: str, wire: int) -> None:
    assert jsonrpc_code_for(code) == wire
    assert mcp_code_for(wire) == code
    assert MCPError(code, "x").jsonrpc_code == wire


def test_json_rpc_code_constants() -> None:
    assert [wire for _, wire in WIRE_MAPPING] == [
        JsonRpcCode.PARSE_ERROR,
        JsonRpcCode.INVALID_REQUEST,
        JsonRpcCode.METHOD_NOT_FOUND,
        JsonRpcCode.INVALID_PARAMS,
        JsonRpcCode.INTERNAL_ERROR,
        JsonRpcCode.UNAUTHORIZED,
        JsonRpcCode.RESOURCE_NOT_FOUND,
        JsonRpcCode.HEADER_MISMATCH,
        JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION,
    ]


@pytest.mark.parametrize(
    "code",
    [
        MCP_CODES.TIMEOUT,
        MCP_CODES.TRANSPORT_CLOSED,
        MCP_CODES.TRANSPORT_ERROR,
        MCP_CODES.REQUEST_CANCELLED,
        MCP_CODES.HANDLER_FAILED,
        MCP_CODES.ALREADY_CONNECTED,
        MCP_CODES.NOT_INITIALIZED,
        MCP_CODES.DUPLICATE_REGISTRATION,
        "MCP.NOT_A_CODE",
    ],
)
def test_local_codes_travel_as_internal_error(code: str) -> None:
    assert jsonrpc_code_for(code) == -32603


@pytest.mark.parametrize("wire", [-32000, -32099, -1, 0, 42])
def test_unknown_wire_codes_become_handler_failed(wire: int) -> None:
    assert mcp_code_for(wire) == MCP_CODES.HANDLER_FAILED
    # and HANDLER_FAILED goes back out as an internal error
    assert jsonrpc_code_for(mcp_code_for(wire)) == -32603
