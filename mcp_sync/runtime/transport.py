"""The transport interface: :class:`Transport` and the :class:`BaseTransport` every carrier builds on.

A transport moves JSON-RPC messages between two peers. It knows nothing of
MCP: the dispatcher above it correlates requests and responses. Every
transport delivers incoming messages, in order, to the handlers registered
with :meth:`Transport.on_message`, and tells the handlers registered with
:meth:`Transport.on_close` when the connection ends, whichever side ended it.
The carriers themselves live in :mod:`mcp_sync.transports`.

>>> from mcp_sync.types import JSONRPCNotification
>>> from mcp_sync.transports.memory import InMemoryTransport
>>> left, right = InMemoryTransport.pair()
>>> got = []
>>> unsubscribe = right.on_message(got.append)
>>> left.send(JSONRPCNotification(method="notifications/initialized"))
>>> left.close()
>>> right.wait_closed(1.0)
True
>>> got[0].method
'notifications/initialized'
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from ..protocol.errors import MCP_CODES, MCPTransportError
from ..protocol.jsonrpc import InvalidMessage
from ..protocol.types import JSONRPCMessage, JSONRPCRequest

if TYPE_CHECKING:
    from .request_context import RequestContext

__all__ = [
    "BaseTransport",
    "CloseHandler",
    "MessageHandler",
    "Route",
    "Transport",
]

log = logging.getLogger(__name__)

_CLOSER_EXIT_TIMEOUT = 1.0
"""How long close() waits for a transport's own thread that released it to end (seconds)."""

MessageHandler = Callable[[JSONRPCMessage | InvalidMessage], None]
"""Receives each incoming message, or the :class:`InvalidMessage` that stands for bad input."""

CloseHandler = Callable[[BaseException | None], None]
"""Called once when the transport closes, with the error that closed it, if any."""

ReadingWait = Callable[[concurrent.futures.Future[Any], float | None, Callable[[], bool]], bool]
"""``(future, timeout, keep) -> done``: see :attr:`Transport.wait_reading`."""
Exchange = Callable[[JSONRPCRequest, float | None], None]
"""``(request, timeout) -> None``: see :attr:`Transport.exchange`."""


class Route(NamedTuple):
    """What a message being sent belongs to, said by whoever sends it (no thread or ambient value decides).

    ``request`` is the incoming request whose handler sends the message (its
    progress, logs, questions to the client, and its response); ``once``
    names one server-wide notification in every process serving the same
    clients, so that a stream they share keeps it once. The layers above the
    dispatcher pass a route along; a carrier is given its two parts
    (:meth:`Transport.send_routed`).

    >>> Route().request is None and Route().once is None
    True

    (A named tuple: made for every response a handler sends, it costs the least to make.)
    """

    request: RequestContext | None = None
    once: str | None = None


@runtime_checkable
class Transport(Protocol):
    """What the dispatcher needs from a connection."""

    @property
    def closed(self) -> bool:
        """Whether the transport is closed."""

    def send(self, message: JSONRPCMessage) -> None:
        """Send one message; raises ``MCPTransportError(TRANSPORT_CLOSED)`` after close."""

    def send_routed(self, message: JSONRPCMessage, request: RequestContext | None, once: str | None = None) -> None:
        """Send one message that belongs to ``request`` (the incoming request whose handler sends it), or that is the
        server-wide notification ``once`` names (see :class:`Route`). A carrier that keeps each request's messages
        apart (Streamable HTTP, where each POST has its own stream) goes by them; the others send it as :meth:`send`."""

    def on_message(self, handler: MessageHandler) -> Callable[[], None]:
        """Register a handler for incoming messages; returns a callable that unregisters it."""

    def on_close(self, handler: CloseHandler) -> Callable[[], None]:
        """Register a handler for the end of the connection; returns an unregister callable."""

    def close(self) -> None:
        """Close the connection. Idempotent."""

    # What a carrier can do with its reading thread and with batches: BaseTransport gives the
    # defaults (it cannot; answers one by one), a transport of one's own defines them too.

    @property
    def handoff_reading(self) -> Callable[[], None] | None:
        """How a reader thread hands reading off so that it can run a handler itself; ``None``: it cannot.

        With a callable, the dispatcher runs a request's handler on the
        thread that delivered the request, after calling it (stdio lets
        another thread take over reading; a session serving one HTTP request
        has nothing to hand off). Without one, handlers run on the
        dispatcher's pool, so that the reader thread is never blocked.
        """

    @property
    def pass_reading(self) -> Callable[[threading.Thread], None] | None:
        """How a reader thread lends reading to the caller whose response it delivers (stdio); ``None``: it cannot."""

    @property
    def wait_reading(self) -> ReadingWait | None:
        """How a caller waits for its response, reading it itself when reading was lent to it; ``None``: on the future.

        ``(future, timeout, keep) -> done``: waits up to ``timeout`` seconds
        (``None``: no limit) for ``future``; afterwards ``keep()`` says whether
        this caller keeps reading lent to it (no other call waits).
        """

    @property
    def exchange(self) -> Exchange | None:
        """How a caller that waits for a request's answer at once can send it and read the answer itself.

        ``(request, timeout) -> None``: sends ``request`` and returns once its
        answer was delivered, once ``timeout`` seconds passed (``None``: no
        limit), or once the rest of the answer was left to a thread of the
        transport's; the caller then waits on its future as after
        :meth:`send`. A carrier whose each request has its own answer to read
        (Streamable HTTP) saves the hand-over of that answer between two
        threads. ``None``: the caller sends with :meth:`send`.
        """

    def send_batch(self, messages: Sequence[JSONRPCMessage]) -> None:
        """Send the answers to a JSON-RPC batch together (one JSON array where the carrier frames one)."""

    @property
    def handshake_only(self) -> bool:
        """Whether the transport only speaks the handshake eras of MCP (the 2024-11-05 HTTP+SSE transport).

        A client on such a transport negotiates with ``initialize`` and never
        tries the stateless 2026-07-28 revision.
        """


class BaseTransport(ABC):
    """Handler bookkeeping and close semantics shared by the transports.

    Subclasses implement :meth:`_write` and :meth:`_shutdown`, call
    :meth:`_deliver` for each incoming message and :meth:`_closed_by_peer`
    when the peer goes away; those whose release waits for threads of their
    own say which with :meth:`_owns`.
    """

    handoff_reading: Callable[[], None] | None = None
    """See :attr:`Transport.handoff_reading`; ``None``: handlers run on the dispatcher's pool."""
    pass_reading: Callable[[threading.Thread], None] | None = None
    """See :attr:`Transport.pass_reading`; ``None``: reading is never lent."""
    wait_reading: ReadingWait | None = None
    """See :attr:`Transport.wait_reading`; ``None``: a caller waits on its response's future."""
    exchange: Exchange | None = None
    """See :attr:`Transport.exchange`; ``None``: a caller sends with :meth:`send`."""
    handshake_only: bool = False
    """See :attr:`Transport.handshake_only`."""
    network_transport: str | None = None
    """OpenTelemetry's ``network.transport`` of the connection (``"tcp"``, ``"pipe"``), for spans; ``None``: none."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._message_handlers: tuple[MessageHandler, ...] = ()
        self._close_handlers: tuple[CloseHandler, ...] = ()
        self._new_session_handlers: tuple[Callable[[], None], ...] = ()
        self._closed = threading.Event()
        self._released = threading.Event()  # set once _shutdown() has returned
        self._closer: threading.Thread | None = None  # the thread that closed the transport, and releases it
        self.close_reason: BaseException | None = None

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the transport is closed; ``False`` if ``timeout`` passed first."""
        return self._closed.wait(timeout)

    def send(self, message: JSONRPCMessage) -> None:
        if self._closed.is_set():  # (as _ensure_open does, without the call: this is every message's way)
            raise MCPTransportError(MCP_CODES.TRANSPORT_CLOSED, "cannot send: the transport is closed")
        self._write(message)

    def _ensure_open(self) -> None:
        """Refuse to send once closed: ``MCPTransportError(TRANSPORT_CLOSED)``."""
        if self._closed.is_set():
            raise MCPTransportError(MCP_CODES.TRANSPORT_CLOSED, "cannot send: the transport is closed")

    def send_routed(self, message: JSONRPCMessage, request: RequestContext | None, once: str | None = None) -> None:
        """Send ``message``, which belongs to ``request`` or is the notification ``once`` names; a carrier that keeps
        no request's messages apart (the default) sends it as :meth:`send` does.

        >>> from mcp_sync.types import JSONRPCNotification
        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> left, right = InMemoryTransport.pair()
        >>> got = []
        >>> unsubscribe = right.on_message(got.append)
        >>> left.send_routed(JSONRPCNotification(method="notifications/a"), None, once="k1")
        >>> left.close()
        >>> right.wait_closed(1.0), [message.method for message in got]
        (True, ['notifications/a'])
        """
        if self._closed.is_set():  # (as send does, without the call: this is every response's way)
            raise MCPTransportError(MCP_CODES.TRANSPORT_CLOSED, "cannot send: the transport is closed")
        self._write(message)

    def send_batch(self, messages: Sequence[JSONRPCMessage]) -> None:
        """Send the answers to a JSON-RPC batch together, as one JSON array where the carrier frames one.

        Carriers that frame no array (the default, as here) send them one by one.

        >>> from mcp_sync.types import JSONRPCNotification
        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> left, right = InMemoryTransport.pair()
        >>> got = []
        >>> unsubscribe = right.on_message(got.append)
        >>> left.send_batch([JSONRPCNotification(method="notifications/a"), JSONRPCNotification(method="b")])
        >>> left.close()
        >>> right.wait_closed(1.0), [message.method for message in got]
        (True, ['notifications/a', 'b'])
        """
        self._ensure_open()
        self._write_batch(messages)

    def _write_batch(self, messages: Sequence[JSONRPCMessage]) -> None:
        for message in messages:
            self._write(message)

    def on_message(self, handler: MessageHandler) -> Callable[[], None]:
        with self._lock:
            self._message_handlers = (*self._message_handlers, handler)
        self._handlers_changed()
        return lambda: self._remove_message_handler(handler)

    def on_close(self, handler: CloseHandler) -> Callable[[], None]:
        with self._lock:
            self._close_handlers = (*self._close_handlers, handler)
        return lambda: self._remove_close_handler(handler)

    def on_new_session(self, handler: Callable[[], None]) -> None:
        """Call ``handler`` whenever this transport starts a new session of its own accord.

        A server that forgot the session (it restarted, or ended an idle
        one) answers 404, and a transport that can (Streamable HTTP) starts
        a new session and sends the request again. What the old session held
        at the server (resource subscriptions, the log level) went with it:
        the client asks for it again. ``handler`` runs on the thread that
        started the session, so it must not wait for the connection.
        """
        with self._lock:
            self._new_session_handlers = (*self._new_session_handlers, handler)

    def _started_new_session(self) -> None:
        """For subclasses: a new session replaced one the server forgot (see :meth:`on_new_session`)."""
        for handler in self._new_session_handlers:
            try:
                handler()
            except Exception:
                log.exception("new-session handler failed")

    def close(self) -> None:
        """Close the connection and release its resources. Idempotent.

        When the peer's going away already started the release on another
        thread (a reader that met the end of input, say), this waits for that
        release to finish, so that the process, threads and sockets of the
        connection are gone when it returns, whichever side ended it. Called
        on a thread that the release itself waits for, it returns at once.
        """
        if self._mark_closed(None):
            self._release_resources()
            return
        closer, current = self._closer, threading.current_thread()
        if closer is current or self._owns(current):
            return
        self._released.wait()
        if closer is not None and self._owns(closer):
            closer.join(_CLOSER_EXIT_TIMEOUT)  # it returns from the release: let it end

    def _remove_message_handler(self, handler: MessageHandler) -> None:
        with self._lock:
            self._message_handlers = tuple(h for h in self._message_handlers if h is not handler)

    def _remove_close_handler(self, handler: CloseHandler) -> None:
        with self._lock:
            self._close_handlers = tuple(h for h in self._close_handlers if h is not handler)

    def _deliver(self, message: JSONRPCMessage | InvalidMessage) -> None:
        for handler in self._message_handlers:
            try:
                handler(message)
            except Exception:
                log.exception("message handler failed")

    def _closed_by_peer(self, reason: BaseException | None) -> None:
        """The other side went away: close, keeping ``reason`` for whoever asks."""
        if self._mark_closed(reason):
            self._release_resources()

    def _release_resources(self) -> None:
        try:
            self._shutdown()
        finally:
            self._released.set()

    def _owns(self, thread: threading.Thread) -> bool:
        """Whether ``thread`` is one of the transport's own, which its release waits for (default: none)."""
        return False

    def _mark_closed(self, reason: BaseException | None) -> bool:
        """Mark the transport closed and run the close handlers; ``False`` if it already was."""
        with self._lock:
            if self._closed.is_set():
                return False
            self.close_reason = reason
            self._closer = threading.current_thread()
            self._closed.set()
            handlers = self._close_handlers
        for handler in handlers:
            try:
                handler(reason)
            except Exception:
                log.exception("close handler failed")
        return True

    @abstractmethod
    def _handlers_changed(self) -> None:
        """A message handler was registered: start reading if not yet done."""

    @abstractmethod
    def _write(self, message: JSONRPCMessage) -> None:
        """Put ``message`` on the wire."""

    @abstractmethod
    def _shutdown(self) -> None:
        """Release the connection's resources; called once, after the close handlers."""
