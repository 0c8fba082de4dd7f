"""Which era a client connection speaks, decided once per connection, and what each era does.

MCP has two eras. The handshake era (revisions 2024-11-05 to 2025-11-25)
opens with ``initialize``, and the server sends requests of its own. The
stateless era (2026-07-28) has no handshake: the client asks
``server/discover``, every request carries its own ``_meta``, and the server
asks for input through interim results. :class:`Negotiation` finds out,
when a connection opens, which one the server speaks, and settles on
the client a :class:`HandshakeEra` or a :class:`StatelessEra`; the client's
methods hand each operation whose wire form differs between the eras to
it, without asking which era it is.

>>> from mcp_sync import MCPClient, MCPServer, InMemoryTransport
>>> server = MCPServer("demo")
>>> client_end, server_end = InMemoryTransport.pair()
>>> _ = server.start(server_end)
>>> with MCPClient(era="handshake") as client:
...     _ = client.connect(client_end)
...     client.negotiated_era
'handshake'
>>> server.stop()
>>> resolve_era("stateless")
'stateless'
"""

from __future__ import annotations

import abc
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import ValidationError

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError, MCPProtocolError, MCPTransportError
from ..protocol.stateless import SERVER_INFO, STATELESS_ERROR_CODES
from ..protocol.types import (
    ClientCapabilities,
    DiscoverResult,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    WireModel,
)
from ..protocol.versions import STATELESS_REVISIONS
from ..runtime.dispatcher import USE_DEFAULT, JsonRpcDispatcher, ProgressCallback, Timeout
from ..runtime.request_context import RequestContext
from .rounds import exchange, validated
from .subscriptions import NotificationCallback, Subscription

if TYPE_CHECKING:
    from ..protocol.types import SetLevelRequestParams
    from .core import MCPClient
    from .providers import MissingProvider, ProviderKind

__all__ = [
    "ClientEra",
    "EraAwareTransport",
    "EraChoice",
    "EraName",
    "HandshakeEra",
    "Negotiation",
    "StatelessEra",
    "resolve_era",
]

log = logging.getLogger(__name__)

EraName = Literal["handshake", "stateless"]
"""The two eras: the ``initialize`` handshake (2024-11-05 to 2025-11-25), or stateless requests (2026-07-28)."""
EraChoice = Literal["auto", "handshake", "stateless"]
"""What ``MCPClient(era=...)`` takes: probe and decide (``"auto"``), or one era."""
_ERA_CHOICES: tuple[EraChoice, ...] = ("auto", "handshake", "stateless")

_R = TypeVar("_R", bound=WireModel)

_HANDSHAKE_REFUSALS: dict[ProviderKind, str] = {
    "sampling": "this client does not support sampling",
    "roots": "this client does not expose roots",
    "elicitation": "this client does not support elicitation",
}


def resolve_era(era: str) -> EraChoice:
    """``era``, checked: a value other than ``"auto"``, ``"handshake"`` or ``"stateless"`` raises ``ValueError``."""
    for choice in _ERA_CHOICES:
        if era == choice:
            return choice
    raise ValueError(f"era must be 'auto', 'handshake' or 'stateless', not {era!r}")


# ------------------------------------------------------------------ eras


class ClientEra(abc.ABC):
    """The era of one open connection: the operations whose wire form differs between the eras.

    Made once per connection, when negotiation ends, and dropped with the
    connection. It belongs to its client: it reads the client's providers,
    cache and settings, and keeps the client's routing tables up to date.
    """

    name: ClassVar[EraName]
    """``"handshake"`` or ``"stateless"``."""

    initialize_result: InitializeResult | None = None
    """The server's answer to ``initialize`` (handshake era only)."""
    discover_result: DiscoverResult | None = None
    """The server's answer to ``server/discover`` (stateless era only)."""
    stateless_revision: str | None = None
    """The stateless revision spoken (``None`` in the handshake era)."""

    def __init__(self, client: MCPClient, dispatcher: JsonRpcDispatcher, peer: InitializeResult) -> None:
        self.client = client
        self.dispatcher = dispatcher
        self.peer = peer
        """What the server said of itself: its ``initialize`` result, or one made from its discovery."""

    def call(
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
        """Ask ``method`` and read its result as ``result_type`` (``fresh``: never from a cache)."""
        raw = self.request(method, params, timeout=timeout, cancel=cancel, on_progress=on_progress, fresh=fresh)
        return validated(result_type, raw, method)

    @abc.abstractmethod
    def request(
        self,
        method: str,
        params: WireModel | dict[str, Any] | None,
        *,
        timeout: Timeout,
        cancel: threading.Event | None,
        on_progress: ProgressCallback | None,
        fresh: bool,
    ) -> dict[str, Any]:
        """The raw result of ``method``, as this era obtains it."""

    @abc.abstractmethod
    def ping(self, timeout: Timeout, cancel: threading.Event | None) -> None:
        """Check that the server answers."""

    @abc.abstractmethod
    def subscribe(self, uri: str, timeout: Timeout, cancel: threading.Event | None) -> Subscription | None:
        """Ask for the changes of ``uri``; return the stream this replaces, for the caller to close."""

    @abc.abstractmethod
    def unsubscribe(self, uri: str, timeout: Timeout, cancel: threading.Event | None) -> Subscription | None:
        """Stop asking for the changes of ``uri``; return the stream that carried them, for the caller to close."""

    @abc.abstractmethod
    def set_log_level(self, params: SetLevelRequestParams, timeout: Timeout, cancel: threading.Event | None) -> None:
        """Ask for log messages of ``params.level`` and above."""

    @abc.abstractmethod
    def roots_changed(self) -> None:
        """The client's roots were read again: tell the server, if this era has a way to."""

    @abc.abstractmethod
    def listen(
        self,
        *,
        tools: bool,
        prompts: bool,
        resources: bool,
        resource_uris: Sequence[str],
        on_notification: NotificationCallback | None,
        timeout: Timeout,
        cancel: threading.Event | None,
    ) -> Subscription:
        """Open a ``subscriptions/listen`` stream, acknowledged by the server."""


class HandshakeEra(ClientEra):
    """A connection opened with ``initialize`` (2024-11-05 to 2025-11-25): plain requests, and the server asks too."""

    name = "handshake"

    def __init__(self, client: MCPClient, dispatcher: JsonRpcDispatcher, peer: InitializeResult) -> None:
        super().__init__(client, dispatcher, peer)
        self.initialize_result = peer

    @staticmethod
    def missing_provider(kind: ProviderKind) -> MCPError:
        """The answer to a request of the server for a provider the client lacks: as for an unknown method."""
        return MCPError(MCP_CODES.METHOD_NOT_FOUND, _HANDSHAKE_REFUSALS[kind])

    @staticmethod
    def answer_questions(client: MCPClient, dispatcher: JsonRpcDispatcher) -> None:
        """Have ``client``'s providers answer the server's own requests (sampling, roots, elicitation).

        Registered on every new connection before its era is known: a
        handshake-era server may ask as soon as it is initialized.
        """
        from .providers import QUESTIONS  # with the models of the questions: loaded when a client first connects

        for method, (_, params_model) in QUESTIONS.items():
            dispatcher.register_handler(method, functools.partial(_answer_question, client, method), params_model)

    def request(
        self,
        method: str,
        params: WireModel | dict[str, Any] | None,
        *,
        timeout: Timeout,
        cancel: threading.Event | None,
        on_progress: ProgressCallback | None,
        fresh: bool,
    ) -> dict[str, Any]:
        """Sent as it is (nothing is cached in this era, so ``fresh`` changes nothing)."""
        return self.dispatcher.request(method, params, timeout=timeout, cancel=cancel, on_progress=on_progress)

    def ping(self, timeout: Timeout, cancel: threading.Event | None) -> None:
        """``ping``."""
        self.call("ping", None, EmptyResult, timeout=timeout, cancel=cancel)

    def subscribe(self, uri: str, timeout: Timeout, cancel: threading.Event | None) -> Subscription | None:
        """``resources/subscribe``: the updates come as plain notifications, so no stream is replaced."""
        params = models.SubscribeRequestParams(uri=uri)
        self.call("resources/subscribe", params, EmptyResult, timeout=timeout, cancel=cancel)
        return None

    def unsubscribe(self, uri: str, timeout: Timeout, cancel: threading.Event | None) -> Subscription | None:
        """``resources/unsubscribe``."""
        params = models.UnsubscribeRequestParams(uri=uri)
        self.call("resources/unsubscribe", params, EmptyResult, timeout=timeout, cancel=cancel)
        return None

    def set_log_level(self, params: SetLevelRequestParams, timeout: Timeout, cancel: threading.Event | None) -> None:
        """``logging/setLevel``."""
        self.call("logging/setLevel", params, EmptyResult, timeout=timeout, cancel=cancel)

    def roots_changed(self) -> None:
        """``notifications/roots/list_changed``."""
        self.dispatcher.notify("notifications/roots/list_changed")

    def listen(
        self,
        *,
        tools: bool,
        prompts: bool,
        resources: bool,
        resource_uris: Sequence[str],
        on_notification: NotificationCallback | None,
        timeout: Timeout,
        cancel: threading.Event | None,
    ) -> Subscription:
        """Refused: this era has no such stream."""
        raise MCPError(
            MCP_CODES.METHOD_NOT_FOUND,
            f"listen() needs a server speaking 2026-07-28; this one speaks {self.peer.protocol_version}, which "
            "sends list changes unasked and resource updates after subscribe_resource()",
        )


def _answer_question(client: MCPClient, method: str, params: Any, ctx: RequestContext) -> WireModel:
    from .providers import responder

    return responder(client, method, HandshakeEra.missing_provider)(params)


class StatelessEra(ClientEra):
    """A connection that adopted a stateless revision after ``server/discover``: see :func:`~.rounds.exchange`."""

    name = "stateless"

    def __init__(
        self,
        client: MCPClient,
        dispatcher: JsonRpcDispatcher,
        peer: InitializeResult,
        revision: str,
        discovery: DiscoverResult,
    ) -> None:
        super().__init__(client, dispatcher, peer)
        self.revision = revision
        self.stateless_revision = revision
        self.discover_result = discovery
        self._streams: dict[str, Subscription] = {}
        """The listen stream of each subscribed resource (guarded by ``_streams_lock``)."""
        self._streams_lock = threading.Lock()

    @staticmethod
    def missing_provider(method: str, key: str) -> MissingProvider:
        """The error for input request ``key`` of ``method`` when its provider is not set."""

        def refuse(kind: ProviderKind) -> MCPError:
            return MCPError(
                MCP_CODES.MISSING_CAPABILITY,
                f"the server asked, while answering {method}, for {kind} (input {key!r}), "
                f"but this client has no {kind} provider",
                context={"method": method, "input": key},
            )

        return refuse

    def request(
        self,
        method: str,
        params: WireModel | dict[str, Any] | None,
        *,
        timeout: Timeout,
        cancel: threading.Event | None,
        on_progress: ProgressCallback | None,
        fresh: bool,
    ) -> dict[str, Any]:
        """From the cache, or sent with ``_meta`` and driven through its input rounds."""
        wire = params.to_wire() if isinstance(params, WireModel) else params or {}
        return exchange(self, method, wire, timeout=timeout, cancel=cancel, on_progress=on_progress, fresh=fresh)

    def ping(self, timeout: Timeout, cancel: threading.Event | None) -> None:
        """``server/discover`` (2026-07-28 has no ``ping``), never answered from the cache."""
        self.call("server/discover", None, DiscoverResult, timeout=timeout, cancel=cancel, fresh=True)

    def subscribe(self, uri: str, timeout: Timeout, cancel: threading.Event | None) -> Subscription | None:
        """A listen stream for ``uri`` alone (2026-07-28 has no ``resources/subscribe``)."""
        listening = self.listen(
            tools=False,
            prompts=False,
            resources=False,
            resource_uris=[uri],
            on_notification=None,
            timeout=timeout,
            cancel=cancel,
        )
        with self._streams_lock:
            stale = self._streams.pop(uri, None)
            self._streams[uri] = listening
        return stale

    def unsubscribe(self, uri: str, timeout: Timeout, cancel: threading.Event | None) -> Subscription | None:
        """Nothing to send: closing the stream is enough."""
        with self._streams_lock:
            return self._streams.pop(uri, None)

    def set_log_level(self, params: SetLevelRequestParams, timeout: Timeout, cancel: threading.Event | None) -> None:
        """Nothing to send: 2026-07-28 has no ``logging/setLevel``; the level goes in each later request's ``_meta``."""
        self.client.request_meta.log_level = params.level

    def roots_changed(self) -> None:
        """Nothing to send: 2026-07-28 has no such notification; its servers ask for the roots on each call."""

    def listen(
        self,
        *,
        tools: bool,
        prompts: bool,
        resources: bool,
        resource_uris: Sequence[str],
        on_notification: NotificationCallback | None,
        timeout: Timeout,
        cancel: threading.Event | None,
    ) -> Subscription:
        """``subscriptions/listen``, tracked by the client so that the stream's notifications reach it."""
        client = self.client
        wanted = models.SubscriptionFilter(
            tools_list_changed=tools or None,
            prompts_list_changed=prompts or None,
            resources_list_changed=resources or None,
            resource_subscriptions=list(resource_uris) or None,
        )
        params = models.SubscriptionsListenRequestParams(notifications=wanted).to_wire()
        params["_meta"] = client.request_meta.copy(self.revision)
        limit = client.timeout if timeout is USE_DEFAULT else timeout
        return client.listens.open(self.dispatcher, params, wanted, on_notification, limit, cancel)


# ------------------------------------------------------------ negotiation


@runtime_checkable
class EraAwareTransport(Protocol):
    """A transport whose wire form differs between the eras (Streamable HTTP): the negotiation tells it which."""

    def set_stateless_revision(self, revision: str | None) -> None:
        """Send what follows at the 2026-07-28 ``revision``; ``None``: the handshake era's way."""


class Negotiation:
    """How a new connection finds its era; :meth:`run` settles it on the client and returns it.

    ``"handshake"`` (or a transport that can only carry the handshake) runs
    ``initialize``. ``"auto"`` does too when a handshake revision was asked
    for by name, or when the client accepts no stateless revision; otherwise
    the client probes with ``server/discover``, and what the server answers
    decides (see :meth:`_probe`). ``"stateless"`` probes and accepts no
    handshake as a fallback.
    """

    def __init__(
        self,
        client: MCPClient,
        dispatcher: JsonRpcDispatcher,
        timeout: Timeout,
        settle: Callable[[ClientEra], None],
    ) -> None:
        self.client = client
        self.dispatcher = dispatcher
        self.timeout = timeout
        self.settle = settle
        """Makes the era found the client's connection's: called as the negotiation ends, before it returns."""

    def run(self, handshake_only: bool) -> ClientEra:
        """Negotiate; ``handshake_only`` says the transport cannot carry stateless requests."""
        client = self.client
        handshake = client.era == "handshake" or handshake_only
        named = client.handshake_named or not set(STATELESS_REVISIONS) & set(client.accepted_versions)
        if handshake or (client.era == "auto" and named):
            return self._handshake(client.offered_version)
        return self._probe()

    def _tell_transport(self, revision: str | None) -> None:
        """Tell the transport the era decided (or tried), when how it sends depends on it."""
        transport = self.dispatcher.transport
        if isinstance(transport, EraAwareTransport):
            transport.set_stateless_revision(revision)

    def _handshake(self, offered: str) -> ClientEra:
        self._tell_transport(None)
        era = HandshakeEra(self.client, self.dispatcher, self._initialize(offered))
        # Settled before notifications/initialized: from then on the server may notify or ask, and what
        # that starts (a list refresh in the background, say) must find the connection's era in place.
        self.settle(era)
        self.dispatcher.notify("notifications/initialized")
        return era

    def _initialize(self, offered: str) -> InitializeResult:
        client = self.client
        # With the 2025-11-25 tasks capability: SEP-2663's extension is part of no handshake revision, so a server
        # of that era runs a tool as a task in the core form only (params.task), for a client that declares it.
        capabilities = ClientCapabilities.model_validate({**client.capabilities().to_wire(), "tasks": {}})
        params = InitializeRequestParams(protocol_version=offered, capabilities=capabilities, client_info=client.info)
        raw = self.dispatcher.request("initialize", params, timeout=self.timeout)
        result = validated(InitializeResult, raw, "initialize")
        if result.protocol_version not in client.accepted_versions:
            raise MCPError(
                MCP_CODES.PROTOCOL_VERSION_MISMATCH,
                f"the server answered protocol version {result.protocol_version!r}; "
                f"this client accepts {', '.join(client.accepted_versions)}",
                context={"server_version": result.protocol_version, "accepted": list(client.accepted_versions)},
            )
        return result

    def _probe(self, *, again: bool = True) -> ClientEra:
        """Ask ``server/discover``; speak 2026-07-28 if the server answers it, else (in ``auto``) the handshake.

        Only a recognized 2026-07-28 error (``-32020`` to ``-32022``) shows a
        stateless server; any other error, or silence for ``probe_timeout``
        seconds, shows a handshake-era one. An unsupported-version error that
        lists this client's revision is answered by asking once more (the
        server may refuse a first request on principle); one that lists only
        handshake revisions leads to the handshake at the best of them.
        """
        client = self.client
        limit = client.timeout if self.timeout is USE_DEFAULT else self.timeout
        wait = client.probe_timeout if limit is None else min(limit, client.probe_timeout)
        revision = STATELESS_REVISIONS[-1]
        params = {"_meta": client.request_meta.copy(revision)}
        self._tell_transport(revision)
        try:
            raw = self.dispatcher.request("server/discover", params, timeout=wait)
        except MCPTransportError:
            raise  # an outage says nothing of the server's era
        except MCPError as exc:
            if exc.code == MCP_CODES.UNAUTHORIZED:
                raise  # a sign-in that failed says nothing of the era either, and must not be tried again

            supported = _supported_versions(exc)
            if supported is not None and revision in supported and again:
                return self._probe(again=False)
            handshake = self._handshake_versions(supported)
            stateless = exc.jsonrpc_code in STATELESS_ERROR_CODES and not (supported is not None and handshake)
            if client.era == "stateless" or stateless:
                raise self._refused(exc, supported) from exc
            log.info("the server does not speak %s (%s): using the initialize handshake", revision, exc.message)
            return self._handshake(self._best_offer(handshake))
        return self._adopt(raw, revision)

    def _best_offer(self, handshake: list[str]) -> str:
        """The revision to offer at ``initialize``: the client's own if the server speaks it, else the newest shared."""
        offered = self.client.offered_version
        return offered if offered in handshake else handshake[-1]

    def _handshake_versions(self, offered: list[str] | None) -> list[str]:
        """The handshake revisions this client accepts, of those ``offered`` (``None``: all), oldest first."""
        accepted = self.client.accepted_versions
        return [v for v in accepted if v not in STATELESS_REVISIONS and (offered is None or v in offered)]

    def _refused(self, error: MCPError, supported: list[str] | None) -> MCPError:
        """What a probe refused for good raises: a version mismatch when the server said what it speaks."""
        if supported is None:
            return error
        ours = [*STATELESS_REVISIONS, *(() if self.client.era == "stateless" else self._handshake_versions(None))]
        return MCPError(
            MCP_CODES.PROTOCOL_VERSION_MISMATCH,
            f"the server speaks {', '.join(supported) or 'no revision'}; this client speaks {', '.join(ours)}",
            cause=error,
            context={"supported": supported},
        )

    def _adopt(self, raw: dict[str, Any], revision: str) -> ClientEra:
        """The server answered ``server/discover``: speak ``revision`` unless it lists no revision we share.

        In ``auto``, an answer that is no discovery result (some handshake-era
        servers answer any request) leads to the handshake too.
        """
        client = self.client
        try:
            result = validated(DiscoverResult, raw, "server/discover")
        except MCPProtocolError:
            if client.era == "stateless":
                raise
            return self._handshake(client.offered_version)
        if revision not in result.supported_versions:
            handshake = self._handshake_versions(result.supported_versions)
            if client.era == "stateless" or not handshake:
                raise MCPError(
                    MCP_CODES.PROTOCOL_VERSION_MISMATCH,
                    f"the server speaks {', '.join(result.supported_versions)}; this client needs {revision}",
                    context={"supported": result.supported_versions},
                )
            return self._handshake(self._best_offer(handshake))
        peer = InitializeResult(
            protocol_version=revision,
            capabilities=result.capabilities,
            server_info=_server_info(raw),
            instructions=result.instructions,
        )
        era = StatelessEra(client, self.dispatcher, peer, revision, result)
        self.settle(era)
        if client.cache is not None:
            client.cache.store("server/discover", {}, raw)
        return era


def _supported_versions(error: MCPError) -> list[str] | None:
    """The revisions an unsupported-version error (``-32022``) lists; ``None`` for any other error."""
    data = error.data
    supported = data.get("supported") if isinstance(data, dict) else None
    if error.jsonrpc_code != JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION or not isinstance(supported, list):
        return None
    return [version for version in supported if isinstance(version, str)]


def _server_info(raw: dict[str, Any]) -> Implementation:
    """Who answered ``server/discover``: its result's ``_meta`` says (some servers put it in the result itself)."""
    meta = raw.get("_meta")
    for found in (meta.get(SERVER_INFO) if isinstance(meta, dict) else None, raw.get("serverInfo")):
        try:
            return Implementation.model_validate(found)
        except ValidationError:
            continue
    return Implementation(name="unknown", version="unknown")
