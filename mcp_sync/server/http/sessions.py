"""HTTP sessions: where what an MCP session sends goes, over HTTP.

Over HTTP a session has no single wire. Its client POSTs each message, and
what the server sends must find the right HTTP response:

- the response to a request goes back on the POST that carried the request
  (the oldest such POST when a client reuses an id while the first is in flight);
- a notification or request that a handler emits while serving a request
  (progress, log messages, sampling) goes on that request's POST, which
  then turns into an SSE stream;
- a notification tagged with a subscription (2026-07-28: its ``_meta`` names
  a ``subscriptions/listen`` request) goes on that request's POST, which
  stays open as the subscription's stream;
- anything else (list changes, resource updates, messages sent from other
  threads) goes on the standalone stream the client opened with GET.

:class:`StreamableSessionTransport` does that routing for one session of the
Streamable HTTP transport, :class:`LegacySSETransport` for one connection of
the 2024-11-05 HTTP+SSE transport (everything on one stream), and
:class:`SessionRegistry` keeps the sessions of an app by id, ending the idle.

The HTTP layer reads what a response must carry from a queue of
:class:`StreamEvent` items and :class:`Signal` values.

>>> transport = StreamableSessionTransport(event_store=None)
>>> post = transport.open_post(7, priming=False)
>>> from mcp_sync.protocol.jsonrpc import error_response
>>> transport.send(error_response(7, -32601, "Method not found: nope"))
>>> post.queue.get_nowait().message.id
7
>>> transport.close()
"""

from __future__ import annotations

import collections
import enum
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...protocol.errors import MCP_CODES, MCPTransportError
from ...protocol.jsonrpc import InvalidMessage
from ...protocol.stateless import SUBSCRIPTION_ID
from ...protocol.types import (
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    RequestId,
)
from ...runtime.request_context import RequestContext
from ...runtime.transport import BaseTransport
from ...runtime.workers import stay_on_this_thread
from .event_store import EventStore, SharedEventStore

if TYPE_CHECKING:
    from ..authorization import AuthInfo
    from ..session import ServerSession

__all__ = [
    "HTTPSession",
    "LegacySSETransport",
    "PostedRequest",
    "SSEStream",
    "SessionRegistry",
    "Signal",
    "StreamEvent",
    "StreamableSessionTransport",
    "close_sessions",
]

log = logging.getLogger(__name__)

SERVER_WIDE = frozenset(
    {
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    }
)
"""The notifications every process delivers to its copy of a shared session (see ``shared``)."""
MAX_FINISHED_STREAMS = 64
"""Finished POST streams of one session that stay resumable (their events replayable)."""


class Signal(enum.Enum):
    """What ends a stream, besides its events."""

    END = "end"
    """The stream is complete (its response was sent, or its request was cancelled)."""
    CLOSED = "closed"
    """The session ended."""


@dataclass(frozen=True)
class StreamEvent:
    """One SSE event: its id (``None`` when not resumable) and message (``None`` for a priming event)."""

    event_id: str | None
    message: JSONRPCMessage | None


Item = StreamEvent | Signal


class SSEStream:
    """An SSE stream of a session and the queue of the connection reading it now, if any."""

    def __init__(self, stream_id: str | None) -> None:
        self.stream_id = stream_id
        self.consumer: queue.SimpleQueue[Item] | None = None
        self.finished = False
        self.shared = False
        """Kept in a :class:`SharedEventStore` that every process writes: its consumer reads the store."""
        self.sent: str | None = None
        """For a shared stream: the id of the last event its consumer got (or that it started after)."""

    def put(self, item: Item) -> None:
        """Hand ``item`` to the connection reading the stream; dropped when none is."""
        if self.consumer is not None:
            self.consumer.put(item)


class PostedRequest(SSEStream):
    """The HTTP side of a POSTed request: it waits for the response and streams what relates to it.

    ``mode`` starts ``"undecided"``; the first message sent for the request
    decides it: the response makes it ``"json"``, anything else ``"sse"``.
    ``json_only`` posts never stream: related messages then go to the
    standalone stream.
    """

    def __init__(self, request_id: RequestId, *, json_only: bool, priming: bool, auth: AuthInfo | None = None) -> None:
        super().__init__(None)
        self.request_id = request_id
        self.auth = auth
        """Who the request speaks for (its verified token's facts), for the handler's ``ctx.auth``."""
        self.json_only = json_only
        self.priming = priming
        self.mode = "undecided"
        self.context: RequestContext | None = None
        self.queue: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.consumer = self.queue


class StreamableSessionTransport(BaseTransport):
    """The server end of one Streamable HTTP session.

    The HTTP layer passes each incoming message to :meth:`receive`, and opens
    a :class:`PostedRequest` before passing a request. With an ``event_store``
    every SSE event gets an id and streams can be resumed; without one (the
    stateless mode) events carry no ids and there is no standalone stream.

    With ``inline=True`` the session runs a request's handler on the thread
    that passes the request to :meth:`receive` (it has no threads of its
    own): for sessions that serve one request, passed in by a
    :class:`~mcp_sync.runtime.workers.ElasticPool` thread. Any session runs
    the handler of a request passed in by :meth:`serve_here` on that thread.
    """

    network_transport = "tcp"

    def __init__(self, *, event_store: EventStore | None, inline: bool = False) -> None:
        super().__init__()
        self.inline = inline
        self._serving_here = threading.local()  # .request: the request serve_here() passes in on this thread
        self._store = event_store
        self._routes = threading.Lock()
        self._waiting: dict[RequestId, list[PostedRequest]] = {}
        self._streams: collections.OrderedDict[str, SSEStream] = collections.OrderedDict()
        self.dispatcher: object | None = None
        self.shared = False
        """Whether other processes hold copies of the session (a Redis backend): each of them delivers the
        server-wide notifications (:data:`SERVER_WIDE`) to its copy, so they go on the GET stream only, never on
        the POST of the request that raised them, or a client would get them twice."""
        self.forward: Callable[[JSONRPCMessage], None] | None = None
        """Set for a shared session: passes on what must go on the GET stream when that stream is not open here
        (it may be open in another process). Not for :data:`SERVER_WIDE` notifications: every process has those."""
        self.standalone: SSEStream | None = None
        if event_store is not None:
            self.standalone = SSEStream(_new_stream_id())
            self._streams[self.standalone.stream_id or ""] = self.standalone

    def share_standalone(self, stream_id: str) -> None:
        """With a :class:`SharedEventStore`: make the standalone stream ``stream_id``, the one every process's copy
        of the session writes to and any replays, so that a client resumes it wherever its GET lands.

        Called before the session is kept where requests find it, so no connection reads the stream yet.
        """
        store, stream = self._store, self.standalone
        if not isinstance(store, SharedEventStore) or stream is None:
            return
        with self._routes:
            del self._streams[stream.stream_id or ""]
            stream.stream_id, stream.shared = stream_id, True
            self._streams[stream_id] = stream
            store.watch(stream_id, self._wake)

    def bind(self, session: ServerSession) -> None:
        """Know the session served here: its handlers' messages are the related ones."""
        self.dispatcher = session.dispatcher

    def receive(self, message: JSONRPCMessage | InvalidMessage) -> None:
        """Pass a message from the client to the session."""
        self._deliver(message)

    def serve_here(self, request: JSONRPCRequest) -> None:
        """Pass ``request`` to the session and run its handler on this thread, which the HTTP host lends: no hand-off
        to a handler thread and back (a handler over the session's own limit still waits for one)."""
        self._serving_here.request = request
        try:
            self._deliver(request)
        finally:
            self._serving_here.request = None

    @property
    def handoff_reading(self) -> Callable[[], None] | None:  # type: ignore[override]  # (read-only: per thread)
        """``stay_on_this_thread`` (the handler runs on the thread that passed the request in) for an inline session
        and for :meth:`serve_here`; ``None`` (the session's pool runs it) for the other requests."""
        if self.inline or getattr(self._serving_here, "request", None) is not None:
            return stay_on_this_thread
        return None

    # ------------------------------------------------------------ posts

    def open_post(
        self,
        request_id: RequestId,
        *,
        json_only: bool = False,
        priming: bool,
        auth: AuthInfo | None = None,
        reader: queue.SimpleQueue[Item] | None = None,
    ) -> PostedRequest:
        """Wait for the answer to request ``request_id``, before it is passed on (into ``reader`` if given)."""
        post = PostedRequest(request_id, json_only=json_only, priming=priming, auth=auth)
        if reader is not None:  # a request of a batch: its answer joins the others'
            post.queue = post.consumer = reader
        with self._routes:
            if self.closed:
                post.put(Signal.CLOSED)
            else:
                self._waiting.setdefault(request_id, []).append(post)
        return post

    def auth_of(self, request_id: RequestId) -> AuthInfo | None:
        """The auth a POST of ``request_id`` came with (``None`` once no POST waits for it)."""
        with self._routes:
            posts = self._waiting.get(request_id, [])
            return posts[0].auth if posts else None

    def start_streaming(self, post: PostedRequest) -> None:
        """Turn a POST's answer into an SSE stream now, unless its response came first."""
        with self._routes:
            if post.mode == "undecided":
                self._start_sse(post)

    def cancel(self, request_id: RequestId) -> None:
        """The client cancelled ``request_id``: its POSTs end without a response."""
        with self._routes:
            for post in self._waiting.pop(request_id, []):
                post.finished = True
                post.put(Signal.END)

    def _start_sse(self, post: PostedRequest) -> None:
        post.mode = "sse"
        if self._store is None:
            return
        post.stream_id = _new_stream_id()
        self._streams[post.stream_id] = post
        finished = [key for key, stream in self._streams.items() if stream.finished]
        for key in finished[: max(0, len(finished) - MAX_FINISHED_STREAMS)]:
            del self._streams[key]
            self._store.forget(key)
        if post.priming:
            post.put(StreamEvent(self._store.store(post.stream_id, None), None))

    # -------------------------------------------------------------- routing

    def send_routed(self, message: JSONRPCMessage, request: RequestContext | None, once: str | None = None) -> None:
        """Send ``message`` on the stream of the POST of ``request``, whose handler sends it (its response ends
        that POST), or, for the server-wide notification ``once`` names, once on a stream shared by processes."""
        if self.closed:
            raise MCPTransportError(MCP_CODES.TRANSPORT_CLOSED, "cannot send: the transport is closed")
        self._route(message, request, once)

    def _write(self, message: JSONRPCMessage) -> None:
        self._route(message, None, None)

    def _route(self, message: JSONRPCMessage, context: RequestContext | None, once: str | None) -> None:
        if isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)):
            self._route_response(message, context)
            return
        wide = self._server_wide(message, once)
        with self._routes:
            post = self._subscription(message) or (None if wide else self._related_post(context))
            if post is not None:
                if post.mode == "undecided":
                    self._start_sse(post)
                self._emit(post, message)
                return
            stream = self.standalone
            if stream is not None and stream.shared:
                if wide and once is not None:
                    # The process that raised it wrote it to this stream, as to every stream it is addressed to
                    # (the backend, see RedisBackend.publish): whether or not a copy of the session was anywhere.
                    return
                # Every process writes to the shared stream; the one holding its connection sends it.
                self._emit(stream, message)
                return
            is_request = isinstance(message, JSONRPCRequest)
            forward = self.forward
            if stream is None or stream.consumer is not None or wide:
                forward = None
            if forward is None and stream is not None and (stream.consumer is not None or not is_request):
                self._emit(stream, message)
                return
        if forward is not None:
            forward(message)
            return
        if is_request:
            raise MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                "no open stream can carry a request to the client: it must open the GET stream",
            )
        log.debug("dropped %s: no stream to carry it", getattr(message, "method", "a message"))

    def _subscription(self, message: JSONRPCMessage) -> PostedRequest | None:
        """The streaming POST of the ``subscriptions/listen`` request a notification is tagged with, if any.

        Change notifications come from any thread (whatever changed the
        list); their ``_meta`` names the subscription, which is the id of the
        listen request whose response stream carries them.
        """
        if not isinstance(message, JSONRPCNotification):
            return None
        meta = (message.params or {}).get("_meta")
        tag = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if not isinstance(tag, (str, int)) or isinstance(tag, bool):
            return None
        return next((e for e in self._waiting.get(tag, ()) if not e.json_only), None)

    def _server_wide(self, message: JSONRPCMessage, once: str | None) -> bool:
        """Whether every process delivers ``message`` to its copy of the session: one of :data:`SERVER_WIDE`, or
        any notification that names the server-wide notice it is (``once``: a log message of the server's)."""
        if not self.shared or not isinstance(message, JSONRPCNotification):
            return False
        return once is not None or message.method in SERVER_WIDE

    def _related_post(self, context: RequestContext | None) -> PostedRequest | None:
        """The streaming POST of the request ``context`` (whose handler sends a message), if any; bound to it, so
        that its response goes there too."""
        if context is None or context.dispatcher is not self.dispatcher or context.answered:
            return None  # (answered: a POST reusing its id is another request's)
        candidates = self._waiting.get(context.request_id, [])
        bound = next((e for e in candidates if e.context is context), None)
        if bound is None:
            bound = next((e for e in candidates if e.context is None), None)
            if bound is None:
                return None
            bound.context = context
        return None if bound.json_only else bound

    def _route_response(
        self, message: JSONRPCResultResponse | JSONRPCErrorResponse, context: RequestContext | None
    ) -> None:
        with self._routes:
            post = self._take(message.id, context)
            if post is None:
                log.debug("dropped the response to %r: no POST waits for it", message.id)
                return
            post.finished = True
            if post.mode == "sse":
                self._emit(post, message)
                post.put(Signal.END)
            else:
                post.mode = "json"
                post.put(StreamEvent(None, message))

    def _take(self, request_id: RequestId | None, context: RequestContext | None) -> PostedRequest | None:
        """The POST that gets the response to ``request_id``: the one bound to the request ``context`` answers
        (its handler sent something there first), else the first not bound to another (FIFO)."""
        candidates = self._waiting.get(request_id) if request_id is not None else None
        if not candidates or request_id is None:
            return None
        mine = next((e for e in candidates if context is not None and e.context is context), None)
        if mine is None:
            mine = next((e for e in candidates if e.context is None), candidates[0])
        candidates.remove(mine)
        if not candidates:
            del self._waiting[request_id]
        return mine

    def _emit(self, stream: SSEStream, message: JSONRPCMessage) -> None:
        """Put ``message`` on ``stream`` (a shared one: in the shared store, then its consumer here reads it)."""
        event_id = None
        if stream.shared:
            assert isinstance(self._store, SharedEventStore) and stream.stream_id is not None
            self._store.store_once(stream.stream_id, message, None)
            self._catch_up(stream)
            return
        if self._store is not None and stream.stream_id is not None:
            event_id = self._store.store(stream.stream_id, message)
        stream.put(StreamEvent(event_id, message))

    def _catch_up(self, stream: SSEStream) -> None:
        """Give a shared stream's consumer, in the store's order, the events after the last it got."""
        consumer = stream.consumer
        if consumer is None or stream.sent is None or self._store is None:
            return
        missed: list[StreamEvent] = []
        self._store.replay_after(stream.sent, lambda eid, msg: missed.append(StreamEvent(eid, msg)))
        for event in missed:
            consumer.put(event)
            stream.sent = event.event_id

    def _wake(self) -> None:
        """Another process stored an event on the shared standalone stream: send it, if its connection is here."""
        with self._routes:
            assert self.standalone is not None  # only a transport with a standalone stream watches one
            self._catch_up(self.standalone)

    # -------------------------------------------------------------- streams

    def attach(self, last_event_id: str | None, *, priming: bool) -> tuple[SSEStream, queue.SimpleQueue[Item]] | None:
        """Give a GET connection a stream to read; ``None`` when the standalone stream already has one.

        With ``last_event_id`` from one of this session's streams, the
        events after it are replayed first and the stream goes on live (or
        ends, when it was finished). A client resuming has lost its old
        connection even if the server has not noticed yet: that connection
        is ended and the new one takes its place. Otherwise the standalone
        stream opens.

        With a :class:`SharedEventStore`, a shared standalone stream resumes
        from an event any process sent; a POST's stream that another process
        serves (or served, before it died) has what it kept replayed, then
        ends: the client resumes again for more (its answer, once written).
        """
        assert self._store is not None and self.standalone is not None
        reader: queue.SimpleQueue[Item] = queue.SimpleQueue()
        with self._routes:
            standalone = self.standalone
            if standalone.shared and (last_event_id or "").rpartition(":")[0] == standalone.stream_id:
                # The client lost its old connection, here or in a process that may have died since.
                standalone.put(Signal.END)
                standalone.consumer, standalone.sent = reader, last_event_id
                self._catch_up(standalone)
                return standalone, reader
            if last_event_id is not None:
                missed: list[StreamEvent] = []
                stream_id = self._store.replay_after(
                    last_event_id, lambda eid, msg: missed.append(StreamEvent(eid, msg))
                )
                stream = self._streams.get(stream_id or "")
                if stream is None and stream_id is not None and standalone.shared:
                    stream = SSEStream(stream_id)  # another process's POST stream: what it kept, then the end
                    stream.finished = True
                if stream is not None:
                    stream.put(Signal.END)
                    for event in missed:
                        reader.put(event)
                    if stream.finished:
                        reader.put(Signal.END)
                    else:
                        stream.consumer = reader
                    return stream, reader
            if standalone.consumer is not None:
                return None
            if self.closed:
                reader.put(Signal.CLOSED)
            elif priming or standalone.shared:
                # Kept first (a shared store may fail): a shared stream goes on from this event, sent when priming.
                standalone.sent = self._start(standalone)
                if priming:
                    reader.put(StreamEvent(standalone.sent, None))
            standalone.consumer = reader
            return standalone, reader

    def _start(self, stream: SSEStream) -> str | None:
        """The id of a new (priming) event starting ``stream``: for a shared stream, in the shared store."""
        assert self._store is not None and stream.stream_id is not None
        if stream.shared:
            assert isinstance(self._store, SharedEventStore)
            return self._store.store_once(stream.stream_id, None, None)
        return self._store.store(stream.stream_id, None)

    def write_standalone(self, message: JSONRPCMessage) -> bool:
        """Write ``message`` on the standalone stream if a connection reads it here (another process passed it on)."""
        with self._routes:
            stream = self.standalone
            if stream is None or stream.consumer is None:
                return False
            self._emit(stream, message)
            return True

    def end_standalone(self) -> None:
        """End the connection reading the standalone stream, if any (it opened again in another process)."""
        with self._routes:
            stream = self.standalone
            if stream is not None and stream.consumer is not None:
                stream.put(Signal.END)
                stream.consumer = None

    def detach(self, stream: SSEStream, reader: queue.SimpleQueue[Item]) -> None:
        """The connection reading ``stream`` through ``reader`` ended: keep the events for a resume."""
        with self._routes:
            if stream.consumer is reader:
                stream.consumer = None

    # ------------------------------------------------------------ lifecycle

    def _handlers_changed(self) -> None:
        """Nothing to start: messages arrive on the HTTP server's threads."""

    def _shutdown(self) -> None:
        with self._routes:
            posts = [e for waiting in self._waiting.values() for e in waiting]
            self._waiting.clear()
            streams = list(self._streams.values())
            self._streams.clear()
            self.dispatcher = None  # routes nothing more; and no cycle with it is left to collect
        for stream in {*posts, *streams}:
            stream.put(Signal.CLOSED)
        store = self._store
        if store is None:
            return  # served without a store (every 2026-07-28 request): no event was kept
        if isinstance(store, SharedEventStore) and self.standalone is not None and self.standalone.shared:
            store.unwatch(self.standalone.stream_id or "", self._wake)
        for stream in streams:
            if not stream.shared:  # other processes' copies of the session still use it: it expires
                store.forget(stream.stream_id or "")


class LegacySSETransport(BaseTransport):
    """The server end of one 2024-11-05 HTTP+SSE connection: everything goes on its one stream."""

    network_transport = "tcp"

    def __init__(self) -> None:
        super().__init__()
        self.stream = SSEStream(None)
        self.reader: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.stream.consumer = self.reader

    def bind(self, session: ServerSession) -> None:
        """Nothing to learn: every message takes the same way."""

    def receive(self, message: JSONRPCMessage | InvalidMessage) -> None:
        """Pass a message from the client to the session."""
        self._deliver(message)

    def _write(self, message: JSONRPCMessage) -> None:
        self.stream.put(StreamEvent(None, message))

    def _handlers_changed(self) -> None:
        """Nothing to start: messages arrive on the HTTP server's threads."""

    def _shutdown(self) -> None:
        self.stream.put(Signal.CLOSED)


SessionTransport = StreamableSessionTransport | LegacySSETransport


@dataclass(eq=False)
class HTTPSession:
    """A session as the HTTP layer keeps it."""

    session_id: str
    transport: SessionTransport
    session: ServerSession
    principal: str | None
    last_seen: float
    active: int = 0

    @property
    def legacy(self) -> bool:
        """Whether this is a 2024-11-05 HTTP+SSE connection."""
        return isinstance(self.transport, LegacySSETransport)


_SWEEP_INTERVAL = 1.0
"""The most often (seconds of the registry's clock) adding a session sweeps out the expired ones."""


class SessionRegistry:
    """The sessions of one app by id, at most ``max_sessions``, ending those idle too long.

    A session is idle when no HTTP request of it is being served (an open
    SSE stream counts as one) for ``idle_timeout`` seconds of ``clock``.
    Expired sessions are found when looked up, and swept when a session is
    added, at most once per ``min(idle_timeout, 1 s)`` (a sweep looks at
    every session: thousands of them must not be scanned per new one) and
    always when the registry is full; no thread runs for it.
    """

    def __init__(self, *, max_sessions: int, idle_timeout: float, clock: Callable[[], float]) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, HTTPSession] = {}
        self._closed = False
        self._swept_at: float | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    @staticmethod
    def new_id() -> str:
        """A fresh session id: 192 random bits as 32 URL-safe characters."""
        return secrets.token_urlsafe(24)

    def add(self, entry: HTTPSession) -> bool:
        """Keep ``entry``; ``False`` when the registry is full or closed."""
        now = self.clock()
        with self._lock:
            due = (
                self._swept_at is None
                or now - self._swept_at >= min(self.idle_timeout, _SWEEP_INTERVAL)
                or len(self._sessions) >= self.max_sessions
            )
        if due:
            self.sweep()
        with self._lock:
            if self._closed or len(self._sessions) >= self.max_sessions:
                return False
            entry.last_seen = self.clock()
            entry.active += 1
            self._sessions[entry.session_id] = entry
            return True

    def get(self, session_id: str) -> HTTPSession | None:
        """The live session ``session_id``, marked busy (call :meth:`release` after); ``None`` if gone."""
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is not None and not self._expired(entry, self.clock()):
                entry.active += 1
                return entry
            if entry is not None:
                del self._sessions[session_id]
        if entry is not None:
            entry.session.close()
        return None

    def adopt(self, entry: HTTPSession) -> HTTPSession | None:
        """Keep ``entry`` unless a live session of its id is kept already: the one kept, marked busy.

        ``None`` when the registry is full or closed. For sessions another
        process opened, which two requests may bring here at once: the caller
        closes its own session when another is returned.
        """
        now = self.clock()
        with self._lock:
            kept = self._sessions.get(entry.session_id)
            if kept is not None and not self._expired(kept, now):
                kept.active += 1
                return kept
            if self._closed or len(self._sessions) >= self.max_sessions:
                return None
            entry.last_seen = now
            entry.active += 1
            self._sessions[entry.session_id] = entry
        if kept is not None:
            kept.session.close()  # expired here, replaced by the copy made now
        return entry

    def entries(self) -> list[HTTPSession]:
        """The sessions kept now (without marking them busy)."""
        with self._lock:
            return list(self._sessions.values())

    def peek(self, session_id: str) -> HTTPSession | None:
        """The session ``session_id`` if kept, without marking it busy or ending it."""
        with self._lock:
            return self._sessions.get(session_id)

    def release(self, entry: HTTPSession) -> None:
        """A request of ``entry`` was served: the idle time starts again."""
        with self._lock:
            entry.active -= 1
            entry.last_seen = self.clock()

    def remove(self, session_id: str) -> HTTPSession | None:
        """Forget ``session_id`` and end its session; the entry it had, if any."""
        with self._lock:
            entry = self._sessions.pop(session_id, None)
        if entry is not None:
            entry.session.close()
        return entry

    def sweep(self) -> None:
        """End the sessions that are idle too long or already closed."""
        now = self.clock()
        with self._lock:
            self._swept_at = now
            expired = [e for e in self._sessions.values() if self._expired(e, now)]
            for entry in expired:
                del self._sessions[entry.session_id]
        for entry in expired:
            entry.session.close()

    def take_all(self) -> list[ServerSession]:
        """Forget every session and refuse later :meth:`add` calls; the sessions, for the caller to close."""
        with self._lock:
            self._closed = True
            entries = list(self._sessions.values())
            self._sessions.clear()
        return [entry.session for entry in entries]

    def _expired(self, entry: HTTPSession, now: float) -> bool:
        if entry.session.closed:
            return True
        return entry.active == 0 and now - entry.last_seen >= self.idle_timeout


def close_sessions(sessions: list[ServerSession], timeout: float = 5.0) -> None:
    """End ``sessions`` together, waiting at most ``timeout`` seconds in all for their handlers.

    Every connection is closed first, which wakes every stream and cancels
    every running handler at once; then the handler threads are joined.
    """
    for session in sessions:
        session.transport.close()
    deadline = time.monotonic() + timeout
    for session in sessions:
        session.dispatcher.close(max(0.0, deadline - time.monotonic()))


def _new_stream_id() -> str:
    return secrets.token_urlsafe(12)
