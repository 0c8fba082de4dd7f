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

from dataclasses import dataclass
from typing import Any

import pydantic_core

from .errors import JsonRpcCode
from .types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    RequestId,
)

__all__ = ["InvalidMessage", "decode_message", "encode_message", "error_response", "parse_value"]

_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """Input that is not a valid JSON-RPC message.

    ``reply`` tells whether the peer must get ``error`` back (requests and
    unreadable input) or whether the input is dropped (broken notifications
    and responses, which never get an answer).
    """

    error: Error
    id: RequestId | None = None
    reply: bool = True

    def response(self) -> JSONRPCErrorResponse:
        """The error response that answers this input."""
        return JSONRPCErrorResponse(id=self.id, error=self.error)


def error_response(request_id: RequestId | None, code: int, message: str) -> JSONRPCErrorResponse:
    """An error response with ``code`` and ``message``."""
    return JSONRPCErrorResponse(id=request_id, error=Error(code=code, message=message))


def _invalid(message: str, request_id: RequestId | None = None, reply: bool = True) -> InvalidMessage:
    return InvalidMessage(Error(code=JsonRpcCode.INVALID_REQUEST, message=message), request_id, reply)


def _read_id(value: Any) -> RequestId | None:
    """The request id in ``value``, or ``None`` when it is not a string or integer.

    An integral float such as ``1.0`` is read as the integer it equals: JSON
    does not distinguish them and every peer compares them equal.
    """
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


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
    return parse_value(value)


def parse_value(value: Any) -> JSONRPCMessage | InvalidMessage:
    """Classify an already decoded JSON value as a JSON-RPC message."""
    if not isinstance(value, dict):
        kind = "a batch" if isinstance(value, list) else type(value).__name__
        return _invalid(f"Invalid request: expected a JSON object, got {kind}")
    has_id = "id" in value
    request_id = _read_id(value.get("id"))
    method = value.get("method")
    is_response = method is None and ("result" in value or "error" in value)
    if value.get("jsonrpc") != "2.0":
        # As in _parse_call: a response, or what may be a notification (no id
        # but a method), never gets an answer.
        reply = not is_response and (has_id or method is None)
        return _invalid('Invalid request: "jsonrpc" must be "2.0"', request_id, reply=reply)
    if is_response:
        return _parse_response(value, request_id)
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
        return JSONRPCNotification.model_validate(value)
    if request_id is None:
        return _invalid('Invalid request: "id" must be a string or an integer')
    fields = dict(value)
    fields["id"] = request_id
    return JSONRPCRequest.model_validate(fields)


def _parse_response(value: dict[str, Any], request_id: RequestId | None) -> JSONRPCMessage | InvalidMessage:
    if "result" in value:
        if request_id is None or not isinstance(value["result"], dict) or "error" in value:
            return _invalid("Invalid response", request_id, reply=False)
        return JSONRPCResultResponse.model_validate({**value, "id": request_id})
    error = value["error"]
    if (
        not isinstance(error, dict)
        or not isinstance(error.get("code"), int)
        or isinstance(error["code"], bool)
        or not isinstance(error.get("message"), str)
    ):
        return _invalid("Invalid error response", request_id, reply=False)
    return JSONRPCErrorResponse.model_validate({**value, "id": request_id})


def encode_message(message: JSONRPCMessage) -> bytes:
    """Compact JSON bytes for ``message`` (no trailing newline)."""
    if isinstance(message, JSONRPCErrorResponse) and message.id is None:
        return pydantic_core.to_json(message.to_wire())
    return message.model_dump_json(by_alias=True, exclude_none=True).encode()
