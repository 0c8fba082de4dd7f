"""The ``subscriptions/listen`` streams of 2026-07-28: :class:`Subscription`, and the client's :class:`ListenTable`.

The client opens one with :meth:`~mcp_sync.client.MCPClient.listen`; it
owns a delivery thread that hands each notification to the callback in
order, and ends when closed or when the server ends the stream. The
client's :class:`ListenTable` keeps its open streams by id and hands each
notification tagged with a subscription id to its stream.

>>> table = ListenTable()
>>> table.route("notifications/tools/list_changed", {"_meta": {SUBSCRIPTION_ID: 7}})  # no such stream: dropped
>>> table.stale({"_meta": {SUBSCRIPTION_ID: 7}}), table.stale({})
(True, False)
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.stateless import SUBSCRIPTION_ID
from ..protocol.types import RequestId

if TYPE_CHECKING:
    from ..protocol.types import SubscriptionFilter
    from ..runtime.dispatcher import JsonRpcDispatcher, PendingRequest

__all__ = [
    "TAGGED",
    "ListenTable",
    "NotificationCallback",
    "Subscription",
]

log = logging.getLogger(__name__)


NotificationCallback = Callable[[str, dict[str, Any]], None]
"""Receives a subscription's notifications: ``(method, params)``."""

_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TAGGED = (
    _ACKNOWLEDGED,
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
)
"""The notifications a ``subscriptions/listen`` stream carries, tagged with its id."""

_END = object()


class Subscription:
    """An open ``subscriptions/listen`` stream; made by :meth:`MCPClient.listen <mcp_sync.client.MCPClient.listen>`.

    ``requested`` is the filter asked for, ``acknowledged`` the part the
    server agreed to. Each notification of the stream goes to the
    ``on_notification`` callback, in order, on a thread of its own
    (``mcp-sync-subscription``). :meth:`close` ends the stream (over stdio
    with ``notifications/cancelled``, over HTTP by closing the response);
    so does leaving a ``with`` block. ``done`` is set once the stream has
    ended, by either side; ``error`` then says why when it was not closed
    by this client or ended gracefully by the server.
    """

    def __init__(
        self,
        dispatcher: JsonRpcDispatcher,
        requested: SubscriptionFilter,
        on_notification: NotificationCallback | None,
        forget: Callable[[Subscription], None],
    ) -> None:
        self.requested = requested
        self.acknowledged: SubscriptionFilter | None = None
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._dispatcher = dispatcher
        self._callback = on_notification
        self._forget = forget
        self._acked = threading.Event()
        self._pending: PendingRequest | None = None
        self._closing = False
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None

    @property
    def id(self) -> RequestId:
        """The subscription's id: the JSON-RPC id of its ``subscriptions/listen`` request."""
        assert self._pending is not None
        return self._pending.id

    def _start(self, pending: PendingRequest) -> None:
        """The listen request is on its way (the client's routing lock is held)."""
        self._pending = pending
        if self._callback is not None:
            self._worker = threading.Thread(target=self._run, name="mcp-sync-subscription", daemon=True)
            self._worker.start()
        pending.future.add_done_callback(self._ended)

    def _wait_acknowledged(self, timeout: float | None, cancel: threading.Event | None) -> None:
        """Block until the server acknowledged the subscription; raise what ended it, or a cancel, otherwise."""
        assert self._pending is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if cancel is not None and cancel.is_set():
                self.close()
                raise MCPError(
                    MCP_CODES.REQUEST_CANCELLED,
                    "subscriptions/listen was cancelled by the caller before the server acknowledged it",
                    context={"method": "subscriptions/listen"},
                )
            if self._acked.wait(0.02):
                return
            if self._pending.future.done():
                self._pending.future.result()  # raises the error that ended it
                raise MCPError(MCP_CODES.PROTOCOL_INVALID, "the server ended the subscription before acknowledging it")
            if deadline is not None and time.monotonic() >= deadline:
                self.close()
                raise MCPError(
                    MCP_CODES.TIMEOUT,
                    f"the server did not acknowledge the subscription within {timeout:g} s",
                    context={"method": "subscriptions/listen", "timeout": timeout},
                )

    def _acknowledge(self, params: dict[str, Any]) -> None:
        try:
            self.acknowledged = models.SubscriptionFilter.model_validate(params.get("notifications") or {})
        except ValueError:
            log.debug("ignored a malformed acknowledgement: %r", params)
            return
        self._acked.set()

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        if self._callback is not None:
            self._queue.put((method, params))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            method, params = item
            try:
                assert self._callback is not None
                self._callback(method, params)
            except Exception:
                log.exception("a subscription callback failed on %s", method)

    def _ended(self, future: concurrent.futures.Future[dict[str, Any]]) -> None:
        error = future.exception()
        if error is not None and not self._closing:
            self.error = error
        self._forget(self)
        self._queue.put(_END)
        self.done.set()

    def close(self) -> None:
        """End the subscription and wait for its callbacks to finish. Idempotent."""
        self._closing = True
        pending = self._pending
        if pending is not None and not pending.future.done():
            self._dispatcher.cancel(pending, "the subscription was closed")
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(5.0)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the subscription has ended; whether it has."""
        return self.done.wait(timeout)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "ended" if self.done.is_set() else "open"
        return f"<Subscription {self._pending.id if self._pending is not None else '?'} ({state})>"


class ListenTable:
    """The open ``subscriptions/listen`` streams of one client, by id: opens them, routes what they carry.

    A notification of :data:`TAGGED` carries the id of the stream it belongs
    to in its ``_meta``; :meth:`route` hands it to that stream, and
    :meth:`stale` tells the client's own handlers to ignore it once its
    stream was closed.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._open: dict[RequestId, Subscription] = {}

    def open(
        self,
        dispatcher: JsonRpcDispatcher,
        params: dict[str, Any],
        wanted: SubscriptionFilter,
        on_notification: NotificationCallback | None,
        timeout: float | None,
        cancel: threading.Event | None,
    ) -> Subscription:
        """Send ``subscriptions/listen`` with ``params``; return the stream once the server acknowledged it."""
        subscription = Subscription(dispatcher, wanted, on_notification, self._forget)
        # Sent and registered under the routing lock: the acknowledgement may come before send_request returns.
        with self._lock:
            pending = dispatcher.send_request("subscriptions/listen", params)
            self._open[pending.id] = subscription
            subscription._start(pending)
        subscription._wait_acknowledged(timeout, cancel)
        return subscription

    def _forget(self, subscription: Subscription) -> None:
        with self._lock:
            self._open.pop(subscription.id, None)

    def stale(self, params: dict[str, Any]) -> bool:
        """Whether a notification is tagged with a subscription that is no longer open."""
        tag = _tag(params)
        with self._lock:
            return tag is not None and tag not in self._open

    def route(self, method: str, params: dict[str, Any]) -> None:
        """Hand a notification tagged with a subscription id to that subscription (untagged or stale: dropped)."""
        tag = _tag(params)
        with self._lock:
            subscription = self._open.get(tag) if isinstance(tag, (str, int)) else None
        if subscription is None:
            return  # untagged, or for a subscription closed meanwhile
        if method == _ACKNOWLEDGED:
            subscription._acknowledge(params)
        else:
            subscription._deliver(method, params)


def _tag(params: dict[str, Any]) -> Any:
    meta = params.get("_meta")
    return meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
