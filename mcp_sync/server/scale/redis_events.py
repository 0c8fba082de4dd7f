"""The resumability event store in Redis: SSE streams that any process replays and follows.

:class:`RedisEventStore` keeps each stream as a Redis stream (``XADD``),
under ``<prefix>:events:<stream id>``: bounded to ``max_events``
entries (``MAXLEN``: the oldest go first) and expiring ``ttl`` seconds
after its last event. An event id is ``"<stream id>:<entry id>"``; a client
resuming from one, on any process, gets the entries after it (``XRANGE``).

A server-wide notice addressed to shared sessions (a resource update, a
list change, a log message of the server's) is written by the process that
raises it, to the stream of every session it is addressed to, as Redis
knows them (:meth:`RedisEventStore.store_addressed`): whether or not any
process holds a copy of the session, and however its pub/sub connections fare.

Each write also rings the stream's doorbell: it publishes the stream's id on
the backend's channel, in the same round trip (a Lua script), and the process
holding the stream's connection, told by its receiving thread, reads what is
new since the last event it sent (no process polls); a receiver that lost
its connection reads every stream it watches once subscribed again (the
doorbells rung meanwhile were lost). A notice is kept once on a stream: its
write sets ``<prefix>:events:<stream id>:once:<notice key>`` (for a minute),
so that a write sent again (a retry after a lost connection) finds it set.

The :class:`~mcp_sync.server.scale.redis_backend.RedisBackend` makes one for
its app (``backend.event_store()``); give the app one of your own to change
its bounds::

    backend = RedisBackend("redis://redis.internal:6379/0")
    app = StreamableHTTPApp(server, backend=backend, event_store=RedisEventStore(backend, max_events=200, ttl=600))
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...protocol.jsonrpc import InvalidMessage, decode_message, encode_message
from ...protocol.types import JSONRPCMessage
from ..backend import BackendUnavailable
from ..http.event_store import InMemoryEventStore, ReplaySink, SharedEventStore

if TYPE_CHECKING:
    from .redis_backend import RedisBackend

__all__ = ["ONCE_TTL", "RedisEventStore"]

log = logging.getLogger(__name__)

ONCE_TTL = 60
"""How long (seconds) a stream remembers that it got a server-wide notification: time for every process to try."""

_ENTRY_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")

# Store an event on a stream (at most once when given a once-marker) and ring its doorbell: the one way both
# scripts below write a stream.
_STORE_EVENT = """
local function store(key, once, data, max_entries, ttl, once_ttl, channel, doorbell)
    if once ~= '' and not redis.call('SET', once, '1', 'NX', 'EX', once_ttl) then
        return false
    end
    local id = redis.call('XADD', key, 'MAXLEN', max_entries, '*', 'm', data)
    redis.call('EXPIRE', key, ttl)
    if channel ~= '' then
        redis.call('PUBLISH', channel, doorbell)
    end
    return id
end
"""

# KEYS: the stream, the once-marker ("" for none). ARGV: data, max entries, ttl, once ttl, channel, doorbell.
_STORE = _STORE_EVENT + "return store(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])"

# A notice on the stream of each session it is addressed to: the members of an index (a set of session ids) whose
# record is alive, names a stream and, for a log message, has a level that admits it; then the notice published.
# ARGV: data, max entries, ttl, once ttl, channel, origin, notice key, index, record prefix, stream prefix,
# levels admitting it (" debug info " or "" for any), the server's level ("" for none), the notice as published.
_STORE_ADDRESSED = (
    _STORE_EVENT
    + """
local written = {}
for _, session in ipairs(redis.call('SMEMBERS', ARGV[8])) do
    local record = ARGV[9] .. session
    if redis.call('EXISTS', record) == 0 then
        redis.call('SREM', ARGV[8], session)  -- ended, or expired: the index forgets it
    else
        local fields = redis.call('HMGET', record, 'stream', 'log_level')
        local stream, level = fields[1], fields[2] or ARGV[12]
        if stream and (ARGV[11] == '' or level == '' or string.find(ARGV[11], ' ' .. level .. ' ', 1, true)) then
            local key = ARGV[10] .. stream
            local doorbell = cjson.encode({o = ARGV[6], k = 'stream_event', s = stream})
            if store(key, key .. ':once:' .. ARGV[7], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], doorbell) then
                table.insert(written, stream)
            end
        end
    end
end
redis.call('PUBLISH', ARGV[5], ARGV[13])
return written
"""
)


class RedisEventStore(SharedEventStore):
    """SSE events kept in the Redis of ``backend``, for every process serving its server.

    ``max_events`` bounds each stream, ``ttl`` is how long (seconds) a stream
    outlives its last event. ``keep_posts=False`` keeps the streams of POSTs
    in this process's memory instead (a Redis round trip less per event; a
    client resuming one on another process then gets the GET stream). Every call
    is bounded by the backend's timeout; Redis away:
    :class:`~mcp_sync.server.backend.BackendUnavailable`.

    >>> RedisEventStore.__mro__[1].__name__
    'SharedEventStore'
    """

    def __init__(
        self, backend: RedisBackend, *, max_events: int = 1000, ttl: float = 3600.0, keep_posts: bool = True
    ) -> None:
        if max_events < 1 or ttl < 1:
            raise ValueError("max_events and ttl must be positive")
        self.backend = backend
        self.max_events = max_events
        self.ttl = int(ttl)
        # A POST's stream is written by the process running its handler only: kept here, it costs no round trip
        # per event, but only this process can replay it.
        self._posts = None if keep_posts else InMemoryEventStore(max_events)
        self._script: Any = backend.redis.register_script(_STORE)
        self._addressed: Any = backend.redis.register_script(_STORE_ADDRESSED)
        self._lock = threading.Lock()
        # Usually one watcher a stream; two for a moment when two copies of a session meet here (one is closed).
        self._watchers: dict[str, tuple[Callable[[], None], ...]] = {}
        backend.follow_events(self)

    def key(self, stream_id: str) -> str:
        """The Redis key of stream ``stream_id``."""
        return f"{self.backend.key_prefix}:events:{stream_id}"

    def store(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep an event of a stream that this process alone writes (a POST's): nobody else is told."""
        if self._posts is not None:
            return self._posts.store(stream_id, message)
        event_id = self._store(stream_id, message, None, ring=False)
        assert event_id is not None  # only a once-marker makes it None
        return event_id

    def store_once(self, stream_id: str, message: JSONRPCMessage | None, once: str | None) -> str | None:
        return self._store(stream_id, message, once, ring=message is not None)  # a start marker wakes nobody

    def _store(self, stream_id: str, message: JSONRPCMessage | None, once: str | None, *, ring: bool) -> str | None:
        key = self.key(stream_id)
        doorbell = json.dumps({"o": self.backend.origin(), "k": "stream_event", "s": stream_id})
        data = b"" if message is None else encode_message(message)
        args = [data, self.max_events, self.ttl, ONCE_TTL, self.backend.channel if ring else "", doorbell]
        entry = self.backend.call(self._script, keys=[key, f"{key}:once:{once}" if once else ""], args=args)
        if entry is None:
            return None
        return f"{stream_id}:{entry.decode()}"

    def store_addressed(
        self,
        message: JSONRPCMessage,
        once: str,
        *,
        index: str,
        records: str,
        levels: tuple[str, ...] | None,
        default_level: str | None,
        notice: str,
    ) -> list[str]:
        """Store ``message`` (the server-wide notice keyed ``once``) on the GET stream of each session it is
        addressed to, and publish ``notice`` on the backend's channel, in one step; returns the streams written.

        The sessions are the members of the set ``index`` whose record (``records`` + id, a hash) is alive and
        names a ``stream``; with ``levels``, those whose ``log_level`` (else ``default_level``) is one of them.
        Redis errors are raised as they are (the caller words them for its client).
        """
        args = [
            encode_message(message),
            self.max_events,
            self.ttl,
            ONCE_TTL,
            self.backend.channel,
            self.backend.origin(),
            once,
            index,
            records,
            self.key(""),
            "" if levels is None else f" {' '.join(levels)} ",
            default_level or "",
            notice,
        ]
        return [stream.decode() for stream in self._addressed(keys=[], args=args)]

    def replay_after(self, event_id: str, send: ReplaySink) -> str | None:
        stream_id, _, entry = event_id.rpartition(":")
        if self._posts is not None and entry.isdigit():
            return self._posts.replay_after(event_id, send)
        if not stream_id or not _ENTRY_ID.fullmatch(entry):
            return None
        pipeline = self.backend.redis.pipeline(transaction=False)
        pipeline.exists(self.key(stream_id))
        pipeline.xrange(self.key(stream_id), f"({entry}", "+")
        exists, entries = self.backend.call(pipeline.execute)
        if not exists:
            return None
        for entry_id, fields in entries:
            data = fields.get(b"m", b"")
            if not data:
                continue  # a priming event: an id only
            message = decode_message(data)
            if isinstance(message, InvalidMessage):
                log.warning("ignored a malformed event in %s", self.key(stream_id))
                continue
            send(f"{stream_id}:{entry_id.decode()}", message)
        return stream_id

    def forget(self, stream_id: str) -> None:
        """Delete the stream now; with Redis away, leave it to expire (a session's end must not fail for it)."""
        if self._posts is not None:
            self._posts.forget(stream_id)
        try:
            self.backend.call(self.backend.redis.delete, self.key(stream_id))
        except BackendUnavailable as error:
            log.warning("a stream is left to expire: %s", error.message)

    def watch(self, stream_id: str, wake: Callable[[], None]) -> None:
        with self._lock:
            self._watchers[stream_id] = (*self._watchers.get(stream_id, ()), wake)

    def unwatch(self, stream_id: str, wake: Callable[[], None]) -> None:
        with self._lock:
            # ``!=``, not ``is not``: a bound method (a transport's ``_wake``) is a new object each time it is named.
            left = tuple(other for other in self._watchers.pop(stream_id, ()) if other != wake)
            if left:
                self._watchers[stream_id] = left

    def ring(self, stream_id: str) -> None:
        """Another process stored an event on ``stream_id``: wake whoever watches it here (the receiving thread
        calls this)."""
        with self._lock:
            wakes = self._watchers.get(stream_id, ())
        _wake_each(wakes, "reading an event another process stored failed")

    def ring_all(self) -> None:
        """Wake every stream watched here, as if each doorbell rang: the receiving thread calls this once subscribed
        again, as the doorbells rung while it was not were lost (an event stored meanwhile would wait for the next).
        """
        with self._lock:
            wakes = tuple(wake for watching in self._watchers.values() for wake in watching)
        _wake_each(wakes, "reading the events a stream missed failed")


def _wake_each(wakes: tuple[Callable[[], None], ...], failed: str) -> None:
    """Call each of ``wakes``; one that fails is logged and the others are called all the same."""
    for wake in wakes:
        try:
            wake()
        except Exception:
            log.exception(failed)
