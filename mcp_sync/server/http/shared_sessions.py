"""Handshake-era sessions shared by the processes that serve one server (through its backend, Redis say).

:class:`SharedSessions` keeps each session this process holds in the
backend as it changes, makes a copy here of a session another process
opened when one of its requests arrives, and applies what other processes
say of the sessions (it is the backend's
:class:`~mcp_sync.server.backend.SessionListener`). With a backend that
shares no sessions (one process) it does nothing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import threading
from collections.abc import Callable
from typing import Any, cast

from ...protocol.jsonrpc import InvalidMessage, decode_message, encode_message
from ...protocol.types import (
    ClientCapabilities,
    Implementation,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    LoggingLevel,
)
from ..backend import Backend, BackendUnavailable, InProcessBackend
from ..scale.redis_backend import REDIS_URL_VARIABLE, RedisBackend
from ..session import ServerSession
from ..session_records import SessionRecord, SessionUpdate
from .answers import receive
from .event_store import EventStore, SharedEventStore
from .sessions import HTTPSession, SessionRegistry, StreamableSessionTransport
from .wire import DEFAULT_REVISION


def open_backend(backend: Backend | str | None) -> Backend:
    """The backend an app was given: itself, one for a Redis URL, or (unset) from the environment."""
    if backend is None:
        backend = os.environ.get(REDIS_URL_VARIABLE) or None
    if backend is None:
        return InProcessBackend()
    if isinstance(backend, str):
        return RedisBackend(backend)
    return backend


FROM_CLIENT = "mcp_sync.from_client"
"""Marks a message passed on to the other processes as the client's (a cancellation), not one for its GET stream:
dropped before the message is read."""


def stream_id(session_id: str) -> str:
    """The id of a shared session's GET stream, the same in every process."""
    return f"{session_id}.get"


def is_response(message: JSONRPCMessage) -> bool:
    """Whether ``message`` is a JSON-RPC response (a result or an error)."""
    return isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse))


def is_cancellation(message: JSONRPCMessage) -> bool:
    """Whether ``message`` is a ``notifications/cancelled``."""
    return isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled"


def response_to(message: JSONRPCMessage | InvalidMessage, session: ServerSession) -> bool:
    """Whether ``message`` answers a request ``session`` sent and still waits for."""
    if not isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)) or message.id is None:
        return False
    return session.dispatcher.awaits(message.id)


def restore(session: ServerSession, record: SessionRecord) -> None:
    """Give ``session`` the state another process keeps for it."""
    session.restore(
        record.revision,
        capabilities=ClientCapabilities.model_validate(record.capabilities),
        client_info=Implementation.model_validate(record.client_info) if record.client_info is not None else None,
        log_level=cast(LoggingLevel | None, record.log_level),
        subscriptions=record.subscriptions,
    )


class SharedSessions:
    """This process's part in sessions kept by ``backend``.

    ``sessions`` are the sessions this process holds, ``event_store`` the
    store of their streams, and ``start_session`` makes a session for a
    transport (as the app makes every session: with its auth rule).
    """

    def __init__(
        self,
        backend: Backend,
        sessions: SessionRegistry,
        event_store: EventStore,
        start_session: Callable[[StreamableSessionTransport], ServerSession],
    ) -> None:
        self.backend = backend
        self.sessions = sessions
        self.event_store = event_store
        self._start_session = start_session
        self._copying = threading.Lock()  # held while a copy of a shared session is made from its record
        if backend.shares_sessions:
            backend.listen_sessions(self)

    def find(self, session_id: str, entry: HTTPSession | None) -> HTTPSession | None:
        """The copy here, if the session lives; else one made from its record (raises ``BackendUnavailable``).

        A session this process holds has its record's expiry pushed away (and
        is dropped when the record is gone: it ended elsewhere); one it does
        not is made from the record another process keeps, and kept here.
        """
        ttl = self.sessions.idle_timeout
        if entry is not None:
            if entry.legacy:
                return entry
            if not self.backend.touch_session(session_id, ttl):
                self.sessions.release(entry)
                self.sessions.remove(session_id)
                return None
            # The client goes on after initialize: its notifications/initialized may have reached another process.
            entry.session.initialized.set()
            return entry
        # From the read of the record until the copy is kept, a change another process publishes would find no
        # copy here: the receiver applies it (session_updated) only once the copy is kept.
        with self._copying:
            record = self.backend.load_session(session_id, ttl)
            if record is None:
                return None
            transport = StreamableSessionTransport(event_store=self.event_store)
            session = self._start_session(transport)
            restore(session, record)
            made = HTTPSession(session_id, transport, session, record.principal, 0.0)
            # Shared before it is kept: once kept, the process's other requests of the session use it at once.
            self.share(made)
            kept = self.sessions.adopt(made)
        if kept is not made:  # another request made one first, or the registry is full
            session.close()  # it stops watching the shared stream, and left nothing else
        return kept

    def keep(self, session_id: str) -> None:
        """The session's GET stream is open here: push its record's expiry away, as a request does.

        Called at each ping of the stream. In one process an open stream
        counts as activity (see :class:`SessionRegistry`); shared, without
        this, a client that listened and sent nothing for
        ``session_idle_timeout`` lost its session in every process, and its
        subscriptions with it. With the backend away, the next ping tries again.
        """
        with contextlib.suppress(BackendUnavailable):
            self.backend.touch_session(session_id, self.sessions.idle_timeout)

    def share(self, entry: HTTPSession) -> None:
        """Keep ``entry``'s session in the backend as it changes, and number its requests to the client uniquely."""
        if not self.backend.shares_sessions:
            return
        entry.session.dispatcher.prefix_ids(f"{secrets.token_hex(6)}-")
        assert isinstance(entry.transport, StreamableSessionTransport)
        entry.transport.shared = True
        entry.transport.forward = functools.partial(self.pass_on, entry.session_id)
        entry.transport.share_standalone(stream_id(entry.session_id))
        entry.session.on_change = functools.partial(self._save, entry)

    def pass_on(self, session_id: str, message: JSONRPCMessage, *, from_client: bool = False) -> None:
        """Send ``message`` to the process that has a use for it: a client's answer, to the one whose handler waits;
        a client's cancellation, to the one whose handler runs the request (``from_client``); a message for the
        session's GET stream, to the one where it is open (if any)."""
        wire = json.loads(encode_message(message))
        if from_client:
            wire[FROM_CLIENT] = True
        self.backend.send_to_session(session_id, wire)

    def end(self, session_id: str) -> None:
        """The client ended the session (DELETE): end it in every process, and forget its stream's events."""
        if not self.backend.shares_sessions:
            return
        self.backend.end_session(session_id)
        if isinstance(self.event_store, SharedEventStore):
            self.event_store.forget(stream_id(session_id))

    def _save(self, entry: HTTPSession, session: ServerSession, update: SessionUpdate | None) -> None:
        """Keep what changed: a new session's whole record, else the change alone (another process may be changing
        the session at this moment: writing the whole record would undo its change)."""
        if update is not None:
            self.backend.update_session(entry.session_id, update, self.sessions.idle_timeout)
            return  # (False: it ended meanwhile; its next request learns it)
        record = SessionRecord(
            entry.session_id,
            session.revision or DEFAULT_REVISION,
            capabilities=session.client_capabilities.to_wire(),
            client_info=session.client_info.to_wire() if session.client_info is not None else None,
            log_level=session.log_level,
            subscriptions=session.subscriptions,
            principal=entry.principal,
            stream=stream_id(entry.session_id) if isinstance(self.event_store, SharedEventStore) else None,
        )
        self.backend.save_session(record, self.sessions.idle_timeout)

    # ------------------------------------------------- what other processes say (SessionListener)

    def session_ended(self, session_id: str) -> None:
        """Another process ended session ``session_id`` (DELETE): end the copy here, if any.

        Called by the backend (see :class:`~mcp_sync.server.backend.SessionListener`)::

            shared.session_ended("0123...")   # its open streams end; later requests get 404
        """
        self.sessions.remove(session_id)

    def session_updated(self, session_id: str, update: SessionUpdate) -> None:
        """A process (this one too) changed a session (log level, subscriptions): the copy here, if any, makes the
        change, in the order the backend kept the changes, so that every copy ends as the record is.

        Called by the backend::

            shared.session_updated(session_id, SessionUpdate(subscribed=frozenset({"notes://1"})))
        """
        entry = self._copy(session_id)
        if entry is not None:
            entry.session.apply(update)

    def _copy(self, session_id: str) -> HTTPSession | None:
        """The copy of shared session ``session_id`` here, once made (a change told while it is made waits)."""
        with self._copying:
            entry = self.sessions.peek(session_id)
        return entry if entry is not None and not entry.legacy else None

    def session_message(self, session_id: str, message: dict[str, Any]) -> None:
        """A message another process passed on for a session.

        A client's response POSTed there is delivered here if a handler here
        waits for it; a notification or request for the session's GET stream
        (a log message, a request outside a call) is written here if the GET
        stream is open here.

        Called by the backend::

            shared.session_message(session_id, {"jsonrpc": "2.0", "id": "a1b2-1", "result": {}})
        """
        entry = self.sessions.peek(session_id)
        if entry is None or not isinstance(entry.transport, StreamableSessionTransport):
            return
        message = dict(message)
        from_client = message.pop(FROM_CLIENT, False) is True
        decoded = decode_message(json.dumps(message).encode())
        if response_to(decoded, entry.session):
            entry.transport.receive(decoded)
        elif from_client and isinstance(decoded, JSONRPCNotification):
            receive(entry.transport, decoded)  # a cancellation: its request's POSTs here end (none if not served here)
        elif isinstance(decoded, (JSONRPCNotification, JSONRPCRequest)) and not from_client:
            entry.transport.write_standalone(decoded)

    def session_stream_opened(self, session_id: str) -> None:
        """The session's GET stream opened in another process: the one open here, if any, ends (one stream each).

        Called by the backend::

            shared.session_stream_opened(session_id)
        """
        entry = self.sessions.peek(session_id)
        if entry is not None and isinstance(entry.transport, StreamableSessionTransport):
            entry.transport.end_standalone()

    def sessions_missed(self) -> None:
        """The backend was away: what other processes said of sessions meanwhile is lost, so each copy here takes
        its record again (one whose record is gone ends at its next request).

        Called by the backend, subscribed again::

            shared.sessions_missed()
        """
        ttl = self.sessions.idle_timeout
        for entry in self.sessions.entries():
            if not entry.legacy and (record := self.backend.load_session(entry.session_id, ttl)) is not None:
                restore(entry.session, record)
