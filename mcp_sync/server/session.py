"""ServerSession: one client connection of an MCPServer.

The session holds what is particular to one connection: the negotiated
revision, the client's info and capabilities, its resource subscriptions and
log level. It answers the client's requests using the server's registries,
and offers the server-to-client requests (sampling, roots, elicitation).
Sessions are made by :meth:`MCPServer.start`; user code meets them as
``ctx.session`` inside handlers.

Each request is served in one of two eras, decided once when it arrives:
a request that describes itself in ``_meta`` (2026-07-28) is served
statelessly, anything else within the handshake this connection made. The
:class:`~mcp_sync.server.context.Context` a handler receives is given the
matching channel (:class:`~mcp_sync.server.context.StatelessChannel` or
:class:`~mcp_sync.server.context.HandshakeChannel`) at that point.

>>> from mcp_sync import MCPServer
>>> from mcp_sync.transports.memory import InMemoryTransport
>>> server = MCPServer("demo")
>>> session = server.start(InMemoryTransport.pair()[0])
>>> session.revision is None, session.capabilities().tools.list_changed
(True, True)
>>> server.stop()
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import ValidationError

from ..protocol import types as models
from ..protocol.batch import accepts_batch
from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError, MCPProtocolError, format_validation_error
from ..protocol.stateless import (
    CACHEABLE,
    INPUT_METHODS,
    REMOVED_METHODS,
    SERVER_INFO,
    STATELESS_ONLY,
    SUBSCRIPTION_ID,
    is_stateless_request,
)
from ..protocol.types import (
    ClientCapabilities,
    DiscoverResult,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    JSONRPCMessage,
    JSONRPCRequest,
    LoggingLevel,
    PaginatedRequestParams,
    ProgressNotificationParams,
    ProgressToken,
    PromptsCapability,
    RequestId,
    RequestParams,
    ResourcesCapability,
    ServerCapabilities,
    ToolsCapability,
    WireModel,
)
from ..protocol.versions import (
    HANDSHAKE_REVISIONS,
    STATELESS_REVISIONS,
    adapt_notification,
    adapt_result,
    admitting,
    at_least,
    check_log_level,
    negotiate,
)
from ..runtime.dispatcher import USE_DEFAULT, JsonRpcDispatcher, Timeout
from ..runtime.request_context import RequestContext
from ..runtime.transport import Route
from .authorization import NO_AUTH, AuthInfo, RequestInfo
from .context import ClientChannel, Context, HandshakeChannel, ProgressReporter, StatelessChannel
from .stateless import InputRequired, StatelessRequest, resource_not_found

if TYPE_CHECKING:
    from ..protocol.types import (
        CompleteRequestParams,
        CompleteResult,
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestFormParams,
        ElicitRequestURLParams,
        ElicitResult,
        GetPromptRequestParams,
        GetPromptResult,
        ListRootsResult,
        ReadResourceRequestParams,
        ReadResourceResult,
        SetLevelRequestParams,
        SubscribeRequestParams,
        SubscriptionFilter,
        SubscriptionsListenRequestParams,
        SubscriptionsListenResult,
        UnsubscribeRequestParams,
    )
    from ..runtime.transport import Transport
    from .core import MCPServer
    from .middleware import Call, CallKind
    from .session_records import SessionUpdate

__all__ = ["ServerSession"]

_BEFORE_INITIALIZE = frozenset({"initialize", "ping"})
HANDSHAKE_WAIT = 10.0
"""Seconds a request sent right behind ``initialize`` waits for it to be served before it is refused."""
_STATELESS = "stateless"
"""The key of ``RequestContext.state`` under which what a 2026-07-28 request says of itself is kept."""
_AUTH = "auth"
"""The key of ``RequestContext.state`` under which who a request served by :meth:`ServerSession.serve_one` speaks
for is kept, as it was given."""

Handler = Callable[[Any, RequestContext], WireModel | dict[str, Any]]
"""A request's handler: its result as a model, or already in its wire form."""


def _wire(result: WireModel | dict[str, Any]) -> dict[str, Any]:
    return result if isinstance(result, dict) else result.to_wire()


def _tool_call(params: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The tool name and arguments of ``tools/call`` params (``INVALID_PARAMS`` when the model refuses them).

    Params holding nothing but a name, an arguments object and a ``_meta``
    object, which :class:`CallToolRequestParams` accepts as they are, are
    read as they are (the common case, and faster); any others through the model.

    >>> _tool_call({"name": "add", "arguments": {"a": 1}})
    ('add', {'a': 1})
    >>> _tool_call({"name": "add", "arguments": {"a": 1}, "task": {}})
    ('add', {'a': 1})
    """
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    if (
        type(name) is str
        and (arguments is None or type(arguments) is dict)
        and (meta is None or type(meta) is dict)
        and params.keys() <= _PLAIN_CALL_KEYS
    ):
        return name, arguments
    try:
        typed = models.CallToolRequestParams.model_validate(params)
    except ValidationError as exc:
        raise MCPError(MCP_CODES.INVALID_PARAMS, f"Invalid params: {format_validation_error(exc)}", cause=exc) from exc
    return typed.name, typed.arguments


_PLAIN_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
"""The members of a ``tools/call`` request's params read without their model (see ``_tool_call``)."""


_JSON_KINDS = {
    type(None): "null",
    bool: "a boolean",
    float: "a number with a fraction",
    dict: "an object",
    list: "an array",
}
"""How a value that is neither a string nor an integer is named in an error."""


def _check_progress_token(ctx: RequestContext) -> None:
    """Refuse (``-32602``) any request whose ``_meta.progressToken`` is neither a string nor an integer."""
    meta = ctx.meta
    if "progressToken" in meta and ctx.progress_token is None:
        token = meta["progressToken"]
        kind = _JSON_KINDS.get(type(token), type(token).__name__)
        raise MCPError(
            MCP_CODES.INVALID_PARAMS, f"Invalid params: _meta.progressToken must be a string or an integer, not {kind}"
        )


_T = TypeVar("_T")
_Item = TypeVar("_Item")
_Listed = TypeVar("_Listed", bound=WireModel)
_CONTEXT = "mcp_sync.context"
"""The key of ``RequestContext.state`` under which the middleware keeps a request's :class:`Context`."""


_ROUTES: dict[str, tuple[str, str | None]] = {
    "initialize": ("_initialize", "InitializeRequestParams"),
    "ping": ("_ping", None),
    "tools/list": ("_list_tools", "PaginatedRequestParams"),
    "tools/call": ("_call_tool", None),  # (its params are read by _call_tool itself: see _tool_call)
    "resources/list": ("_list_resources", "PaginatedRequestParams"),
    "resources/templates/list": ("_list_templates", "PaginatedRequestParams"),
    "resources/read": ("_read_resource", "ReadResourceRequestParams"),
    "resources/subscribe": ("_subscribe", "SubscribeRequestParams"),
    "resources/unsubscribe": ("_unsubscribe", "UnsubscribeRequestParams"),
    "prompts/list": ("_list_prompts", "PaginatedRequestParams"),
    "prompts/get": ("_get_prompt", "GetPromptRequestParams"),
    "completion/complete": ("_complete", "CompleteRequestParams"),
    "logging/setLevel": ("_set_level", "SetLevelRequestParams"),
    "server/discover": ("_discover", None),
    "subscriptions/listen": ("_listen", "SubscriptionsListenRequestParams"),
}
"""Each method a server connection answers: the :class:`ServerSession` method that does, and the name of its params'
model in :mod:`mcp_sync.protocol.types` (by name: most are declared only when first used)."""


def core_methods() -> frozenset[str]:
    """The methods every server answers (an extension may not take their names)."""
    return frozenset(_ROUTES)


MAX_SUBSCRIPTIONS = 10_000
"""How many resource URIs one session may follow at once (by ``resources/subscribe``, or by its listens).

Each URI followed costs memory here and, with a backend sharing sessions, is
saved with every change of the session's record: a bound keeps a client from
growing either without end. One more URI is refused as invalid params."""


def _check_room(followed: set[str] | collections.Counter[str], uri: str) -> None:
    """Refuse to follow ``uri`` when it is new and :data:`MAX_SUBSCRIPTIONS` are followed already (under the lock)."""
    if uri not in followed and len(followed) >= MAX_SUBSCRIPTIONS:
        raise MCPError(
            MCP_CODES.INVALID_PARAMS,
            f"Invalid params: this session already follows {MAX_SUBSCRIPTIONS} resources; unsubscribe from one first",
        )


class ServerSession:
    """The server's side of one connection.

    Made by :meth:`MCPServer.start` (see the module's example); handlers see
    it as ``ctx.session``.
    """

    def __init__(self, server: MCPServer, transport: Transport, *, per_request: bool = False) -> None:
        self.server = server
        self.transport = transport
        self.revision: str | None = None
        self.client_info: Implementation | None = None
        self.client_capabilities = ClientCapabilities()
        self.log_level: LoggingLevel | None = None
        # Made at first use: a session serving one 2026-07-28 request never has a handshake to wait for.
        self._initialized: threading.Event | None = None
        self._subscriptions: set[str] = set()
        self._stateless_era = False  # set as a 2026-07-28 request is served (no log level for the connection then)
        self._listens: dict[RequestContext, SubscriptionFilter] = {}  # by request: ids of clients may coincide
        self._listened: collections.Counter[str] = collections.Counter()  # how many listens follow each URI
        self.auth: AuthInfo | None = None
        """Who every request of this connection speaks for, unless :attr:`request_auth` says per request.

        ``None`` (stdio, memory, HTTP without a token verifier): nothing
        authenticates the caller, and per-item scopes are not checked. Whoever
        starts a session that does know its caller may set it; scopes then apply.
        """
        self.request_auth: Callable[[RequestId], AuthInfo | None] | None = None
        """Set by the HTTP app with a token verifier: the auth of each request (of no scope when unknown)."""
        self.list_all = False
        """Whether listings show every item, not only those the caller has the scopes of."""
        self.per_request = per_request
        """Whether each request this session serves stands alone, with no connection behind it that lasts
        (the HTTP app's 2026-07-28 requests, and its stateless mode): nothing is kept for a client between
        requests, and nobody can be asked anything outside one."""
        self.on_change: Callable[[ServerSession, SessionUpdate | None], None] | None = None
        """Called (on the handler's thread, before the response) after ``initialize`` (with ``None``: the session
        is new) and with what ``logging/setLevel`` and ``resources/subscribe``/``unsubscribe`` changed: the HTTP
        app keeps it in its backend."""
        self._lock = threading.Lock()
        # Held while a listen is registered and acknowledged, and while the listens are read to tell of a
        # change: a change raised once the client has the acknowledgement is told on the new listen, never
        # before it (reentrant: what the acknowledgement's own sending raises is told too).
        self._listen_order = threading.RLock()
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
        self.dispatcher.register_fallback(self._serve_request)
        # A JSON-RPC batch is served only once the handshake settled on the one revision that has them.
        self.dispatcher.accept_batch = lambda: accepts_batch(self.revision)
        self.dispatcher.on_notification("notifications/initialized", lambda params: self.initialized.set())

    def start(self) -> None:
        """Start answering the client."""
        self.dispatcher.start()

    def close(self, timeout: float = 5.0) -> None:
        """End this connection and wait for its handler threads, ``timeout`` seconds at most."""
        self.dispatcher.close(timeout)
        self.server.forget(self)

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self.dispatcher.closed

    @property
    def initialized(self) -> threading.Event:
        """Set once the client finished the handshake (``notifications/initialized``), or it was assumed."""
        event = self._initialized
        if event is None:
            with self._lock:  # two threads asking at once get the same one
                event = self._initialized = self._initialized or threading.Event()
        return event

    def assume_initialized(self, revision: str) -> None:
        """Serve requests without an ``initialize`` first, as at ``revision``.

        For transports without a handshake per connection, such as stateless
        Streamable HTTP, where each request comes alone and names its
        revision in a header. The client's capabilities stay unknown (none).
        """
        self.revision = negotiate(revision)
        self.initialized.set()

    def restore(
        self,
        revision: str,
        *,
        capabilities: ClientCapabilities,
        client_info: Implementation | None,
        log_level: LoggingLevel | None,
        subscriptions: frozenset[str],
    ) -> None:
        """Take the state of a session opened by another process (its ``initialize`` done there).

        >>> from mcp_sync import MCPServer
        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> session = MCPServer("demo").start(InMemoryTransport.pair()[0])
        >>> session.restore("2025-11-25", capabilities=ClientCapabilities(), client_info=None,
        ...                 log_level="info", subscriptions=frozenset({"notes://1"}))
        >>> session.revision, session.log_level, sorted(session.subscriptions)
        ('2025-11-25', 'info', ['notes://1'])
        >>> session.close()
        """
        if self.revision is None:
            self.assume_initialized(revision)
        self.client_capabilities = capabilities
        self.client_info = client_info
        self.log_level = log_level
        with self._lock:
            self._subscriptions = set(subscriptions)

    def apply(self, update: SessionUpdate) -> None:
        """Make a change another process made to the session (its own ``on_change`` is not called).

        >>> from mcp_sync import MCPServer
        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> from mcp_sync.server.session_records import SessionUpdate
        >>> session = MCPServer("demo").start(InMemoryTransport.pair()[0])
        >>> session.apply(SessionUpdate(log_level="error", subscribed=frozenset({"notes://1"})))
        >>> session.log_level, sorted(session.subscriptions)
        ('error', ['notes://1'])
        >>> session.close()
        """
        with self._lock:  # one change at a time, with the session's own subscribing
            if update.log_level is not None:
                self.log_level = cast(LoggingLevel, update.log_level)
            self._subscriptions |= update.subscribed
            self._subscriptions -= update.unsubscribed

    def _changed(self, **change: Any) -> None:
        """Tell ``on_change`` (a backend that shares sessions) of a change: a :class:`SessionUpdate` of
        ``change``, or ``None`` when the session was initialized (its whole record is saved then)."""
        if self.on_change is not None:
            from .session_records import SessionUpdate  # (loaded only where sessions are shared)

            self.on_change(self, SessionUpdate(**change) if change else None)

    # --------------------------------------------------------- request gate

    def _serve_request(self, params: Any, ctx: RequestContext) -> Any:
        """Every request of this connection: its route looked up, its era decided, its gate passed."""
        method = ctx.method
        validated = self._validating(method)

        _check_progress_token(ctx)
        # The one place the era of a request is decided; what it says of itself goes with it to its Context.
        if is_stateless_request(method, ctx.params):
            return self._serve_stateless(method, validated, params, ctx)
        if method in STATELESS_ONLY:
            raise MCPError(MCP_CODES.METHOD_NOT_FOUND, f"Method not found: {method} (a 2026-07-28 method)")
        if self.revision is None and method not in _BEFORE_INITIALIZE and not self._after_initialize():
            # The client's mistake, so Invalid Request on the wire (the code's own default, -32603, would blame us).
            raise MCPError(
                MCP_CODES.NOT_INITIALIZED, f"{method} before initialize", jsonrpc_code=JsonRpcCode.INVALID_REQUEST
            )
        authorizer = self.server.authorizer
        if authorizer is not None and not authorizer(RequestInfo(method, ctx.params, self)):
            raise MCPError(MCP_CODES.UNAUTHORIZED, f"Unauthorized: {method}")
        wire = self._respond(validated, params, ctx)
        return adapt_result(method, wire, self.revision or HANDSHAKE_REVISIONS[-1])

    def _after_initialize(self) -> bool:
        """Whether an ``initialize`` received before this request has now set the session's revision.

        A client may send its next messages without waiting for initialize's
        answer (the official SDK's server takes them in order, so some
        clients do); here each request runs on its own thread, and the one
        after ``initialize`` could start first and be refused at random.
        """
        self.dispatcher.wait_served("initialize", HANDSHAKE_WAIT)
        return self.revision is not None

    def serve_one(
        self,
        request: JSONRPCRequest,
        read: StatelessRequest,
        *,
        writer: Callable[[JSONRPCMessage], None],
        cancelled: threading.Event | None = None,
        auth: AuthInfo | None = None,
    ) -> None:
        """Serve one 2026-07-28 request that came alone, on this thread: the kernel of per-request serving.

        ``read`` is what its ``_meta`` says (its era decided by the caller,
        which read it); ``writer`` takes what its handler sends and then its
        response; ``cancelled`` is its cancel event (closing its connection is
        that era's cancellation); ``auth`` is who it speaks for. Nothing is
        made for the request but its context: this session serves every such
        request of a host (see :attr:`per_request`), each apart from the others.

        >>> from mcp_sync import MCPServer
        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> server = MCPServer("demo")
        >>> host = server.start(InMemoryTransport.pair()[0], per_request=True)
        >>> meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        ...         "io.modelcontextprotocol/clientCapabilities": {}}
        >>> listing = JSONRPCRequest(id=1, method="tools/list", params={"_meta": meta})
        >>> answers = []
        >>> host.serve_one(listing, StatelessRequest.read(listing.params), writer=answers.append)
        >>> answers[0].result["tools"], answers[0].result["resultType"]
        ([], 'complete')
        >>> server.stop()
        """

        def handle(params: Any, ctx: RequestContext) -> Any:
            if auth is not None:
                ctx.state[_AUTH] = auth
            _check_progress_token(ctx)
            return self._serve_stateless(ctx.method, self._validating(ctx.method), params, ctx, read)

        self.dispatcher.serve(request, handle, writer=writer, cancelled=cancelled)

    def _validating(self, method: str) -> Handler:
        """The handler of ``method``, validating its params into the method's model first."""
        route = _ROUTES.get(method)
        model: type[WireModel] | None
        if route is not None:
            name, model_name = route
            bound: Handler = getattr(self, name)
            model = None if model_name is None else getattr(models, model_name)
        else:
            bound, model = self._extension_route(method)

        # Params are validated here, not by the dispatcher: which era a request
        # belongs to decides first whether the method exists at all.
        def validated(params: dict[str, Any], ctx: RequestContext) -> WireModel | dict[str, Any]:
            if model is None:
                return bound(params, ctx)
            try:
                typed = model.model_validate(params)
            except ValidationError as exc:
                raise MCPError(
                    MCP_CODES.INVALID_PARAMS, f"Invalid params: {format_validation_error(exc)}", cause=exc
                ) from exc
            return bound(typed, ctx)

        return validated

    def _extension_route(self, method: str) -> tuple[Handler, type[WireModel]]:
        """The handler and params model of an extension's ``method``; ``METHOD_NOT_FOUND`` when none is."""
        extension = self.server.extension_method(method)
        if extension is None:
            raise MCPError(MCP_CODES.METHOD_NOT_FOUND, f"Method not found: {method}")

        def serve(params: Any, ctx: RequestContext) -> WireModel:
            return extension.handler(params, self._context(ctx))

        return serve, extension.params

    def _ping(self, params: Any, ctx: RequestContext) -> WireModel:
        return EmptyResult()

    def _serve_stateless(
        self, method: str, handler: Handler, params: Any, ctx: RequestContext, read: StatelessRequest | None = None
    ) -> Any:
        """A 2026-07-28 request: self-describing, answered with ``resultType`` and the server's info.

        ``read`` is what its ``_meta`` says, when whoever received it read that already.
        """
        self._stateless_era = True
        if method in REMOVED_METHODS:
            raise MCPError(MCP_CODES.METHOD_NOT_FOUND, f"Method not found: {method} (not in 2026-07-28)")
        server = self.server
        sent = ctx.params
        request = read if read is not None else StatelessRequest.read(sent)
        # Inputs of earlier rounds: looked for only where they are (most requests carry neither).
        if method in INPUT_METHODS and ("requestState" in sent or "inputResponses" in sent):
            state = sent.get("requestState")
            if isinstance(state, str):
                sealer = server.request_state_sealer
                request.answers.update(sealer.open(state, sealer.digest(method, sent)))
            responses = sent.get("inputResponses")
            if isinstance(responses, dict):
                request.answers.update(responses)
        ctx.state[_STATELESS] = request
        authorizer = server.authorizer
        if authorizer is not None and not authorizer(RequestInfo(method, sent, self)):
            raise MCPError(MCP_CODES.UNAUTHORIZED, f"Unauthorized: {method}")
        try:
            wire = self._respond(handler, params, ctx)
        except InputRequired as needed:
            sealer = server.request_state_sealer
            # ctx.params, not sent: middleware may have changed the params the handler saw.
            state = sealer.seal(sealer.digest(method, ctx.params), request.answers)
            interim = models.InputRequiredResult(input_requests=needed.requests, request_state=state)
            return interim.to_wire()
        except MCPError as error:
            if error.code == MCP_CODES.NOT_FOUND and method == "resources/read":
                raise resource_not_found(error) from error
            raise
        wire.setdefault("resultType", "complete")  # a task's CreateTaskResult says "task"
        wire.setdefault("_meta", {})[SERVER_INFO] = server.info_wire()
        extension = None if method in _ROUTES else server.extension_method(method)
        if method in CACHEABLE or (extension is not None and extension.cacheable):
            wire.setdefault("ttlMs", server.cache_ttl_ms)
            wire.setdefault("cacheScope", server.cache_scope)
        return wire

    def _context(self, ctx: RequestContext) -> Context:
        """The handler's context, with the channel of the request's era (chosen when it arrived).

        A channel names its request (what its handler sends goes on that
        request's answer), so it is made for each context, never kept with
        the request: the two would hold each other until the cycle collector.
        A handshake channel withdraws a question in flight when the request
        is cancelled.
        """
        token = ctx.progress_token
        stateless: StatelessRequest | None = ctx.state.get(_STATELESS)
        channel: ClientChannel = (
            HandshakeChannel(self, ctx.cancelled, served=ctx)
            if stateless is None
            else StatelessChannel(stateless, self, ctx)
        )
        return Context(
            request_id=ctx.request_id,
            cancelled=ctx.cancelled,
            session=self,
            progress=self._progress_reporter(token, ctx) if token is not None else None,
            meta=ctx.meta,
            channel=channel,
            auth=self._auth(ctx),
        )

    def _auth(self, ctx: RequestContext) -> AuthInfo | None:
        """Who the request speaks for (as it was given to :meth:`serve_one`, else :attr:`auth` and
        :attr:`request_auth`)."""
        if _AUTH in ctx.state:
            auth: AuthInfo | None = ctx.state[_AUTH]
            return auth
        lookup = self.request_auth
        return self.auth if lookup is None else lookup(ctx.request_id) or NO_AUTH

    def _listed(self, listing: Callable[..., list[_Item]], ctx: RequestContext) -> list[_Item]:
        """A server listing as the caller may see it (all of it when nothing authenticates the caller)."""
        auth = None if self.list_all else self._auth(ctx)
        # Called without ``auth`` when there is none, so subclasses that override the listing keep working.
        return listing() if auth is None else listing(auth)

    def _progress_reporter(self, token: ProgressToken, ctx: RequestContext) -> ProgressReporter:
        """Progress for the request that sent ``token``, adapted to this client's revision; none once answered."""

        def report(progress: float, total: float | None, message: str | None) -> None:
            if ctx.answered:  # progress ends with the response (or the cancellation)
                return
            params = ProgressNotificationParams(progress_token=token, progress=progress, total=total, message=message)
            self.notify("notifications/progress", params, route=Route(request=ctx))

        return report

    # -------------------------------------------------------------- methods

    def capabilities(self) -> ServerCapabilities:
        """What this server offers."""
        return ServerCapabilities(
            tools=ToolsCapability(list_changed=True),
            resources=ResourcesCapability(subscribe=True, list_changed=True),
            prompts=PromptsCapability(list_changed=True),
            logging={},
            completions={},
            extensions={name: dict(settings) for name, settings in self.server.extensions.items()} or None,
        )

    def _discover(self, params: Any, ctx: RequestContext) -> DiscoverResult:
        return DiscoverResult(
            supported_versions=[*HANDSHAKE_REVISIONS, *STATELESS_REVISIONS],
            capabilities=self.capabilities(),
            instructions=self.server.instructions,
        )

    def _listen(self, params: SubscriptionsListenRequestParams, ctx: RequestContext) -> SubscriptionsListenResult:
        """Hold a subscription open until the client cancels it or the server shuts down."""
        agreed = params.notifications
        tasks = self.server.task_runner
        task_ids = (agreed.model_extra or {}).get("taskIds")
        if task_ids is not None and tasks is not None:
            tasks.check_listen(task_ids, self._context(ctx))
        tag = {SUBSCRIPTION_ID: ctx.request_id}
        subscribed: list[str] = []  # ended with the listen, or as a refusal of a later one refuses it
        try:
            for uri in dict.fromkeys(agreed.resource_subscriptions or []):
                self._hold(uri)
                subscribed.append(uri)
            with self._listen_order:
                with self._lock:
                    self._listens[ctx] = agreed
                self.notify(
                    "notifications/subscriptions/acknowledged",
                    models.SubscriptionsAcknowledgedNotificationParams(notifications=agreed, meta=tag),
                    route=Route(request=ctx),
                )
            ctx.cancelled.wait()
        finally:
            with self._lock:
                self._listens.pop(ctx, None)
            for uri in subscribed:
                self._let_go(uri)
        return models.SubscriptionsListenResult(meta=tag)

    def _hold(self, uri: str) -> None:
        """One more listen of this connection follows ``uri``: the watchers hear of the first (a refusal refuses it).

        Counted: over stdio one connection may hold several listens, and the
        watchers (a proxy, a mount) keep one subscription per session.
        """
        with self._lock:
            _check_room(self._listened, uri)
            self._listened[uri] += 1
            first = self._listened[uri] == 1
        if first:
            try:
                self.server.subscription_changed(self, uri, True)
            except BaseException:
                self._drop(uri)
                raise

    def _let_go(self, uri: str) -> None:
        """A listen following ``uri`` ended: the watchers hear of it once none of this connection's does."""
        if self._drop(uri):
            self.server.subscription_changed(self, uri, False)

    def _drop(self, uri: str) -> bool:
        """One listen fewer follows ``uri``; whether none does now."""
        with self._lock:
            self._listened[uri] -= 1
            if self._listened[uri]:
                return False
            del self._listened[uri]
            return True

    def _initialize(self, params: InitializeRequestParams, ctx: RequestContext) -> InitializeResult:
        if self.revision is not None:
            raise MCPError(
                MCP_CODES.ALREADY_CONNECTED,
                "initialize was already done on this connection",
                jsonrpc_code=JsonRpcCode.INVALID_REQUEST,  # the client's mistake, as above
            )
        self.revision = negotiate(params.protocol_version)
        self.client_info = params.client_info
        self.client_capabilities = params.capabilities
        self._changed()
        server = self.server
        capabilities = self.capabilities()
        if server.task_runner is not None:
            server.task_runner.offer_core(params.capabilities, capabilities)
        return InitializeResult(
            protocol_version=self.revision,
            capabilities=capabilities,
            server_info=server.info,
            instructions=server.instructions,
        )

    def _list_tools(self, params: PaginatedRequestParams, ctx: RequestContext) -> dict[str, Any]:
        return self._page("tools", self._listed(self.server.list_tools, ctx), params)

    def _list_resources(self, params: PaginatedRequestParams, ctx: RequestContext) -> dict[str, Any]:
        return self._page("resources", self._listed(self.server.list_resources, ctx), params)

    def _list_templates(self, params: PaginatedRequestParams, ctx: RequestContext) -> dict[str, Any]:
        return self._page("resourceTemplates", self._listed(self.server.list_resource_templates, ctx), params)

    def _list_prompts(self, params: PaginatedRequestParams, ctx: RequestContext) -> dict[str, Any]:
        return self._page("prompts", self._listed(self.server.list_prompts, ctx), params)

    def _page(self, key: str, listed: Sequence[_Listed], params: PaginatedRequestParams) -> dict[str, Any]:
        """The page of ``listed`` that ``params`` asks for, as its list result goes on the wire.

        Each item as its own ``to_wire()`` gives it, under ``key``, and the
        next page's cursor: what ``ListToolsResult`` and its siblings would
        dump, without making them, so that a tool server lists its tools
        without declaring the content models (see ``protocol.types.ON_DEMAND``).
        """
        items, cursor = self.server.page(listed, params.cursor)
        page: dict[str, Any] = {key: [item.to_wire() for item in items]}
        if cursor is not None:
            page["nextCursor"] = cursor
        return page

    def _call_tool(self, params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        """``tools/call``, the one path: a task when the tool runs as one, else the tool's result in its wire form.

        The result goes out without a :class:`CallToolResult` made and dumped
        again when the registry runs the tool itself (no middleware, and the
        server does not override :meth:`MCPServer.invoke_tool`) and the tool
        returns text, the common case; otherwise through ``invoke_tool``.
        """
        name, arguments = _tool_call(params)
        server = self.server
        context = self._context(ctx)
        tasks = server.task_runner
        if tasks is not None:
            task = tasks.decide(name, dict(arguments or {}), ctx.params, context)
            if task is not None:
                return task.to_wire()
        if server.middlewares:
            wire = self._intercept(
                "tool",
                ctx,
                lambda call: server.invoke_tool(call.params["name"], call.params.get("arguments"), context=call.ctx),
            ).to_wire()
        elif server.runs_own_tools:
            wire = server.registry.tool_result_wire(name, arguments, context)
        else:
            wire = server.invoke_tool(name, arguments, context=context).to_wire()
        if tasks is not None and tasks.declared(context):  # a client of the extension tells a result by resultType
            wire["resultType"] = "complete"
        return wire

    def _read_resource(self, params: ReadResourceRequestParams, ctx: RequestContext) -> ReadResourceResult:
        if self.server.middlewares:
            return self._intercept(
                "resource", ctx, lambda call: self.server.read_resource(call.params["uri"], context=call.ctx)
            )
        return self.server.read_resource(params.uri, context=self._context(ctx))

    def _get_prompt(self, params: GetPromptRequestParams, ctx: RequestContext) -> GetPromptResult:
        if self.server.middlewares:
            return self._intercept(
                "prompt",
                ctx,
                lambda call: self.server.get_prompt(
                    call.params["name"], call.params.get("arguments"), context=call.ctx
                ),
            )
        return self.server.get_prompt(params.name, params.arguments, context=self._context(ctx))

    # ------------------------------------------------------------ middleware

    def _respond(self, handler: Handler, params: Any, ctx: RequestContext) -> dict[str, Any]:
        """The handler's result as sent, through the server's middleware when it has some."""
        if not self.server.middlewares:
            return _wire(handler(params, ctx))

        def respond(call: Call) -> dict[str, Any]:
            ctx.params = call.params  # what the middleware let through is what the handlers read
            return _wire(handler(call.params, ctx))

        return self._intercept("request", ctx, respond)

    def _intercept(self, kind: CallKind, ctx: RequestContext, handler: Callable[[Call], _T]) -> _T:
        """``handler(call)`` through the middleware chain, with a copy of the params and the handler's context."""
        from .middleware import Call, run_chain  # loaded when a server first has middleware

        context = ctx.state.get(_CONTEXT)
        if context is None:  # one Context per request: the middleware and the handler share it
            context = ctx.state[_CONTEXT] = self._context(ctx)
        result: _T = run_chain(self.server.middlewares, Call(kind, ctx.method, dict(ctx.params), context), handler)
        return result

    def _complete(self, params: CompleteRequestParams, ctx: RequestContext) -> CompleteResult:
        return self.server.complete(params, self._context(ctx))

    def _subscribe(self, params: SubscribeRequestParams, ctx: RequestContext) -> EmptyResult:
        with self._lock:
            _check_room(self._subscriptions, params.uri)
        self.server.subscription_changed(self, params.uri, True)  # a refusal there refuses the subscription
        with self._lock:
            self._subscriptions.add(params.uri)
        self._changed(subscribed=frozenset({params.uri}))
        return EmptyResult()

    def _unsubscribe(self, params: UnsubscribeRequestParams, ctx: RequestContext) -> EmptyResult:
        with self._lock:
            self._subscriptions.discard(params.uri)
        self.server.subscription_changed(self, params.uri, False)
        self._changed(unsubscribed=frozenset({params.uri}))
        return EmptyResult()

    def _set_level(self, params: SetLevelRequestParams, ctx: RequestContext) -> EmptyResult:
        self.log_level = params.level
        self._changed(log_level=params.level)
        return EmptyResult()

    # --------------------------------------------------------- notifications

    def notify(
        self, method: str, params: WireModel | dict[str, Any] | None = None, *, route: Route | None = None
    ) -> None:
        """Send a notification to this client, adapted to its revision; dropped once closed.

        ``route`` says what it belongs to (a request's handler sends it; one
        server-wide notification): see :class:`~mcp_sync.runtime.transport.Route`.
        """
        if self.closed:
            return
        wire = params.to_wire() if isinstance(params, WireModel) else params
        if wire is not None and self.revision is not None:
            wire = adapt_notification(method, wire, self.revision)
        with contextlib.suppress(MCPError):  # the connection went away meanwhile
            self.dispatcher.notify(method, wire, route=route)

    @property
    def subscriptions(self) -> frozenset[str]:
        """The resource URIs this client subscribed to."""
        with self._lock:
            return frozenset(self._subscriptions)

    def _listening(self) -> list[tuple[RequestContext, SubscriptionFilter]]:
        """Each listen this session holds open: its request, and what it asked to hear of."""
        with self._listen_order, self._lock:
            return list(self._listens.items())

    def resource_updated(self, uri: str, *, once: str | None = None) -> None:
        """Send ``notifications/resources/updated`` if the client subscribed to ``uri``.

        ``once`` names the server-wide notification this is, the same in
        every process (see :class:`~mcp_sync.runtime.transport.Route`).
        """
        route = None if once is None else Route(once=once)
        if uri in self.subscriptions:
            self.notify(
                "notifications/resources/updated", models.ResourceUpdatedNotificationParams(uri=uri), route=route
            )
        for listen, wanted in self._listening():
            if uri in (wanted.resource_subscriptions or ()):
                params = models.ResourceUpdatedNotificationParams(uri=uri, meta={SUBSCRIPTION_ID: listen.request_id})
                self.notify("notifications/resources/updated", params, route=Route(request=listen, once=once))

    def task_changed(self, task_id: str, params: WireModel, *, once: str | None = None) -> None:
        """Send ``notifications/tasks`` on each of this client's listen streams that asked for ``task_id``
        (``once``: as for :meth:`resource_updated`)."""
        for listen, wanted in self._listening():
            if task_id in ((wanted.model_extra or {}).get("taskIds") or ()):
                wire = params.to_wire()
                wire.setdefault("_meta", {})[SUBSCRIPTION_ID] = listen.request_id
                self.notify("notifications/tasks", wire, route=Route(request=listen, once=once))

    def list_changed(self, kind: str, *, once: str | None = None) -> None:
        """Tell the client that the ``kind`` list (tools, resources, prompts) changed, if it wants to know
        (``once``: as for :meth:`resource_updated`)."""
        route = None if once is None else Route(once=once)
        initialized = self._initialized
        if initialized is not None and initialized.is_set():
            self.notify(f"notifications/{kind}/list_changed", route=route)
        for listen, wanted in self._listening():
            if getattr(wanted, f"{kind}_list_changed"):
                tagged = {"_meta": {SUBSCRIPTION_ID: listen.request_id}}
                self.notify(f"notifications/{kind}/list_changed", tagged, route=Route(request=listen, once=once))

    def log(
        self,
        level: LoggingLevel,
        data: Any,
        logger: str | None = None,
        *,
        minimum: LoggingLevel | None = None,
        route: Route | None = None,
    ) -> None:
        """Send ``notifications/message`` if ``level`` reaches the client's chosen level.

        ``minimum`` (a 2026-07-28 request's own level) takes the place of the
        level the client chose for the connection; ``route`` says which
        request's handler logs (its answer's stream carries the message).
        """
        check_log_level(level)
        if minimum is None and self._stateless_era:
            # A 2026-07-28 client names a level per request, and gets messages only for a request that did (on
            # its response stream); none goes to its connection as a whole.
            return
        threshold = minimum or self.log_level or self.server.log_level
        if threshold is not None and threshold not in admitting(level):
            return
        message = models.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
        self.notify("notifications/message", message, route=route)

    # ------------------------------------------------- requests to the client

    def _request(
        self,
        method: str,
        params: WireModel | None,
        result_type: type[Any],
        timeout: float | None,
        cancel: threading.Event | None = None,
        route: Route | None = None,
    ) -> Any:
        # None here means "the server's default", which the dispatcher spells USE_DEFAULT (its None is "no limit").
        limit: Timeout = USE_DEFAULT if timeout is None else timeout
        result = self.dispatcher.request(method, params, timeout=limit, cancel=cancel, route=route)
        try:
            return result_type.model_validate(result)
        except ValidationError as exc:
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID,
                f"invalid {method} result from the client: {format_validation_error(exc)}",
                cause=exc,
            ) from exc

    def create_message(
        self,
        params: CreateMessageRequestParams,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        route: Route | None = None,
    ) -> CreateMessageResult:
        """Ask the client's LLM for a message (``sampling/createMessage``).

        When the client cannot sample, the server's own sampling provider
        answers; without one, ``MISSING_CAPABILITY`` is raised. Setting
        ``cancel`` (here and in the other requests to the client) withdraws
        the question: the client is sent ``notifications/cancelled`` and
        ``REQUEST_CANCELLED`` is raised. ``route`` (here and in the others)
        names the request whose handler asks, whose answer's stream carries
        the question.
        """
        if self.client_capabilities.sampling is None:
            provider = self.server.sampling_provider
            if provider is None:
                raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the client does not support sampling")
            # The provider answers for the request: its cancellation is the provider's too.
            channel = HandshakeChannel(self, cancel, served=None if route is None else route.request)
            return provider(params, Context(session=self, cancelled=cancel, channel=channel))
        result: models.CreateMessageResult = self._request(
            "sampling/createMessage", params, models.CreateMessageResult, timeout, cancel, route
        )
        return result

    def list_roots(
        self,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        meta: dict[str, Any] | None = None,
        route: Route | None = None,
    ) -> ListRootsResult:
        """Ask the client for its roots (``roots/list``), with ``meta`` as the request's ``_meta`` if given."""
        if self.client_capabilities.roots is None:
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the client does not support roots")
        params = None if meta is None else RequestParams(meta=meta)
        result: models.ListRootsResult = self._request(
            "roots/list", params, models.ListRootsResult, timeout, cancel, route
        )
        return result

    def elicit(
        self,
        params: ElicitRequestFormParams | ElicitRequestURLParams,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        route: Route | None = None,
    ) -> ElicitResult:
        """Ask the user, through the client, for input (``elicitation/create``).

        Form mode needs a client that declared elicitation (form mode is
        implied by a bare ``elicitation: {}``) at revision 2025-06-18 or later;
        URL mode needs one that declared ``elicitation.url`` at 2025-11-25 or
        later. Otherwise ``MISSING_CAPABILITY`` is raised.
        """
        declared = self.client_capabilities.elicitation
        if isinstance(params, models.ElicitRequestURLParams):
            mode, since = "url", "2025-11-25"
            supported = declared is not None and declared.url is not None
        else:
            mode, since = "form", "2025-06-18"
            supported = declared is not None and (declared.form is not None or declared.url is None)
        if not supported or not at_least(self.revision or "", since):
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, f"the client does not support {mode} elicitation")
        result: models.ElicitResult = self._request(
            "elicitation/create", params, models.ElicitResult, timeout, cancel, route
        )
        return result

    def ping(self, *, timeout: float | None = None) -> None:
        """Check that the client answers."""
        self._request("ping", None, EmptyResult, timeout)
