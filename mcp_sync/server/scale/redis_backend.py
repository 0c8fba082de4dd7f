"""Sharing a server's secret and notifications between processes through Redis (or Valkey).

:class:`RedisBackend` is the :class:`~mcp_sync.server.backend.Backend` for
servers run by several processes (gunicorn workers, machines behind a load
balancer). Give each process's app the same Redis URL::

    app = StreamableHTTPApp(server, backend="redis://redis.internal:6379/0")
    # or leave backend unset and export MCP_SYNC_REDIS_URL=redis://redis.internal:6379/0

It needs redis-py (``pip install "mcp-sync-py[redis]"``), imported only here.
What it keeps in Redis, under ``mcp-sync:<server name>`` (or ``prefix``):

- ``<prefix>:request-state-secret``: the secret that signs ``requestState``,
  made by the first process to start (``SET NX``) and read by the others;
- ``<prefix>:session:<id>``: the record of each handshake-era session (a
  :class:`~mcp_sync.server.backend.SessionRecord` as a hash: a field each,
  and ``u:<uri>`` for each subscription), expiring after the app's idle
  timeout, pushed away by each request of the session. Each change is made
  in Redis as that change alone, by a Lua script that also publishes it
  (:meth:`RedisBackend.update_session`): two processes changing a session at
  once both keep theirs, and every copy applies the changes in that order;
- ``<prefix>:sessions`` and ``<prefix>:subscribers:<uri>``: the ids of the
  sessions, and of those subscribed to each resource: whom a server-wide
  notice is addressed to. Kept with the records, forgotten as sessions end
  (an expired one, as a notice or a new session finds its record gone);
- ``<prefix>:notices``: a pub/sub channel. Each process publishes the
  server-wide notifications it raises (resource updated, list changed)
  after delivering them to its own sessions, and one thread per process
  receives the others' (its own are recognised and skipped, so that no
  stream gets one twice) and delivers them to its sessions: the listen
  streams of 2026-07-28 (and the legacy SSE ones). A notice addressed to
  shared sessions is first written to the GET stream of each of them, in
  the same script (see :mod:`~mcp_sync.server.scale.redis_events`): no copy
  of the session need hear it. A task's status changes go the same way, to
  the listen streams asking for it. What processes say of sessions goes on
  it too: a change to a record (each copy makes it), a session ended (each
  copy ends), its GET stream opened (an older one ends), a client's answer
  to a handler's request (the process whose handler waits delivers it), and
  the doorbell of the event store;
- ``<prefix>:events:<stream id>``: the SSE streams clients may resume, kept
  by :class:`~mcp_sync.server.scale.redis_events.RedisEventStore`
  (:meth:`RedisBackend.event_store`).

Every Redis call is bounded by ``timeout`` seconds. Redis unreachable when
the app is made: :class:`~mcp_sync.server.backend.BackendUnavailable`, naming
the URL (without its password) and the reason. Unreachable later: a request
that raises a notification fails with ``BackendUnavailable`` (``-32603``)
instead of hanging; the receiving thread reconnects, backing off from 0.1 s
to 5 s, and resubscribes when Redis is back (notices published while it was
away are not replayed: pub/sub keeps nothing; but those for shared sessions
are on their streams, and the GET streams held here read what was stored
on them meanwhile; the copies of sessions held here read their records
again, so that no change to a session is lost).
A copy of a session is made only while the receiving thread is subscribed
(else the request gets 503), for the same reason.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ...protocol.types import (
    JSONRPCNotification,
    LoggingMessageNotificationParams,
    ResourceUpdatedNotificationParams,
)
from ...protocol.versions import admitting
from ..backend import BackendUnavailable, InProcessBackend, Notice, SessionListener
from ..session_records import SessionRecord, SessionUpdate
from ..stateless import RequestStateSealer

if TYPE_CHECKING:
    from ..core import MCPServer
    from .redis_events import RedisEventStore

__all__ = ["REDIS_URL_VARIABLE", "RedisBackend", "redact"]

log = logging.getLogger(__name__)

REDIS_URL_VARIABLE = "MCP_SYNC_REDIS_URL"
"""The environment variable naming the Redis of apps made without a ``backend``."""
READ_INTERVAL = 0.5
"""The longest the receiving thread blocks in one read (seconds): how soon it notices :meth:`RedisBackend.close`."""
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 5.0
_KINDS = ("resource_updated", "list_changed", "task_status", "log")
_SESSION_KINDS = ("session_ended", "session_update", "session_message", "session_stream")
_SUBSCRIBED = "u:"
"""What the field of a subscription in a session's record starts with (the URI follows)."""

# KEYS: the record, the index of sessions. ARGV: the session's id, ttl, subscribers' prefix, records' prefix, then
# the record's fields and values. Two members of the index are looked at first, and dropped if their record expired.
_CREATE = """
for _, other in ipairs(redis.call('SRANDMEMBER', KEYS[2], 2)) do
    if redis.call('EXISTS', ARGV[4] .. other) == 0 then
        redis.call('SREM', KEYS[2], other)
    end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
for i = 5, #ARGV, 2 do
    if string.sub(ARGV[i], 1, 2) == 'u:' then
        redis.call('SADD', ARGV[3] .. string.sub(ARGV[i], 3), ARGV[1])
    end
end
"""

# KEYS: the record. ARGV: the session's id, ttl, subscribers' prefix, log level ("": unchanged), channel, what is
# published, how many URIs are subscribed, then those URIs, then those unsubscribed. 0 when the session ended.
_UPDATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
    return 0
end
if ARGV[4] ~= '' then
    redis.call('HSET', KEYS[1], 'log_level', ARGV[4])
end
local subscribed = 7 + tonumber(ARGV[7])
for i = 8, #ARGV do
    if i <= subscribed then
        redis.call('HSET', KEYS[1], 'u:' .. ARGV[i], '1')
        redis.call('SADD', ARGV[3] .. ARGV[i], ARGV[1])
    else
        redis.call('HDEL', KEYS[1], 'u:' .. ARGV[i])
        redis.call('SREM', ARGV[3] .. ARGV[i], ARGV[1])
    end
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
"""

# KEYS: the record, the index of sessions. ARGV: the session's id, subscribers' prefix, channel, what is published.
_END = """
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(field, 1, 2) == 'u:' then
        redis.call('SREM', ARGV[2] .. string.sub(field, 3), ARGV[1])
    end
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
"""


def redact(url: str) -> str:
    """``url`` without its password, fit for logs and error messages.

    >>> redact("redis://:hunter2@cache:6379/0")
    'redis://:***@cache:6379/0'
    >>> redact("redis://127.0.0.1:6379/0")
    'redis://127.0.0.1:6379/0'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class RedisBackend:
    """A server's secret and notifications, shared through the Redis at ``url``.

    ``prefix`` names its keys and channel (default ``mcp-sync:<server name>``:
    servers of other names may share the Redis). ``timeout`` bounds every
    Redis call (seconds). Made, it checks that Redis answers, or raises
    :class:`~mcp_sync.server.backend.BackendUnavailable`.

    >>> try:
    ...     RedisBackend("redis://:secret@127.0.0.1:1/0", timeout=0.5)  # nothing listens on port 1
    ... except BackendUnavailable as error:
    ...     print(error.message.partition(": ")[0])
    Redis at redis://:***@127.0.0.1:1/0 is unavailable
    """

    def __init__(self, url: str, *, prefix: str | None = None, timeout: float = 2.0) -> None:
        self.url = redact(url)
        """The URL, without its password."""
        self.prefix = prefix
        self.timeout = timeout
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError as exc:
            raise BackendUnavailable(f"{self.url} needs redis-py: pip install 'mcp-sync-py[redis]'", cause=exc) from exc
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        # One quick retry (a pooled connection may have died with a Redis that has since come back), no backoff:
        # a request that must publish while Redis is down fails at once.
        self._client: Any = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=max(1, int(timeout * 5)),
        )
        # The receiver's own, without retries: a lost connection reaches it, which then subscribes again and has
        # the copies of sessions read their records again (redis-py would resubscribe silently, and what was
        # published meanwhile would be lost unnoticed).
        self._receiving_client: Any = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=max(1, int(timeout * 5)),
        )
        try:
            self.call(self._client.ping)
        except BackendUnavailable:
            self._client.close()
            self._receiving_client.close()
            raise
        self._create, self._update, self._end = (self._client.register_script(lua) for lua in (_CREATE, _UPDATE, _END))
        self._server: MCPServer | None = None
        self._secret = b""
        self._origin = ("", 0)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._subscribed = threading.Event()
        self._receiver: threading.Thread | None = None
        self._receiver_pid = 0
        self._listener: SessionListener | None = None
        self._events: RedisEventStore | None = None
        self.failures = 0
        """How many times the receiving thread lost Redis or failed to reach it (for monitoring)."""

    def call(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """``call(*args, **kwargs)`` against Redis; :class:`BackendUnavailable` saying why when it fails.

        For what else keeps its data in this Redis (the event store, the
        task store): a call bounded by ``timeout`` and failing as the
        backend's own do::

            value = backend.call(backend.redis.get, f"{backend.key_prefix}:mine")
        """
        try:
            return call(*args, **kwargs)
        except self._errors as exc:
            raise BackendUnavailable(f"Redis at {self.url} is unavailable: {exc}", cause=exc) from exc

    @property
    def redis(self) -> Any:
        """The redis-py client (its calls bounded by ``timeout``), for what else keeps its data here."""
        return self._client

    @property
    def key_prefix(self) -> str:
        """What every key (and the channel) of this backend starts with."""
        return self._prefix()

    @property
    def receiving(self) -> bool:
        """Whether this process's receiving thread is subscribed now (it is not while Redis is away)."""
        return self._subscribed.is_set()

    @property
    def channel(self) -> str:
        """The pub/sub channel of the notifications."""
        return f"{self._prefix()}:notices"

    def _prefix(self) -> str:
        server = self._server
        return self.prefix or f"mcp-sync:{server.info.name if server is not None else ''}"

    def attach(self, server: MCPServer) -> None:
        """Become ``server``'s backend; unless it was given a secret, give it the one all processes share."""
        self._server = server
        sealer = server.request_state_sealer
        if not sealer.secret_given:
            key = f"{self._prefix()}:request-state-secret"
            # The first process to start makes it; every other one reads that one.
            self.call(self._client.set, key, secrets.token_bytes(32), nx=True)
            shared: bytes = self.call(self._client.get, key)
            server.request_state_sealer = RequestStateSealer(shared, ttl=sealer.ttl, max_bytes=sealer.max_bytes)
            self._secret = shared
        server.backend = self

    def origin(self) -> str:
        """This process's mark on what it publishes (made anew in a forked child: workers must differ)."""
        pid = os.getpid()
        with self._lock:
            if self._origin[1] != pid:
                self._origin = (secrets.token_hex(8), pid)
            return self._origin[0]

    def publish(self, notice: Notice) -> None:
        """Publish ``notice`` for the other processes, having written it to the stream of each shared session it is
        addressed to; :class:`BackendUnavailable` when Redis does not take it."""
        fields: dict[str, Any] = {"o": self.origin(), "k": notice.kind, "s": notice.subject, "n": notice.key}
        if notice.detail is not None:
            fields["d"] = notice.detail
        data = json.dumps(fields)
        events, addressed = self._events, self._addressed(notice)
        try:
            if events is None or addressed is None:
                self._client.publish(self.channel, data)
                return
            message, index, levels = addressed
            server = self._server
            default_level = server.log_level if server is not None else None
            written = events.store_addressed(
                message,
                notice.key,
                index=index,
                records=self._session_key(""),
                levels=levels,
                default_level=default_level,
                notice=data,
            )
        except self._errors as exc:
            log.warning("could not publish a notification to Redis at %s: %s", self.url, exc)
            # What the client reads: no address of the server's infrastructure.
            raise BackendUnavailable(
                "the notification could not reach the server's other processes (its backend is unavailable)",
                cause=exc,
            ) from exc
        for stream_id in written:
            events.ring(stream_id)  # this process's own doorbell: its receiver skips what it published

    def _addressed(self, notice: Notice) -> tuple[JSONRPCNotification, str, tuple[str, ...] | None] | None:
        """What a shared session gets of ``notice``: the message, the index of the sessions it is addressed to, and
        the levels a session's must be one of (a log message); ``None`` when it goes to listen streams only."""
        if notice.kind == "resource_updated":
            params = ResourceUpdatedNotificationParams(uri=notice.subject).to_wire()
            updated = JSONRPCNotification(method="notifications/resources/updated", params=params)
            return updated, self._subscribers_key(notice.subject), None
        if notice.kind == "list_changed":
            changed = JSONRPCNotification(method=f"notifications/{notice.subject}/list_changed")
            return changed, self._sessions_key(), None
        if notice.kind == "log":
            detail = notice.detail or {}
            logged = LoggingMessageNotificationParams.model_validate({"level": notice.subject, **detail}).to_wire()
            message = JSONRPCNotification(method="notifications/message", params=logged)
            return message, self._sessions_key(), admitting(notice.subject)
        return None

    def start(self) -> None:
        """Start this process's receiving thread, unless it runs; wait (``timeout`` at most) until it subscribed.

        Called by the app at its first request in each process: a thread
        started before a fork does not run in the child.
        """
        pid = os.getpid()
        with self._lock:
            if self._receiver_pid == pid or self._stopping.is_set():
                return
            self._receiver_pid = pid
            self._subscribed.clear()
            self._receiver = threading.Thread(target=self._receive, name="mcp-sync-redis-receiver", daemon=True)
            self._receiver.start()
        if not self._subscribed.wait(self.timeout):
            log.warning("not yet subscribed to Redis at %s: notifications of other processes may be missed", self.url)

    def close(self) -> None:
        """Stop the receiving thread (joined here) and give the server back its in-process backend."""
        self._stopping.set()
        with self._lock:
            receiver, self._receiver = self._receiver, None
        if receiver is not None:
            receiver.join(READ_INTERVAL + 2 * self.timeout + 1.0)
        server, self._server = self._server, None
        if server is not None and server.backend is self:
            InProcessBackend().attach(server)
        self._client.close()
        self._receiving_client.close()

    # --------------------------------------------------------------- sessions

    @property
    def shares_sessions(self) -> bool:
        """Handshake-era sessions are kept in Redis: any process serves any of them."""
        return True

    def listen_sessions(self, listener: SessionListener) -> None:
        """Tell ``listener`` (the app) what other processes publish about sessions."""
        self._listener = listener

    def _session_key(self, session_id: str) -> str:
        return f"{self._prefix()}:session:{session_id}"

    def _sessions_key(self) -> str:
        return f"{self._prefix()}:sessions"

    def _subscribers_key(self, uri: str) -> str:
        return f"{self._prefix()}:subscribers:{uri}"

    def save_session(self, record: SessionRecord, ttl: float) -> None:
        """Keep a new session's ``record`` for ``ttl`` seconds (a hash), and index it (its id, its subscriptions)."""
        keys = [self._session_key(record.session_id), self._sessions_key()]
        fields = [item for pair in _record_fields(record).items() for item in pair]
        args = [record.session_id, _seconds(ttl), self._subscribers_key(""), self._session_key(""), *fields]
        self.call(self._create, keys=keys, args=args)

    def update_session(self, session_id: str, update: SessionUpdate, ttl: float) -> bool:
        """Make ``update`` to the record, push its expiry ``ttl`` seconds away and publish the change, all in one
        script: nothing else of the record is written, so a change another process makes at once is kept too, and
        every copy gets the changes in the order they were made. ``False`` when the session ended."""
        published = json.dumps({"o": self.origin(), "k": "session_update", "s": session_id, "u": update.to_wire()})
        args = [
            session_id,
            _seconds(ttl),
            self._subscribers_key(""),
            update.log_level or "",
            self.channel,
            published,
            len(update.subscribed),
            *sorted(update.subscribed),
            *sorted(update.unsubscribed),
        ]
        return bool(self.call(self._update, keys=[self._session_key(session_id)], args=args))

    def load_session(self, session_id: str, ttl: float) -> SessionRecord | None:
        """The record of ``session_id``, its expiry pushed ``ttl`` seconds away; ``None`` if gone.

        Read only while this process's receiver is subscribed (waiting ``timeout``
        at most, else :class:`BackendUnavailable`): a copy made from the record
        learns of later changes only from the channel, so a change published
        before the receiver subscribed would pass it by.
        """
        if not self._subscribed.wait(self.timeout):
            raise BackendUnavailable(f"Redis at {self.url} is unavailable: not subscribed to {self.channel} yet")
        key = self._session_key(session_id)
        pipeline = self._client.pipeline(transaction=True)
        pipeline.hgetall(key)
        pipeline.expire(key, _seconds(ttl))
        fields, _ = self.call(pipeline.execute)
        if not fields:
            return None
        try:
            return _record(session_id, fields)
        except (ValueError, TypeError):
            log.warning("ignored a malformed session record in %s", self._prefix())
            return None

    def touch_session(self, session_id: str, ttl: float) -> bool:
        """Push the record's expiry away (``EXPIRE``); ``False`` when it ended (the key is gone)."""
        return bool(self.call(self._client.expire, self._session_key(session_id), _seconds(ttl)))

    def end_session(self, session_id: str) -> None:
        """Delete the record (and its place in the indexes) and publish the end: every process drops its copy."""
        published = json.dumps({"o": self.origin(), "k": "session_ended", "s": session_id})
        keys = [self._session_key(session_id), self._sessions_key()]
        self.call(self._end, keys=keys, args=[session_id, self._subscribers_key(""), self.channel, published])

    def send_to_session(self, session_id: str, message: dict[str, Any]) -> None:
        """Publish a message for the session: a client's response (the process whose handler waits for it delivers
        it), or a message for the GET stream (the process holding it writes it)."""
        self._publish_session({"k": "session_message", "s": session_id, "m": message})

    def stream_opened(self, session_id: str) -> None:
        """Publish that the session's GET stream opened here: the process holding an older one ends it."""
        self._publish_session({"k": "session_stream", "s": session_id})

    def event_store(self) -> RedisEventStore:
        """The SSE events in Redis (see :mod:`~mcp_sync.server.scale.redis_events`): made once, with its defaults."""
        from .redis_events import RedisEventStore

        return self._events or RedisEventStore(self)

    def follow_events(self, store: RedisEventStore) -> None:
        """Tell ``store`` (made on this backend) of the events other processes store: it watches for them."""
        self._events = store

    def _publish_session(self, fields: dict[str, Any]) -> None:
        self.call(self._client.publish, self.channel, json.dumps({"o": self.origin(), **fields}))

    # -------------------------------------------------------------- receiving

    def _receive(self) -> None:
        """The receiving thread: subscribe, deliver what arrives; on failure back off and subscribe again."""
        backoff = FIRST_BACKOFF
        failing = False
        while not self._stopping.is_set():
            pubsub = self._receiving_client.pubsub()
            try:
                self._subscribe(pubsub)
                while not self._stopping.is_set():
                    # A blocking read: a message wakes it at once; the timeout only bounds how late close() is seen.
                    message = pubsub.get_message(timeout=READ_INTERVAL)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._subscribed.set()
                        if failing:
                            log.info("subscribed to Redis at %s again", self.url)
                            self._reseed()
                        # Subscribed again (or first: nothing to read then), after a time when nothing was heard.
                        self._resync()
                        failing, backoff = False, FIRST_BACKOFF
                    else:  # one channel, never left: the rest are its messages
                        self._dispatch(message["data"])
            except self._errors as exc:
                self._subscribed.clear()
                self.failures += 1
                if not failing:
                    log.warning("lost Redis at %s (%s): reconnecting", self.url, exc)
                failing = True
            finally:
                pubsub.close()
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def _subscribe(self, pubsub: Any) -> None:
        """Subscribe ``pubsub`` to the channel: at the start, and again each time the connection was lost.

        A seam: a test that holds it back (as a busy process would be slow to
        subscribe) has the window between losing the connection and hearing
        again, and can publish exactly in it.
        """
        pubsub.subscribe(self.channel)

    def _reseed(self) -> None:
        """Put the shared secret back after Redis lost it (a restart without persistence), for processes to come."""
        if self._secret:
            key = f"{self._prefix()}:request-state-secret"
            self._client.set(key, self._secret, nx=True)

    def _resync(self) -> None:
        """Subscribed again: what was published meanwhile is lost, so the listener's copies of sessions take their
        records again, and the streams watched here read what was stored on them (their doorbells rang unheard)."""
        listener = self._listener
        if listener is not None:
            try:
                listener.sessions_missed()
            except Exception:
                log.exception("refreshing the copies of sessions from Redis failed")
        events = self._events
        if events is not None:
            events.ring_all()

    def _dispatch(self, data: bytes) -> None:
        """Deliver one published notice to this process's sessions, unless this process published it."""
        try:
            fields = json.loads(data)
            origin, kind, subject = fields["o"], fields["k"], fields["s"]
        except (ValueError, TypeError, KeyError):
            log.warning("ignored a malformed message on %s", self.channel)
            return
        server = self._server
        if not isinstance(subject, str) or server is None:
            return
        if kind == "session_update":  # this process's own too: every copy makes the changes in one order
            self._dispatch_session(kind, subject, fields)
            return
        if origin == self.origin():
            return
        if kind in _SESSION_KINDS:
            self._dispatch_session(kind, subject, fields)
            return
        if kind == "stream_event":
            self._ring(subject)
            return
        if kind not in _KINDS:
            return
        key, detail = fields.get("n"), fields.get("d")
        try:
            notice = Notice(kind, subject, key) if isinstance(key, str) else Notice(kind, subject)
            server.deliver(replace(notice, detail=detail) if isinstance(detail, dict) else notice)
        except Exception:
            log.exception("delivering a notification from another process failed")

    def _ring(self, stream_id: str) -> None:
        """Another process stored an event on ``stream_id``: whoever holds its connection here reads it."""
        events = self._events
        if events is not None:
            events.ring(stream_id)  # it logs a failure of its own

    def _dispatch_session(self, kind: str, session_id: str, fields: dict[str, Any]) -> None:
        """Give the listener (the app) what another process said about a session."""
        listener = self._listener
        if listener is None:
            return
        try:
            if kind == "session_ended":
                listener.session_ended(session_id)
            elif kind == "session_update":
                listener.session_updated(session_id, SessionUpdate.from_wire(fields["u"]))
            elif kind == "session_stream":
                listener.session_stream_opened(session_id)
            else:
                message = fields["m"]
                if isinstance(message, dict):
                    listener.session_message(session_id, message)
        except Exception:
            log.exception("handling a session message from another process failed")


def _seconds(ttl: float) -> int:
    """A TTL as Redis takes it: whole seconds, at least one."""
    return max(1, math.ceil(ttl))


def _record_fields(record: SessionRecord) -> dict[str, str]:
    """``record`` as the fields of its hash (what is ``None`` is left out)."""
    fields = {
        "revision": record.revision,
        "capabilities": json.dumps(record.capabilities),
        "client_info": json.dumps(record.client_info),
    }
    optional = {"log_level": record.log_level, "principal": record.principal, "stream": record.stream}
    fields.update({name: value for name, value in optional.items() if value is not None})
    fields.update({f"{_SUBSCRIBED}{uri}": "1" for uri in record.subscriptions})
    return fields


def _record(session_id: str, stored: dict[bytes, bytes]) -> SessionRecord:
    """The record of ``session_id`` kept as the hash ``stored``; ``ValueError`` (or ``TypeError``) when it is not."""
    fields = {name.decode(): value.decode() for name, value in stored.items()}
    capabilities = json.loads(fields.get("capabilities") or "{}")
    client_info = json.loads(fields.get("client_info") or "null")
    if "revision" not in fields or not isinstance(capabilities, dict):
        raise ValueError("not a session record")
    return SessionRecord(
        session_id,
        fields["revision"],
        capabilities=capabilities,
        client_info=client_info,
        log_level=fields.get("log_level"),
        subscriptions=frozenset(name[len(_SUBSCRIBED) :] for name in fields if name.startswith(_SUBSCRIBED)),
        principal=fields.get("principal"),
        stream=fields.get("stream"),
    )
