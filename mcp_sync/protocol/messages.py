"""The per-method message envelopes and typed error responses of the MCP schema.

Each request, notification and (2026-07-28) result response of the official
schema, with its ``method`` fixed (``CallToolRequest``, ``ProgressNotification``,
``CallToolResultResponse``, ...), the typed error responses (``ParseError``,
``UnsupportedProtocolVersionError``, ...) and the unions of messages by
direction (``ClientRequest``, ``ServerNotification``, ``ServerResult``, ...).

mcp_sync itself sends and reads messages through the generic envelopes and
the parameter and result models of :mod:`mcp_sync.protocol.types`; these
models are for programs that want to validate or build a whole message of a
given method. They live apart so that importing the client or the server does
not build them (a pydantic model costs a noticeable fraction of a millisecond
to define, and a stdio server's start-up is mostly its imports). Both modules
are mirrored at the public path :mod:`mcp_sync.types`.

>>> from mcp_sync.types import PingRequest
>>> PingRequest(id=1).to_wire()
{'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}
"""

from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from .types import (
    JSONRPC_VERSION,
    CallToolRequestParams,
    CallToolResult,
    CancelledNotificationParams,
    ClientCapabilities,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequest,
    CreateMessageResult,
    DiscoverResult,
    ElicitationCompleteNotificationParams,
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    EmptyResult,
    Error,
    GetPromptRequestParams,
    GetPromptResult,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    JSONRPCErrorResponse,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    LoggingMessageNotificationParams,
    NotificationParams,
    PaginatedRequestParams,
    ProgressNotificationParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestId,
    RequestParams,
    ResourceUpdatedNotificationParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
    WireModel,
)

# --------------------------------------------------------------------------
# Client requests
# --------------------------------------------------------------------------


class InitializeRequest(WireModel):
    """The ``initialize`` request (until 2025-11-25)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["initialize"] = "initialize"
    params: InitializeRequestParams


class PingRequest(WireModel):
    """The ``ping`` request (either side, until 2025-11-25)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["ping"] = "ping"
    params: RequestParams | None = None


class DiscoverRequest(WireModel):
    """The ``server/discover`` request (2026-07-28)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["server/discover"] = "server/discover"
    params: RequestParams | None = None


class PaginatedRequest(WireModel):
    """Any list request that takes a cursor."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: str
    params: PaginatedRequestParams | None = None


class ListResourcesRequest(WireModel):
    """The ``resources/list`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["resources/list"] = "resources/list"
    params: PaginatedRequestParams | None = None


class ListResourceTemplatesRequest(WireModel):
    """The ``resources/templates/list`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["resources/templates/list"] = "resources/templates/list"
    params: PaginatedRequestParams | None = None


class ReadResourceRequest(WireModel):
    """The ``resources/read`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["resources/read"] = "resources/read"
    params: ReadResourceRequestParams


class SubscribeRequest(WireModel):
    """The ``resources/subscribe`` request (until 2025-11-25)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["resources/subscribe"] = "resources/subscribe"
    params: SubscribeRequestParams


class UnsubscribeRequest(WireModel):
    """The ``resources/unsubscribe`` request (until 2025-11-25)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["resources/unsubscribe"] = "resources/unsubscribe"
    params: UnsubscribeRequestParams


class SubscriptionsListenRequest(WireModel):
    """The ``subscriptions/listen`` request (2026-07-28)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: SubscriptionsListenRequestParams


class ListPromptsRequest(WireModel):
    """The ``prompts/list`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["prompts/list"] = "prompts/list"
    params: PaginatedRequestParams | None = None


class GetPromptRequest(WireModel):
    """The ``prompts/get`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["prompts/get"] = "prompts/get"
    params: GetPromptRequestParams


class ListToolsRequest(WireModel):
    """The ``tools/list`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["tools/list"] = "tools/list"
    params: PaginatedRequestParams | None = None


class CallToolRequest(WireModel):
    """The ``tools/call`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["tools/call"] = "tools/call"
    params: CallToolRequestParams


class SetLevelRequest(WireModel):
    """The ``logging/setLevel`` request (until 2025-11-25)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["logging/setLevel"] = "logging/setLevel"
    params: SetLevelRequestParams


class CompleteRequest(WireModel):
    """The ``completion/complete`` request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    method: Literal["completion/complete"] = "completion/complete"
    params: CompleteRequestParams


# --------------------------------------------------------------------------
# Notifications
# --------------------------------------------------------------------------


class CancelledNotification(WireModel):
    """``notifications/cancelled``: the sender gave up on a request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/cancelled"] = "notifications/cancelled"
    params: CancelledNotificationParams


class InitializedNotification(WireModel):
    """``notifications/initialized``: the client finished the handshake."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/initialized"] = "notifications/initialized"
    params: NotificationParams | None = None


class ProgressNotification(WireModel):
    """``notifications/progress``: progress of a long request."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/progress"] = "notifications/progress"
    params: ProgressNotificationParams


class RootsListChangedNotification(WireModel):
    """``notifications/roots/list_changed``: the client's roots changed."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/roots/list_changed"] = "notifications/roots/list_changed"
    params: NotificationParams | None = None


class ResourceListChangedNotification(WireModel):
    """``notifications/resources/list_changed``: the resource list changed."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/resources/list_changed"] = "notifications/resources/list_changed"
    params: NotificationParams | None = None


class ResourceUpdatedNotification(WireModel):
    """``notifications/resources/updated``: a watched resource changed."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/resources/updated"] = "notifications/resources/updated"
    params: ResourceUpdatedNotificationParams


class PromptListChangedNotification(WireModel):
    """``notifications/prompts/list_changed``: the prompt list changed."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/prompts/list_changed"] = "notifications/prompts/list_changed"
    params: NotificationParams | None = None


class ToolListChangedNotification(WireModel):
    """``notifications/tools/list_changed``: the tool list changed."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/tools/list_changed"] = "notifications/tools/list_changed"
    params: NotificationParams | None = None


class LoggingMessageNotification(WireModel):
    """``notifications/message``: a log entry from the server."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/message"] = "notifications/message"
    params: LoggingMessageNotificationParams


class ElicitationCompleteNotification(WireModel):
    """``notifications/elicitation/complete``: a URL-mode elicitation finished."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/elicitation/complete"] = "notifications/elicitation/complete"
    params: ElicitationCompleteNotificationParams


class SubscriptionsAcknowledgedNotification(WireModel):
    """``notifications/subscriptions/acknowledged``: first frame of a listen stream."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    method: Literal["notifications/subscriptions/acknowledged"] = "notifications/subscriptions/acknowledged"
    params: SubscriptionsAcknowledgedNotificationParams


# --------------------------------------------------------------------------
# Result responses (2026-07-28)
# --------------------------------------------------------------------------


class DiscoverResultResponse(WireModel):
    """The response envelope of ``server/discover``."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: DiscoverResult


class ListResourcesResultResponse(WireModel):
    """The response envelope of ``resources/list``."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: ListResourcesResult


class ListResourceTemplatesResultResponse(WireModel):
    """The response envelope of ``resources/templates/list``."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: ListResourceTemplatesResult


class ReadResourceResultResponse(WireModel):
    """The response envelope of ``resources/read`` (final or input-required)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: InputRequiredResult | ReadResourceResult


class SubscriptionsListenResultResponse(WireModel):
    """The response envelope that closes a ``subscriptions/listen`` stream."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: SubscriptionsListenResult


class ListPromptsResultResponse(WireModel):
    """The response envelope of ``prompts/list``."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: ListPromptsResult


class GetPromptResultResponse(WireModel):
    """The response envelope of ``prompts/get`` (final or input-required)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: InputRequiredResult | GetPromptResult


class ListToolsResultResponse(WireModel):
    """The response envelope of ``tools/list``."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: ListToolsResult


class CallToolResultResponse(WireModel):
    """The response envelope of ``tools/call`` (final or input-required)."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: InputRequiredResult | CallToolResult


class CompleteResultResponse(WireModel):
    """The response envelope of ``completion/complete``."""

    jsonrpc: Literal["2.0"] = JSONRPC_VERSION
    id: RequestId
    result: CompleteResult


# --------------------------------------------------------------------------
# Typed errors
# --------------------------------------------------------------------------


class ParseError(Error):
    """The error object for unreadable JSON (-32700)."""

    code: Literal[-32700] = -32700


class InvalidRequestError(Error):
    """The error object for a message that is not a valid request (-32600)."""

    code: Literal[-32600] = -32600


class MethodNotFoundError(Error):
    """The error object for an unknown or unsupported method (-32601)."""

    code: Literal[-32601] = -32601


class InvalidParamsError(Error):
    """The error object for bad request parameters (-32602)."""

    code: Literal[-32602] = -32602


class InternalError(Error):
    """The error object for a failure inside the receiver (-32603)."""

    code: Literal[-32603] = -32603


class HeaderMismatchErrorObject(Error):
    """The error object of :class:`HeaderMismatchError` (-32020)."""

    code: Literal[-32020] = -32020


class HeaderMismatchError(JSONRPCErrorResponse):
    """Error response: an ``Mcp-*`` HTTP header disagrees with the body."""

    error: HeaderMismatchErrorObject


class MissingRequiredClientCapabilityErrorData(WireModel):
    """The ``data`` of a missing-capability error: the capabilities needed."""

    required_capabilities: ClientCapabilities


class MissingRequiredClientCapabilityErrorObject(Error):
    """The error object of :class:`MissingRequiredClientCapabilityError` (-32021)."""

    code: Literal[-32021] = -32021
    data: MissingRequiredClientCapabilityErrorData


class MissingRequiredClientCapabilityError(JSONRPCErrorResponse):
    """Error response: the request needs a client capability that was not declared."""

    error: MissingRequiredClientCapabilityErrorObject


class UnsupportedProtocolVersionErrorData(WireModel):
    """The ``data`` of an unsupported-version error: what was asked, what is offered."""

    supported: list[str]
    requested: str


class UnsupportedProtocolVersionErrorObject(Error):
    """The error object of :class:`UnsupportedProtocolVersionError` (-32022)."""

    code: Literal[-32022] = -32022
    data: UnsupportedProtocolVersionErrorData


class UnsupportedProtocolVersionError(JSONRPCErrorResponse):
    """Error response: the server does not speak the requested protocol version."""

    error: UnsupportedProtocolVersionErrorObject


class URLElicitationRequiredErrorData(WireModel):
    """The ``data`` of a URL-elicitation-required error: the elicitations to run."""

    elicitations: list[ElicitRequestURLParams]


class URLElicitationRequiredErrorObject(Error):
    """The error object of :class:`URLElicitationRequiredError` (-32042)."""

    code: Literal[-32042] = -32042
    data: URLElicitationRequiredErrorData


class URLElicitationRequiredError(JSONRPCErrorResponse):
    """Error response: the user must finish a URL-mode elicitation first (2025-11-25)."""

    error: URLElicitationRequiredErrorObject


JSONRPCError = JSONRPCErrorResponse
"""The name of :class:`JSONRPCErrorResponse` before 2025-11-25."""

JSONRPCBatchRequest: TypeAlias = list[JSONRPCRequest | JSONRPCNotification]
"""A JSON-RPC batch of requests and notifications (2025-03-26 only)."""

JSONRPCBatchResponse: TypeAlias = list[JSONRPCResultResponse | JSONRPCErrorResponse]
"""A JSON-RPC batch of responses (2025-03-26 only)."""


# --------------------------------------------------------------------------
# Message unions by direction
# --------------------------------------------------------------------------

ClientRequest: TypeAlias = Annotated[
    InitializeRequest
    | PingRequest
    | DiscoverRequest
    | ListResourcesRequest
    | ListResourceTemplatesRequest
    | ReadResourceRequest
    | SubscribeRequest
    | UnsubscribeRequest
    | SubscriptionsListenRequest
    | ListPromptsRequest
    | GetPromptRequest
    | ListToolsRequest
    | CallToolRequest
    | SetLevelRequest
    | CompleteRequest,
    Field(discriminator="method"),
]
"""Any request a client sends, in any revision, chosen by ``method``."""

ServerRequest: TypeAlias = Annotated[
    PingRequest | CreateMessageRequest | ListRootsRequest | ElicitRequest,
    Field(discriminator="method"),
]
"""Any request a server sends (until 2025-11-25), chosen by ``method``."""

ClientNotification: TypeAlias = Annotated[
    CancelledNotification | InitializedNotification | ProgressNotification | RootsListChangedNotification,
    Field(discriminator="method"),
]
"""Any notification a client sends, chosen by ``method``."""

ServerNotification: TypeAlias = Annotated[
    CancelledNotification
    | ProgressNotification
    | ResourceListChangedNotification
    | ResourceUpdatedNotification
    | PromptListChangedNotification
    | ToolListChangedNotification
    | LoggingMessageNotification
    | ElicitationCompleteNotification
    | SubscriptionsAcknowledgedNotification,
    Field(discriminator="method"),
]
"""Any notification a server sends, chosen by ``method``."""

ClientResult: TypeAlias = EmptyResult | CreateMessageResult | ListRootsResult | ElicitResult
"""Any result a client returns (best match wins; no discriminator exists)."""

ServerResult: TypeAlias = (
    EmptyResult
    | InitializeResult
    | DiscoverResult
    | InputRequiredResult
    | ListResourcesResult
    | ListResourceTemplatesResult
    | ReadResourceResult
    | SubscriptionsListenResult
    | ListPromptsResult
    | GetPromptResult
    | ListToolsResult
    | CallToolResult
    | CompleteResult
)
"""Any result a server returns.

There is no discriminator: the member that matches the most declared fields
wins, and ``EmptyResult`` wins ties, so ``{}`` is an empty result.
"""
