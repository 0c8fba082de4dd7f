"""Tests of mcp_sync.protocol.jsonrpc: decoding and encoding JSON-RPC 2.0 messages."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from mcp_sync.protocol.jsonrpc import (
    InvalidMessage,
    decode_message,
    encode_message,
    error_response,
    parse_value,
    recover_id,
)
from mcp_sync.types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    NumberId,
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


# Integral numbers written otherwise than as plain integers: decoded as the
# integer they equal, answered with the id exactly as sent (issue 12).
EXACT_IDS = [
    (b"2.0", 2),
    (b"1e3", 1000),
    (b"1E+2", 100),
    (b"2.50e1", 25),
    (b"100.000", 100),
    (b"-7.0", -7),
    (b"-0.0", 0),
    (b"-0", 0),
    (b"1e20", 10**20),
]


@pytest.mark.parametrize(("token", "value"), EXACT_IDS, ids=[t.decode() for t, _ in EXACT_IDS])
def test_an_integral_number_id_is_answered_exactly_as_sent(token: bytes, value: int) -> None:
    head = b'{"jsonrpc":"2.0","id":' + token
    for raw, encoded in (
        (head + b',"method":"ping"}', head + b',"method":"ping"}'),
        (
            b'{"jsonrpc": "2.0", "method": "ping", "params": {"id": 5}, "id": ' + token + b"}",
            head + b',"method":"ping","params":{"id":5}}',
        ),
    ):
        for data in (raw, raw.decode()):
            message = decode_message(data)
            assert isinstance(message, JSONRPCRequest)
            assert message.id == value and hash(message.id) == hash(value)
            assert type(message.id) is NumberId and message.id.token == token.decode()
            assert encode_message(message) == encoded
            assert encode_message(JSONRPCResultResponse(id=message.id, result={})) == head + b',"result":{}}'
            assert encode_message(error_response(message.id, -32601, "no")) == (
                head + b',"error":{"code":-32601,"message":"no"}}'
            )


def test_an_exact_id_survives_the_wire_models_and_copies() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":1e3,"method":"ping","params":[1]}')
    assert isinstance(message, InvalidMessage) and message.error.code == -32600
    assert encode_message(message.response()).startswith(b'{"jsonrpc":"2.0","id":1e3,"error":')
    request_id = NumberId(1000, "1e3")
    assert repr(request_id) == "NumberId(1000, '1e3')"
    for copied in (copy.copy(request_id), copy.deepcopy(request_id), pickle.loads(pickle.dumps(request_id))):
        assert type(copied) is NumberId and copied == 1000 and copied.token == "1e3"
    response = JSONRPCResultResponse.model_validate({"id": request_id, "result": {}})
    assert response.id is request_id
    copied_id = response.model_copy(deep=True).id
    assert isinstance(copied_id, NumberId) and copied_id.token == "1e3"
    # A plain float is still read as the integer it equals, and JSON input cannot make a NumberId.
    assert type(JSONRPCRequest.model_validate({"id": 2.0, "method": "ping"}).id) is int
    assert type(JSONRPCRequest.model_validate_json('{"id":2,"method":"x"}').id) is int
    assert JSONRPCRequest.model_json_schema()["properties"]["id"]["anyOf"] == [{"type": "string"}, {"type": "integer"}]


def test_an_exact_id_of_a_response_matches_the_integer_it_equals() -> None:
    response = decode_message(b'{"jsonrpc":"2.0","id":2.0,"result":{}}')
    assert isinstance(response, JSONRPCResultResponse)
    assert {2: "pending"}.get(response.id) == "pending"  # the dispatcher finds its own call 2
    error = decode_message(b'{"jsonrpc":"2.0","id":3e0,"error":{"code":1,"message":"x"}}')
    assert isinstance(error, JSONRPCErrorResponse) and error.id == 3 and type(error.id) is NumberId


@pytest.mark.parametrize(
    ("raw", "token"),
    [
        # The top-level id beyond the part that is scanned: the float's own text.
        (b'{"jsonrpc":"2.0","method":"ping","params":{"p":"' + b"x" * 70_000 + b'"},"id":1e3}', "1000.0"),
        # Duplicate keys (the last one counts): the first is not taken for it.
        (b'{"jsonrpc":"2.0","id":"a","id":2.0,"method":"ping"}', "2.0"),
        (b'{"jsonrpc":"2.0","id":3.0,"id":2.0,"method":"ping"}', "2.0"),
    ],
    ids=["beyond-the-scan", "string-then-number", "number-then-number"],
)
def test_an_exact_id_that_cannot_be_found_in_the_text_is_written_as_the_float(raw: bytes, token: str) -> None:
    message = decode_message(raw)
    assert isinstance(message, JSONRPCRequest) and type(message.id) is NumberId and message.id.token == token


def test_zero_is_plain_unless_written_as_minus_zero() -> None:
    for raw in (
        b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":0,"method":"ping","params":{"id":-0}}',
        b'{"jsonrpc":"2.0","method":"ping","params":{"id": -0 },"id":0}',
    ):
        message = decode_message(raw)
        assert isinstance(message, JSONRPCRequest) and type(message.id) is int and message.id == 0
    assert parse_value({"jsonrpc": "2.0", "id": 0, "method": "ping"}) == JSONRPCRequest(id=0, method="ping")


def test_parse_value_without_the_text_writes_an_integral_float_id_as_the_float() -> None:
    message = parse_value({"jsonrpc": "2.0", "id": 1e3, "method": "ping"})
    assert isinstance(message, JSONRPCRequest) and type(message.id) is NumberId
    assert (
        encode_message(JSONRPCResultResponse(id=message.id, result={})) == b'{"jsonrpc":"2.0","id":1000.0,"result":{}}'
    )


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


@pytest.mark.parametrize(
    ("fields", "reply"),
    [
        ({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "x"}, "result": {}}, True),
        ({"jsonrpc": "2.0", "id": "a", "method": "ping", "error": {"code": 1, "message": "x"}}, True),
        ({"jsonrpc": "2.0", "id": 4, "method": "ping", "result": None}, True),
        ({"jsonrpc": "2.0", "method": "notifications/x", "result": {}}, False),
    ],
)
def test_a_request_carrying_result_or_error_is_an_invalid_request(fields: dict[str, Any], reply: bool) -> None:
    message = invalid(obj(**fields))
    assert message.error.code == -32600 and "result" in message.error.message
    assert message.id == fields.get("id") and message.reply is reply


def test_a_request_carrying_a_result_is_answered_with_its_exact_id() -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":7.0,"method":"ping","result":{}}')
    assert encode_message(message.response()).startswith(b'{"jsonrpc":"2.0","id":7.0,"error":{"code":-32600')


# ------------------------------------------------------- recovering an id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":NaN}}', 7),
        (b'{"jsonrpc":"2.0","id" : 7 }x', 7),
        (b'{"jsonrpc":"2.0","id":\t7\r\n,', 7),
        (b'{"jsonrpc":"2.0","id":"a\\"b", NaN', 'a"b'),
        (b'{"jsonrpc":"2.0","id":"k"}', "k"),
        (b'{"params":{"id":3},"list":[{"id":4}],"id":5,', 5),
        (b'{"a":"quote \\" and {[ brackets","id":6, NaN', 6),
        (b'{"\\"id": 5, "id": 8,', 8),  # a key that merely ends in id"
        (b'{"method":"id","id":9,', 9),  # "id" as a value is not the key
        (b'{"id":-12,', -12),
        (b'{"id":' + b"9" * 30 + b",", int("9" * 30)),
        # Cut short: the writer may have been inside a longer id.
        (b'{"jsonrpc":"2.0","id":1234', None),
        (b'{"jsonrpc":"2.0","id":1234 ', None),
        (b'{"jsonrpc":"2.0","id":12.', None),
        (b'{"jsonrpc":"2.0","id":1e', None),
        (b'{"jsonrpc":"2.0","id":-', None),
        (b'{"jsonrpc":"2.0","id":"abc', None),
        (b'{"jsonrpc":"2.0","id":"abc"', None),
        (b'{"jsonrpc":"2.0","id":"abc" ', None),
        (b'{"jsonrpc":"2.0","id":', None),
        (b'{"jsonrpc":"2.0","id"', None),
        # Not an id at all.
        (b'{"id":null,', None),
        (b'{"id":true,', None),
        (b'{"id":[1],', None),
        (b'{"id":01,', None),
        (b'{"id":1.5,', None),
        (b'{"id":1e999,', None),
        (b'{"id":' + b"9" * 5000 + b",", None),
        (b'{"id":"\\ud800",', None),
        (b'{"params":{"id":3}} trailing', None),
        (b"not json at all", None),
        (b'{"p":"' + b"x" * 70_000 + b'","id":1,', None),
    ],
    ids=lambda value: value[:40].decode(errors="replace") if isinstance(value, bytes) else None,
)
def test_recover_id_reads_only_a_whole_top_level_id(raw: bytes, expected: Any) -> None:
    recovered = recover_id(raw)
    assert recovered == expected and type(recovered) is type(expected)


@pytest.mark.parametrize(("token", "value"), [(b"2.0", 2), (b"1e3", 1000), (b"-0", 0), (b"-0.0", 0)])
def test_recover_id_keeps_an_integral_number_as_written(token: bytes, value: int) -> None:
    recovered = recover_id(b'{"jsonrpc":"2.0","id":' + token + b',"method":"ping","params":{"n":NaN}}')
    assert type(recovered) is NumberId and recovered == value and recovered.token == token.decode()


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
