"""The context a tool, resource or prompt handler receives.

A handler that declares a parameter annotated with :class:`Context` gets
one: it reports progress, sends log messages, notices cancellation, and
reaches the client for sampling, elicitation and roots.

How the client is reached depends on the protocol era of the request, and
that is decided once, where the context is built, by the
:class:`ClientChannel` it is given:

* :class:`HandshakeChannel` (revisions 2024-11-05 to 2025-11-25) sends real
  requests to the client through the :class:`~mcp_sync.server.session.ServerSession`;
* :class:`StatelessChannel` (2026-07-28) cannot send requests: a question
  raises :class:`~mcp_sync.server.stateless.InputRequired` the first time and
  returns the client's answer when the request is retried with it;
* :class:`NoClientChannel` serves local calls such as
  :meth:`MCPServer.invoke_tool`, where there is no client to ask.

The :class:`Context` itself only delegates, so handlers are written once for
every era.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> @server.tool
... def count(n: int, ctx: Context) -> str:
...     for step in range(n):
...         if ctx.cancelled.is_set():
...             return "stopped"
...         ctx.progress(step + 1, n, f"step {step + 1}")
...     return "done"
>>> server.invoke_tool("count", {"n": 3}).text
'done'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from pydantic import BaseModel, ValidationError

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import (
    ClientCapabilities,
    Implementation,
    LoggingLevel,
    RequestId,
    RequestParams,
    Tool,
)
from ..runtime.transport import Route
from .stateless import ClientRequest, StatelessRequest

if TYPE_CHECKING:
    from ..runtime.request_context import RequestContext
    from .authorization import AuthInfo
    from .core import MCPServer
    from .elicited import Elicited
    from .session import ServerSession

__all__ = [
    "NO_CLIENT",
    "ClientChannel",
    "Context",
    "HandshakeChannel",
    "NoClientChannel",
    "ProgressReporter",
    "StatelessChannel",
    "default_channel",
]


ProgressReporter = Callable[[float, "float | None", "str | None"], None]
"""``(progress, total, message)``: sends one progress notification for the current request."""
T = TypeVar("T")
_Params = TypeVar("_Params", bound=RequestParams)


class ClientChannel(Protocol):
    """How a :class:`Context` reaches the client of one request, in that request's era.

    ``timeout`` bounds a real request to the client (handshake era);
    ``key`` names a question across the retries of a stateless request.
    Each implementation ignores the one its era has no use for.
    """

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version, when it gave them."""
        ...

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do."""
        ...

    @property
    def stateless(self) -> StatelessRequest | None:
        """The request's own description (2026-07-28), ``None`` in the other eras."""
        ...

    @property
    def route(self) -> Route | None:
        """The request served (what its handler sends goes on its answer's stream); ``None`` without one."""
        ...

    def log(self, level: LoggingLevel, data: Any, logger: str | None) -> None:
        """Send a log message to the client, if it wants messages of that level."""
        ...

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """The client's raw answers to several questions, by key."""
        ...

    def create_message(
        self, params: models.CreateMessageRequestParams, timeout: float | None, key: str | None
    ) -> models.CreateMessageResult:
        """The client's answer to ``sampling/createMessage``."""
        ...

    def elicit(
        self, params: models.ElicitRequestFormParams, timeout: float | None, key: str | None
    ) -> models.ElicitResult:
        """The client's answer to ``elicitation/create``."""
        ...

    def list_roots(self, timeout: float | None, key: str | None) -> models.ListRootsResult:
        """The client's answer to ``roots/list``."""
        ...


class NoClientChannel:
    """No client at all (local calls): questions raise ``MISSING_CAPABILITY``, log messages go nowhere.

    >>> try:
    ...     NO_CLIENT.list_roots(None, None)
    ... except MCPError as error:
    ...     error.code == MCP_CODES.MISSING_CAPABILITY, error.message
    (True, 'roots needs a connected client')
    """

    @property
    def client_info(self) -> Implementation | None:
        """Always ``None``: there is no client."""
        return None

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """Always empty: there is no client."""
        return ClientCapabilities()

    @property
    def stateless(self) -> StatelessRequest | None:
        """Always ``None``: a local call has no request."""
        return None

    @property
    def route(self) -> Route | None:
        """Always ``None``: a local call has no request, and nothing is sent."""
        return None

    def log(self, level: LoggingLevel, data: Any, logger: str | None) -> None:
        """Nothing: there is nobody to tell."""

    @staticmethod
    def _absent(what: str) -> MCPError:
        return MCPError(MCP_CODES.MISSING_CAPABILITY, f"{what} needs a connected client")

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """Raises ``MISSING_CAPABILITY``."""
        raise self._absent("input")

    def create_message(
        self, params: models.CreateMessageRequestParams, timeout: float | None, key: str | None
    ) -> models.CreateMessageResult:
        """Raises ``MISSING_CAPABILITY`` (even when the server has a sampling provider, as before)."""
        raise self._absent("sampling")

    def elicit(
        self, params: models.ElicitRequestFormParams, timeout: float | None, key: str | None
    ) -> models.ElicitResult:
        """Raises ``MISSING_CAPABILITY``."""
        raise self._absent("elicitation")

    def list_roots(self, timeout: float | None, key: str | None) -> models.ListRootsResult:
        """Raises ``MISSING_CAPABILITY``."""
        raise self._absent("roots")


NO_CLIENT = NoClientChannel()
"""The channel of every context without a client (it holds no state, so one serves all)."""


class HandshakeChannel:
    """The handshake era (2024-11-05 to 2025-11-25): real requests to the client, through its session.

    The session knows what the client declared at ``initialize`` and refuses
    (``MISSING_CAPABILITY``) what it did not. A channel given ``cancelled``
    (the request's, or a task's) withdraws a question in flight when it is set: the client is
    sent ``notifications/cancelled`` and the handler gets ``REQUEST_CANCELLED``.

    >>> from mcp_sync import MCPServer
    >>> from mcp_sync.transports.memory import InMemoryTransport
    >>> server = MCPServer("demo")
    >>> session = server.start(InMemoryTransport.pair()[0])
    >>> Context(session=session, channel=HandshakeChannel(session)).client_capabilities.roots is None
    True
    >>> server.stop()
    """

    def __init__(
        self,
        session: ServerSession,
        cancelled: threading.Event | None = None,
        meta: dict[str, Any] | None = None,
        *,
        served: RequestContext | None = None,
    ) -> None:
        self.session = session
        self.cancelled = cancelled
        self.meta = meta
        """Keys added to the ``_meta`` of every question sent (a 2025-11-25 task's ``related-task``)."""
        self.served = served
        """The request whose handler speaks through this channel: its answer's stream carries what is sent."""

    @property
    def route(self) -> Route | None:
        """The route of what this channel sends: the request served, if any (made when asked: most never are)."""
        return None if self.served is None else Route(self.served)

    def _marked(self, params: _Params) -> _Params:
        if self.meta is None:
            return params
        return params.model_copy(update={"meta": {**(params.meta or {}), **self.meta}})

    @property
    def client_info(self) -> Implementation | None:
        """What the client sent in ``initialize``."""
        return self.session.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared in ``initialize``."""
        return self.session.client_capabilities

    @property
    def stateless(self) -> StatelessRequest | None:
        """Always ``None``: handshake-era requests do not describe themselves."""
        return None

    def log(self, level: LoggingLevel, data: Any, logger: str | None) -> None:
        """Sent when ``level`` reaches the level the client chose for its connection."""
        self.session.log(level, data, logger, route=self.route)

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """Each question is sent to the client in turn (this era has no batched round)."""
        from ..protocol.types import (
            CreateMessageRequest,
            ElicitRequest,
        )  # loaded when first asked (see protocol.types.CLIENT_FEATURES)

        answers: dict[str, Any] = {}
        for name, request in requests.items():
            if isinstance(request, CreateMessageRequest):
                answers[name] = self.create_message(request.params, None, None).to_wire()
            elif isinstance(request, ElicitRequest):
                params = self._marked(request.params)
                answers[name] = self.session.elicit(params, cancel=self.cancelled, route=self.route).to_wire()
            else:
                answers[name] = self.list_roots(None, None).to_wire()
        return answers

    def create_message(
        self, params: models.CreateMessageRequestParams, timeout: float | None, key: str | None
    ) -> models.CreateMessageResult:
        """``sampling/createMessage``, or the server's own sampling provider when the client cannot sample."""
        return self.session.create_message(
            self._marked(params), timeout=timeout, cancel=self.cancelled, route=self.route
        )

    def elicit(
        self, params: models.ElicitRequestFormParams, timeout: float | None, key: str | None
    ) -> models.ElicitResult:
        """``elicitation/create`` sent to the client."""
        return self.session.elicit(self._marked(params), timeout=timeout, cancel=self.cancelled, route=self.route)

    def list_roots(self, timeout: float | None, key: str | None) -> models.ListRootsResult:
        """``roots/list`` sent to the client."""
        return self.session.list_roots(timeout=timeout, cancel=self.cancelled, meta=self.meta, route=self.route)


class StatelessChannel:
    """The stateless era (2026-07-28): questions become input-required rounds.

    A question the client has not answered yet raises
    :class:`~mcp_sync.server.stateless.InputRequired` (the session turns it
    into an ``InputRequiredResult``); on the retry the same question, asked
    in the same order or under the same ``key``, returns the answer. Log
    messages reach the client only when the request named a log level.

    >>> from mcp_sync.server.stateless import InputRequired, StatelessRequest
    >>> from mcp_sync.types import ClientCapabilities
    >>> request = StatelessRequest("2026-07-28", ClientCapabilities(roots={}))
    >>> ctx = Context(channel=StatelessChannel(request))
    >>> try:
    ...     ctx.list_roots()
    ... except InputRequired as needed:
    ...     list(needed.requests)
    ['roots-1']
    >>> request.answers["roots-2"] = {"roots": [{"uri": "file:///work"}]}
    >>> [root.uri for root in ctx.list_roots()]
    ['file:///work']
    """

    def __init__(
        self, request: StatelessRequest, session: ServerSession | None = None, served: RequestContext | None = None
    ) -> None:
        self.request = request
        self.session = session
        self.served = served
        """The request being served: its answer's stream carries its log messages."""

    @property
    def route(self) -> Route | None:
        """The route of this request's log messages (made when asked)."""
        return None if self.served is None else Route(self.served)

    @property
    def client_info(self) -> Implementation | None:
        """What this request's ``_meta`` says the client is."""
        return self.request.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What this request's ``_meta`` says the client can do."""
        return self.request.client_capabilities

    @property
    def stateless(self) -> StatelessRequest | None:
        """The request's reading of its ``_meta`` and the answers it carries."""
        return self.request

    def log(self, level: LoggingLevel, data: Any, logger: str | None) -> None:
        """Sent only when the request named a log level (that level, not the connection's, filters)."""
        if self.session is not None and self.request.log_level is not None:
            self.session.log(level, data, logger, minimum=self.request.log_level, route=self.route)

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """Every question still unanswered is asked in one round."""
        return self.request.ask_all(requests)

    def create_message(
        self, params: models.CreateMessageRequestParams, timeout: float | None, key: str | None
    ) -> models.CreateMessageResult:
        """The answer to a sampling question, or :class:`InputRequired`."""
        from ..protocol.types import (
            CreateMessageRequest,
            CreateMessageResult,
        )  # loaded when first asked (see protocol.types.CLIENT_FEATURES)

        return self.request.ask(CreateMessageRequest(params=params), CreateMessageResult, key)

    def elicit(
        self, params: models.ElicitRequestFormParams, timeout: float | None, key: str | None
    ) -> models.ElicitResult:
        """The answer to an elicitation question, or :class:`InputRequired`."""
        from ..protocol.types import (
            ElicitRequest,
            ElicitResult,
        )  # loaded when first asked (see protocol.types.CLIENT_FEATURES)

        return self.request.ask(ElicitRequest(params=params), ElicitResult, key)

    def list_roots(self, timeout: float | None, key: str | None) -> models.ListRootsResult:
        """The answer to a roots question, or :class:`InputRequired`."""
        from ..protocol.types import (
            ListRootsRequest,
            ListRootsResult,
        )  # loaded when first asked (see protocol.types.CLIENT_FEATURES)

        return self.request.ask(ListRootsRequest(params=RequestParams()), ListRootsResult, key)


def default_channel(session: ServerSession | None, stateless: StatelessRequest | None = None) -> ClientChannel:
    """The channel for a context built without one: stateless if a request description is given,
    else the session's handshake channel, else :data:`NO_CLIENT`.

    The server passes its channel explicitly; this only serves code that
    builds a :class:`Context` by hand the way it did before channels.

    >>> default_channel(None) is NO_CLIENT
    True
    """
    if stateless is not None:
        return StatelessChannel(stateless, session)
    return NO_CLIENT if session is None else HandshakeChannel(session)


class Context:
    """What a handler knows about the call it serves, and how it talks back.

    ``cancelled`` is set when the client cancels the call or goes away;
    ``session`` is ``None`` for local calls such as
    :meth:`MCPServer.invoke_tool`, where the methods that need a client
    raise ``MISSING_CAPABILITY``. ``channel`` is how the client is reached
    (see the module's description); without one it follows from
    ``stateless`` and ``session`` (:func:`default_channel`). ``auth`` is who
    the request speaks for (:class:`~mcp_sync.server.authorization.AuthInfo`, from its
    verified bearer token over HTTP); ``None`` where nothing authenticates
    the caller (stdio, local calls, HTTP without a token verifier).

    >>> ctx = Context()
    >>> ctx.client_info is None, ctx.stateless is None
    (True, True)
    """

    def __init__(
        self,
        *,
        request_id: RequestId | None = None,
        cancelled: threading.Event | None = None,
        session: ServerSession | None = None,
        server: MCPServer | None = None,
        progress: ProgressReporter | None = None,
        meta: dict[str, Any] | None = None,
        stateless: StatelessRequest | None = None,
        channel: ClientChannel | None = None,
        auth: AuthInfo | None = None,
    ) -> None:
        self.request_id = request_id
        self.auth = auth
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        self.session = session
        self.server = server if server is not None or session is None else session.server
        self.meta = meta or {}
        self.channel: ClientChannel = channel or default_channel(session, stateless)
        self._progress = progress
        self.task_id: str | None = None
        """The task this call runs as (see :mod:`mcp_sync.server.tasks`), else ``None``."""

    @property
    def stateless(self) -> StatelessRequest | None:
        """What a 2026-07-28 request says about itself (revision, capabilities, answers so far); else ``None``."""
        return self.channel.stateless

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version (from initialize, or from this request in 2026-07-28)."""
        return self.channel.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do."""
        return self.channel.client_capabilities

    @property
    def client_supports_apps(self) -> bool:
        """Whether the client shows MCP Apps: it declared the ``io.modelcontextprotocol/ui`` extension with the
        ``text/html;profile=mcp-app`` MIME type (at ``initialize``, or in this request at 2026-07-28).

        A tool with an app may then keep its text short; without, the text is all the user sees.

        >>> Context().client_supports_apps
        False
        """
        from ..protocol.apps import supports_apps  # the apps extension, loaded when first asked about

        return supports_apps(self.client_capabilities.extensions)

    @property
    def route(self) -> Route | None:
        """The request this context serves, for what a handler sends through the session itself: the question
        or message then goes on this request's answer stream, as those sent through the context do::

            ctx.session.create_message(params, route=ctx.route)

        ``None`` for a local call (there is no request).
        """
        return self.channel.route

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (a no-op unless the caller asked for progress)."""
        if self._progress is not None:
            self._progress(progress, total, message)

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client, subject to its log level.

        A 2026-07-28 request gets log messages only when it named a level.
        """
        self.channel.log(level, data, logger)

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """Several questions for the client at once (2026-07-28): all asked in one round.

        Returns the raw answers by key; in the handshake era each request is
        sent to the client in turn.
        """
        return self.channel.ask_all(requests)

    def sample(
        self,
        messages: str | Sequence[str | models.SamplingMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: models.ModelPreferences | None = None,
        tools: Sequence[Tool] | None = None,
        tool_choice: models.ToolChoice | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> models.CreateMessageResult:
        """Ask the client's language model for a message; strings are user messages.

        ``tools`` offers the model tools (2025-11-25 and later): its answer may
        then hold ``tool_use`` blocks, whose results the next call sends back
        as ``tool_result`` content in a user message. ``key`` tells a
        2026-07-28 request's questions apart across its retries (give one to
        each when a handler asks more than one).

        Raises ``MISSING_CAPABILITY`` when the client cannot sample (and the
        server has no sampling provider of its own), or when ``tools`` are
        given and the client did not declare ``sampling.tools``.
        """
        if tools and (self.client_capabilities.sampling is None or self.client_capabilities.sampling.tools is None):
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the client cannot sample with tools (no sampling.tools)")
        from ..protocol.types import CreateMessageRequestParams, SamplingMessage, TextContent  # loaded when first asked

        items = [messages] if isinstance(messages, str) else list(messages)
        params = CreateMessageRequestParams(
            messages=[
                SamplingMessage(role="user", content=TextContent(text=m)) if isinstance(m, str) else m for m in items
            ],
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            stop_sequences=stop_sequences,
            model_preferences=model_preferences,
            tools=list(tools) if tools else None,
            tool_choice=tool_choice,
        )
        return self.channel.create_message(params, timeout, key)

    def elicit(
        self, message: str, schema: type[T] | dict[str, Any], *, timeout: float | None = None, key: str | None = None
    ) -> Elicited[T]:
        """Ask the user, through the client, for the fields of ``schema``.

        ``schema`` is a pydantic model (whose fields must be strings,
        numbers, booleans or enums, as the spec allows) or a JSON schema;
        the accepted answer comes back as an instance of the model (or a
        dict). Raises ``MISSING_CAPABILITY`` when the client cannot elicit,
        and ``PROTOCOL_INVALID`` when the answer does not fit the model.
        """
        from ..protocol.types import ElicitRequestFormParams  # loaded when first asked
        from .elicited import Elicited

        model = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
        requested: dict[str, Any] = (
            model.model_json_schema() if model is not None else dict(cast("dict[str, Any]", schema))
        )
        requested.pop("title", None)
        result = self.channel.elicit(ElicitRequestFormParams(message=message, requested_schema=requested), timeout, key)
        if result.action != "accept":
            return Elicited(result.action)
        if model is None:
            return Elicited("accept", cast(T, result.content))
        try:
            return Elicited("accept", cast(T, model.model_validate(result.content or {})))
        except ValidationError as exc:
            raise MCPError(MCP_CODES.PROTOCOL_INVALID, f"the client's answer does not fit: {exc}", cause=exc) from exc

    def list_roots(self, *, timeout: float | None = None, key: str | None = None) -> list[models.Root]:
        """The client's roots (directories or locations it lets the server work in)."""
        return self.channel.list_roots(timeout, key).roots

    def read_resource(self, uri: str) -> models.ReadResourceResult:
        """Read one of this server's own resources."""
        if self.server is None:
            raise MCPError(MCP_CODES.NOT_FOUND, f"no server to read {uri} from")
        return self.server.read_resource(uri, context=self)
