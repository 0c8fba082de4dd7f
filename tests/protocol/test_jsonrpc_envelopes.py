"""The envelopes the codec builds without a second validation are the ones pydantic's validation builds."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from mcp_sync.protocol.jsonrpc import decode_message, encode_message, envelope
from mcp_sync.transports.stdio import StdioTransport
from mcp_sync.types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    NumberId,
    TextContent,
)

RECEIVED = [
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": None}}},
    {"jsonrpc": "2.0", "id": "s", "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None, "extra": [1, None], "other": None},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}, "x-trace": "t"},
    {"jsonrpc": "2.0", "id": 7, "result": {}},
    {"jsonrpc": "2.0", "id": "r", "result": {"content": [], "none": None}, "extra": {"a": 1}},
]


@pytest.mark.parametrize("value", RECEIVED)
def test_a_decoded_envelope_is_the_validated_model_with_its_extra_members(value: dict[str, Any]) -> None:
    decoded = decode_message(json.dumps(value))
    expected_type = (
        JSONRPCResultResponse if "result" in value else JSONRPCRequest if "id" in value else JSONRPCNotification
    )
    assert type(decoded) is expected_type
    validated = expected_type.model_validate(value)
    assert decoded == validated
    assert decoded.model_fields_set == validated.model_fields_set
    assert decoded.model_extra == validated.model_extra
    assert decoded.model_dump() == validated.model_dump()
    # Sent back, it is the JSON pydantic writes for the validated model.
    assert encode_message(decoded) == validated.model_dump_json(by_alias=True, exclude_none=True).encode()


def test_envelope_fills_defaults_and_keeps_what_it_is_given() -> None:
    params = {"name": "echo"}
    request = envelope(JSONRPCRequest, {"jsonrpc": "2.0", "id": NumberId(2, "2.0"), "method": "tools/call"})
    assert request.params is None and request.model_fields_set == {"jsonrpc", "id", "method"}
    assert (
        type(request.id) is NumberId and encode_message(request) == b'{"jsonrpc":"2.0","id":2.0,"method":"tools/call"}'
    )
    notification = envelope(JSONRPCNotification, {"jsonrpc": "2.0", "method": "n", "params": params})
    assert notification.params is params and notification.model_extra == {}


def test_an_encoded_envelope_leaves_out_none_members_only_at_the_top_and_serialises_models_inside() -> None:
    result = envelope(
        JSONRPCResultResponse,
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [TextContent(text="hi")], "structuredContent": None}},
    )
    expected = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "hi"}], "structuredContent": None},
    }
    assert json.loads(encode_message(result)) == expected
    assert encode_message(result) == result.model_dump_json(by_alias=True, exclude_none=True).encode()


def test_lines_of_ascii_whitespace_only_are_skipped_on_stdio() -> None:
    data = b' \t\x0b\x0c \n\r\n{"jsonrpc":"2.0","method":"a"}\n\x0c\r\n'
    transport = StdioTransport(io.BytesIO(data), io.BytesIO())
    got: list[JSONRPCMessage | object] = []
    transport.on_message(got.append)
    assert transport.wait_closed(5)
    assert got == [JSONRPCNotification(method="a")]


def test_nan_and_infinities_go_out_as_null_on_every_path() -> None:
    """JSON has no NaN or Infinity: every way out writes null, as pydantic's own serialiser does."""
    values = {"mean": float("nan"), "max": float("inf"), "min": float("-inf")}
    messages: list[JSONRPCMessage] = [
        envelope(JSONRPCResultResponse, {"jsonrpc": "2.0", "id": 1, "result": dict(values)}),
        envelope(JSONRPCResultResponse, {"jsonrpc": "2.0", "id": NumberId(2, "2.0"), "result": dict(values)}),
        envelope(JSONRPCNotification, {"jsonrpc": "2.0", "method": "notifications/x", "params": dict(values)}),
        JSONRPCErrorResponse(id=None, error=Error(code=-32603, message="m", data=dict(values))),
    ]
    for message in messages:
        line = encode_message(message)
        assert b"NaN" not in line and b"Infinity" not in line, line
        decoded = json.loads(line)
        body = decoded.get("result") or decoded.get("params") or decoded["error"]["data"]
        assert body == {"mean": None, "max": None, "min": None}
