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
  fields that the schema fixes to one value (``type``, ``method``,
  ``jsonrpc``, error ``code``) default to it;
* ``_meta`` is the attribute ``meta``, a plain dict (``RequestMetaObject``
  and its siblings give a typed view of the reserved keys);
* unions of the schema (``ContentBlock``, ``ResourceContents``,
  ``PrimitiveSchemaDefinition``, ``InputRequests``, ...) are type aliases,
  usable as field types or with ``pydantic.TypeAdapter``.

The per-method envelopes (``CallToolRequest``, ``ProgressNotification``,
...), the typed error responses and the unions of messages by direction are
in :mod:`mcp_sync.protocol.messages`.

The module's annotations are evaluated as the classes are made (no
``from __future__ import annotations``): pydantic then has no strings to
compile and evaluate, which makes importing these models about a fifth
cheaper. Forward references are quoted.

The experimental *tasks* of 2025-11-25 are not modelled; their fields pass
through as unknown fields.

>>> from mcp_sync.types import Tool
>>> tool = Tool(name="echo", input_schema={"type": "object"})
>>> tool.to_wire()
{'name': 'echo', 'inputSchema': {'type': 'object'}}
"""

from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema, core_schema

from .rendering import render

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


class RequestMetaObject(WireModel):
    """Typed view of a 2026-07-28 request ``_meta`` (protocol version, client info...).

    Request params keep ``meta`` as a dict; validate it with this model when
    the typed view is wanted.
    """

    protocol_version: str = Field(alias="io.modelcontextprotocol/protocolVersion")
    client_capabilities: ClientCapabilities = Field(alias="io.modelcontextprotocol/clientCapabilities")
    client_info: Implementation | None = Field(default=None, alias="io.modelcontextprotocol/clientInfo")
    log_level: LoggingLevel | None = Field(default=None, alias="io.modelcontextprotocol/logLevel")
    progress_token: ProgressToken | None = None


class ResultMetaObject(WireModel):
    """Typed view of a 2026-07-28 result ``_meta`` (server info)."""

    server_info: Implementation | None = Field(default=None, alias="io.modelcontextprotocol/serverInfo")


class NotificationMetaObject(WireModel):
    """Typed view of a 2026-07-28 notification ``_meta`` (subscription id)."""

    subscription_id: RequestId | None = Field(default=None, alias="io.modelcontextprotocol/subscriptionId")


class SubscriptionsListenResultMetaObject(WireModel):
    """Typed view of the ``_meta`` of a ``subscriptions/listen`` result."""

    subscription_id: RequestId = Field(alias="io.modelcontextprotocol/subscriptionId")
    server_info: Implementation | None = Field(default=None, alias="io.modelcontextprotocol/serverInfo")


# --------------------------------------------------------------------------
# Content
# --------------------------------------------------------------------------


class Annotations(WireModel):
    """Hints on how a client should use or show a piece of content."""

    audience: list[Role] | None = None
    priority: float | None = Field(default=None, ge=0, le=1)
    last_modified: str | None = None


class TextContent(WireModel):
    """Plain text content."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ImageContent(WireModel):
    """A base64-encoded image."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class AudioContent(WireModel):
    """A base64-encoded audio clip."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class BaseResourceContents(WireModel):
    """Fields shared by text and blob resource contents (``ResourceContents`` in the schema)."""

    uri: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class TextResourceContents(BaseResourceContents):
    """The content of a resource as text."""

    text: str


class BlobResourceContents(BaseResourceContents):
    """The content of a resource as base64-encoded bytes."""

    blob: str


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents
"""Text or blob resource contents (told apart by ``text`` / ``blob``)."""


class Resource(BaseMetadata, Icons):
    """A resource that a server can read out."""

    uri: str
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    size: int | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceTemplate(BaseMetadata, Icons):
    """A URI template (RFC 6570) describing a family of resources."""

    uri_template: str
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceLink(Resource):
    """A reference to a resource, placed among content blocks."""

    type: Literal["resource_link"] = "resource_link"


class EmbeddedResource(WireModel):
    """The contents of a resource, placed inline among content blocks."""

    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]
"""One item of tool results and prompt messages, chosen by its ``type``."""


class ToolUseContent(WireModel):
    """A model's request to call a tool, inside sampling messages."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ToolResultContent(WireModel):
    """The outcome of a tool call, handed back to the model in sampling."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


SamplingMessageContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent,
    Field(discriminator="type"),
]
"""One item of a sampling message, chosen by its ``type``."""


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------


class ToolAnnotations(WireModel):
    """Untrusted hints about how a tool behaves."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(BaseMetadata, Icons):
    """A tool the server offers; its schemas are kept as plain JSON Schema dicts."""

    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class CallToolResult(Result):
    """What a tool call returns."""

    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None

    @property
    def text(self) -> str:
        """The text of the text content blocks, one per line.

        >>> CallToolResult(content=[TextContent(text="a"), TextContent(text="b")]).text
        'a\\nb'
        """
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    def _repr_html_(self) -> str | None:
        return render("text/html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(render("text/plain", self) or repr(self))


# --------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------


class SamplingMessage(WireModel):
    """One message of a sampling conversation."""

    role: Role
    content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ModelHint(WireModel):
    """A hint (a name or part of a name) for choosing a model."""

    name: str | None = None


class ModelPreferences(WireModel):
    """How the server would like the client to weigh models against each other."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = Field(default=None, ge=0, le=1)
    speed_priority: float | None = Field(default=None, ge=0, le=1)
    intelligence_priority: float | None = Field(default=None, ge=0, le=1)


class ToolChoice(WireModel):
    """How the model may use the tools offered in a sampling request."""

    mode: Literal["auto", "required", "none"] | None = None


class CreateMessageRequestParams(RequestParams):
    """Parameters of ``sampling/createMessage``."""

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageResult(Result):
    """The client's answer to a sampling request."""

    role: Role
    content: SamplingMessageContentBlock | list[SamplingMessageContentBlock]
    model: str
    stop_reason: str | None = None


# --------------------------------------------------------------------------
# Roots
# --------------------------------------------------------------------------


class Root(WireModel):
    """A directory or file the client lets the server work on."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ListRootsResult(Result):
    """The client's list of roots."""

    roots: list[Root]


# --------------------------------------------------------------------------
# Elicitation
# --------------------------------------------------------------------------


class StringSchema(WireModel):
    """A text field of an elicitation form."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: Literal["email", "uri", "date", "date-time"] | None = None
    default: str | None = None


class NumberSchema(WireModel):
    """A number or integer field of an elicitation form."""

    type: Literal["number", "integer"]
    title: str | None = None
    description: str | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    default: int | float | None = None


class BooleanSchema(WireModel):
    """A yes/no field of an elicitation form."""

    type: Literal["boolean"] = "boolean"
    title: str | None = None
    description: str | None = None
    default: bool | None = None


class TitledEnumOption(WireModel):
    """One choice of a titled enum: the value and its display label."""

    const: str
    title: str


class UntitledSingleSelectEnumSchema(WireModel):
    """A single choice among plain string values."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    default: str | None = None


class TitledSingleSelectEnumSchema(WireModel):
    """A single choice among values that each have a display label."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    one_of: list[TitledEnumOption]
    default: str | None = None


class UntitledMultiSelectItems(WireModel):
    """The ``items`` of an untitled multi-select: the allowed string values."""

    type: Literal["string"] = "string"
    enum: list[str]


class UntitledMultiSelectEnumSchema(WireModel):
    """Several choices among plain string values."""

    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: UntitledMultiSelectItems
    default: list[str] | None = None


class TitledMultiSelectItems(WireModel):
    """The ``items`` of a titled multi-select: the labelled values."""

    any_of: list[TitledEnumOption]


class TitledMultiSelectEnumSchema(WireModel):
    """Several choices among values that each have a display label."""

    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: TitledMultiSelectItems
    default: list[str] | None = None


class LegacyTitledEnumSchema(WireModel):
    """The older enum shape, with labels in a separate ``enumNames`` list."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    enum_names: list[str] | None = None
    default: str | None = None


SingleSelectEnumSchema: TypeAlias = UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema
MultiSelectEnumSchema: TypeAlias = UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema
EnumSchema: TypeAlias = (
    UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
PrimitiveSchemaDefinition: TypeAlias = (
    StringSchema
    | NumberSchema
    | BooleanSchema
    | UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
"""One field of an elicitation form (several share ``type: string``, so no discriminator)."""


class ElicitRequestedSchema(WireModel):
    """The flat object schema of an elicitation form."""

    schema_: str | None = Field(default=None, alias="$schema")
    type: Literal["object"] = "object"
    properties: dict[str, PrimitiveSchemaDefinition]
    required: list[str] | None = None


class ElicitRequestFormParams(RequestParams):
    """Parameters of a form-mode ``elicitation/create``.

    ``mode`` may be left out (form is the default mode), so it is ``None``
    unless set.
    """

    mode: Literal["form"] | None = None
    message: str
    requested_schema: ElicitRequestedSchema


class ElicitRequestURLParams(RequestParams):
    """Parameters of a URL-mode ``elicitation/create``."""

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None


ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams


class ElicitResult(Result):
    """The user's answer to an elicitation."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str]] | None = None


class ElicitationCompleteNotificationParams(NotificationParams):
    """Parameters of ``notifications/elicitation/complete``."""

    elicitation_id: str


# --------------------------------------------------------------------------
# Multi round-trip requests (2026-07-28)
# --------------------------------------------------------------------------


class CreateMessageRequest(WireModel):
    """A ``sampling/createMessage`` request.

    From 2026-07-28 it travels inside an :class:`InputRequiredResult`, without
    ``jsonrpc`` and ``id``; both are therefore optional here.
    """

    jsonrpc: Literal["2.0"] | None = None
    id: RequestId | None = None
    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


class ListRootsRequest(WireModel):
    """A ``roots/list`` request (``jsonrpc``/``id`` optional, as for sampling)."""

    jsonrpc: Literal["2.0"] | None = None
    id: RequestId | None = None
    method: Literal["roots/list"] = "roots/list"
    params: RequestParams | None = None


class ElicitRequest(WireModel):
    """An ``elicitation/create`` request (``jsonrpc``/``id`` optional, as for sampling)."""

    jsonrpc: Literal["2.0"] | None = None
    id: RequestId | None = None
    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


InputRequest: TypeAlias = Annotated[
    CreateMessageRequest | ListRootsRequest | ElicitRequest, Field(discriminator="method")
]
"""A request the server needs the client to answer before it can finish."""

InputResponse: TypeAlias = CreateMessageResult | ListRootsResult | ElicitResult
"""The client's answer to one :data:`InputRequest`."""

InputRequests: TypeAlias = dict[str, InputRequest]
InputResponses: TypeAlias = dict[str, InputResponse]


class InputRequiredResult(Result):
    """A result saying the server needs more input from the client first."""

    result_type: Literal["input_required"] = "input_required"
    input_requests: InputRequests | None = None
    request_state: str | None = None


class InputResponseRequestParams(RequestParams):
    """Base of request parameters that can carry answers to input requests."""

    input_responses: InputResponses | None = None
    request_state: str | None = None


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


# --------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------


class ResourceRequestParams(RequestParams):
    """Base of request parameters that name one resource."""

    uri: str


class ReadResourceRequestParams(ResourceRequestParams, InputResponseRequestParams):
    """Parameters of ``resources/read``."""


class SubscribeRequestParams(ResourceRequestParams):
    """Parameters of ``resources/subscribe``."""


class UnsubscribeRequestParams(ResourceRequestParams):
    """Parameters of ``resources/unsubscribe``."""


class ListResourcesResult(PaginatedResult, CacheableResult):
    """A page of resources."""

    resources: list[Resource]


class ListResourceTemplatesResult(PaginatedResult, CacheableResult):
    """A page of resource templates."""

    resource_templates: list[ResourceTemplate]


class ReadResourceResult(CacheableResult):
    """The contents of a resource."""

    contents: list[ResourceContents]

    @property
    def text(self) -> str:
        """The text of the text contents, one per line."""
        return "\n".join(item.text for item in self.contents if isinstance(item, TextResourceContents))

    def _repr_html_(self) -> str | None:
        return render("text/html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(render("text/plain", self) or repr(self))


class ResourceUpdatedNotificationParams(NotificationParams):
    """Parameters of ``notifications/resources/updated``."""

    uri: str


# --------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------


class PromptArgument(BaseMetadata):
    """An argument a prompt template accepts."""

    description: str | None = None
    required: bool | None = None


class Prompt(BaseMetadata, Icons):
    """A prompt or prompt template the server offers."""

    description: str | None = None
    arguments: list[PromptArgument] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class PromptMessage(WireModel):
    """One message of a prompt."""

    role: Role
    content: ContentBlock


class GetPromptRequestParams(InputResponseRequestParams):
    """Parameters of ``prompts/get``."""

    name: str
    arguments: dict[str, str] | None = None


class GetPromptResult(Result):
    """A prompt rendered with its arguments."""

    description: str | None = None
    messages: list[PromptMessage]

    def _repr_html_(self) -> str | None:
        return render("text/html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(render("text/plain", self) or repr(self))


class ListPromptsResult(PaginatedResult, CacheableResult):
    """A page of prompts."""

    prompts: list[Prompt]


# --------------------------------------------------------------------------
# Tools (requests and lists)
# --------------------------------------------------------------------------


class CallToolRequestParams(InputResponseRequestParams):
    """Parameters of ``tools/call``."""

    name: str
    arguments: dict[str, Any] | None = None


class ListToolsResult(PaginatedResult, CacheableResult):
    """A page of tools."""

    tools: list[Tool]


# --------------------------------------------------------------------------
# Completion
# --------------------------------------------------------------------------


class PromptReference(BaseMetadata):
    """Points a completion request at a prompt."""

    type: Literal["ref/prompt"] = "ref/prompt"


class ResourceTemplateReference(WireModel):
    """Points a completion request at a resource template."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


ResourceReference = ResourceTemplateReference
"""The name of :class:`ResourceTemplateReference` in 2024-11-05 and 2025-03-26."""


class CompleteArgument(WireModel):
    """The argument being completed and what the user has typed so far."""

    name: str
    value: str


class CompleteContext(WireModel):
    """Values of arguments that are already filled in."""

    arguments: dict[str, str] | None = None


class CompleteRequestParams(RequestParams):
    """Parameters of ``completion/complete``."""

    ref: Annotated[PromptReference | ResourceTemplateReference, Field(discriminator="type")]
    argument: CompleteArgument
    context: CompleteContext | None = None


class Completion(WireModel):
    """Suggested values for the argument being completed."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    """The server's completion suggestions."""

    completion: Completion


# --------------------------------------------------------------------------
# Logging, progress, cancellation
# --------------------------------------------------------------------------


class SetLevelRequestParams(RequestParams):
    """Parameters of ``logging/setLevel``."""

    level: LoggingLevel


class LoggingMessageNotificationParams(NotificationParams):
    """Parameters of ``notifications/message``."""

    level: LoggingLevel
    logger: str | None = None
    data: Any


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
# Subscriptions (2026-07-28)
# --------------------------------------------------------------------------


class SubscriptionFilter(WireModel):
    """Which notifications a ``subscriptions/listen`` stream should carry."""

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


class SubscriptionsListenRequestParams(RequestParams):
    """Parameters of ``subscriptions/listen``."""

    notifications: SubscriptionFilter


class SubscriptionsListenResult(Result):
    """Sent when the server ends a listen stream on purpose."""


class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """Parameters of ``notifications/subscriptions/acknowledged``."""

    notifications: SubscriptionFilter
