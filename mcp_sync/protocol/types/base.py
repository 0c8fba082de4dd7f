"""The base protocol's shapes: JSON-RPC envelopes, ids, request/result bases, identity, capabilities, lifecycle.

Every other module of :mod:`mcp_sync.protocol.types` builds on these
(:class:`WireModel` is the base of every model).
"""

from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema, core_schema

from .lazy import adopt

JSONRPC_VERSION: Literal["2.0"] = "2.0"


class NumberId(int):
    """A numeric request id whose JSON text is not the integer's own: ``2.0``, ``1e3``, ``-0``.

    JSON-RPC asks for the id back as it was sent, and some peers (serde_json,
    for one) do not take ``2`` for ``2.0``. A ``NumberId`` equals and hashes
    as the integer it is, so it matches like one; ``token`` is its text, which
    :func:`~mcp_sync.protocol.jsonrpc.encode_message` writes back. The wire
    models keep it as it is (see :data:`RequestId`).

    >>> request_id = NumberId(1000, "1e3")
    >>> request_id == 1000, request_id.token
    (True, '1e3')
    """

    token: str

    def __new__(cls, value: int, token: str) -> "NumberId":
        number = super().__new__(cls, value)
        number.token = token
        return number

    def __getnewargs__(self) -> tuple[int, str]:  # type: ignore[override]  # copy and pickle keep the token
        return int(self), self.token

    def __repr__(self) -> str:
        return f"NumberId({int(self)}, {self.token!r})"


class _KeepNumberId:
    """Schema of :data:`RequestId`: a :class:`NumberId` is kept as it is, not made a plain ``int``."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        plain = handler(source)
        return core_schema.json_or_python_schema(
            json_schema=plain,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(NumberId), plain]),
        )


RequestId: TypeAlias = Annotated[str | int, _KeepNumberId()]
"""A JSON-RPC request id (the spec allows strings and integers; a :class:`NumberId` is kept as it is)."""

ProgressToken: TypeAlias = str | int
Cursor: TypeAlias = str
ResultType: TypeAlias = str
"""``complete`` or ``input_required`` (2026-07-28); a plain string in the schema."""
Role: TypeAlias = Literal["user", "assistant"]
LoggingLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
"""The log levels, least severe first."""


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, extra fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        # Schemas are built when a model is first used: most programs touch
        # a few dozen of these models, and building all of them up front
        # would cost a server process a noticeable fraction of its start-up.
        defer_build=True,
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
JSONRPCMessage: TypeAlias = JSONRPCRequest | JSONRPCNotification | JSONRPCResultResponse | JSONRPCErrorResponse


# --------------------------------------------------------------------------
# Base shapes
# --------------------------------------------------------------------------


class Result(WireModel):
    """Common result fields. ``result_type`` exists from 2026-07-28 on."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    result_type: ResultType | None = None


class EmptyResult(Result):
    """A result that carries nothing (``ping``, ``logging/setLevel``, ...)."""


# --------------------------------------------------------------------------
# JSON values, _meta objects, request and notification bases
# --------------------------------------------------------------------------

JSONValue: TypeAlias = Any
"""Any JSON value (kept loose: the schema's recursive definition adds nothing)."""

JSONObject: TypeAlias = dict[str, Any]
JSONArray: TypeAlias = list[Any]
MetaObject: TypeAlias = dict[str, Any]
"""The content of a ``_meta`` field: free-form keys, some reserved by MCP."""

META_PREFIX = "io.modelcontextprotocol/"
"""Prefix of the ``_meta`` keys that MCP reserves for itself."""


class RequestParams(WireModel):
    """Base of request parameters: only the optional ``_meta`` object."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class NotificationParams(WireModel):
    """Base of notification parameters: only the optional ``_meta`` object."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class Request(WireModel):
    """A request payload without the JSON-RPC envelope fields."""

    method: str
    params: dict[str, Any] | None = None


class Notification(WireModel):
    """A notification payload without the JSON-RPC envelope fields."""

    method: str
    params: dict[str, Any] | None = None


# --------------------------------------------------------------------------
# Identity and capabilities
# --------------------------------------------------------------------------


class Icon(WireModel):
    """An image that a client may show next to a server, tool, prompt or resource."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


class Icons(WireModel):
    """Mixin for shapes that carry a list of icons."""

    icons: list[Icon] | None = None


class BaseMetadata(WireModel):
    """Mixin for shapes with a programmatic ``name`` and a display ``title``."""

    name: str
    title: str | None = None


class Implementation(BaseMetadata, Icons):
    """Name and version of an MCP client or server program."""

    version: str
    description: str | None = None
    website_url: str | None = None


class RootsCapability(WireModel):
    """Client support for roots (``list_changed`` before 2026-07-28)."""

    list_changed: bool | None = None


class SamplingCapability(WireModel):
    """Client support for sampling, with optional context and tool-use support."""

    context: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None


class ElicitationCapability(WireModel):
    """Client support for elicitation; an empty object means form mode only."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class ClientCapabilities(WireModel):
    """What a client supports; an absent member means not supported."""

    experimental: dict[str, dict[str, Any]] | None = None
    extensions: dict[str, dict[str, Any]] | None = None
    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None


class PromptsCapability(WireModel):
    """Server support for prompts."""

    list_changed: bool | None = None


class ResourcesCapability(WireModel):
    """Server support for resources, subscriptions and list-change notices."""

    subscribe: bool | None = None
    list_changed: bool | None = None


class ToolsCapability(WireModel):
    """Server support for tools."""

    list_changed: bool | None = None


class ServerCapabilities(WireModel):
    """What a server offers; an absent member means not offered."""

    experimental: dict[str, dict[str, Any]] | None = None
    extensions: dict[str, dict[str, Any]] | None = None
    logging: dict[str, Any] | None = None
    completions: dict[str, Any] | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None


# --------------------------------------------------------------------------
# Results shared by several operations
# --------------------------------------------------------------------------


class CacheableResult(Result):
    """A result with a caching hint (2026-07-28)."""

    ttl_ms: int | None = Field(default=None, ge=0)
    cache_scope: Literal["public", "private"] | None = None


class PaginatedRequestParams(RequestParams):
    """Parameters of list requests: an optional page cursor."""

    cursor: Cursor | None = None


class PaginatedResult(Result):
    """A result page, with the cursor of the next page when there is one."""

    next_cursor: Cursor | None = None


# --------------------------------------------------------------------------
# Progress and cancellation (the base protocol's utilities)
# --------------------------------------------------------------------------


class ProgressNotificationParams(NotificationParams):
    """Parameters of ``notifications/progress``."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None


class CancelledNotificationParams(NotificationParams):
    """Parameters of ``notifications/cancelled``."""

    request_id: RequestId
    reason: str | None = None


# --------------------------------------------------------------------------
# Lifecycle: initialize (until 2025-11-25), server/discover (2026-07-28)
# --------------------------------------------------------------------------


class InitializeRequestParams(RequestParams):
    """Parameters of ``initialize``."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


class InitializeResult(Result):
    """The server's answer to ``initialize``."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None


class DiscoverResult(CacheableResult):
    """The server's answer to ``server/discover``."""

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None


adopt(globals())
