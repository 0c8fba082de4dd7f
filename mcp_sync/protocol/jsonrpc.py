"""Decoding and encoding of JSON-RPC 2.0 messages.

:func:`decode_message` turns one JSON text into a message model, or into an
:class:`InvalidMessage` that says how to answer it; :func:`encode_message`
turns a message model into compact JSON bytes. Both are pure functions used
by every transport, so that all of them agree on what is valid.

>>> decode_message(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
JSONRPCRequest(jsonrpc='2.0', id=1, method='ping', params=None)
>>> encode_message(JSONRPCNotification(method="notifications/initialized"))
b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel

from .errors import JsonRpcCode
from .types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    NumberId,
    RequestId,
)

__all__ = [
    "InvalidMessage",
    "decode_message",
    "encode_message",
    "envelope",
    "error_response",
    "parse_value",
    "reads_as_response",
    "recover_id",
]

_BOM = "\ufeff"

ID_SCAN_BYTES = 1 << 16
"""How much of the start of a message is scanned for its id by :func:`recover_id`."""

# The id scan's patterns, compiled at their first use (by re.compile, which keeps what it compiled): only an id
# of 0 or a float, and a message that is not valid, are scanned, and compiling them costs each process's start.
# A JSON string (complete) or a bracket: what the id scan steps over, at C speed.
_STRING_OR_BRACKET = rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]'
# After the key "id": the colon and a whole number or string, ended by "," or "}" (so not cut short).
_ID_VALUE = (
    rb"[ \t\r\n]*:[ \t\r\n]*"
    rb'(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"[^"\\]*(?:\\.[^"\\]*)*")'
    rb"[ \t\r\n]*[,}]"
)
_COLON = rb"[ \t\r\n]*:"
_NEGATIVE_ZERO_ID = rb'"id"[ \t\r\n]*:[ \t\r\n]*-0[^.eE0-9]'


class InvalidMessage:
    """Input that is not a valid JSON-RPC message.

    ``reply`` tells whether the peer must get ``error`` back (requests and
    unreadable input) or whether the input is dropped (broken notifications
    and responses, which never get an answer). ``batch`` holds the elements
    of a non-empty JSON array (a JSON-RPC batch), which a connection at a
    revision that allows batches serves (see :mod:`mcp_sync.protocol.batch`).

    A plain class with slots, not a dataclass: every process that speaks
    JSON-RPC declares it, and a frozen dataclass costs a process's start
    about a fifth of a millisecond.

    >>> invalid = InvalidMessage(Error(code=-32600, message="no method"), 7)
    >>> invalid
    InvalidMessage(error=Error(code=-32600, message='no method'), id=7, reply=True)
    >>> invalid.response().to_wire()["error"]["message"]
    'no method'
    """

    __slots__ = ("batch", "error", "id", "reply")

    def __init__(
        self,
        error: Error,
        id: RequestId | None = None,
        reply: bool = True,
        batch: tuple[Any, ...] | None = None,
    ) -> None:
        self.error = error
        self.id = id
        self.reply = reply
        self.batch = batch

    def __repr__(self) -> str:
        error = f"Error(code={self.error.code}, message={self.error.message!r})"
        return f"InvalidMessage(error={error}, id={self.id!r}, reply={self.reply})"

    def response(self) -> JSONRPCErrorResponse:
        """The error response that answers this input."""
        return JSONRPCErrorResponse(id=self.id, error=self.error)


def error_response(request_id: RequestId | None, code: int, message: str) -> JSONRPCErrorResponse:
    """An error response with ``code`` and ``message``."""
    return JSONRPCErrorResponse(id=request_id, error=Error(code=code, message=message))


def _invalid(message: str, request_id: RequestId | None = None, reply: bool = True) -> InvalidMessage:
    return InvalidMessage(Error(code=JsonRpcCode.INVALID_REQUEST, message=message), request_id, reply)


def _read_id(value: Any, raw: bytes | str | None) -> RequestId | None:
    """The request id in ``value``, or ``None`` when it is not a string or integer.

    An integral number written otherwise than as a plain integer (``1.0``,
    ``1e3``, ``-0``) is a :class:`NumberId`: the integer it equals, with the
    text it was sent as (read from ``raw``, the message, when there is one),
    so that the answer carries the id exactly as sent.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value == 0 and raw is not None:
            data = _as_bytes(raw)
            if re.compile(_NEGATIVE_ZERO_ID).search(data, 0, ID_SCAN_BYTES) and _id_token(data) == b"-0":
                return NumberId(0, "-0")
        return value
    if isinstance(value, float) and value.is_integer():
        token = _id_token(_as_bytes(raw)) if raw is not None else None
        if token is None or token.startswith(b'"') or float(token) != value:
            token = pydantic_core.to_json(value)  # without the message: the float's own text (1e3 reads 1000.0)
        return NumberId(int(value), token.decode())
    return None


def _as_bytes(raw: bytes | str) -> bytes:
    return raw if isinstance(raw, bytes) else raw[:ID_SCAN_BYTES].encode("utf-8", "surrogatepass")


def _top_level_keys(raw: bytes) -> Iterator[re.Match[bytes]]:
    """The keys of the top-level object in the first :data:`ID_SCAN_BYTES` of ``raw``, each as the match of its
    quoted text, found without parsing (the text may be broken further on)."""
    depth = 0
    colon = re.compile(_COLON)
    for match in re.compile(_STRING_OR_BRACKET, re.DOTALL).finditer(raw, 0, ID_SCAN_BYTES):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and colon.match(raw, match.end(), ID_SCAN_BYTES):
            yield match


def _id_token(raw: bytes) -> bytes | None:
    """The text of the top-level ``"id"`` member's value, if it is a whole number or string.

    Only the first :data:`ID_SCAN_BYTES` are scanned. The value counts only
    when it is followed by ``,`` or ``}``: a message cut short inside its id
    (``"id":1234`` at the end, where ``123456`` was being written) has none.
    """
    for key in _top_level_keys(raw):
        if key.group() == b'"id"':
            # Its value counts only when whole (cut short, or not a number or string: none).
            value = re.compile(_ID_VALUE, re.DOTALL).match(raw, key.end(), ID_SCAN_BYTES)
            return value.group(1) if value is not None else None
    return None


def reads_as_response(raw: bytes) -> bool:
    """Whether a message that could not be parsed reads as a response: a top-level ``"result"`` or ``"error"``, no
    ``"method"``.

    Such a message never gets an answer: its id (see :func:`recover_id`) is
    one of the receiver's own, so an error sent back would answer a request
    of the peer's that happens to share it, while the call the message
    answers went on waiting. Only the start of the message is scanned.

    >>> reads_as_response(b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN}}')
    True
    >>> reads_as_response(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}')
    False
    """
    keys = {key.group() for key in _top_level_keys(raw)}
    return not keys.isdisjoint((b'"result"', b'"error"')) and b'"method"' not in keys


def recover_id(raw: bytes) -> RequestId | None:
    """The top-level ``"id"`` of a message that could not be parsed, if it can be read whole.

    Only the start of the message is scanned, only a key at the top level of
    the object counts (an ``id`` nested in ``params`` is never mistaken for
    the request's), and only a value that is complete: a number or string
    followed by ``,`` or ``}``. A number must be an integer (``2.0`` and
    ``1e3`` are, and come back as written: see :class:`NumberId`).

    >>> recover_id(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":NaN}}')
    7
    >>> recover_id(b'{"jsonrpc":"2.0","id":1234') is None
    True
    """
    token = _id_token(raw)
    if token is None:
        return None
    if token.startswith(b'"'):
        try:
            text: str = pydantic_core.from_json(token)
        except ValueError:  # a broken escape or invalid UTF-8 inside the id
            return None
        return text
    if not token.strip(b"-0123456789"):
        try:
            integer = int(token)
        except ValueError:  # more digits than Python converts
            return None
        return NumberId(0, "-0") if token == b"-0" else integer
    number = float(token)
    if not number.is_integer():  # a fraction, or too large to be finite
        return None
    return NumberId(int(number), token.decode())


def decode_message(data: bytes | bytearray | memoryview | str) -> JSONRPCMessage | InvalidMessage:
    """Decode one JSON text into a JSON-RPC message.

    Unparseable input (including ``NaN`` and ``Infinity``, which are not JSON)
    gives a ``-32700`` :class:`InvalidMessage`; valid JSON that is not a
    JSON-RPC message gives ``-32600``. A leading byte-order mark is ignored.
    """
    if isinstance(data, str):
        text = data[1:] if data.startswith(_BOM) else data
        raw: bytes | str = text
    else:
        raw = bytes(data)
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
    try:
        value = pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as exc:
        return InvalidMessage(Error(code=JsonRpcCode.PARSE_ERROR, message=f"Parse error: {exc}"))
    except TypeError:
        # Only a str holding a lone surrogate gets here (pydantic_core cannot
        # encode it to UTF-8), e.g. text read with errors="surrogateescape".
        return InvalidMessage(Error(code=JsonRpcCode.PARSE_ERROR, message="Parse error: the text is not valid Unicode"))
    return _classify(value, raw)


def parse_value(value: Any) -> JSONRPCMessage | InvalidMessage:
    """Classify an already decoded JSON value as a JSON-RPC message.

    Without the message's text, an integral float id is answered as the
    float's own text (``2.0``; ``1e3`` as ``1000.0``): use
    :func:`decode_message` where the text is at hand.
    """
    return _classify(value, None)


def _classify(value: Any, raw: bytes | str | None) -> JSONRPCMessage | InvalidMessage:
    if not isinstance(value, dict):
        if isinstance(value, list):
            # Refused as one message; a non-empty array's elements are kept for a revision with batches.
            error = Error(
                code=JsonRpcCode.INVALID_REQUEST, message="Invalid request: expected a JSON object, got a batch"
            )
            return InvalidMessage(error, batch=tuple(value) if value else None)
        return _invalid(f"Invalid request: expected a JSON object, got {type(value).__name__}")
    has_id = "id" in value
    request_id = _read_id(value.get("id"), raw) if has_id else None
    method = value.get("method")
    has_outcome = "result" in value or "error" in value
    is_response = method is None and has_outcome
    if value.get("jsonrpc") != "2.0":
        # As in _parse_call: a response, or what may be a notification (no id
        # but a method), never gets an answer.
        reply = not is_response and (has_id or method is None)
        return _invalid('Invalid request: "jsonrpc" must be "2.0"', request_id, reply=reply)
    if is_response:
        return _parse_response(value, request_id)
    if has_outcome:
        # A request or a response? Neither: it is not executed, and is answered when it has an id.
        return _invalid('Invalid request: a request cannot carry "result" or "error"', request_id, reply=has_id)
    return _parse_call(value, has_id, request_id, method)


def _parse_call(
    value: dict[str, Any], has_id: bool, request_id: RequestId | None, method: Any
) -> JSONRPCMessage | InvalidMessage:
    if not isinstance(method, str):
        # Without an id, only a call that names no method at all is answered:
        # anything else may be a notification, and those never get a reply.
        return _invalid('Invalid request: "method" must be a string', request_id, reply=has_id or method is None)
    params = value.get("params")
    if params is not None and not isinstance(params, dict):
        return _invalid('Invalid request: "params" must be an object', request_id, reply=has_id)
    if not has_id:
        return envelope(JSONRPCNotification, value)
    if request_id is None:
        return _invalid('Invalid request: "id" must be a string or an integer')
    fields = dict(value)
    fields["id"] = request_id
    return envelope(JSONRPCRequest, fields)


def _parse_response(value: dict[str, Any], request_id: RequestId | None) -> JSONRPCMessage | InvalidMessage:
    if "result" in value:
        if request_id is None or not isinstance(value["result"], dict) or "error" in value:
            return _invalid("Invalid response", request_id, reply=False)
        return envelope(JSONRPCResultResponse, {**value, "id": request_id})
    error = value["error"]
    if (
        not isinstance(error, dict)
        or not isinstance(error.get("code"), int)
        or isinstance(error["code"], bool)
        or not isinstance(error.get("message"), str)
    ):
        return _invalid("Invalid error response", request_id, reply=False)
    return JSONRPCErrorResponse.model_validate({**value, "id": request_id})


_Envelope = TypeVar("_Envelope", JSONRPCRequest, JSONRPCNotification, JSONRPCResultResponse)
# Each envelope's fields and their defaults (a required field is always among the checked members).
_DEFAULTS: dict[type[Any], dict[str, Any]] = {
    cls: {name: info.default for name, info in cls.model_fields.items()}
    for cls in (JSONRPCRequest, JSONRPCNotification, JSONRPCResultResponse)
}


_NAMES = {cls: tuple(fields) for cls, fields in _DEFAULTS.items()}
# The slots every pydantic model has, set directly (BaseModel.__setattr__ would validate).
_SET_DICT = BaseModel.__dict__["__dict__"].__set__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def envelope(cls: type[_Envelope], value: dict[str, Any]) -> _Envelope:
    """The request, notification or result envelope ``cls`` holding ``value``, whose members are known valid.

    The model ``cls.model_validate(value)`` would give (extra members kept),
    built without validating again: this runs for every message sent and
    received, whose members the decoder (or the sender) has already checked.

    >>> envelope(JSONRPCRequest, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    JSONRPCRequest(jsonrpc='2.0', id=1, method='ping', params=None)
    """
    message = object.__new__(cls)
    if tuple(value) == _NAMES[cls]:
        # Every field, in order, and nothing else (what the dispatcher sends, and most of what comes in).
        _SET_DICT(message, dict(value))
        _SET_EXTRA(message, {})
    else:
        fields = _DEFAULTS[cls]
        _SET_DICT(message, {name: value.get(name, default) for name, default in fields.items()})
        _SET_EXTRA(message, {key: item for key, item in value.items() if key not in fields})
    _SET_FIELDS_SET(message, set(value))
    _SET_PRIVATE(message, None)
    return message


def encode_message(message: JSONRPCMessage) -> bytes:
    """Compact JSON bytes for ``message`` (no trailing newline).

    A :class:`NumberId` goes out as the text it came in as (``2.0``, not ``2``).
    """
    if isinstance(message, JSONRPCErrorResponse) and message.id is None:
        return pydantic_core.to_json(message.to_wire(), inf_nan_mode="null")
    if not isinstance(message, JSONRPCNotification) and type(message.id) is NumberId:
        rest = message.model_dump_json(by_alias=True, exclude_none=True, exclude={"jsonrpc", "id"})
        return b'{"jsonrpc":"2.0","id":' + message.id.token.encode() + b"," + rest[1:].encode()
    if isinstance(message, JSONRPCErrorResponse):
        return message.model_dump_json(by_alias=True, exclude_none=True).encode()
    # The other envelopes hold plain members (their field names are their JSON names): serialised as a
    # dict, which costs about half of model_dump_json. Members that are None are left out, as there.
    members = message.__dict__
    extra = message.__pydantic_extra__
    if extra:
        members = {**members, **extra}
    # NaN and infinities become null, as model_dump_json writes them: JSON has no token for them.
    return pydantic_core.to_json(
        {key: item for key, item in members.items() if item is not None},
        by_alias=True,
        exclude_none=True,
        inf_nan_mode="null",
    )
