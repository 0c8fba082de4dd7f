"""Event stores: what lets an HTTP client resume an SSE stream it lost.

Every event the Streamable HTTP server sends on an SSE stream is first kept
in an :class:`EventStore`, which gives it its ``id``. A client that lost the
connection sends the last id it saw as ``Last-Event-ID`` and gets what
followed on that stream, replayed from the store.

The default :class:`InMemoryEventStore` keeps the latest events of each
stream in this process. Processes that serve the same sessions (gunicorn
workers, machines behind a load balancer) share a :class:`SharedEventStore`
instead (:class:`~mcp_sync.server.scale.redis_events.RedisEventStore`, picked
by the Redis backend): any of them then replays a stream to a client that
resumes it, and the one holding a session's GET stream hears of the events
the others write to it.

>>> from mcp_sync.types import JSONRPCNotification
>>> store = InMemoryEventStore()
>>> first = store.store("s1", JSONRPCNotification(method="notifications/a"))
>>> second = store.store("s1", JSONRPCNotification(method="notifications/b"))
>>> replayed = []
>>> store.replay_after(first, lambda event_id, message: replayed.append(message.method))
's1'
>>> replayed
['notifications/b']
"""

from __future__ import annotations

import collections
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable

from ...protocol.types import JSONRPCMessage

__all__ = ["EventStore", "InMemoryEventStore", "ReplaySink", "SharedEventStore"]

ReplaySink = Callable[[str, JSONRPCMessage], None]
"""Receives each replayed event: ``(event_id, message)``."""


class EventStore(ABC):
    """Where the events of SSE streams are kept for replay.

    Event ids must be unique across all streams the store holds and must let
    :meth:`replay_after` find the stream they belong to. ``message`` is
    ``None`` for a priming event (an id with empty data): it takes an id but
    is never replayed.
    """

    @abstractmethod
    def store(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep ``message`` as the next event of ``stream_id``; return its event id."""

    @abstractmethod
    def replay_after(self, event_id: str, send: ReplaySink) -> str | None:
        """Call ``send`` for each kept event after ``event_id`` on its stream, in order.

        Returns the id of that stream, or ``None`` (sending nothing) when
        ``event_id`` is unknown.
        """

    def forget(self, stream_id: str) -> None:  # noqa: B027 - optional hook, empty on purpose
        """Drop what is kept for ``stream_id`` (its session ended). Optional."""


class SharedEventStore(EventStore):
    """An event store that the processes serving a server share.

    A handshake-era session shared by processes has one GET stream, whichever
    process holds its connection: every process writes the session's events
    to it (:meth:`store_once`), and the process holding the connection is
    told (:meth:`watch`) and reads them back in the store's order.
    """

    @abstractmethod
    def store_once(self, stream_id: str, message: JSONRPCMessage | None, once: str | None) -> str | None:
        """Like :meth:`store`, but when ``once`` (a server-wide notification's key) was stored on the stream
        already (by another process's copy of the session), store nothing and return ``None``."""

    @abstractmethod
    def watch(self, stream_id: str, wake: Callable[[], None]) -> None:
        """Call ``wake()`` each time another process stores an event on ``stream_id`` (until :meth:`unwatch`).

        Several may watch one stream: two copies of a session meet in a process for a moment (one is closed)."""

    @abstractmethod
    def unwatch(self, stream_id: str, wake: Callable[[], None]) -> None:
        """Stop calling ``wake`` (if it watches ``stream_id``); the others watching it go on."""


class InMemoryEventStore(EventStore):
    """Keeps the last ``max_events`` events of each of the last ``max_streams`` streams.

    An event id is ``"<stream id>:<sequence number>"``. When a stream holds
    more than ``max_events`` events, the oldest go first; a client resuming
    from before them gets what is left.
    """

    def __init__(self, max_events: int = 1000, max_streams: int = 10_000) -> None:
        if max_events < 1 or max_streams < 1:
            raise ValueError("max_events and max_streams must be positive")
        self.max_events = max_events
        self.max_streams = max_streams
        self._lock = threading.Lock()
        self._streams: collections.OrderedDict[str, _Kept] = collections.OrderedDict()

    def store(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        with self._lock:
            kept = self._streams.get(stream_id)
            if kept is None:
                kept = self._streams[stream_id] = _Kept(collections.deque(maxlen=self.max_events))
                while len(self._streams) > self.max_streams:
                    self._streams.popitem(last=False)
            else:
                self._streams.move_to_end(stream_id)
            kept.last += 1
            kept.events.append((kept.last, message))
            return f"{stream_id}:{kept.last}"

    def replay_after(self, event_id: str, send: ReplaySink) -> str | None:
        stream_id, _, number = event_id.rpartition(":")
        if not number.isdigit():
            return None
        after = int(number)
        with self._lock:
            kept = self._streams.get(stream_id)
            if kept is None or after > kept.last:
                return None
            events = [(seq, message) for seq, message in kept.events if seq > after]
        for seq, message in events:
            if message is not None:
                send(f"{stream_id}:{seq}", message)
        return stream_id

    def forget(self, stream_id: str) -> None:
        with self._lock:
            self._streams.pop(stream_id, None)


class _Kept:
    """The retained events of one stream and the last sequence number given out."""

    __slots__ = ("events", "last")

    def __init__(self, events: collections.deque[tuple[int, JSONRPCMessage | None]]) -> None:
        self.events = events
        self.last = 0
