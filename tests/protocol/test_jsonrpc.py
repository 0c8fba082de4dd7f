"""Tests of mcp_sync.protocol.jsonrpc: decoding and encoding JSON-RPC 2.0 messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_sync.protocol.jsonrpc import (
    InvalidMessage,
    decode_message,
    encode_message,
    error_response,
    parse_value,
)
from mcp_sync.types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
)


def invalid(data: bytes | str) -> InvalidMessage:
    decoded = decode_message(data)
    assert isinstance(decoded, InvalidMessage), decoded
    return decoded


def obj(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


# ------------------------------------------------------------------- decode


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}}',
        bytearray(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}}'),
        memoryview(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}}'),
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}}',
    ],
)
def test_decode_request_from_any_buffer(data: bytes | str) -> None:
    message = decode_message(data)
    assert message == JSONRPCRequest(id=7, method="tools/call", params={"name": "add"})


def test_decode_request_with_string_id_and_no_params() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":"abc","method":"ping"}')
    assert isinstance(message, JSONRPCRequest)
    assert message.id == "abc"
    assert message.params is None


def test_decode_request_with_null_params_means_no_params() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":null}')
    assert message == JSONRPCRequest(id=1, method="ping")


def test_numeric_string_id_stays_a_string() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":"1","method":"ping"}')
    assert isinstance(message, JSONRPCRequest)
    assert message.id == "1"


def test_integral_float_id_is_read_as_the_integer() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}')
    assert isinstance(message, JSONRPCRequest)
    assert message.id == 1
    assert type(message.id) is int
    response = decode_message(b'{"jsonrpc":"2.0","id":2.0,"result":{}}')
    assert isinstance(response, JSONRPCResultResponse)
    assert response.id == 2
    assert type(response.id) is int


def test_decode_notification() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}')
    assert message == JSONRPCNotification(method="notifications/progress", params={"progress": 1})


def test_decode_result_response() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}')
    assert message == JSONRPCResultResponse(id=3, result={"tools": []})


def test_decode_error_response_with_data() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"bad","data":{"field":"a"}}}')
    assert message == JSONRPCErrorResponse(id="x", error=Error(code=-32602, message="bad", data={"field": "a"}))


def test_decode_error_response_with_null_id() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
    assert isinstance(message, JSONRPCErrorResponse)
    assert message.id is None
    assert message.error.code == -32700


def test_unknown_fields_are_kept() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{},"x-trace":"abc"}')
    assert isinstance(message, JSONRPCRequest)
    assert message.model_extra == {"x-trace": "abc"}
    assert json.loads(encode_message(message))["x-trace"] == "abc"
    response = decode_message(b'{"jsonrpc":"2.0","id":1,"result":{},"extra":[1]}')
    assert isinstance(response, JSONRPCResultResponse)
    assert response.model_extra == {"extra": [1]}
    error = decode_message(b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","hint":"h"},"z":0}')
    assert isinstance(error, JSONRPCErrorResponse)
    assert error.model_extra == {"z": 0}
    assert error.error.model_extra == {"hint": "h"}


@pytest.mark.parametrize(
    "data",
    [b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"ping"}', '\ufeff{"jsonrpc":"2.0","method":"ping"}'],
)
def test_byte_order_mark_is_ignored(data: bytes | str) -> None:
    assert decode_message(data) == JSONRPCNotification(method="ping")


# --------------------------------------------------------------- parse errors


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"{", id="truncated"),
        pytest.param(b"", id="empty"),
        pytest.param(b"not json", id="garbage"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"m"} trailing', id="trailing"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}', id="nan"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":Infinity}}', id="infinity"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":-Infinity}}', id="-infinity"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', id="invalid-utf8"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\xc3"}', id="truncated-utf8"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', id="lone-high-surrogate"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\udc00"}', id="lone-low-surrogate"),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800x"}', id="high-surrogate-then-text"),
        pytest.param(b'{"a":' * 5000 + b"1" + b"}" * 5000, id="nested-objects-5000"),
        pytest.param(b"[" * 5000 + b"]" * 5000, id="nested-arrays-5000"),
        pytest.param('{"jsonrpc":"2.0","id":1,"method":"\ud800"}', id="str-with-lone-surrogate"),
    ],
)
def test_unparseable_input_is_a_parse_error_with_null_id(data: bytes | str) -> None:
    result = invalid(data)
    assert result.error.code == -32700
    assert result.error.message.startswith("Parse error")
    assert result.id is None
    assert result.reply is True
    wire = json.loads(encode_message(result.response()))
    assert wire == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": result.error.message}}


def test_surrogate_pair_escape_is_fine() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":1,"method":"\\ud83d\\ude00"}')
    assert isinstance(message, JSONRPCRequest)
    assert message.method == "\U0001f600"


def test_moderate_nesting_is_accepted() -> None:
    params = b'{"a":' * 50 + b"1" + b"}" * 50
    message = decode_message(b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + params + b"}")
    assert isinstance(message, JSONRPCRequest)


# ------------------------------------------------------------ invalid request


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"42", "int"),
        (b'"hello"', "str"),
        (b"null", "NoneType"),
        (b"true", "bool"),
        (b"[]", "a batch"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "a batch"),
    ],
)
def test_non_objects_are_invalid_requests(data: bytes, kind: str) -> None:
    result = invalid(data)
    assert result.error.code == -32600
    assert result.error.message == f"Invalid request: expected a JSON object, got {kind}"
    assert result.id is None
    assert result.reply is True


@pytest.mark.parametrize(
    ("fields", "expected_id"),
    [
        ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5),
        ({"jsonrpc": 2.0, "id": "five", "method": "ping"}, "five"),
        ({"id": 5, "method": "ping"}, 5),
        ({"jsonrpc": None, "id": 5, "method": "ping"}, 5),
        ({"jsonrpc": "1.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "1.0", "id": 5}, 5),
        ({}, None),
    ],
)
def test_wrong_or_missing_jsonrpc_is_answered_with_the_readable_id(fields: dict[str, Any], expected_id: Any) -> None:
    result = invalid(json.dumps(fields))
    assert result.error.code == -32600
    assert result.error.message == 'Invalid request: "jsonrpc" must be "2.0"'
    assert result.id == expected_id
    assert result.reply is True


@pytest.mark.parametrize(
    "fields",
    [
        {"method": "notifications/initialized"},
        {"jsonrpc": "1.0", "method": "notifications/initialized", "params": {}},
        {"jsonrpc": "1.0", "method": 5},
        {"jsonrpc": "1.0", "id": 1, "result": {}},
        {"jsonrpc": "1.0", "id": 1, "error": {"code": 1, "message": "m"}},
    ],
)
def test_wrong_jsonrpc_on_notifications_and_responses_is_dropped(fields: dict[str, Any]) -> None:
    result = invalid(json.dumps(fields))
    assert result.error.code == -32600
    assert result.reply is False


@pytest.mark.parametrize("method", [5, None, ["ping"], {"m": 1}, True])
def test_non_string_method_in_a_request_is_answered(method: Any) -> None:
    result = invalid(obj(jsonrpc="2.0", id=9, method=method))
    assert result.error.code == -32600
    assert result.error.message == 'Invalid request: "method" must be a string'
    assert result.id == 9
    assert result.reply is True


def test_object_without_method_or_id_is_answered_with_null_id() -> None:
    result = invalid(obj(jsonrpc="2.0", params={}))
    assert result.error.code == -32600
    assert result.id is None
    assert result.reply is True


@pytest.mark.parametrize("method", [5, ["ping"], False])
def test_non_string_method_without_id_may_be_a_notification_and_is_dropped(method: Any) -> None:
    result = invalid(obj(jsonrpc="2.0", method=method))
    assert result.error.code == -32600
    assert result.reply is False


@pytest.mark.parametrize("params", [[1, 2], "x", 3, True])
def test_non_object_params_in_a_request_is_answered(params: Any) -> None:
    result = invalid(obj(jsonrpc="2.0", id="r1", method="tools/call", params=params))
    assert result.error.code == -32600
    assert result.error.message == 'Invalid request: "params" must be an object'
    assert result.id == "r1"
    assert result.reply is True


def test_non_object_params_in_a_notification_is_dropped() -> None:
    result = invalid(obj(jsonrpc="2.0", method="notifications/progress", params=[1]))
    assert result.error.code == -32600
    assert result.reply is False


@pytest.mark.parametrize("bad_id", [None, True, False, 1.5, {"n": 1}, [1]])
def test_bad_request_ids_are_answered_with_null_id(bad_id: Any) -> None:
    result = invalid(obj(jsonrpc="2.0", id=bad_id, method="ping"))
    assert result.error.code == -32600
    assert result.error.message == 'Invalid request: "id" must be a string or an integer'
    assert result.id is None
    assert result.reply is True


# ----------------------------------------------------------- invalid response


@pytest.mark.parametrize(
    ("fields", "expected_id"),
    [
        ({"jsonrpc": "2.0", "result": {}}, None),
        ({"jsonrpc": "2.0", "id": None, "result": {}}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "result": {}}, None),
        ({"jsonrpc": "2.0", "id": 1, "result": 5}, 1),
        ({"jsonrpc": "2.0", "id": 1, "result": [1]}, 1),
        ({"jsonrpc": "2.0", "id": 1, "result": None}, 1),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}, 1),
    ],
)
def test_invalid_result_responses_are_dropped(fields: dict[str, Any], expected_id: Any) -> None:
    result = invalid(json.dumps(fields))
    assert result.error.code == -32600
    assert result.error.message == "Invalid response"
    assert result.id == expected_id
    assert result.reply is False


@pytest.mark.parametrize(
    "error",
    [
        "boom",
        None,
        [1],
        {"message": "no code"},
        {"code": "-32600", "message": "string code"},
        {"code": -32600.0, "message": "float code"},
        {"code": True, "message": "bool code"},
        {"code": -32600},
        {"code": -32600, "message": 5},
    ],
)
def test_invalid_error_responses_are_dropped(error: Any) -> None:
    result = invalid(obj(jsonrpc="2.0", id=4, error=error))
    assert result.error.code == -32600
    assert result.error.message == "Invalid error response"
    assert result.id == 4
    assert result.reply is False


def test_parse_value_classifies_decoded_values() -> None:
    assert parse_value({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == JSONRPCRequest(id=1, method="ping")
    not_object = parse_value("x")
    assert isinstance(not_object, InvalidMessage)
    assert not_object.error.code == -32600


# ------------------------------------------------------------------- encode


def test_encode_is_compact_json_without_none_fields() -> None:
    assert encode_message(JSONRPCRequest(id=1, method="ping")) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert (
        encode_message(JSONRPCNotification(method="notifications/initialized"))
        == b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    )
    assert encode_message(JSONRPCResultResponse(id="a", result={})) == b'{"jsonrpc":"2.0","id":"a","result":{}}'
    assert (
        encode_message(JSONRPCErrorResponse(id=2, error=Error(code=-32601, message="nope")))
        == b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}'
    )


def test_encode_keeps_nulls_inside_params_and_results() -> None:
    wire = encode_message(JSONRPCResultResponse(id=1, result={"a": None, "b": {"c": None}}))
    assert json.loads(wire) == {"jsonrpc": "2.0", "id": 1, "result": {"a": None, "b": {"c": None}}}
    wire = encode_message(JSONRPCRequest(id=1, method="m", params={"x": None}))
    assert json.loads(wire)["params"] == {"x": None}


def test_error_response_with_no_id_encodes_id_null() -> None:
    wire = encode_message(JSONRPCErrorResponse(id=None, error=Error(code=-32700, message="Parse error")))
    assert b'"id":null' in wire
    assert b'": ' not in wire
    assert b', "' not in wire
    assert json.loads(wire) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


def test_error_response_with_no_id_keeps_data() -> None:
    wire = encode_message(JSONRPCErrorResponse(error=Error(code=-32600, message="m", data={"k": [1]})))
    assert json.loads(wire) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "m", "data": {"k": [1]}},
    }


def test_encode_uses_wire_names_of_model_params() -> None:
    message = JSONRPCNotification.model_construct(
        jsonrpc="2.0", method="notifications/progress", params={"progressToken": 1, "progress": 0.5}
    )
    assert json.loads(encode_message(message))["params"] == {"progressToken": 1, "progress": 0.5}


@pytest.mark.parametrize(
    "message",
    [
        JSONRPCRequest(id=1, method="tools/call", params={"name": "add", "arguments": {"a": 1}}),
        JSONRPCRequest(id="s", method="ping"),
        JSONRPCNotification(method="notifications/cancelled", params={"requestId": 1}),
        JSONRPCResultResponse(id=1, result={"content": [{"type": "text", "text": "hi"}]}),
        JSONRPCErrorResponse(id=1, error=Error(code=-32602, message="bad", data={"path": "a"})),
        JSONRPCErrorResponse(id=None, error=Error(code=-32700, message="Parse error")),
    ],
)
def test_round_trip(message: JSONRPCMessage) -> None:
    assert decode_message(encode_message(message)) == message


def test_error_response_helpers() -> None:
    response = error_response(3, -32601, "Method not found: x")
    assert response == JSONRPCErrorResponse(id=3, error=Error(code=-32601, message="Method not found: x"))
    bad = invalid(obj(jsonrpc="2.0", id=8, method=1))
    assert bad.response() == JSONRPCErrorResponse(id=8, error=bad.error)
