"""MCPClient: a blocking MCP client.

>>> from mcp_sync import MCPClient, MCPServer, InMemoryTransport
>>> server = MCPServer("demo")
>>> _ = server.register_tool("hello", lambda args, ctx: "hi " + args["name"])
>>> client_end, server_end = InMemoryTransport.pair()
>>> _ = server.start(server_end)
>>> with MCPClient() as client:
...     _ = client.connect(client_end)
...     client.call_tool("hello", {"name": "Ada"}).content[0].text
'hi Ada'
>>> server.stop()

Every method that asks the server something blocks until it answers, then
returns a model from :mod:`mcp_sync.types` or raises
:class:`~mcp_sync.errors.MCPError`. Methods may be called from many threads
at once. Each takes ``timeout`` (seconds; the client's default otherwise) and
``cancel``, a :class:`threading.Event` that another thread may set to abandon
the call: it then raises ``REQUEST_CANCELLED`` and the server is told.

What differs between the protocol's two eras (the ``initialize`` handshake
of 2024-11-05 to 2025-11-25, the stateless requests of 2026-07-28) is not
decided here: :meth:`MCPClient.connect` negotiates it once per connection,
and the methods hand the differing operations to the era it settled (see
:mod:`mcp_sync.client.era`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import ValidationError

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError, MCPProtocolError
from ..protocol.types import (
    LOG_LEVELS,
    ClientCapabilities,
    DiscoverResult,
    EmptyResult,
    Implementation,
    InitializeResult,
    LoggingLevel,
    RequestId,
    RootsCapability,
    ServerCapabilities,
    Tool,
    WireModel,
)
from ..protocol.versions import HANDSHAKE_REVISIONS, LATEST_REVISION, STATELESS_REVISIONS
from ..runtime.dispatcher import (
    DEFAULT_TIMEOUT,
    USE_DEFAULT,
    Clock,
    JsonRpcDispatcher,
    ProgressCallback,
    Timeout,
)
from ..runtime.events import EventBus
from ..runtime.telemetry import Telemetry
from ..runtime.transport import BaseTransport
from .background import BackgroundPool
from .cache import ResponseCache
from .era import ClientEra, EraChoice, EraName, HandshakeEra, Negotiation, resolve_era
from .listings import Listings
from .logs import forward_to_logging
from .meta import RequestMeta
from .rounds import validated
from .skills import SkillMethods
from .subscriptions import TAGGED, ListenTable, NotificationCallback, Subscription
from .tasks import EXTENSION as TASKS_EXTENSION
from .tasks import TaskForm, TaskPoller, ToolTask, created_task, drive, tool_call_params
from .tools import ToolNamespace, check_structured

if TYPE_CHECKING:
    import requests
    import requests.auth

    from ..transports.stdio import StderrTarget
    from .apps import AppResource
    from .factories import TransportKind

__all__ = [
    "RESOURCE_UPDATED",
    "ElicitationProvider",
    "LogHandler",
    "MCPClient",
    "ResourceUpdated",
    "RootsProvider",
    "SamplingProvider",
    "Subscription",
]

log = logging.getLogger(__name__)


# The providers and the log handler are protocols rather than Callable aliases so that their models load when first
# used (see protocol.types.ON_DEMAND) while typing.get_type_hints still resolves every signature that names them.
class SamplingProvider(Protocol):
    """Answers the server's ``sampling/createMessage`` requests: any function of the request's params.

    >>> from mcp_sync.types import CreateMessageResult, TextContent
    >>> def sample(params):
    ...     return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="echo")
    >>> client = MCPClient(sampling_provider=sample)
    """

    def __call__(self, params: models.CreateMessageRequestParams, /) -> models.CreateMessageResult: ...


class RootsProvider(Protocol):
    """Answers the server's ``roots/list`` requests: a function of no arguments.

    >>> from mcp_sync.types import Root
    >>> client = MCPClient(roots_provider=lambda: [Root(uri="file:///work")])
    """

    def __call__(self) -> list[models.Root]: ...


class ElicitationProvider(Protocol):
    """Answers the server's ``elicitation/create`` requests (form mode; one with a true ``url_mode`` attribute
    also gets the URL-mode requests, as :class:`~mcp_sync.types.ElicitRequestURLParams`).

    >>> from mcp_sync.types import ElicitResult
    >>> client = MCPClient(elicitation_provider=lambda params: ElicitResult(action="decline"))
    """

    def __call__(self, params: models.ElicitRequestFormParams, /) -> models.ElicitResult: ...


class LogHandler(Protocol):
    """Receives the server's log messages (on the reader thread: keep it quick): any function of one message.

    >>> client = MCPClient(log_handler=lambda message: print(message.level, message.data))
    """

    def __call__(self, message: models.LoggingMessageNotificationParams, /) -> None: ...


Progress = ProgressCallback | bool | None
"""What ``call_tool(progress=...)`` takes: a callback, ``True`` for a progress bar, or nothing."""

RESOURCE_UPDATED = "resource:updated"
"""Client event: a subscribed resource changed and was read again."""

DEFAULT_MAX_INPUT_ROUNDS = 8
"""How many interim results (rounds of input requests) one call may go through before the client gives up."""
DEFAULT_PROBE_TIMEOUT = 10.0
"""How long ``connect()`` waits for an answer to its ``server/discover`` probe before trying ``initialize``."""

_R = TypeVar("_R", bound=WireModel)


@dataclass(frozen=True, slots=True)
class ResourceUpdated:
    """Payload of the ``resource:updated`` client event."""

    uri: str
    contents: models.ReadResourceResult


class MCPClient(Listings, SkillMethods):
    """A client for one MCP server connection at a time.

    ``era`` says how to talk to the server: ``"auto"`` (the default) probes
    with ``server/discover`` and speaks the stateless revision 2026-07-28
    when the server answers it, falling back to the ``initialize`` handshake
    of the earlier revisions when it does not; ``"stateless"`` and
    ``"handshake"`` force one of the two. The methods work the same in both eras.

    ``protocol_version`` is the revision offered at initialize (kept as
    :attr:`offered_version`; once connected, :attr:`protocol_version` is the
    revision the connection speaks); any of ``accepted_versions`` is accepted back. ``"auto"`` probes only when
    2026-07-28 is among ``accepted_versions`` (it is by default) and no
    handshake revision was given as ``protocol_version``. ``timeout`` is the default
    for every call (``None``: no limit). The providers answer the server's
    own requests (in 2026-07-28, the input requests of its interim results,
    for up to ``max_input_rounds`` rounds per call); the capabilities the
    client declares follow from which ones are set. ``elicitation_provider``
    is ``"auto"`` by default: a person at hand answers the server's questions
    (in a Jupyter kernel, a form in the cell's output; in an interactive
    terminal, prompts), and where nobody is (a script without a terminal, a
    web worker, CI, or ``MCP_SYNC_INTERACTIVE=0``) there is no provider, as
    with ``elicitation_provider=None``: the capability is not declared (see
    :mod:`mcp_sync.client.interactive`). A form the elicitation provider
    accepts gets the requested schema's default for each field the provider
    left out, unless ``elicitation_defaults=False``. ``log_handler`` receives
    the server's log messages (default: in a notebook, a line in the cell
    that made the call; elsewhere the ``mcp_sync.server_log`` logger), those
    below ``log_level`` left out; a ``log_level`` given is also asked of the
    server on connecting (``logging/setLevel``, or the request ``_meta`` at
    2026-07-28), as :meth:`set_log_level` does.
    ``cache`` keeps 2026-07-28 results for as long as their ``ttlMs`` allows;
    ``probe_timeout`` bounds the wait for an answer to the probe (a server
    that stays silent is taken for a handshake-era one). ``host_apps=True``
    declares the MCP Apps extension (``io.modelcontextprotocol/ui``), for a
    client that shows the apps of tools (see :meth:`app_resource`).
    """

    def __init__(
        self,
        name: str = "mcp-sync",
        version: str = "0.1.0",
        *,
        era: EraChoice = "auto",
        protocol_version: str | None = None,
        accepted_versions: tuple[str, ...] = (*HANDSHAKE_REVISIONS, *STATELESS_REVISIONS),
        timeout: float | None = DEFAULT_TIMEOUT,
        sampling_provider: SamplingProvider | None = None,
        roots_provider: RootsProvider | None = None,
        elicitation_provider: ElicitationProvider | Literal["auto"] | None = "auto",
        elicitation_defaults: bool = True,
        log_handler: LogHandler | None = None,
        log_level: LoggingLevel | None = None,
        id_generator: Callable[[], RequestId] | None = None,
        clock: Clock | None = None,
        telemetry: Telemetry | None = None,
        max_workers: int = 4,
        cache: bool = True,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
        host_apps: bool = False,
    ) -> None:
        self.era = resolve_era(era)
        """The era asked for, by its name now: ``"auto"``, ``"handshake"`` or ``"stateless"``."""
        self.info = Implementation(name=name, version=version)
        self.offered_version = protocol_version or LATEST_REVISION
        """The handshake revision offered at ``initialize`` (the ``protocol_version`` given, or the newest)."""
        self.handshake_named = protocol_version in HANDSHAKE_REVISIONS
        """Whether a handshake revision was asked for by name (then ``era="auto"`` does not probe)."""
        self.accepted_versions = accepted_versions
        self.timeout = timeout
        self.sampling_provider = sampling_provider
        self.roots_provider = roots_provider
        if elicitation_provider == "auto":
            from .interactive import default_elicitation_provider

            elicitation_provider = default_elicitation_provider()
        self.elicitation_provider: ElicitationProvider | None = elicitation_provider
        self.elicitation_defaults = elicitation_defaults
        """Whether an accepted form gets the requested schema's defaults for the fields its provider left out."""
        if log_handler is None:
            from .interactive import default_log_handler

            log_handler = default_log_handler() or forward_to_logging
        self.log_handler: LogHandler = log_handler
        self.log_level = log_level
        """The lowest level of the server's log messages handed to ``log_handler`` (``None``: all)."""
        self.max_input_rounds = max_input_rounds
        self.host_apps = host_apps
        """Whether the client declares that it shows MCP Apps (see :meth:`capabilities`)."""
        self.probe_timeout = probe_timeout
        self.events = EventBus()
        self.initialize_result: InitializeResult | None = None
        """The server's answer to ``initialize`` (``None`` in the 2026-07-28 era, which has no handshake)."""
        self.discover_result: DiscoverResult | None = None
        """The server's answer to ``server/discover`` in the 2026-07-28 era (``None`` in the handshake era)."""
        self.cache = ResponseCache() if cache else None
        """The 2026-07-28 results kept for as long as their ``ttlMs`` allows (``None`` with ``cache=False``)."""
        self._id_generator = id_generator
        self._clock = clock
        self._telemetry = telemetry
        self._max_workers = max_workers
        self._dispatcher: JsonRpcDispatcher | None = None
        # Set together, once per connection, when negotiation ends (see _settle); cleared by _detach.
        self._era: ClientEra | None = None
        self._peer: InitializeResult | None = None
        self._stateless_revision: str | None = None
        self.request_meta = RequestMeta(self, log_level)
        """The ``_meta`` this client adds to each 2026-07-28 request (see :mod:`mcp_sync.client.meta`)."""
        self._background: BackgroundPool | None = None
        self._lock = threading.RLock()
        self.listens = ListenTable()
        """The open :meth:`listen` streams, which the notifications they carry are routed to."""
        self._resources: list[models.Resource] = []
        self._templates: list[models.ResourceTemplate] = []
        self._prompts: list[models.Prompt] = []
        self._roots: list[models.Root] = []
        self._subscriptions: dict[str, models.ReadResourceResult | None] = {}
        self._tool_namespace = ToolNamespace(self)
        self._poller: TaskPoller | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def initialized(self) -> bool:
        """Whether the connection is open and ready (the handshake, or the discovery, done)."""
        return self._dispatcher is not None and not self._dispatcher.closed and self._peer is not None

    @property
    def negotiated_era(self) -> EraName:
        """Which era the connection speaks: ``"stateless"`` (2026-07-28) or ``"handshake"`` (an earlier revision)."""
        return self._connection().name

    @property
    def server_info(self) -> Implementation:
        """The server's name and version."""
        return self._initialized().server_info

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server declared it offers."""
        return self._initialized().capabilities

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision the open connection speaks, ``None`` while not connected.

        ``"2026-07-28"`` in the stateless era, else the revision the server
        answered at ``initialize`` (which may be older than
        :attr:`offered_version`)::

            >>> import mcp_sync
            >>> with mcp_sync.connect(mcp_sync.MCPServer("demo")) as client:
            ...     client.protocol_version
            '2026-07-28'
            >>> client.protocol_version is None
            True
        """
        with self._lock:
            era = self._era if self.initialized else None
        return None if era is None else era.peer.protocol_version

    @property
    def negotiated_version(self) -> str:
        """Deprecated: :attr:`protocol_version` (this alias raises ``NOT_INITIALIZED`` while not connected)."""
        message = "MCPClient.negotiated_version is deprecated; use MCPClient.protocol_version"
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self._initialized().protocol_version

    def _initialized(self) -> InitializeResult:
        return self._connection().peer

    def _connection(self) -> ClientEra:
        """The era of the open connection (it holds the dispatcher and what the server said of itself)."""
        with self._lock:
            dispatcher, era = self._dispatcher, self._era
        if dispatcher is None or era is None:
            raise MCPError(MCP_CODES.NOT_INITIALIZED, "the client is not connected; call connect() first")
        return era

    def capabilities(self) -> ClientCapabilities:
        """The capabilities this client declares: those of the providers set now, the tasks extension, and the
        apps extension with ``host_apps``.

        >>> sorted(MCPClient(host_apps=True).capabilities().extensions)
        ['io.modelcontextprotocol/tasks', 'io.modelcontextprotocol/ui']
        """
        # The providers' module holds the models of the server's questions: loaded when a client first connects.
        from .providers import elicitation_capability, sampling_capability

        # Any call may be answered with a task: call_tool follows it to its end (see mcp_sync.client.tasks).
        extensions: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}}
        if self.host_apps:
            from ..protocol.apps import EXTENSION_ID, client_settings  # the apps extension's rules, when hosted

            extensions[EXTENSION_ID] = client_settings()
        return ClientCapabilities(
            sampling=sampling_capability(self.sampling_provider),
            roots=RootsCapability(list_changed=True) if self.roots_provider is not None else None,
            elicitation=elicitation_capability(self.elicitation_provider),
            extensions=extensions,
        )

    def connect(self, transport: Any, *, timeout: Timeout = USE_DEFAULT) -> InitializeResult:
        """Open ``transport``, find out which era the server speaks, and fill the caches.

        In the handshake era this runs ``initialize``; in the 2026-07-28 era
        ``server/discover``, whose answer is returned in the shape of an
        initialize result (also in :attr:`discover_result`). Raises
        ``ALREADY_CONNECTED`` while connected (a connection the server ended
        does not count), and ``PROTOCOL_VERSION_MISMATCH`` (closing the
        transport) when the server speaks no revision this client accepts. If
        any step fails, the transport is closed and the client stays
        disconnected.
        """
        with self._lock:
            ended = self._dispatcher
            if ended is not None and not ended.closed:
                raise MCPError(MCP_CODES.ALREADY_CONNECTED, "the client is already connected; disconnect() first")
            dispatcher = JsonRpcDispatcher(
                transport,
                side="client",
                id_generator=self._id_generator,
                clock=self._clock,
                max_workers=self._max_workers,
                timeout=self.timeout,
                events=self.events,
                telemetry=self._telemetry,
            )
            background = self._detach(dispatcher)
        self._release(ended, background)  # what is left of a connection the server ended
        self._register_handlers(dispatcher)
        if isinstance(transport, BaseTransport):
            transport.on_new_session(self._session_renewed)
        dispatcher.start()
        try:
            # The era is settled by the negotiation itself, as it ends (before notifications/initialized
            # in the handshake era), not here once it has returned: see Negotiation._handshake.
            handshake_only = getattr(transport, "handshake_only", False)
            result = Negotiation(self, dispatcher, timeout, self._settle).run(handshake_only).peer
            self._fill_caches()
        except BaseException:
            self.disconnect()
            raise
        return result

    def _settle(self, era: ClientEra) -> None:
        """Make ``era`` the connection's: called once per connection, by the negotiation, as it ends."""
        with self._lock:
            self._era = era
            self._peer = era.peer
            self._stateless_revision = era.stateless_revision
            self.initialize_result = era.initialize_result
            self.discover_result = era.discover_result

    def _register_handlers(self, dispatcher: JsonRpcDispatcher) -> None:
        dispatcher.register_handler("ping", lambda params, ctx: EmptyResult())
        HandshakeEra.answer_questions(self, dispatcher)
        dispatcher.on_notification("notifications/message", self._on_log)
        dispatcher.on_notification("notifications/resources/updated", self._on_resource_updated)
        for kind in ("tools", "resources", "prompts"):
            dispatcher.on_notification(
                f"notifications/{kind}/list_changed", functools.partial(self._on_list_changed, kind)
            )
        for method in TAGGED:
            dispatcher.on_notification(method, functools.partial(self.listens.route, method))

    def _fill_caches(self) -> None:
        capabilities = self.server_capabilities
        if capabilities.tools is not None:
            self.refresh_tools()
        if capabilities.resources is not None:
            self.refresh_resources()
            self.refresh_templates_if_served()
        if capabilities.prompts is not None:
            self.refresh_prompts()
        if self.roots_provider is not None:
            self.read_roots()
        if self.log_level is not None and capabilities.logging is not None:
            self.set_log_level(self.log_level)  # 2026-07-28 sends nothing: the level is in every request's _meta

    def disconnect(self, reason: str | None = None) -> None:
        """Close the connection; pending calls fail with ``TRANSPORT_CLOSED``. Idempotent.

        Unfinished :class:`~mcp_sync.client.tasks.ToolTask` handles end with
        ``TRANSPORT_CLOSED`` too; their tasks run on at the server, and
        :meth:`task` reattaches to them.
        """
        with self._lock:
            dispatcher = self._dispatcher
            background = self._detach(None)
            poller, self._poller = self._poller, None
        if poller is not None:  # its handles end with this error, not with that of a poll the close interrupts
            poller.stop(
                MCPError(MCP_CODES.TRANSPORT_CLOSED, "the client was closed; reattach to the task with client.task(id)")
            )
        self._release(dispatcher, background)
        if poller is not None:
            poller.join()

    def _detach(self, dispatcher: JsonRpcDispatcher | None) -> BackgroundPool | None:
        """Forget the current connection's state, its era with it (the lock is held); return its background pool."""
        background, self._background = self._background, None
        self._dispatcher = dispatcher
        self.initialize_result = self._peer = self.discover_result = None
        self._era = None
        self._stateless_revision = None
        self._subscriptions.clear()
        if self.cache is not None:
            self.cache.invalidate()
        return background

    @staticmethod
    def _release(dispatcher: JsonRpcDispatcher | None, background: BackgroundPool | None) -> None:
        """Close a detached connection and wait for its background work (not from inside it)."""
        if dispatcher is not None:
            dispatcher.close()
        if background is not None:
            background.shutdown()

    close = disconnect

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrTarget = None,
        connect_timeout: float | None = 30.0,
        **options: Any,
    ) -> MCPClient:
        """Start a server process and connect to it over stdio.

        ``command`` is a command line or an argument list; ``args`` are
        appended; ``env`` adds to a safe default environment (``inherit_env``:
        to this process's whole environment); ``stderr`` takes the server's
        stderr (a stream, a callable, a logger; default: this process's
        ``sys.stderr``). Other options are those of :class:`MCPClient`.
        Failing to start or to connect within ``connect_timeout`` raises an
        error that names the command, with what the process said on stderr.
        Closing the client ends the process.

        >>> import sys
        >>> with MCPClient.stdio([sys.executable, "examples/echo_server.py"]) as client:
        ...     client.call_tool("echo", {"text": "hi"}).text
        'hi'
        """
        from ..transports.process import server_argv, started_early
        from ..transports.stdio import ProcessTransport
        from .factories import build_first_models, open_process

        argv = server_argv(command, args)
        # The server starts up while the client is made (the first client of a process builds its models), and
        # while the models of the first exchanges are built.
        with started_early(argv, env=env, inherit_env=inherit_env, cwd=cwd) as process:
            client = cls(**options)  # (bad options end the process started for it)
            build_first_models()
            transport = ProcessTransport(
                argv, env=env, inherit_env=inherit_env, cwd=cwd, stderr=stderr, process=process
            )
        return open_process(client, transport, connect_timeout=connect_timeout)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        transport: TransportKind = "auto",
        session: requests.Session | None = None,
        headers: Mapping[str, str] | None = None,
        auth: requests.auth.AuthBase | Literal["oauth"] | None = None,
        connect_timeout: float | None = 30.0,
        **options: Any,
    ) -> MCPClient:
        """Connect to the MCP server at ``url`` over HTTP.

        ``transport`` is ``"streamable"`` (Streamable HTTP), ``"sse"`` (the
        HTTP+SSE transport of 2024-11-05) or ``"auto"``: Streamable HTTP, and
        HTTP+SSE at the same URL if the server answers the first POST with
        400, 404 or 405. ``session``, ``headers`` and ``auth`` go to
        :mod:`requests`; other options are those of :class:`MCPClient`.
        Failing to connect within ``connect_timeout`` raises an error naming
        the URL::

            with MCPClient.http("http://127.0.0.1:8000/mcp") as client:
                print(client.call_tool("echo", {"text": "hi"}).text)
        """
        from .factories import open_url

        return open_url(
            cls(**options),
            url,
            transport=transport,
            session=session,
            headers=headers,
            auth=auth,
            connect_timeout=connect_timeout,
        )

    def __enter__(self) -> MCPClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.disconnect()

    # -------------------------------------------------------------- plumbing

    def _call(
        self,
        method: str,
        params: WireModel | None,
        result_type: type[_R],
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
        on_progress: ProgressCallback | None = None,
        fresh: bool = False,
    ) -> _R:
        """Ask ``method`` the way the connection's era does (``fresh``: not from the stateless era's cache)."""
        era = self._connection()
        return era.call(
            method, params, result_type, timeout=timeout, cancel=cancel, on_progress=on_progress, fresh=fresh
        )

    def _in_background(self, fn: Callable[[str], Any], arg: str) -> None:
        """Run ``fn(arg)`` off the reader thread, logging failures."""

        def run() -> None:
            try:
                fn(arg)
            except MCPError as exc:
                log.warning("background %s(%r) failed: %s", fn.__name__, arg, exc)

        with self._lock:
            if self._dispatcher is None:
                return
            if self._background is None:
                self._background = BackgroundPool()
            self._background.submit((fn, arg), run)

    # ---------------------------------------------------------- subscriptions

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        on_notification: NotificationCallback | None = None,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
    ) -> Subscription:
        """Open a ``subscriptions/listen`` stream (2026-07-28) and return it once the server acknowledged it.

        ``tools``, ``prompts`` and ``resources`` ask for the list-changed
        notifications of those lists, ``resource_uris`` for the
        ``notifications/resources/updated`` of those resources. Each
        notification goes to ``on_notification(method, params)`` on the
        subscription's own thread; the client's list caches are refreshed on
        list changes as well. Close the :class:`Subscription` (or use it in a
        ``with`` block) to end the stream. A handshake-era server has no such
        stream: there, use :meth:`subscribe_resource` and the list-changed
        notifications every server sends.
        """
        return self._connection().listen(
            tools=tools,
            prompts=prompts,
            resources=resources,
            resource_uris=resource_uris,
            on_notification=on_notification,
            timeout=timeout,
            cancel=cancel,
        )

    def on_notification(self, method: str, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener(params)`` for each ``method`` notification of the open connection; returns the undo.

        The listener runs on the reader thread (keep it quick: hand work to
        another thread) and lasts as long as this connection. In 2026-07-28
        list changes arrive only on a :meth:`listen` stream.

        >>> from mcp_sync import MCPServer, connect
        >>> with connect(MCPServer("demo"), era="handshake") as client:
        ...     stop = client.on_notification("notifications/tools/list_changed", print)
        ...     stop()
        """
        return self._connection().dispatcher.on_notification(method, listener)

    # ------------------------------------------------------------------ tools

    def ping(self, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None) -> None:
        """Check that the server answers (with ``ping``; in 2026-07-28, which has none, ``server/discover``)."""
        self._connection().ping(timeout, cancel)

    @property
    def tools(self) -> ToolNamespace:
        """The server's tools as last fetched (at connect, or on a list change).

        Call it for the list of :class:`~mcp_sync.types.Tool` models, or use
        it as a mapping of Python functions, one per tool, by name or as
        attributes: ``client.tools()``, ``client.tools["add"](a=1, b=2)``,
        ``client.tools.add(a=1, b=2)``. See :class:`ToolNamespace`.
        """
        return self._tool_namespace

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
        progress: Progress = None,
        raise_on_error: bool = False,
    ) -> models.CallToolResult:
        """Call a tool and return its result.

        A tool that fails returns a result with ``is_error=True``, or, with
        ``raise_on_error=True``, raises ``MCPError(HANDLER_FAILED)`` with the
        result's text as message (the result is in ``context["result"]``). A
        call the server refuses raises.

        ``progress`` receives the progress notifications (on the reader
        thread: keep it quick); ``progress=True`` shows a progress bar on
        stderr instead (tqdm's when it is installed, plain lines otherwise).

        A server may run the call as a task (see :mod:`mcp_sync.client.tasks`):
        the client then polls it at the interval the server suggests, answers
        its input requests through the providers, and returns its result, all
        within ``timeout``. Running out of time, or ``cancel``, sends
        ``tasks/cancel``. :meth:`start_tool` returns the task instead.

        With ``host_apps=True``, the result of a tool that has an app, shown
        in a notebook cell, shows that app, given ``arguments`` and the result
        (see :func:`mcp_sync.apps.show_app`).
        """
        bar = None
        if progress is True:
            from ..display.progress import ProgressBar

            bar = ProgressBar(name)
        callback = bar if bar is not None else progress if callable(progress) else None
        era = self._connection()
        params = tool_call_params(self, era, name, arguments, prefer=False)
        started = time.monotonic()  # a task is followed within what is left of the timeout, not a new one
        try:
            raw = era.request("tools/call", params, timeout=timeout, cancel=cancel, on_progress=callback, fresh=False)
        finally:
            if bar is not None:
                bar.close()
        created = created_task(raw)
        if created is None:
            result = validated(models.CallToolResult, raw, "tools/call")
        else:
            state, core_form = created
            form = TaskForm(self, era, core_form=core_form, call_cancel=cancel)
            limit = self.timeout if timeout is USE_DEFAULT else timeout
            result = drive(ToolTask(name, state, form), limit, started, cancel)
        if raise_on_error and result.is_error:
            raise MCPError(
                MCP_CODES.HANDLER_FAILED,
                result.text or f"tool {name!r} failed",
                context={"tool": name, "result": result.to_wire()},
            )
        if self.host_apps:  # in a notebook, the result shows as the tool's app
            from .apps import note_app_call

            note_app_call(self, name, arguments, result)
        return result

    def call_tool_structured(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
        progress: Progress = None,
    ) -> Any:
        """Call a tool and return its structured content, checked against the tool's output schema.

        A tool error raises ``MCPError(HANDLER_FAILED)``; a result without
        structured content, or whose structured content does not match the
        ``outputSchema`` the tool declares, raises ``MCPProtocolError``
        (``PROTOCOL_INVALID``). Checking needs the ``jsonschema`` package; a
        tool without an output schema has its structured content returned
        as it came.
        """
        result = self.call_tool(name, arguments, timeout=timeout, cancel=cancel, progress=progress, raise_on_error=True)
        tool = self.tools.find(name)
        schema = tool.output_schema if tool is not None else None
        if result.structured_content is None:
            declared = " although it declares an output schema" if schema is not None else ""
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID,
                f"tool {name!r} returned no structured content{declared}",
                context={"tool": name, "result": result.to_wire()},
            )
        if schema is not None:
            check_structured(name, schema, result.structured_content)
        return result.structured_content

    def start_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: Timeout = USE_DEFAULT
    ) -> ToolTask:
        """Call a tool and return at once with a :class:`~mcp_sync.client.tasks.ToolTask`, a future of its result.

        The server decides whether the call runs as a task (a 2025-11-25 server
        is asked for one when the tool's ``execution.taskSupport`` allows it);
        a call it answers at once gives a handle already done, whose
        ``task_id`` is ``None``. The client's poller thread follows the task,
        answering its input requests through the providers. ``timeout``
        bounds the ``tools/call`` request only.

        >>> import threading
        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("hello", lambda args, ctx: "hi " + args["name"])
        >>> with connect(server) as client:
        ...     task = client.start_tool("hello", {"name": "Ada"})
        ...     task.result(timeout=10).text
        'hi Ada'
        """
        era = self._connection()
        params = tool_call_params(self, era, name, arguments, prefer=True)
        raw = era.request("tools/call", params, timeout=timeout, cancel=None, on_progress=None, fresh=False)
        created = created_task(raw)
        if created is None:
            return ToolTask.finished(name, validated(models.CallToolResult, raw, "tools/call"))
        state, core_form = created
        return self._watch(ToolTask(name, state, TaskForm(self, era, core_form=core_form)))

    def task(self, task_id: str, *, timeout: Timeout = USE_DEFAULT) -> ToolTask:
        """Reattach to the task ``task_id`` (started by this client, another process, or a kernel since restarted).

        Asks ``tasks/get`` once, so that an id the server does not know raises
        :class:`~mcp_sync.client.tasks.UnknownTaskError` here; then the poller
        follows it as for :meth:`start_tool`. Its ``name`` is ``None``.
        """
        form = TaskForm.of(self, self._connection())
        return self._watch(ToolTask(None, form.get(task_id, timeout), form))

    def _watch(self, task: ToolTask) -> ToolTask:
        with self._lock:
            if self._poller is None:
                self._poller = TaskPoller(lambda: self.timeout)
            poller = self._poller
        poller.watch(task)
        return task

    # -------------------------------------------------------------- resources

    def read_resource(
        self,
        uri: str,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> models.ReadResourceResult:
        """Read a resource's contents (``progress``: as for :meth:`call_tool`, a callback only)."""
        params = models.ReadResourceRequestParams(uri=uri)
        return self._call(
            "resources/read", params, models.ReadResourceResult, timeout=timeout, cancel=cancel, on_progress=progress
        )

    def app_resource(self, tool: Tool | str, *, timeout: Timeout = USE_DEFAULT) -> AppResource:
        """The MCP App of ``tool`` (a tool or its name): the HTML of its ``ui://`` resource and the resource's
        ``_meta.ui`` (see :func:`mcp_sync.client.apps.app_resource`), read whether or not the server declared the
        apps extension.
        """
        from .apps import app_resource

        return app_resource(self, tool, timeout=timeout)

    def send_request(
        self,
        method: str,
        params: WireModel | None,
        result_type: type[_R],
        timeout: Timeout = USE_DEFAULT,
        *,
        cancel: threading.Event | None = None,
    ) -> _R:
        """Send an extension's request ``method`` in the connection's era; its result read as ``result_type``.

        >>> from mcp_sync import MCPServer, connect
        >>> from mcp_sync.protocol.skills import ListSkillsRequestParams, ListSkillsResult
        >>> server = MCPServer("demo")
        >>> _ = server.add_skills("examples/skills")
        >>> with connect(server) as client:
        ...     [s.uri for s in client.send_request("skills/list", ListSkillsRequestParams(), ListSkillsResult).skills]
        ['skill://pdf-processing/SKILL.md']
        """
        return self._call(method, params, result_type, timeout=timeout, cancel=cancel)

    def subscribe_resource(
        self, uri: str, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None
    ) -> None:
        """Subscribe to changes of ``uri`` (``resources/subscribe``; in 2026-07-28 a :meth:`listen` stream).

        On each change the client reads the resource again (off the reader
        thread), keeps it for :meth:`subscribed_contents` and emits the
        ``resource:updated`` event with a :class:`ResourceUpdated` payload.
        """
        # Followed before the request goes: the server may tell of a change before its answer comes.
        with self._lock:
            known = uri in self._subscriptions
            self._subscriptions.setdefault(uri, None)
        try:
            stale = self._connection().subscribe(uri, timeout, cancel)
        except BaseException:
            if not known:
                with self._lock:
                    self._subscriptions.pop(uri, None)
            raise
        if stale is not None:
            stale.close()

    def unsubscribe_resource(
        self, uri: str, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None
    ) -> None:
        """Stop receiving changes of ``uri``."""
        listening = self._connection().unsubscribe(uri, timeout, cancel)
        with self._lock:
            self._subscriptions.pop(uri, None)
        if listening is not None:
            listening.close()

    def subscribed_contents(self, uri: str) -> models.ReadResourceResult | None:
        """The contents last read for a subscribed ``uri`` after a change (``None`` before any)."""
        with self._lock:
            return self._subscriptions.get(uri)

    def _on_resource_updated(self, params: dict[str, Any]) -> None:
        try:
            uri = models.ResourceUpdatedNotificationParams.model_validate(params).uri
        except ValidationError:
            log.debug("ignored malformed notifications/resources/updated: %r", params)
            return
        if uri in self._subscriptions and not self.listens.stale(params):
            self._in_background(self._reread, uri)

    def _session_renewed(self) -> None:
        """The transport started a new session, the server having forgotten ours: ask again for what ours held.

        Without this a subscribed resource would go quiet for good (its
        subscription was the old session's), and log messages would come at
        the server's default level. Run in the background: this is called
        on the thread of the request that found the session gone.
        """
        self._in_background(self._restore_log_level, "the log level")
        with self._lock:
            uris = list(self._subscriptions)
        for uri in uris:  # each on its own: one refused leaves the others
            self._in_background(self._resubscribe, uri)

    def _resubscribe(self, uri: str) -> None:
        # (Sessions are the handshake era's: no listen stream is replaced. An unsubscribe racing with this may
        # reach the server first; the client then ignores the updates of a resource it no longer follows.)
        self._connection().subscribe(uri, USE_DEFAULT, None)

    def _restore_log_level(self, _: str) -> None:
        level = self.log_level  # the latest: it may have changed since the session was found gone
        if level is not None and self.server_capabilities.logging is not None:
            self.set_log_level(level)

    def _reread(self, uri: str) -> None:
        contents = self.read_resource(uri)
        with self._lock:
            if uri not in self._subscriptions:
                return
            self._subscriptions[uri] = contents
        self.events.emit(RESOURCE_UPDATED, ResourceUpdated(uri=uri, contents=contents))

    # ---------------------------------------------------------------- prompts

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> models.GetPromptResult:
        """Render a prompt with ``arguments`` (``progress``: as for :meth:`call_tool`, a callback only)."""
        params = models.GetPromptRequestParams(name=name, arguments=dict(arguments) if arguments is not None else None)
        return self._call(
            "prompts/get", params, models.GetPromptResult, timeout=timeout, cancel=cancel, on_progress=progress
        )

    # ------------------------------------------------------------- utilities

    def complete(
        self,
        ref: models.PromptReference | models.ResourceTemplateReference,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
    ) -> models.CompleteResult:
        """Ask for completions of ``argument`` (typed so far: ``value``) of a prompt or template."""
        params = models.CompleteRequestParams(
            ref=ref,
            argument=models.CompleteArgument(name=argument, value=value),
            context=models.CompleteContext(arguments=dict(context)) if context is not None else None,
        )
        return self._call("completion/complete", params, models.CompleteResult, timeout=timeout, cancel=cancel)

    def set_log_level(
        self, level: LoggingLevel, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None
    ) -> None:
        """Ask the server to send log messages of ``level`` and above (and show only those: :attr:`log_level`).

        In the handshake era this is ``logging/setLevel``; 2026-07-28 has no
        such method, and the level goes in the ``_meta`` of every later
        request instead (without it, such servers send no log messages).
        """
        params = models.SetLevelRequestParams(level=level)
        self._connection().set_log_level(params, timeout, cancel)
        self.log_level = level

    # -------------------------------------------------------------- providers

    def set_sampling_provider(self, provider: SamplingProvider | None) -> None:
        """Answer ``sampling/createMessage`` with ``provider(params)``."""
        self.sampling_provider = provider

    def set_elicitation_provider(self, provider: ElicitationProvider | Literal["auto"] | None) -> None:
        """Answer ``elicitation/create`` with ``provider(params)`` (``"auto"``: ask the person at hand, if any)."""
        if provider == "auto":
            from .interactive import default_elicitation_provider

            provider = default_elicitation_provider()
        self.elicitation_provider = provider

    def set_roots_provider(self, provider: RootsProvider | None) -> None:
        """Answer ``roots/list`` with ``provider()``."""
        self.roots_provider = provider

    def roots(self) -> list[models.Root]:
        """The roots this client exposes, as last read from the roots provider."""
        return list(self._roots)

    def read_roots(self, provider: RootsProvider | None = None) -> list[models.Root]:
        """Read the roots from ``provider`` (by default :attr:`roots_provider`) and keep them for :meth:`roots`.

        The server is not told (:meth:`refresh_roots` tells it); no provider at all means no roots.

        >>> from mcp_sync.types import Root
        >>> client = MCPClient(roots_provider=lambda: [Root(uri="file:///work")])
        >>> [root.uri for root in client.read_roots()], client.read_roots(lambda: []), MCPClient().read_roots()
        (['file:///work'], [], [])
        """
        provider = provider or self.roots_provider
        self._roots = list(provider()) if provider is not None else []
        return list(self._roots)

    def refresh_roots(self) -> list[models.Root]:
        """Read the roots provider again and tell the server the list changed."""
        roots = self.read_roots()
        self.roots_changed()
        return roots

    def roots_changed(self) -> None:
        """Tell the server the roots changed, without reading them (in 2026-07-28, which has no such notice, nothing).

        Does nothing when not connected: a connection reads the roots as it opens.

        >>> MCPClient().roots_changed()
        """
        era = self._era
        if era is not None and self.initialized:  # read first: a disconnect may clear it meanwhile
            era.roots_changed()

    def _on_log(self, params: dict[str, Any]) -> None:
        try:
            message = models.LoggingMessageNotificationParams.model_validate(params)
        except ValidationError:
            log.debug("ignored malformed notifications/message: %r", params)
            return
        if self.log_level is not None and LOG_LEVELS.index(message.level) < LOG_LEVELS.index(self.log_level):
            return
        self.log_handler(message)

    def __repr__(self) -> str:
        state = "connected" if self.initialized else "not connected"
        return f"<MCPClient {self.info.name} ({state})>"
