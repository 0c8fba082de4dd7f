"""What the processes serving one MCP server share: the seam, and its in-process default.

One process serving a server needs nothing shared. Several (gunicorn
workers, machines behind a load balancer) need these:

- the secret that signs ``requestState``, so that an input round started
  on one process is finished on another;
- the server-wide notifications (``notifications/resources/updated``,
  the ``list_changed`` ones, and the server's log messages,
  :meth:`~mcp_sync.server.core.MCPServer.log`): raised in one process, they
  must reach the listen streams and GET streams open in every process, and
  the streams of shared sessions whoever holds them; and a task's
  status changes (``notifications/tasks``): the task runs in one process,
  its client may listen for them on any;
- handshake-era sessions (2025-11-25 and before): their records (a
  :class:`~mcp_sync.server.session_records.SessionRecord`), so that any
  process serves any session, ends it everywhere, and passes on a client's
  answer to the process whose handler asked; each change to a session is
  kept as that change alone
  (:class:`~mcp_sync.server.session_records.SessionUpdate`), so that changes
  made at once by two processes are both kept;
- the events kept for resumable SSE streams (:meth:`Backend.event_store`),
  so that a client resuming a stream on any process gets what it missed.

A :class:`Backend` provides all of them. :class:`InProcessBackend` (the default)
shares nothing: everything stays in this process, as without a backend.
:class:`~mcp_sync.server.scale.redis_backend.RedisBackend` shares them
through Redis; :class:`~mcp_sync.server.http.app.StreamableHTTPApp` picks
it with ``backend="redis://..."`` or ``MCP_SYNC_REDIS_URL``.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> isinstance(server.backend, InProcessBackend)
True
>>> server.backend.publish(Notice("list_changed", "tools"))  # nobody else to tell
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..protocol.errors import MCP_CODES, MCPError

if TYPE_CHECKING:
    from .core import MCPServer
    from .http.event_store import EventStore
    from .session_records import SessionRecord, SessionUpdate

__all__ = [
    "Backend",
    "BackendUnavailable",
    "InProcessBackend",
    "Notice",
    "NoticeKind",
    "SessionListener",
]

NoticeKind = Literal["resource_updated", "list_changed", "task_status", "log"]


@dataclass(frozen=True)
class Notice:
    """A server-wide notification, as the processes of a server pass it on.

    ``kind`` ``"resource_updated"`` has the resource's URI as ``subject``;
    ``"list_changed"`` has the list: ``"tools"``, ``"resources"`` or ``"prompts"``;
    ``"task_status"`` has the task's id, and the ``notifications/tasks``
    params (wire form) as ``detail``; ``"log"`` (:meth:`~mcp_sync.server.core.MCPServer.log`)
    has the message's level, and ``{"data": ..., "logger": ...}`` as ``detail``.

    >>> Notice("resource_updated", "notes://1").subject
    'notes://1'
    >>> Notice("task_status", "4f1c", detail={"taskId": "4f1c", "status": "working"}).detail["status"]
    'working'
    """

    kind: NoticeKind
    subject: str
    key: str = field(default_factory=lambda: secrets.token_hex(8), repr=False, compare=False)
    """Names this one notification in every process, so that a stream shared by processes gets it once."""
    detail: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    """What the notification carries besides its subject (a task's status), as JSON."""


class SessionListener(Protocol):
    """What a host (the HTTP app) does with what other processes say about its sessions."""

    def session_ended(self, session_id: str) -> None:
        """The session ended (DELETE, expiry) in another process: drop it here too."""

    def session_updated(self, session_id: str, update: SessionUpdate) -> None:
        """A process changed the session (log level, subscriptions): apply it to the copy here, if any.

        Told of every change in the order the backend kept them, this process's own too, so that every copy
        ends as the record is."""

    def session_message(self, session_id: str, message: dict[str, Any]) -> None:
        """A message (wire form) for the session: a client's response, delivered by the process whose handler
        waits for it; or a message for its GET stream, written by the process where that stream is open."""

    def session_stream_opened(self, session_id: str) -> None:
        """The session's GET stream opened in another process: end the one open here, if any (the newest wins)."""

    def sessions_missed(self) -> None:
        """What other processes said of sessions for a while may be lost (the backend lost its connection):
        each copy here takes its record again."""


class BackendUnavailable(MCPError):
    """The backend (Redis) cannot be reached: at start, or when a notification must be passed on.

    Its code is ``INTERNAL_ERROR`` (``-32603`` on the wire): a request that
    raises it fails as a whole, rather than as a tool's error result.

    >>> error = BackendUnavailable("Redis is down")
    >>> error.code, error.jsonrpc_code
    ('MCP.INTERNAL_ERROR', -32603)
    >>> import copy
    >>> copy.copy(error).message
    'Redis is down'
    """

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(MCP_CODES.INTERNAL_ERROR, message, cause=cause)

    def __reduce__(self) -> tuple[Any, ...]:
        # MCPError's reduce calls the class with the code first; this one takes the message alone.
        return (BackendUnavailable, (self.message,))


class Backend(Protocol):
    """What a server's processes share (see the module's introduction).

    A host (the HTTP app) calls :meth:`attach` once, when it is made;
    :meth:`start` in each process that serves requests, before the first
    (after a fork, too: it starts what the fork did not carry over); and
    :meth:`close` when it stops. The server calls :meth:`publish` for each
    notification it raises, after delivering it to its own sessions.
    """

    def attach(self, server: MCPServer) -> None:
        """Serve ``server``: become its ``backend`` and give it the shared secret.

        Raises :class:`BackendUnavailable` when the backend cannot be reached.
        """

    def start(self) -> None:
        """In this process, deliver the notifications other processes publish to the server's sessions."""

    def publish(self, notice: Notice) -> None:
        """Pass ``notice`` on to the other processes; :class:`BackendUnavailable` when that fails."""

    def close(self) -> None:
        """Stop receiving (no thread of the backend outlives this) and let go of the server."""

    @property
    def shares_sessions(self) -> bool:
        """Whether handshake-era sessions are shared: the methods below then do something."""

    def listen_sessions(self, listener: SessionListener) -> None:
        """Tell ``listener`` what other processes say about the sessions (called once, by the host)."""

    def save_session(self, record: SessionRecord, ttl: float) -> None:
        """Keep ``record`` (a new session's) for ``ttl`` seconds and tell the other processes."""

    def update_session(self, session_id: str, update: SessionUpdate, ttl: float) -> bool:
        """Make ``update`` to the record at once (nothing else in it changes), push its expiry ``ttl`` seconds away,
        and tell every process; ``False`` (nothing kept) when the session ended."""

    def load_session(self, session_id: str, ttl: float) -> SessionRecord | None:
        """The record of ``session_id`` (its expiry pushed ``ttl`` seconds away), ``None`` if there is none."""

    def touch_session(self, session_id: str, ttl: float) -> bool:
        """Push the record's expiry ``ttl`` seconds away; ``False`` when it ended (or was never kept)."""

    def end_session(self, session_id: str) -> None:
        """Delete the record and tell every process the session ended."""

    def send_to_session(self, session_id: str, message: dict[str, Any]) -> None:
        """Pass a message (wire form) on to the process that waits for it or holds the session's GET stream."""

    def stream_opened(self, session_id: str) -> None:
        """Tell the other processes that the session's GET stream opened here."""

    def event_store(self) -> EventStore:
        """Where the host keeps the SSE events that clients may resume: shared by the processes when they share."""


class InProcessBackend:
    """Nothing shared: the server's own secret, its notifications for its own sessions only.

    >>> from mcp_sync import MCPServer
    >>> server = MCPServer("demo")
    >>> backend = InProcessBackend()
    >>> backend.attach(server)
    >>> server.backend is backend
    True
    >>> from mcp_sync.server.session_records import SessionRecord, SessionUpdate
    >>> record = SessionRecord("abc", "2025-11-25")
    >>> backend.shares_sessions, backend.load_session("abc", 60.0), backend.touch_session("abc", 60.0)
    (False, None, True)
    >>> backend.listen_sessions(object())  # type: ignore[arg-type]
    >>> backend.save_session(record, 60.0); backend.end_session("abc"); backend.send_to_session("abc", {})
    >>> backend.update_session("abc", SessionUpdate(log_level="info"), 60.0)
    True
    >>> backend.stream_opened("abc")
    >>> type(backend.event_store()).__name__
    'InMemoryEventStore'
    >>> backend.close()
    """

    def attach(self, server: MCPServer) -> None:
        """Become the server's backend."""
        server.backend = self

    def start(self) -> None:
        """Nothing to receive: no other process publishes."""

    def publish(self, notice: Notice) -> None:
        """Nobody else to tell."""

    def close(self) -> None:
        """Nothing runs."""

    @property
    def shares_sessions(self) -> bool:
        """Sessions live in the process that opened them."""
        return False

    def listen_sessions(self, listener: SessionListener) -> None:
        """Nobody else speaks of the sessions."""

    def save_session(self, record: SessionRecord, ttl: float) -> None:
        """Nothing kept."""

    def update_session(self, session_id: str, update: SessionUpdate, ttl: float) -> bool:
        """Nothing kept: the session itself has its state."""
        return True

    def load_session(self, session_id: str, ttl: float) -> SessionRecord | None:
        """Nothing kept."""
        return None

    def touch_session(self, session_id: str, ttl: float) -> bool:
        """The process's own registry decides."""
        return True

    def end_session(self, session_id: str) -> None:
        """Nobody else to tell."""

    def send_to_session(self, session_id: str, message: dict[str, Any]) -> None:
        """Nobody else waits."""

    def stream_opened(self, session_id: str) -> None:
        """Nobody else holds a stream."""

    def event_store(self) -> EventStore:
        """This process's memory: the latest events of each stream."""
        from .http.event_store import InMemoryEventStore

        return InMemoryEventStore()
