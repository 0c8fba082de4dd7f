"""The JSON-RPC dispatcher: ids, pending calls, handlers, cancellation, progress.

A :class:`JsonRpcDispatcher` sits on one transport. Outgoing requests get a
fresh id and a :class:`concurrent.futures.Future` that the response
completes; the caller blocks on it with a timeout. Incoming requests run on a
bounded thread pool, or on the thread that read them when the transport can
hand its reading to another thread first (stdio), so a handler may always
itself call the peer and wait. Notifications go to listeners in arrival
order, on the reader thread: listeners must be quick and must not wait for
the peer. (On stdio a caller waiting for its response may be the one reading,
and then it is the thread that delivers what arrives meanwhile.) What a
handler gets with its params is a :class:`~mcp_sync.runtime.request_context.RequestContext`.

>>> from mcp_sync.transports.memory import InMemoryTransport
>>> a, b = InMemoryTransport.pair()
>>> server = JsonRpcDispatcher(b, side="server")
>>> server.register_handler("echo", lambda params, ctx: params)
>>> client = JsonRpcDispatcher(a, side="client")
>>> server.start(); client.start()
>>> client.request("echo", {"said": "hi"}, timeout=5)
{'said': 'hi'}
>>> client.close(); server.close()
"""

from __future__ import annotations

import concurrent.futures
import enum
import functools
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from ..protocol.batch import batch_elements
from ..protocol.errors import (
    MCP_CODES,
    JsonRpcCode,
    MCPError,
    MCPProtocolError,
    MCPTransportError,
    format_validation_error,
    mcp_code_for,
)
from ..protocol.jsonrpc import InvalidMessage, envelope, error_response
from ..protocol.types import (
    CancelledNotificationParams,
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    ProgressNotificationParams,
    ProgressToken,
    RequestId,
    WireModel,
)
from .cancellation import CancelEvent
from .events import (
    CONNECTION_CLOSED,
    CONNECTION_OPENED,
    NOTIFICATION_EMITTED,
    REQUEST_COMPLETED,
    REQUEST_RECEIVED,
    EventBus,
)
from .request_context import BatchReplies, RequestContext, current_request, serving
from .telemetry import Telemetry, default_telemetry
from .tracing import activate, active_tracer, deactivate, end_span, inject, result_error, start_span
from .transport import Exchange, Route, Transport
from .workers import ElasticPool

__all__ = [
    "DEFAULT_TIMEOUT",
    "USE_DEFAULT",
    "Clock",
    "Handler",
    "JsonRpcDispatcher",
    "PendingRequest",
    "ProgressCallback",
    "SystemClock",
    "Timeout",
    "UseDefault",
]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
"""Seconds a request waits for its response unless told otherwise."""


class UseDefault(enum.Enum):
    """The type of :data:`USE_DEFAULT`: a ``timeout=`` left to the dispatcher's (or client's) default."""

    USE_DEFAULT = "USE_DEFAULT"


USE_DEFAULT = UseDefault.USE_DEFAULT
"""``timeout=USE_DEFAULT``: wait as long as the default says (``None`` means no limit, so it cannot say this)."""

Timeout = float | None | UseDefault
"""What a ``timeout=`` parameter takes: seconds, ``None`` for no limit, or :data:`USE_DEFAULT`."""

_CANCEL_POLL = 0.02
"""How often a waiting call looks at the caller's cancel event, in seconds (a :class:`CancelEvent` tells it instead)."""

Params = WireModel | Mapping[str, Any] | None
ProgressCallback = Callable[[ProgressNotificationParams], None]
Handler = Callable[[Any, "RequestContext"], Any]
"""A request handler: ``(params, ctx) -> result`` (a model, a dict or ``None``)."""
NotificationListener = Callable[[dict[str, Any]], None]


class Clock(Protocol):
    """Time as the dispatcher sees it; tests inject a fake one."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, never going back."""

    def wait(self, future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds for ``future``; ``True`` if it is done."""


class SystemClock:
    """The real clock: :func:`time.monotonic` and blocking waits."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
        try:
            future.exception(timeout)
        except concurrent.futures.TimeoutError:
            return False
        return True


def _to_params(params: Params) -> dict[str, Any] | None:
    if params is None:
        return None
    if isinstance(params, WireModel):
        return params.to_wire()
    return dict(params)


def _to_result(result: Any) -> dict[str, Any]:
    if result is None:
        return {}
    if isinstance(result, WireModel):
        return result.to_wire()
    return dict(result)


def _shutting_down(request_id: RequestId) -> JSONRPCMessage:
    return error_response(request_id, JsonRpcCode.INTERNAL_ERROR, "The server is shutting down")


def error_from_wire(error: Error, method: str) -> MCPError:
    """The exception for an error response to a ``method`` request."""
    code = mcp_code_for(error.code)
    kind = MCPProtocolError if error.code in (JsonRpcCode.PARSE_ERROR, JsonRpcCode.INVALID_REQUEST) else MCPError
    return kind(
        code,
        error.message,
        context={"method": method},
        data=error.data,
        jsonrpc_code=error.code,
    )


class PendingRequest:
    """An outgoing request waiting for its response.

    A plain class with slots, not a dataclass: one is made for each request
    sent, and a dataclass's generated methods are compiled at import, which
    every process's start would pay. Compared by identity.

    >>> PendingRequest(7, "tools/call", 0.0)
    PendingRequest(id=7, method='tools/call', done=False)
    """

    __slots__ = ("__weakref__", "future", "id", "method", "on_progress", "route", "span", "started", "waiter")

    def __init__(
        self,
        id: RequestId,
        method: str,
        started: float,
        future: concurrent.futures.Future[dict[str, Any]] | None = None,
        on_progress: ProgressCallback | None = None,
        span: Any = None,
        waiter: threading.Thread | None = None,
        route: Route | None = None,
    ) -> None:
        self.id = id
        self.method = method
        self.started = started
        self.future: concurrent.futures.Future[dict[str, Any]] = (
            concurrent.futures.Future() if future is None else future
        )
        self.on_progress = on_progress
        self.span = span
        """Its OpenTelemetry span, while a tracer provider is configured."""
        self.waiter = waiter
        """The thread waiting for it that may read the response itself (see ``StdioTransport.wait_reading``)."""
        self.route = route
        """What it belongs to, as it was sent: its ``notifications/cancelled`` goes the same way."""

    def __repr__(self) -> str:
        return f"PendingRequest(id={self.id!r}, method={self.method!r}, done={self.future.done()})"


_DISPATCHER_IDS = itertools.count(1)


class _HandlerEntry:
    """A method's handler, and the model its params are validated into first (``None``: passed as they came)."""

    # Not a dataclass: one compiles its methods when the module is imported
    # (six functions for a frozen one), which every connection's start would pay.
    __slots__ = ("fn", "params_model")

    def __init__(self, fn: Handler, params_model: type[BaseModel] | None) -> None:
        self.fn = fn
        self.params_model = params_model


class JsonRpcDispatcher:
    """JSON-RPC 2.0 over one transport, for one side of an MCP connection.

    ``side`` ("client" or "server") labels events; ``id_generator`` makes
    request ids (default: 1, 2, 3, ...); ``clock`` measures time and waits
    (default: :class:`SystemClock`); ``max_workers`` bounds the handler pool;
    ``timeout`` is the default for :meth:`request`.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        side: str = "client",
        id_generator: Callable[[], RequestId] | None = None,
        clock: Clock | None = None,
        max_workers: int = 16,
        timeout: float | None = DEFAULT_TIMEOUT,
        events: EventBus | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.transport = transport
        self.side = side
        # Unique in this process, which is all events need; a server starts one per stateless request.
        self.id = f"{os.getpid():x}-{next(_DISPATCHER_IDS):x}"
        self.timeout = timeout
        self.events = events if events is not None else EventBus()
        self._telemetry = telemetry
        counter: Iterator[int] = itertools.count(1)
        self._next_id: Callable[[], RequestId] = id_generator or counter.__next__
        self._clock: Clock = clock or SystemClock()
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._draining = False
        self._awaiting = 0  # threads in wait_served(): each answer written wakes them, as during drain()
        self._inline = 0
        # Transports whose callers may read their own responses (stdio pipes) say so with these two;
        # not with a clock of the tests' own, which must see every wait.
        self._pass_reading = transport.pass_reading
        self._wait_reading = transport.wait_reading if type(self._clock) is SystemClock else None
        # (Looked up with a default: a transport of one's own, written before Transport.exchange was, lacks it.)
        self._exchange = getattr(transport, "exchange", None) if type(self._clock) is SystemClock else None
        self.accept_batch: Callable[[], bool] | None = None
        """Says whether a JSON-RPC batch received now is served (the server session's revision decides);
        ``None`` or ``False``: it is answered with one ``-32600``, as any array."""
        self._handlers: dict[str, _HandlerEntry] = {}
        self._fallback: _HandlerEntry | None = None
        self._listeners: dict[str, tuple[NotificationListener, ...]] = {}
        self._pending: dict[RequestId, PendingRequest] = {}
        self._progress: dict[ProgressToken, PendingRequest] = {}
        self._inflight: dict[RequestId, list[RequestContext]] = {}
        self._pool: ElasticPool | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self._started = False
        self._closed = False
        self._close_reason: BaseException | None = None

    # ------------------------------------------------------------------ setup

    @property
    def telemetry(self) -> Telemetry:
        """The metrics recorder (the shared default unless one was given)."""
        if self._telemetry is None:
            self._telemetry = default_telemetry()
        return self._telemetry

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self._closed

    def start(self) -> None:
        """Start receiving from the transport."""
        if self._started:
            raise MCPError(MCP_CODES.ALREADY_CONNECTED, "the dispatcher is already started")
        self._started = True
        self._unsubscribe = [
            self.transport.on_close(self._on_transport_closed),
            self.transport.on_message(self._on_message),
        ]
        if self.events.has_listeners(CONNECTION_OPENED):
            from .events import ConnectionOpened  # payloads are loaded when something first listens

            self.events.emit(CONNECTION_OPENED, ConnectionOpened(side=self.side, dispatcher_id=self.id))

    def register_handler(self, method: str, fn: Handler, params_model: type[BaseModel] | None = None) -> None:
        """Handle incoming ``method`` requests with ``fn(params, ctx)``.

        With ``params_model``, params are validated into that model first and
        invalid ones are answered with ``-32602`` naming the failing field.
        """
        self._handlers[method] = _HandlerEntry(fn, params_model)

    def register_fallback(self, fn: Handler) -> None:
        """Handle every method that has no handler of its own with ``fn(params, ctx)`` (``ctx.method`` names it).

        ``fn`` raises ``MCPError`` with ``METHOD_NOT_FOUND`` for the methods it
        does not know. A server connection routes its methods this way, so
        that starting one registers nothing per method.
        """
        self._fallback = _HandlerEntry(fn, None)

    def unregister_handler(self, method: str) -> None:
        """Stop handling ``method`` (later requests get ``-32601``)."""
        self._handlers.pop(method, None)

    def on_notification(self, method: str, listener: NotificationListener) -> Callable[[], None]:
        """Call ``listener(params)`` for each incoming ``method`` notification."""
        with self._lock:
            self._listeners[method] = (*self._listeners.get(method, ()), listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners[method] = tuple(x for x in self._listeners[method] if x is not listener)

        return unsubscribe

    # --------------------------------------------------------------- outgoing

    def notify(self, method: str, params: Params = None, *, route: Route | None = None) -> None:
        """Send a notification (``route``: what it belongs to, see :class:`~mcp_sync.runtime.transport.Route`)."""
        wire = _to_params(params)
        notification = envelope(JSONRPCNotification, {"jsonrpc": "2.0", "method": method, "params": wire})
        self._send(notification, *(route or ()))  # (a route is the pair (request, once))
        self.telemetry.record_notification("sent", method)
        if self.events.has_listeners(NOTIFICATION_EMITTED):
            from .events import NotificationEmitted

            self.events.emit(NOTIFICATION_EMITTED, NotificationEmitted(side=self.side, method=method, params=wire))

    def send_request(
        self,
        method: str,
        params: Params = None,
        *,
        on_progress: ProgressCallback | None = None,
        route: Route | None = None,
    ) -> PendingRequest:
        """Send a request without waiting; see :meth:`wait` and :meth:`cancel` (``route``: as for :meth:`notify`)."""
        return self._start(method, params, on_progress, route)

    def _start(
        self,
        method: str,
        params: Params,
        on_progress: ProgressCallback | None,
        route: Route | None,
        exchange: Exchange | None = None,
        limit: float | None = None,
    ) -> PendingRequest:
        """Register and send a request; by ``exchange``, this thread sends it and may read its answer itself, for up
        to ``limit`` seconds (see :attr:`Transport.exchange <mcp_sync.runtime.transport.Transport.exchange>`)."""
        request_id = self._next_id()
        pending = PendingRequest(request_id, method, self._clock.monotonic(), on_progress=on_progress, route=route)
        wire = _to_params(params)
        if on_progress is not None:
            wire = dict(wire or {})
            wire["_meta"] = {**wire.get("_meta", {}), "progressToken": request_id}
        tracer = active_tracer()
        if tracer is not None:
            wire = self._traced(tracer, pending, wire)
        with self._lock:
            # Checked under the lock that close takes: a call is either refused
            # here or registered in time to be failed by the close.
            if self._closed:
                raise self._closed_error()
            self._pending[request_id] = pending
            if on_progress is not None:
                self._progress[request_id] = pending
        try:
            request = envelope(JSONRPCRequest, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": wire})
            if exchange is None:
                self._send(request, *(route or ()))
            else:
                self._send(request, None, None, exchange, limit)
        except MCPError as exc:
            # The transport may have closed itself while failing, which already
            # failed (and counted) this call: count it once.
            if self._forget(pending):
                self._finish(pending, "error", exc.code)
            raise exc from exc.cause
        except BaseException:
            # Interrupted (a KeyboardInterrupt) while sending, or while reading the answer itself by the exchange:
            # none will be delivered now, so the call is not left waiting for one.
            self._fail(pending, self._cancellation(pending, "interrupted"), "cancelled")
            raise
        return pending

    def _traced(self, tracer: Any, pending: PendingRequest, wire: dict[str, Any] | None) -> dict[str, Any] | None:
        """Start ``pending``'s span and carry its trace context in the request's ``_meta``."""
        params = wire or {}
        pending.span = start_span(
            tracer, server=False, method=pending.method, request_id=pending.id, params=params, transport=self.transport
        )
        meta = params.get("_meta", {})
        if not isinstance(meta, dict):
            return wire  # not ours to repair: the peer will refuse it
        meta = dict(meta)
        inject(pending.span, meta)
        return {**params, "_meta": meta}

    def wait(
        self,
        pending: PendingRequest,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """Block until ``pending`` is answered; return its result.

        Raises ``MCPError(TIMEOUT)`` after ``timeout`` seconds (``None``: wait
        for ever) and ``MCPError(REQUEST_CANCELLED)`` when ``cancel`` is set;
        either way the peer is sent ``notifications/cancelled``.
        """
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        return self._wait(pending, timeout, deadline, cancel)

    def _wait(
        self, pending: PendingRequest, timeout: float | None, deadline: float | None, cancel: threading.Event | None
    ) -> dict[str, Any]:
        """:meth:`wait`, up to ``deadline`` (the time ``timeout`` counted from: it may have begun before)."""
        forget_cancel = None
        failed: list[bool] = []  # [True] once the cancel event's callback claimed the call
        reason = "cancelled by the caller"
        if isinstance(cancel, CancelEvent):
            # One of ours (a handler's or a task's): it calls back when set, so the wait below need not poll it. The
            # callback fails the call at once on the setting thread (a reader delivering the peer's cancellation,
            # say) and sends nothing: this thread, woken by it, tells the peer below. The callback notes its claim
            # of the call before the call's future fails (which wakes this thread), and under the lock that a
            # claim of this thread's (a timeout) takes: whichever way this thread stops waiting, it finds the note.
            def withdraw() -> None:
                self._fail(pending, self._cancellation(pending, reason), "cancelled", failed)

            forget_cancel = cancel.call_when_set(withdraw)
            cancel = None
        # A caller outside any handler may read its response itself; a handler's thread waits.
        read_wait = self._wait_reading if current_request() is None else None
        if read_wait is not None:
            pending.waiter = threading.current_thread()
        try:
            while True:
                remaining = None if deadline is None else max(0.0, deadline - self._clock.monotonic())
                step = remaining
                if cancel is not None:  # a caller's plain Event: looked at every _CANCEL_POLL seconds
                    step = _CANCEL_POLL if remaining is None else min(_CANCEL_POLL, remaining)
                if read_wait is not None:
                    if read_wait(pending.future, step, self._no_call_waits):
                        break
                elif self._clock.wait(pending.future, step):
                    break
                if cancel is not None and cancel.is_set():
                    self.cancel(pending, reason)
                    break
                if deadline is not None and self._clock.monotonic() >= deadline:
                    self._abandon(
                        pending,
                        "timed out",
                        MCPError(
                            MCP_CODES.TIMEOUT,
                            f"{pending.method} timed out after {timeout:g} s",
                            context={"method": pending.method, "timeout": timeout},
                        ),
                        "error",
                    )
                    break
        finally:
            if forget_cancel is not None:
                forget_cancel()
            if failed:
                self._tell_cancelled(pending, reason)
        return pending.future.result()

    def cancel(self, pending: PendingRequest, reason: str = "cancelled") -> None:
        """Give up on ``pending``: tell the peer and fail the call with REQUEST_CANCELLED."""
        self._abandon(pending, reason, self._cancellation(pending, reason), "cancelled")

    @staticmethod
    def _cancellation(pending: PendingRequest, reason: str) -> MCPError:
        return MCPError(
            MCP_CODES.REQUEST_CANCELLED, f"{pending.method} was cancelled: {reason}", context={"method": pending.method}
        )

    def awaits(self, request_id: RequestId) -> bool:
        """Whether a request this side sent as ``request_id`` still waits for its response.

        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> JsonRpcDispatcher(InMemoryTransport.pair()[0]).awaits(1)
        False
        """
        with self._lock:
            return request_id in self._pending

    def progress_callback(self, request_id: RequestId) -> ProgressCallback | None:
        """The ``on_progress`` given for the request this side sent as ``request_id``, while it awaits its answer.

        A layer above passes a callback of its own per call, and so learns
        which of its calls a peer's message relates to (a proxy relaying the
        target's questions does).

        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> JsonRpcDispatcher(InMemoryTransport.pair()[0]).progress_callback(1) is None
        True
        """
        with self._lock:
            pending = self._pending.get(request_id)
        return None if pending is None else pending.on_progress

    def prefix_ids(self, prefix: str) -> None:
        """Send the next requests with ids ``prefix`` + a counter (strings): unique across processes sharing a session.

        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> dispatcher = JsonRpcDispatcher(InMemoryTransport.pair()[0])
        >>> dispatcher.prefix_ids("w1-")
        >>> dispatcher._next_id()
        'w1-1'
        """
        counter = itertools.count(1)
        self._next_id = lambda: f"{prefix}{next(counter)}"

    def request(
        self,
        method: str,
        params: Params = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
        on_progress: ProgressCallback | None = None,
        route: Route | None = None,
    ) -> dict[str, Any]:
        """Send a request and block for its result (a dict).

        ``timeout`` defaults to the dispatcher's; ``cancel`` is an event the
        caller may set from another thread; ``on_progress`` receives the
        peer's progress notifications for this request, on the reader thread;
        ``route`` says what the request belongs to (a handler's question: the
        request it serves).
        """
        if cancel is not None and cancel.is_set():  # withdrawn already: the peer need never hear of it
            raise MCPError(
                MCP_CODES.REQUEST_CANCELLED, f"{method} was cancelled before it was sent", context={"method": method}
            )
        limit = self.timeout if timeout is USE_DEFAULT else timeout
        deadline = None if limit is None else self._clock.monotonic() + limit
        exchange = self._exchange
        if exchange is not None and cancel is None and route is None:
            # This thread waits for the answer now, and nothing but the time can stop it: it may read the answer
            # itself (see Transport.exchange), bounded by the time the call has.
            pending = self._start(method, params, on_progress, None, exchange, limit)
        else:
            pending = self._start(method, params, on_progress, route)
        return self._wait(pending, limit, deadline, cancel)

    def _abandon(self, pending: PendingRequest, reason: str, error: MCPError, status: str) -> None:
        if self._fail(pending, error, status):
            self._tell_cancelled(pending, reason)

    def _fail(self, pending: PendingRequest, error: MCPError, status: str, claimed: list[bool] | None = None) -> bool:
        """End ``pending`` with ``error`` here, sending nothing; whether it was still awaited (then noted in
        ``claimed``, if given, before the call's future fails)."""
        if not self._forget(pending, claimed):
            return False
        self._finish(pending, status, error.code)
        pending.future.set_exception(error)
        return True

    def _tell_cancelled(self, pending: PendingRequest, reason: str) -> None:
        try:
            # On the request's own way (over HTTP: the stream of the call that asked, never the GET stream), so
            # the peer hears of the withdrawal after the question and before the call's answer, in order.
            cancelled = CancelledNotificationParams(request_id=pending.id, reason=reason)
            self.notify("notifications/cancelled", cancelled, route=pending.route)
        except MCPError:
            log.debug("could not send notifications/cancelled for %r", pending.id)

    def _forget(self, pending: PendingRequest, claimed: list[bool] | None = None) -> bool:
        with self._lock:
            self._progress.pop(pending.id, None)
            mine = self._pending.pop(pending.id, None) is not None
            if mine and claimed is not None:
                claimed.append(True)
            return mine

    def _finish(self, pending: PendingRequest, status: str, error_type: str | None = None) -> None:
        """Record the end of an outgoing request (``error_type``: what failed, for its span).

        Called before the request's future completes, so that a caller woken
        by the future finds the measurement already recorded.
        """
        duration_ms = (self._clock.monotonic() - pending.started) * 1000.0
        self.telemetry.record_request("client", pending.method, status, duration_ms)
        if pending.span is not None:
            end_span(pending.span, error_type)

    def _send(
        self,
        message: JSONRPCMessage,
        request: RequestContext | None = None,
        once: str | None = None,
        exchange: Exchange | None = None,
        limit: float | None = None,
    ) -> None:
        """Send ``message``: what belongs to ``request`` (its handler's) by the request's own way back if it came
        with one, else over the transport, told what it belongs to (see :class:`~mcp_sync.runtime.transport.Route`);
        a request of this side's own by ``exchange`` if given (see :meth:`_start`)."""
        try:
            writer = None if request is None else request.writer
            if writer is not None:  # a request that came with a way back of its own
                writer(message)
            elif request is not None or once is not None:
                self.transport.send_routed(message, request, once)
            elif exchange is None:
                self.transport.send(message)
            else:
                exchange(message, limit)  # type: ignore[arg-type]  # (given with the requests _start makes only)
        except MCPError:
            raise
        except Exception as exc:
            raise MCPTransportError(MCP_CODES.TRANSPORT_ERROR, f"could not send: {exc}", cause=exc) from exc

    def _closed_error(self) -> MCPTransportError:
        reason = self._close_reason
        context: dict[str, Any] = dict(reason.context) if isinstance(reason, MCPError) else {}
        detail = f": {reason}" if reason is not None else ""
        return MCPTransportError(
            MCP_CODES.TRANSPORT_CLOSED, f"the connection is closed{detail}", cause=reason, context=context
        )

    # --------------------------------------------------------------- incoming

    def _on_message(self, message: JSONRPCMessage | InvalidMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self._on_request(message)
        elif isinstance(message, JSONRPCNotification):
            self._on_notification(message)
        elif isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)):
            self._on_response(message)
        elif message.batch is not None and self.accept_batch is not None and self.accept_batch():
            self._on_batch(message.batch)
        elif message.reply:
            self._reply(message.response())
        elif not self._fail_pending(message):
            log.debug("dropped invalid message: %s", message.error.message)

    def _on_batch(self, values: tuple[Any, ...]) -> None:
        """Serve each element of a JSON-RPC batch as if it came alone, and answer its requests as one array.

        The requests run concurrently on the pool (never inline: the batch's
        other elements would wait); notifications and responses are taken as
        usual. An element that gets an error (an invalid one, or ``initialize``)
        has it in the array.
        """
        elements = batch_elements(values)
        expected = sum(isinstance(e, JSONRPCRequest) or (isinstance(e, InvalidMessage) and e.reply) for e in elements)
        batch = BatchReplies(expected, functools.partial(self._reply_batch, self.transport.send_batch))
        for element in elements:
            if isinstance(element, JSONRPCRequest):
                self._on_request(element, batch)
            elif isinstance(element, InvalidMessage) and element.reply:
                batch.add(element.response())
            else:
                self._on_message(element)

    def _reply_batch(self, send: Callable[[Sequence[JSONRPCMessage]], None], responses: list[JSONRPCMessage]) -> None:
        try:
            send(responses)
        except Exception as exc:  # the connection went away meanwhile
            log.debug("could not send the answers to a batch: %s", exc)

    def _answer(
        self, batch: BatchReplies | None, response: JSONRPCMessage, ctx: RequestContext | None = None
    ) -> MCPError | None:
        """Send ``response`` (to the request of ``ctx``, when it was served), or hold it with its batch's other
        answers; return the error instead of raising it."""
        if batch is None:
            return self._reply(response, ctx)
        batch.add(response)
        return None

    def _fail_pending(self, message: InvalidMessage) -> bool:
        """A broken response (never answered) for a call in flight fails that call at once; whether one did.

        An invalid ``result`` or a malformed ``error`` (a code that is not an
        integer, a message that is not a string, a field missing) would
        otherwise leave the call waiting for its whole timeout.
        """
        if message.id is None:
            return False
        with self._lock:
            pending = self._pending.pop(message.id, None)
            if pending is not None:
                self._progress.pop(pending.id, None)
        if pending is None:
            return False
        self._finish(pending, "error", MCP_CODES.PROTOCOL_INVALID)
        pending.future.set_exception(
            MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID,
                f"the peer answered {pending.method} with an invalid response: {message.error.message}",
                context={"method": pending.method},
            )
        )
        return True

    def _no_call_waits(self) -> bool:
        return not self._pending

    def _on_response(self, message: JSONRPCResultResponse | JSONRPCErrorResponse) -> None:
        with self._lock:
            pending = self._pending.pop(message.id, None) if message.id is not None else None
            if pending is not None:
                self._progress.pop(pending.id, None)
            alone = not self._pending
        if pending is None:
            log.debug("dropped a response to unknown request %r", message.id)
            return
        if alone and pending.waiter is not None and self._pass_reading is not None:
            # The only call in flight: its caller reads on from here (before it is woken, so
            # that it finds the turn lent to it).
            self._pass_reading(pending.waiter)
        if isinstance(message, JSONRPCResultResponse):
            failed = None if pending.span is None else result_error(pending.method, message.result)
            self._finish(pending, "success", failed)
            pending.future.set_result(message.result)
        else:
            self._finish(pending, "error", str(message.error.code))
            pending.future.set_exception(error_from_wire(message.error, pending.method))

    def _on_notification(self, message: JSONRPCNotification) -> None:
        method = message.method
        params = message.params or {}
        self.telemetry.record_notification("received", method)
        if method == "notifications/cancelled":
            self._on_cancelled(params)
        elif method == "notifications/progress":
            self._on_progress(params)
        for listener in self._listeners.get(method, ()):
            try:
                listener(params)
            except Exception:
                log.exception("listener for %s failed", method)

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        try:
            # Strict: in lax mode pydantic reads ``true`` as the request id 1.
            cancelled = CancelledNotificationParams.model_validate(params, strict=True)
        except ValidationError:
            log.debug("ignored malformed notifications/cancelled: %r", params)
            return
        with self._lock:
            targets = list(self._inflight.get(cancelled.request_id, ()))
            for ctx in targets:
                ctx.answered = True  # the peer gave up on it: it expects no answer
        for ctx in targets:
            ctx.cancelled.set()

    def _on_progress(self, params: dict[str, Any]) -> None:
        try:
            progress = ProgressNotificationParams.model_validate(params, strict=True)
        except ValidationError:
            log.debug("ignored malformed notifications/progress: %r", params)
            return
        pending = self._progress.get(progress.progress_token)
        if pending is not None and pending.on_progress is not None:
            try:
                pending.on_progress(progress)
            except Exception:
                log.exception("progress callback for %s failed", pending.method)

    def _on_request(self, request: JSONRPCRequest, batch: BatchReplies | None = None) -> None:
        # Transports whose reading role can move between threads (stdio), and HTTP sessions lent a connection's
        # thread, let handlers run on the thread that read the request: asked per request (it can depend on it).
        handoff = self.transport.handoff_reading
        with self._lock:
            if self._closed:
                return  # (a closed dispatcher has dropped its handlers, too)
            entry = self._handlers.get(request.method) or self._fallback
            if entry is not None:
                ctx = RequestContext(self, request.id, request.method, request.params or {}, batch=batch)
                refuse = self._draining
                inline = not refuse and batch is None and handoff is not None and self._inline < self._max_workers
                if not refuse:
                    self._inflight.setdefault(request.id, []).append(ctx)
                if inline:
                    self._inline += 1
                elif not refuse:
                    self._submit_locked(entry, ctx)
        if entry is None:
            missing = error_response(request.id, JsonRpcCode.METHOD_NOT_FOUND, f"Method not found: {request.method}")
            self._answer(batch, missing)
        elif refuse:
            self._answer(batch, _shutting_down(request.id), ctx)
        elif inline:
            # The transport lets another thread take over reading, and the
            # handler runs here: no hand-off to a pool thread on the way.
            assert handoff is not None
            handoff()
            try:
                self._run(entry, ctx)
            finally:
                with self._lock:
                    self._inline -= 1

    def serve(
        self,
        request: JSONRPCRequest,
        handler: Handler,
        *,
        writer: Callable[[JSONRPCMessage], None],
        cancelled: threading.Event | None = None,
    ) -> None:
        """Serve ``request`` with ``handler`` on this thread, for a request that came with a way back of its own.

        What the handler sends for the request and its response go to
        ``writer``, not over this dispatcher's transport (a 2026-07-28 HTTP
        POST answers on its own response). ``cancelled`` is the request's
        cancel event, for whoever receives the request to set (the client
        hanging up). Returns once the request is answered. As for requests
        read from the transport: events, metrics and spans, errors answered
        as JSON-RPC errors, and :meth:`drain` cancels it and waits for it; a
        dispatcher closed or draining answers that it is shutting down.
        """
        with self._lock:
            refuse = self._closed or self._draining
            ctx = RequestContext(self, request.id, request.method, request.params or {}, writer=writer)
            if cancelled is not None:
                ctx.cancelled = cancelled
            if not refuse:
                self._inflight.setdefault(request.id, []).append(ctx)
        if refuse:
            ctx.answered = True
            self._answer(None, _shutting_down(request.id), ctx)
            return
        self._run(_HandlerEntry(handler, None), ctx)

    def _submit_locked(self, entry: _HandlerEntry, ctx: RequestContext) -> None:
        if self._pool is None:
            # Started on the first request: a connection that never gets one has no threads.
            self._pool = ElasticPool(f"mcp-sync-{self.side}-handler", max_threads=self._max_workers)
        self._pool.submit(functools.partial(self._run, entry, ctx))

    def _run(self, entry: _HandlerEntry, ctx: RequestContext) -> None:
        if self.events.has_listeners(REQUEST_RECEIVED):
            from .events import RequestReceived

            self.events.emit(REQUEST_RECEIVED, RequestReceived(side=self.side, method=ctx.method, id=ctx.request_id))
        started = self._clock.monotonic()
        tracer = active_tracer()
        span = None
        if tracer is not None:
            span = start_span(
                tracer,
                server=True,
                method=ctx.method,
                request_id=ctx.request_id,
                params=ctx.params,
                transport=self.transport,
            )
        error_type: str | None = None
        response: JSONRPCMessage
        try:
            params: Any = ctx.params
            if entry.params_model is not None:
                try:
                    params = entry.params_model.model_validate(ctx.params)
                except ValidationError as exc:
                    raise MCPError(
                        MCP_CODES.INVALID_PARAMS,
                        f"Invalid params: {format_validation_error(exc)}",
                        cause=exc,
                    ) from exc
            # The handler runs inside the request's span: the requests it makes continue the trace.
            token = None if span is None else activate(span)
            try:
                with serving(ctx):
                    result = _to_result(entry.fn(params, ctx))
            finally:
                if token is not None:
                    deactivate(token)
            response = envelope(JSONRPCResultResponse, {"jsonrpc": "2.0", "id": ctx.request_id, "result": result})
            outcome = "success"
            if span is not None:
                error_type = result_error(ctx.method, result)
        except MCPError as exc:
            response = JSONRPCErrorResponse(
                id=ctx.request_id, error=Error(code=exc.jsonrpc_code, message=exc.message, data=exc.data)
            )
            outcome = "error"
            error_type = str(exc.jsonrpc_code)
        except Exception as exc:
            log.exception("handler for %s failed", ctx.method)
            response = error_response(ctx.request_id, JsonRpcCode.INTERNAL_ERROR, f"Internal error: {exc}")
            outcome = "error"
            error_type = type(exc).__qualname__
        finally:
            with self._lock:
                already_answered, ctx.answered = ctx.answered, True
        if already_answered:
            outcome = "cancelled"
            if ctx.batch is not None:
                # Counted now (the peer cancelled it); after drain() answered it instead, the batch is
                # complete already and one more count changes nothing.
                ctx.batch.add(None)
        else:
            failure = self._answer(ctx.batch, response, ctx)
            if failure is not None:
                # The response could not go out (a result that is not JSON, say):
                # answer with an error rather than leave the caller waiting.
                outcome = "error"
                error_type = failure.code
                self._reply(
                    error_response(ctx.request_id, JsonRpcCode.INTERNAL_ERROR, f"Internal error: {failure.message}"),
                    ctx,
                )
        # In flight until its answer is written: drain() waits for this, and the
        # transport is closed after drain(), so an answer is never cut off by the close.
        with self._lock:
            running = self._inflight[ctx.request_id]
            running.remove(ctx)
            if not running:
                del self._inflight[ctx.request_id]
            if self._draining or self._awaiting:  # (drain() and wait_served() set these under this lock first)
                self._idle.notify_all()
        if span is not None:
            end_span(span, "cancelled" if outcome == "cancelled" else error_type)
        duration_ms = (self._clock.monotonic() - started) * 1000.0
        self.telemetry.record_request("server", ctx.method, outcome, duration_ms)
        if self.events.has_listeners(REQUEST_COMPLETED):
            from .events import RequestCompleted

            self.events.emit(
                REQUEST_COMPLETED,
                RequestCompleted(
                    side=self.side, method=ctx.method, id=ctx.request_id, duration_ms=duration_ms, outcome=outcome
                ),
            )

    def _reply(self, response: JSONRPCMessage, request: RequestContext | None = None) -> MCPError | None:
        """Send ``response`` (to ``request``, when it was served); return the error instead of raising it."""
        try:
            self._send(response, request)
        except MCPError as exc:
            log.debug("could not send a response: %s", exc)
            return exc
        return None

    def wait_served(self, method: str, timeout: float) -> bool:
        """Wait until no ``method`` request received so far is still being served; ``False`` if one still is after
        ``timeout`` seconds.

        Requests run on several threads, so one received after another may
        start first; a handler that needs an earlier request done (a server's
        ``initialize``) waits for it here.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            self._awaiting += 1
            try:
                while any(ctx.method == method for running in self._inflight.values() for ctx in running):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._idle.wait(left)
                return True
            finally:
                self._awaiting -= 1

    # ------------------------------------------------------------------ close

    def drain(self, timeout: float = 1.0) -> None:
        """Wind down before closing: every request already accepted gets an answer.

        Running handlers are told to stop (their ``cancelled`` event is set)
        and get up to ``timeout`` seconds to answer; those still running then
        are answered with an error, as is any request arriving from now on.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            self._draining = True
            running = [ctx for contexts in self._inflight.values() for ctx in contexts]
        for ctx in running:
            ctx.cancelled.set()
        with self._lock:
            while self._inflight and self._idle.wait(max(0.0, deadline - time.monotonic())):
                pass
            late = [ctx for contexts in self._inflight.values() for ctx in contexts if not ctx.answered]
            for ctx in late:
                ctx.answered = True
        for ctx in late:
            self._answer(ctx.batch, _shutting_down(ctx.request_id), ctx)

    def close(self, timeout: float = 5.0) -> None:
        """Close the transport, fail pending calls, stop the handler pool. Idempotent.

        Handlers still running are told to stop (their ``cancelled`` event is
        set) and waited for up to ``timeout`` seconds.
        """
        self.transport.close()
        # A transport that was never started does not call us back: do it here.
        self._on_transport_closed(None)
        self._join_pool(timeout)

    def _on_transport_closed(self, reason: BaseException | None) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_reason = reason
            pending = list(self._pending.values())
            self._pending.clear()
            self._progress.clear()
            inflight = [ctx for running in self._inflight.values() for ctx in running]
        for ctx in inflight:
            ctx.cancelled.set()
        for call in pending:
            self._finish(call, "error", MCP_CODES.TRANSPORT_CLOSED)
            call.future.set_exception(self._closed_error())
        unsubscribers, self._unsubscribe = self._unsubscribe, []
        for unsubscribe in unsubscribers:
            unsubscribe()
        with self._lock:
            # Nothing is dispatched any more: dropping the handlers (which hold their owner, a
            # server session say) and the unsubscribers (which hold this dispatcher's methods)
            # lets a closed connection be freed by reference counting at once, not by the cyclic
            # collector: a stateless server closes one per request.
            self._handlers, self._fallback, self._listeners, self.accept_batch = {}, None, {}, None
        if self._pool is not None:
            # Idle workers exit now; busy ones when their handler returns.
            self._pool.close(timeout=0.0)
        if self._started and self.events.has_listeners(CONNECTION_CLOSED):
            from .events import ConnectionClosed

            self.events.emit(
                CONNECTION_CLOSED,
                ConnectionClosed(side=self.side, dispatcher_id=self.id, reason=None if reason is None else str(reason)),
            )

    def _join_pool(self, timeout: float) -> None:
        with self._lock:
            pool = self._pool
        if pool is not None:
            pool.close(timeout)  # waits for every thread but the calling one
