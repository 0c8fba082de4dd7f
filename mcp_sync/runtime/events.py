"""Lifecycle events of mcp_sync and the small bus that delivers them.

Clients and servers own an :class:`EventBus` and emit five events on it, each
with a frozen payload dataclass (defined in :mod:`.event_payloads`, which is
loaded the first time one is named here: a program that never listens never
builds them)::

    bus = EventBus()
    stop = bus.on(REQUEST_COMPLETED, lambda done: print(done.method, done.outcome))
    bus.emit(
        REQUEST_COMPLETED,
        RequestCompleted("server", "tools/call", 7, duration_ms=3.2, outcome="success"),
    )
    stop()

Listeners run synchronously on the emitting thread, so they should be quick;
hand heavy work to a queue or another thread. A listener that raises is logged
on the ``mcp_sync.runtime.events`` logger and never disturbs the emitter or
the other listeners.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

__all__ = [
    "CONNECTION_CLOSED",
    "CONNECTION_OPENED",
    "NOTIFICATION_EMITTED",
    "REQUEST_COMPLETED",
    "REQUEST_RECEIVED",
    "ConnectionClosed",
    "ConnectionOpened",
    "EventBus",
    "Listener",
    "NotificationEmitted",
    "RequestCompleted",
    "RequestReceived",
]

if TYPE_CHECKING:
    from .event_payloads import (
        ConnectionClosed,
        ConnectionOpened,
        NotificationEmitted,
        RequestCompleted,
        RequestReceived,
    )

_log = logging.getLogger(__name__)

PAYLOADS = frozenset(
    {"ConnectionClosed", "ConnectionOpened", "NotificationEmitted", "RequestCompleted", "RequestReceived"}
)
"""The payload classes, importable from here and loaded when one is first named."""

CONNECTION_OPENED = "connection:opened"
"""A dispatcher finished connecting; payload :class:`ConnectionOpened`."""

CONNECTION_CLOSED = "connection:closed"
"""A dispatcher shut down; payload :class:`ConnectionClosed`."""

REQUEST_RECEIVED = "request:received"
"""A request arrived from the peer; payload :class:`RequestReceived`."""

REQUEST_COMPLETED = "request:completed"
"""A request received from the peer was answered; payload :class:`RequestCompleted`."""

NOTIFICATION_EMITTED = "notification:emitted"
"""This side sent a notification; payload :class:`NotificationEmitted`."""

Listener: TypeAlias = Callable[[Any], None]
"""A callable that receives an event payload."""


_Entry: TypeAlias = tuple[object, Listener]
"""One subscription: a unique token and the listener it registered."""


class EventBus:
    """A thread-safe, synchronous publish/subscribe hub keyed by event name.

    Any string is accepted as an event name; the module constants are the
    names mcp_sync itself emits, and other names are free for applications.

    >>> bus = EventBus()
    >>> seen = []
    >>> unsubscribe = bus.on("demo", seen.append)
    >>> bus.emit("demo", 1)
    >>> unsubscribe()
    >>> bus.emit("demo", 2)
    >>> seen
    [1]

    Each event keeps an immutable tuple of subscriptions that is replaced,
    never modified, when listeners come and go. An emit therefore delivers to
    the listeners present when it started: one added by a listener during an
    emit first hears the next emit, and one removed during an emit may still
    receive the payload being delivered.
    """

    __slots__ = ("_listeners", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[str, tuple[_Entry, ...]] = {}

    def on(self, event: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener(payload)`` on every later emit of ``event``.

        The same callable may be subscribed more than once and is then called
        once per subscription. Returns a function that cancels this one
        subscription; calling it again does nothing.

        >>> bus = EventBus()
        >>> stop = bus.on(CONNECTION_OPENED, print)
        >>> bus.emit(CONNECTION_OPENED, "hello")
        hello
        >>> stop()
        >>> stop()
        """
        token = object()
        with self._lock:
            self._listeners[event] = (*self._listeners.get(event, ()), (token, listener))

        def unsubscribe() -> None:
            with self._lock:
                current = self._listeners.get(event, ())
                remaining = tuple(entry for entry in current if entry[0] is not token)
                if len(remaining) == len(current):
                    return
                if remaining:
                    self._listeners[event] = remaining
                else:
                    del self._listeners[event]

        return unsubscribe

    def emit(self, event: str, payload: object) -> None:
        """Deliver ``payload`` to the listeners of ``event``, in subscription order.

        Runs on the calling thread. An exception from a listener is logged and
        swallowed, so the remaining listeners still run and the caller never
        sees it.

        >>> bus = EventBus()
        >>> bus.emit(REQUEST_RECEIVED, None)  # nobody listening: a no-op
        """
        entries = self._listeners.get(event)
        if entries is None:
            return
        for _token, listener in entries:
            try:
                listener(payload)
            except Exception:
                _log.exception("listener %r for event %r raised", listener, event)

    def has_listeners(self, event: str) -> bool:
        """Whether anything is subscribed to ``event``.

        Lets emitters skip building a payload nobody will read.

        >>> bus = EventBus()
        >>> bus.has_listeners(REQUEST_COMPLETED)
        False
        """
        return event in self._listeners


def __getattr__(name: str) -> Any:
    if name not in PAYLOADS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import event_payloads

    value = getattr(event_payloads, name)
    globals()[name] = value
    return value
