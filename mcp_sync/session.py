"""ServerSession: one client connection of an MCPServer.

The session holds what is particular to one connection: the negotiated
revision, the client's info and capabilities, its resource subscriptions and
log level. It answers the client's requests using the server's registries,
and offers the server-to-client requests (sampling, roots, elicitation).
Sessions are made by :meth:`MCPServer.start`; user code meets them as
``ctx.session`` inside handlers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .context import Context, ProgressReporter
from .dispatcher import JsonRpcDispatcher, RequestContext, format_validation_error
from .errors import MCP_CODES, MCPError, MCPProtocolError
from .revisions import HANDSHAKE_REVISIONS, adapt_notification, adapt_result, at_least, negotiate
from .server import LOG_LEVELS, RequestInfo, check_log_level
from .types import (
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    PaginatedRequestParams,
    ProgressNotificationParams,
    ProgressToken,
    PromptsCapability,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourcesCapability,
    ResourceUpdatedNotificationParams,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    ToolsCapability,
    UnsubscribeRequestParams,
    WireModel,
)

if TYPE_CHECKING:
    from .server import MCPServer
    from .transport import Transport

__all__ = ["ServerSession"]

_SEVERITY = {level: rank for rank, level in enumerate(LOG_LEVELS)}
_BEFORE_INITIALIZE = frozenset({"initialize", "ping"})

Handler = Callable[[Any, RequestContext], WireModel]


class ServerSession:
    """The server's side of one connection."""

    def __init__(self, server: MCPServer, transport: Transport) -> None:
        self.server = server
        self.transport = transport
        self.revision: str | None = None
        self.client_info: Implementation | None = None
        self.client_capabilities = ClientCapabilities()
        self.log_level: LoggingLevel | None = None
        self.initialized = threading.Event()
        self._subscriptions: set[str] = set()
        self._lock = threading.Lock()
        self.dispatcher = JsonRpcDispatcher(
            transport,
            side="server",
            id_generator=server.id_generator,
            clock=server.clock,
            max_workers=server.max_workers,
            timeout=server.timeout,
            events=server.events,
            telemetry=server.telemetry,
        )
        handlers: dict[str, tuple[Handler, type[WireModel] | None]] = {
            "initialize": (self._initialize, InitializeRequestParams),
            "ping": (lambda params, ctx: EmptyResult(), None),
            "tools/list": (self._list_tools, PaginatedRequestParams),
            "tools/call": (self._call_tool, CallToolRequestParams),
            "resources/list": (self._list_resources, PaginatedRequestParams),
            "resources/templates/list": (self._list_templates, PaginatedRequestParams),
            "resources/read": (self._read_resource, ReadResourceRequestParams),
            "resources/subscribe": (self._subscribe, SubscribeRequestParams),
            "resources/unsubscribe": (self._unsubscribe, UnsubscribeRequestParams),
            "prompts/list": (self._list_prompts, PaginatedRequestParams),
            "prompts/get": (self._get_prompt, GetPromptRequestParams),
            "completion/complete": (self._complete, CompleteRequestParams),
            "logging/setLevel": (self._set_level, SetLevelRequestParams),
        }
        for method, (handler, model) in handlers.items():
            self.dispatcher.register_handler(method, self._guarded(method, handler), model)
        self.dispatcher.on_notification("notifications/initialized", lambda params: self.initialized.set())

    def start(self) -> None:
        """Start answering the client."""
        self.dispatcher.start()

    def close(self) -> None:
        """End this connection and wait for its handler threads."""
        self.dispatcher.close()

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self.dispatcher.closed

    def assume_initialized(self, revision: str) -> None:
        """Serve requests without an ``initialize`` first, as at ``revision``.

        For transports without a handshake per connection, such as stateless
        Streamable HTTP, where each request comes alone and names its
        revision in a header. The client's capabilities stay unknown (none).
        """
        self.revision = negotiate(revision)
        self.initialized.set()

    # --------------------------------------------------------- request gate

    def _guarded(self, method: str, handler: Handler) -> Handler:
        def run(params: Any, ctx: RequestContext) -> Any:
            if self.revision is None and method not in _BEFORE_INITIALIZE:
                raise MCPError(MCP_CODES.NOT_INITIALIZED, f"{method} before initialize")
            authorizer = self.server.authorizer
            if authorizer is not None and not authorizer(RequestInfo(method, ctx.params, self)):
                raise MCPError(MCP_CODES.UNAUTHORIZED, f"Unauthorized: {method}")
            wire = handler(params, ctx).to_wire()
            return adapt_result(method, wire, self.revision or HANDSHAKE_REVISIONS[-1])

        return run

    def _context(self, ctx: RequestContext) -> Context:
        token = ctx.progress_token
        return Context(
            request_id=ctx.request_id,
            cancelled=ctx.cancelled,
            session=self,
            progress=self._progress_reporter(token) if token is not None else None,
            meta=ctx.meta,
        )

    def _progress_reporter(self, token: ProgressToken) -> ProgressReporter:
        """Progress for the request that sent ``token``, adapted to this client's revision."""

        def report(progress: float, total: float | None, message: str | None) -> None:
            params = ProgressNotificationParams(progress_token=token, progress=progress, total=total, message=message)
            self.notify("notifications/progress", params)

        return report

    # -------------------------------------------------------------- methods

    def _initialize(self, params: InitializeRequestParams, ctx: RequestContext) -> InitializeResult:
        if self.revision is not None:
            raise MCPError(MCP_CODES.ALREADY_CONNECTED, "initialize was already done on this connection")
        self.revision = negotiate(params.protocol_version)
        self.client_info = params.client_info
        self.client_capabilities = params.capabilities
        server = self.server
        return InitializeResult(
            protocol_version=self.revision,
            capabilities=ServerCapabilities(
                tools=ToolsCapability(list_changed=True),
                resources=ResourcesCapability(subscribe=True, list_changed=True),
                prompts=PromptsCapability(list_changed=True),
                logging={},
                completions={},
            ),
            server_info=server.info,
            instructions=server.instructions,
        )

    def _list_tools(self, params: PaginatedRequestParams, ctx: RequestContext) -> ListToolsResult:
        tools, cursor = self.server.page(self.server.list_tools(), params.cursor)
        return ListToolsResult(tools=tools, next_cursor=cursor)

    def _list_resources(self, params: PaginatedRequestParams, ctx: RequestContext) -> ListResourcesResult:
        resources, cursor = self.server.page(self.server.list_resources(), params.cursor)
        return ListResourcesResult(resources=resources, next_cursor=cursor)

    def _list_templates(self, params: PaginatedRequestParams, ctx: RequestContext) -> ListResourceTemplatesResult:
        templates, cursor = self.server.page(self.server.list_resource_templates(), params.cursor)
        return ListResourceTemplatesResult(resource_templates=templates, next_cursor=cursor)

    def _list_prompts(self, params: PaginatedRequestParams, ctx: RequestContext) -> ListPromptsResult:
        prompts, cursor = self.server.page(self.server.list_prompts(), params.cursor)
        return ListPromptsResult(prompts=prompts, next_cursor=cursor)

    def _call_tool(self, params: CallToolRequestParams, ctx: RequestContext) -> CallToolResult:
        return self.server.invoke_tool(params.name, params.arguments, context=self._context(ctx))

    def _read_resource(self, params: ReadResourceRequestParams, ctx: RequestContext) -> ReadResourceResult:
        return self.server.read_resource(params.uri, context=self._context(ctx))

    def _get_prompt(self, params: GetPromptRequestParams, ctx: RequestContext) -> GetPromptResult:
        return self.server.get_prompt(params.name, params.arguments, context=self._context(ctx))

    def _complete(self, params: CompleteRequestParams, ctx: RequestContext) -> CompleteResult:
        return self.server.complete(params, self._context(ctx))

    def _subscribe(self, params: SubscribeRequestParams, ctx: RequestContext) -> EmptyResult:
        with self._lock:
            self._subscriptions.add(params.uri)
        return EmptyResult()

    def _unsubscribe(self, params: UnsubscribeRequestParams, ctx: RequestContext) -> EmptyResult:
        with self._lock:
            self._subscriptions.discard(params.uri)
        return EmptyResult()

    def _set_level(self, params: SetLevelRequestParams, ctx: RequestContext) -> EmptyResult:
        self.log_level = params.level
        return EmptyResult()

    # --------------------------------------------------------- notifications

    def notify(self, method: str, params: WireModel | dict[str, Any] | None = None) -> None:
        """Send a notification to this client, adapted to its revision; dropped once closed."""
        if self.closed:
            return
        wire = params.to_wire() if isinstance(params, WireModel) else params
        if wire is not None and self.revision is not None:
            wire = adapt_notification(method, wire, self.revision)
        with contextlib.suppress(MCPError):  # the connection went away meanwhile
            self.dispatcher.notify(method, wire)

    @property
    def subscriptions(self) -> frozenset[str]:
        """The resource URIs this client subscribed to."""
        with self._lock:
            return frozenset(self._subscriptions)

    def resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` if the client subscribed to ``uri``."""
        if uri in self.subscriptions:
            self.notify("notifications/resources/updated", ResourceUpdatedNotificationParams(uri=uri))

    def list_changed(self, kind: str) -> None:
        """Tell an initialized client that the ``kind`` list (tools, resources, prompts) changed."""
        if self.initialized.is_set():
            self.notify(f"notifications/{kind}/list_changed")

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if ``level`` reaches the client's chosen level."""
        check_log_level(level)
        threshold = self.log_level or self.server.log_level
        if threshold is not None and _SEVERITY[level] < _SEVERITY[threshold]:
            return
        self.notify("notifications/message", LoggingMessageNotificationParams(level=level, data=data, logger=logger))

    # ------------------------------------------------- requests to the client

    def _request(self, method: str, params: WireModel | None, result_type: type[Any], timeout: float | None) -> Any:
        limit: Any = ... if timeout is None else timeout
        result = self.dispatcher.request(method, params, timeout=limit)
        try:
            return result_type.model_validate(result)
        except ValidationError as exc:
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID,
                f"invalid {method} result from the client: {format_validation_error(exc)}",
                cause=exc,
            ) from exc

    def create_message(
        self, params: CreateMessageRequestParams, *, timeout: float | None = None
    ) -> CreateMessageResult:
        """Ask the client's LLM for a message (``sampling/createMessage``).

        When the client cannot sample, the server's own sampling provider
        answers; without one, ``MISSING_CAPABILITY`` is raised.
        """
        if self.client_capabilities.sampling is None:
            provider = self.server.sampling_provider
            if provider is None:
                raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the client does not support sampling")
            return provider(params, Context(session=self))
        result: CreateMessageResult = self._request("sampling/createMessage", params, CreateMessageResult, timeout)
        return result

    def list_roots(self, *, timeout: float | None = None) -> ListRootsResult:
        """Ask the client for its roots (``roots/list``)."""
        if self.client_capabilities.roots is None:
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the client does not support roots")
        result: ListRootsResult = self._request("roots/list", None, ListRootsResult, timeout)
        return result

    def elicit(
        self, params: ElicitRequestFormParams | ElicitRequestURLParams, *, timeout: float | None = None
    ) -> ElicitResult:
        """Ask the user, through the client, for input (``elicitation/create``).

        Form mode needs a client that declared elicitation (form mode is
        implied by a bare ``elicitation: {}``) at revision 2025-06-18 or later;
        URL mode needs one that declared ``elicitation.url`` at 2025-11-25 or
        later. Otherwise ``MISSING_CAPABILITY`` is raised.
        """
        declared = self.client_capabilities.elicitation
        if isinstance(params, ElicitRequestURLParams):
            mode, since = "url", "2025-11-25"
            supported = declared is not None and declared.url is not None
        else:
            mode, since = "form", "2025-06-18"
            supported = declared is not None and (declared.form is not None or declared.url is None)
        if not supported or not at_least(self.revision or "", since):
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, f"the client does not support {mode} elicitation")
        result: ElicitResult = self._request("elicitation/create", params, ElicitResult, timeout)
        return result

    def ping(self, *, timeout: float | None = None) -> None:
        """Check that the client answers."""
        self._request("ping", None, EmptyResult, timeout)
