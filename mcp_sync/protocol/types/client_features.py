"""What a server asks of the client (the MCP spec's client features): sampling, roots, elicitation.

And the 2026-07-28 multi round-trip input requests that carry them in a result.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from .base import NotificationParams, RequestId, RequestParams, Result, Role, WireModel
from .content import AudioContent, ContentBlock, ImageContent, TextContent
from .lazy import adopt
from .tool import Tool

# --------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------


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


adopt(globals())
