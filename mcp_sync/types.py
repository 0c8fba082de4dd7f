"""Pydantic models for every MCP wire shape.

One model per definition of the official JSON schema, named as in the schema
(``Tool``, ``CallToolRequestParams``, ``CallToolResult``, ...). The models
cover the union of the revisions that mcp_sync speaks (2024-11-05 to
2025-11-25 and 2026-07-28); which fields a given peer gets is decided where
messages are sent, not here.

Conventions shared by all models:

* attributes are snake_case in Python and camelCase on the wire
  (``Tool(input_schema=...)`` serialises as ``inputSchema``); both spellings
  are accepted when parsing;
* unknown fields are kept and serialised back unchanged;
* optional fields default to ``None`` and are not emitted while ``None``;
* ``_meta`` is the attribute ``meta``.

>>> from mcp_sync.types import Tool
>>> tool = Tool(name="echo", input_schema={"type": "object"})
>>> tool.to_wire()
{'name': 'echo', 'inputSchema': {'type': 'object'}}
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

JSONRPC_VERSION: Literal["2.0"] = "2.0"

RequestId: TypeAlias = str | int
"""A JSON-RPC request id (the spec allows strings and integers)."""

ProgressToken: TypeAlias = str | int
Cursor: TypeAlias = str
Role: TypeAlias = Literal["user", "assistant"]
LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, extra fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-compatible dict sent on the wire (``None`` fields left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --------------------------------------------------------------------------
# JSON-RPC envelopes
# --------------------------------------------------------------------------


class JSONRPCRequest(WireModel):
    """A request that expects a response."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: str
    params: dict[str, Any] | None = None


class JSONRPCNotification(WireModel):
    """A notification, which does not expect a response."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: str
    params: dict[str, Any] | None = None


class JSONRPCResultResponse(WireModel):
    """A successful response to a request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: dict[str, Any]


class Error(WireModel):
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: Any = None


class JSONRPCErrorResponse(WireModel):
    """A response that reports an error.

    ``id`` is ``None`` when the request's id could not be read (a parse error);
    it is then sent as ``null``, as JSON-RPC 2.0 requires.
    """

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId | None = None
    error: Error

    def to_wire(self) -> dict[str, Any]:
        wire = super().to_wire()
        wire.setdefault("id", None)
        return wire


JSONRPCResponse: TypeAlias = JSONRPCResultResponse | JSONRPCErrorResponse
JSONRPCMessage: TypeAlias = (
    JSONRPCRequest | JSONRPCNotification | JSONRPCResultResponse | JSONRPCErrorResponse
)


# --------------------------------------------------------------------------
# Base shapes
# --------------------------------------------------------------------------


class Result(WireModel):
    """Common result fields. ``result_type`` exists from 2026-07-28 on."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class EmptyResult(Result):
    """A result that carries nothing (``ping``, ``logging/setLevel``, ...)."""
