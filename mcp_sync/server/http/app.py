"""MCP over HTTP, server side: a WSGI application.

:class:`StreamableHTTPApp` serves an :class:`~mcp_sync.server.MCPServer`
with the Streamable HTTP transport on one endpoint, to clients of every era
at once: the handshake revisions 2025-03-26 to 2025-11-25 (sessions) and the
stateless revision 2026-07-28, chosen per request; and the HTTP+SSE
transport of 2024-11-05 for older clients. It is a plain PEP 3333 application: host it in any WSGI
server that streams (gunicorn with threads, waitress, the embedded server of
:func:`serve_http`), or mount it in Flask or Django.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> app = StreamableHTTPApp(server)          # a WSGI callable, for any WSGI server
>>> app.close()

For scripts and notebooks, :func:`start_http` runs it in the background::

    with start_http(server) as running:
        print(running.url)                   # http://127.0.0.1:PORT/mcp

and :func:`serve_http` serves it until interrupted.

What it does, in the order of the checks every request passes:

1. ``Host`` must be allowed (421 otherwise) and ``Origin``, when sent, too
   (403): DNS rebinding protection, on by default for the loopback names.
   With ``cors_origins``, a CORS preflight (``OPTIONS`` with
   ``Access-Control-Request-Method``) from a listed origin is answered here
   (204), and every answer to a listed origin, errors included, carries the
   CORS headers (see :mod:`~mcp_sync.server.http.cors`).
2. With a ``token_verifier``, a valid bearer token (401 with a
   ``WWW-Authenticate`` challenge otherwise; 403 for missing scopes).
3. On the endpoint: POST, GET and DELETE (405 otherwise), a supported
   ``MCP-Protocol-Version`` when sent (400), and ``Mcp-Session-Id`` on every
   request after ``initialize`` (400 when missing, 404 when unknown).

A POSTed request is answered with JSON when its response is the first thing
the server sends for it; when a handler first emits a notification or a
request of its own (progress, logging, sampling), the answer becomes an SSE
stream that carries those and ends with the response.

A request served by a session of its own (every 2026-07-28 request, and
stateless mode) runs its handler on the thread that read it when the
embedded server hosts the app: no hand-off to another thread and back. Should
its answer turn into a stream while the handler runs, a handler thread
writes it meanwhile (the embedded server allows that; other servers get the
hand-off).

A POST whose ``MCP-Protocol-Version`` is 2026-07-28 (or, without the header,
whose body's ``_meta`` names a revision, or which calls ``server/discover``)
is served the stateless way: no session id is issued or read, and the
request is served by a session of its own that ends with it, so closing its
response stream cancels it. Before that, every header that mirrors the body
must agree with it, or the answer is 400 with a JSON-RPC error echoing the
request's id: ``MCP-Protocol-Version`` against ``_meta`` (``-32020``,
checked before the revision is: ``-32022`` when not served), ``Mcp-Method``
and ``Mcp-Name`` (``-32020``), ``_meta`` itself (``-32602``), and the
``Mcp-Param-*`` headers of tool arguments declared with ``x-mcp-header``
(``-32020``). Errors the request's handling ends with get their own status
when answered as JSON: 404 for ``-32601``, 400 for ``-32020`` to ``-32022``;
other errors, like results, 200. GET and DELETE at 2026-07-28 get 405. A
``subscriptions/listen`` POST is answered with an SSE stream that stays
open: the acknowledgement, then every change notification tagged with that
subscription, until the client closes it or the app closes (which ends it
with the listen result).
"""

from __future__ import annotations

import collections
import functools
import http
import json
import logging
import math
import os
import queue
import secrets
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import pydantic_core

from ...protocol.batch import BATCH_REVISION, accepts_batch, batch_elements, encode_batch
from ...protocol.errors import MCP_CODES, JsonRpcCode, MCPError
from ...protocol.headers import (
    NAMED_BY,
    InvalidHeaderDeclaration,
    header_declarations,
    header_text,
    param_header_problem,
)
from ...protocol.jsonrpc import (
    InvalidMessage,
    decode_message,
    encode_message,
    error_response,
    reads_as_response,
    recover_id,
)
from ...protocol.oauth import bearer_challenge as challenge  # (to call by its own name where the gate moves)
from ...protocol.oauth import bearer_token, well_formed
from ...protocol.stateless import PROTOCOL_VERSION, meta_revision
from ...protocol.tasks import NAMED_BY_TASK_ID
from ...protocol.types import (
    ClientCapabilities,
    Error,
    Implementation,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    LoggingLevel,
    RequestId,
    Tool,
)
from ...protocol.versions import HANDSHAKE_REVISIONS, STATELESS_REVISIONS, at_least
from ...runtime.workers import ElasticPool
from ..authorization import AuthInfo
from ..authorization.tokens import (
    InsufficientScope,
    InvalidToken,
    TokenVerifier,
    VerifierUnavailable,
    token_expired,
    token_principal,
    token_scopes,
)
from ..backend import Backend, BackendUnavailable, InProcessBackend, SessionRecord
from ..core import MCPServer
from ..scale.redis_backend import REDIS_URL_VARIABLE, RedisBackend
from ..scale.redis_tasks import share_tasks
from ..session import ServerSession
from ..stateless import StatelessRequest
from .cors import CORSPolicy
from .event_store import EventStore, SharedEventStore
from .hosting import StopWatch, gunicorn_worker_stopping
from .security import LOOPBACK_HOSTS, accepts, host_allowed, origin_allowed
from .sessions import (
    HTTPSession,
    Item,
    LegacySSETransport,
    PostedRequest,
    SessionRegistry,
    Signal,
    SSEStream,
    StreamableSessionTransport,
    StreamEvent,
    close_sessions,
)
from .wsgi import CONNECTION_SOCKET, MAX_CONNECTIONS, WRITE_FROM_ANY_THREAD, WSGIServer

__all__ = ["RunningHTTPServer", "StreamableHTTPApp", "serve_http", "start_http"]

log = logging.getLogger(__name__)

WSGIEnviron = dict[str, Any]
StartResponse = Callable[..., Any]

JSON = "application/json"
EVENT_STREAM = "text/event-stream"
DEFAULT_REVISION = "2025-03-26"
"""The revision assumed for a request without ``MCP-Protocol-Version`` (the transport spec says so)."""
PRIMING_SINCE = "2025-11-25"
"""The first revision whose clients expect a priming event (an id with empty data) on SSE streams."""
SESSION_HEADER = "Mcp-Session-Id"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
HOST_STOP_TIMEOUT = 1.0
"""How long the app gives itself to close when its hosting server stops (seconds): its streams end by then."""
_SSE_HEADERS = [
    ("Content-Type", EVENT_STREAM),
    ("Cache-Control", "no-cache, no-transform"),
    ("X-Accel-Buffering", "no"),
]


@dataclass
class _Response:
    """What the app answers: a status, headers and a body (bytes or a stream)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Iterable[bytes] = ()
    message: JSONRPCMessage | None = None
    """The JSON-RPC message of a JSON answer, for the app's own bookkeeping."""
    started: bool = False
    """Whether the head went out already (another thread streamed the whole answer; see :class:`_Lent`)."""


@functools.lru_cache(maxsize=64)  # clients send the same Content-Type with every request
def _json_utf8(content_type: str) -> bool:
    """Whether a ``Content-Type`` says JSON in UTF-8 (the charset may be left out)."""
    parts = content_type.split(";")
    charset = next((p.split("=", 1)[1].strip().lower() for p in parts[1:] if "=" in p), "utf-8")
    return parts[0].strip().lower() == JSON and charset.strip('"') in ("utf-8", "utf8")


@functools.lru_cache(maxsize=256)  # a client sends the same Host with every request
def _host_allowed(host: str, patterns: tuple[str, ...]) -> bool:
    """:func:`host_allowed`, judged once per ``Host`` value and list of patterns."""
    return host_allowed(host, patterns)


@functools.lru_cache(maxsize=64)
def _status_line(code: int) -> str:
    """``200 OK`` for 200: the status of a WSGI response."""
    status = http.HTTPStatus(code)
    return f"{status.value} {status.phrase}"


def _json(
    status: int, payload: JSONRPCMessage | Mapping[str, Any], headers: Sequence[tuple[str, str]] = ()
) -> _Response:
    if isinstance(payload, Mapping):
        body, message = pydantic_core.to_json(dict(payload)), None
    else:
        body, message = encode_message(payload), payload
    all_headers = [("Content-Type", JSON), ("Content-Length", str(len(body))), *headers]
    return _Response(status, all_headers, [body], message)


def _http_error(status: int, message: str, code: int = JsonRpcCode.INVALID_REQUEST, **headers: str) -> _Response:
    """An HTTP error whose body is a JSON-RPC error response without a request id."""
    extra = [(name.replace("_", "-"), value) for name, value in headers.items()]
    return _json(status, error_response(None, code, message), extra)


@functools.lru_cache(maxsize=256)
def _environ_key(name: str) -> str:
    """Where a WSGI environ keeps header ``name``; cached, as the app asks for the same few names on every request."""
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"


class _Request:
    """The parts of a WSGI environ the app reads."""

    def __init__(self, environ: WSGIEnviron) -> None:
        self.environ = environ
        self.method = str(environ.get("REQUEST_METHOD", "GET"))  # case-sensitive (RFC 9110): "post" is no POST
        self.path = str(environ.get("PATH_INFO", "")) or "/"
        self.auth: AuthInfo | None = None
        """The facts of the request's verified bearer token (set by authentication)."""
        self.start_response: StartResponse | None = None
        """The server's ``start_response``, for an answer streamed from another thread (see :class:`_Lent`)."""

    def header(self, name: str) -> str | None:
        value = self.environ.get(_environ_key(name))
        return None if value is None else str(value)

    def query(self, name: str) -> str | None:
        values = parse_qs(str(self.environ.get("QUERY_STRING", ""))).get(name)
        return values[0] if values else None

    @property
    def base_url(self) -> str:
        """``scheme://host`` plus the mount point (``SCRIPT_NAME``)."""
        environ = self.environ
        host = self.header("Host") or f"{environ.get('SERVER_NAME', 'localhost')}:{environ.get('SERVER_PORT', '80')}"
        return f"{environ.get('wsgi.url_scheme', 'http')}://{host}{environ.get('SCRIPT_NAME', '')}"


class _Once:
    """Runs a function the first time it is called, never again."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn: Callable[[], None] | None = fn
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            fn, self._fn = self._fn, None
        if fn is not None:
            fn()


def _render(event: StreamEvent, name: str = "message") -> bytes:
    lines = [] if event.event_id is None else [f"id: {event.event_id}"]
    if event.message is None:
        lines.append("data:")
    else:
        lines += [f"event: {name}", f"data: {encode_message(event.message).decode()}"]
    return ("\n".join(lines) + "\n\n").encode()


class _SSEBody:
    """The body of an SSE response: events from a queue, comment pings while idle.

    It ends on :attr:`Signal.END`, or on :attr:`Signal.CLOSED` after sending
    ``closing`` (the error that answers a request whose session ended). The
    WSGI server calls :meth:`close` however the response ends, even when it
    never iterated: that runs ``on_close`` once.
    """

    def __init__(
        self,
        reader: queue.SimpleQueue[Item],
        *,
        first: bytes,
        ping_interval: float,
        on_close: Callable[[], None],
        pending: Sequence[Item] = (),
        closing: JSONRPCMessage | None = None,
    ) -> None:
        self._reader = reader
        self._chunks: collections.deque[bytes] = collections.deque([first])
        self._pending: collections.deque[Item] = collections.deque(pending)
        self._ping_interval = ping_interval
        self._on_close = _Once(on_close)
        self._closing = closing
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        while not self._chunks:
            if self._done:
                raise StopIteration
            if self._pending:
                item = self._pending.popleft()
            else:
                try:
                    item = self._reader.get(timeout=self._ping_interval)
                except queue.Empty:
                    return b": ping\n\n"
            if isinstance(item, StreamEvent):
                self._chunks.append(_render(item))
                continue
            self._done = True
            if item is Signal.CLOSED and self._closing is not None:
                self._chunks.append(_render(StreamEvent(None, self._closing)))
        return self._chunks.popleft()

    def close(self) -> None:
        self._on_close()


class _StreamTrigger(queue.SimpleQueue[Item]):
    """The queue of a lent request's POST: an item that finds the POST streaming, or that another thread puts
    while the handler still runs (an answer meant for this POST: the response to an id another POST reused,
    a cancellation, the session's end), has a handler thread write the answer (see :meth:`_Lent.stream`)."""

    lent: _Lent | None
    """Let go of once the handler is done (a cycle otherwise: the request's objects would wait for the collector)."""

    def put(self, item: Item, block: bool = True, timeout: float | None = None) -> None:
        super().put(item)
        lent = self.lent
        if lent is not None and (lent.post.mode == "sse" or threading.get_ident() != lent.thread):
            lent.stream()


class _BatchAnswers(queue.SimpleQueue[Item]):
    """The answers to a POSTed batch, in one queue: each as an event, then :attr:`Signal.END` after the last.

    ``errors`` (the batch's invalid elements) are there from the start; each
    of the ``requests`` puts its answer in its :meth:`slot`. A request
    cancelled gets none; one whose session ended gets the error saying so.
    """

    def __init__(self, requests: int, errors: Sequence[JSONRPCMessage]) -> None:
        super().__init__()
        self._left = requests
        self._lock = threading.Lock()
        for error in errors:
            super().put(StreamEvent(None, error))
        if requests == 0:
            super().put(Signal.END)

    def slot(self, request_id: RequestId) -> queue.SimpleQueue[Item]:
        """The queue the POST of request ``request_id`` reads into."""
        return _BatchSlot(self, request_id)

    def answered(self, request_id: RequestId, item: Item) -> None:
        """Request ``request_id`` has its answer (a response event, or the signal that ends it without one)."""
        if isinstance(item, StreamEvent):
            super().put(item)
        elif item is Signal.CLOSED:
            super().put(StreamEvent(None, _session_ended(request_id)))
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            super().put(Signal.END)

    def collect(self) -> list[JSONRPCMessage]:
        """Every answer, once the last arrived (bounded: each request is answered, cancelled or ended with its
        session)."""
        responses: list[JSONRPCMessage] = []
        while isinstance(item := self.get(), StreamEvent):
            assert item.message is not None
            responses.append(item.message)
        return responses


class _BatchSlot(queue.SimpleQueue[Item]):
    """Where the POST of one request of a batch puts its answer: passed on to the batch's :class:`_BatchAnswers`."""

    def __init__(self, answers: _BatchAnswers, request_id: RequestId) -> None:
        super().__init__()
        self._answers = answers
        self._request_id = request_id

    def put(self, item: Item, block: bool = True, timeout: float | None = None) -> None:
        self._answers.answered(self._request_id, item)


class _Lent:
    """A request served alone on the thread that brought it (its handler is lent that thread).

    Its answer is JSON unless the POST turns into a stream while the handler
    runs: the handler sends something first, or runs past the ping interval
    (:class:`_LendWatch` sees to that). A handler thread then streams it
    (:meth:`stream`), writing through the server's ``start_response`` from
    that thread, which only a server setting ``WRITE_FROM_ANY_THREAD`` allows.
    """

    __slots__ = (
        "_lock",
        "_settled",
        "_trigger",
        "answer",
        "app",
        "deadline",
        "done",
        "post",
        "socket",
        "streamed",
        "thread",
        "transport",
    )

    def __init__(
        self,
        app: StreamableHTTPApp,
        transport: StreamableSessionTransport,
        post: PostedRequest,
        answer: _Answer,
        done: _Once,
    ) -> None:
        self.app = app
        self.transport = transport
        self.post = post
        self.answer = answer
        self.done = done
        self.deadline = time.monotonic() + app.ping_interval
        self.thread = threading.get_ident()
        """The thread lent to the handler (the one making this)."""
        request = answer.lend_to
        self.socket: socket.socket | None = None if request is None else request.environ.get(CONNECTION_SOCKET)
        """The connection's socket, if the server gives it: watched for the client hanging up (2026-07-28)."""
        self.streamed: threading.Event | None = None
        self._settled = False
        self._lock = threading.Lock()
        self._trigger = trigger = _StreamTrigger()
        trigger.lent = self
        taken, post.queue = post.queue, trigger
        post.consumer = trigger  # (a new POST's consumer is its queue)
        while not taken.empty():  # put there before the swap: the session ending already
            trigger.put(taken.get_nowait())

    def stream(self) -> None:
        """Have a handler thread write the answer (a stream, mostly) from now on, unless the handler is done (once)."""
        with self._lock:
            if self._settled or self.streamed is not None:
                return
            self.streamed = threading.Event()
        self.app._handlers.submit(self._stream)

    def settle(self) -> threading.Event | None:
        """The handler is done: no stream starts from now on; the one started meanwhile, if any."""
        with self._lock:
            self._settled = True
            self._trigger.lent = None
            return self.streamed

    def hung_up(self) -> bool:
        """Whether a 2026-07-28 client closed the connection it sent this request on (read nothing: peek)."""
        sock = self.socket
        if sock is None or not self.answer.stateless:
            return False  # (before 2026-07-28 a disconnection is no cancellation)
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False  # nothing to read: the client waits
        except OSError:
            return True  # reset

    def cancel(self) -> None:
        """The client hung up: in 2026-07-28 that is the request's cancellation (its handler is told; no answer)."""
        request_id = self.post.request_id
        reason = "the client closed its connection"
        self.transport.receive(
            JSONRPCNotification(method="notifications/cancelled", params={"requestId": request_id, "reason": reason})
        )
        self.transport.cancel(request_id)

    def _stream(self) -> None:
        try:
            self.app._stream_lent(self)
        finally:
            assert self.streamed is not None
            self.streamed.set()


_HANG_UP_LOOK = 0.5
"""How often, in seconds, the lend watch looks whether the clients of lent requests still hold their connections."""


class _LendWatch:
    """Turns the answer of a lent request whose handler runs past the ping interval into a stream, so that
    pings keep its connection alive (as a request served on a handler thread would); and cancels a lent
    2026-07-28 request whose client hung up (closing the connection is that era's cancellation).

    One thread per app (``mcp-sync-http-lend-watch``), started with the first
    lent request and looking every :data:`_HANG_UP_LOOK` seconds (at least
    twice per ping interval), so that serving a request costs no thread
    wake-up here.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._cond = threading.Condition()
        self._lent: dict[_Lent, None] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, lent: _Lent) -> None:
        with self._cond:
            self._lent[lent] = None
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="mcp-sync-http-lend-watch", daemon=True)
                self._thread.start()

    def discard(self, lent: _Lent) -> None:
        with self._cond:
            self._lent.pop(lent, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._cond.wait_for(lambda: self._closed, min(self._interval / 2, _HANG_UP_LOOK)):
                    return
                now = time.monotonic()
                lent_now = list(self._lent)
            for lent in lent_now:
                try:
                    self._look(lent, now)
                except Exception:  # one request's failure must not end the watch of all the others
                    log.exception("the lend watch failed on request %r", lent.post.request_id)
                    self.discard(lent)

    def _look(self, lent: _Lent, now: float) -> None:
        if lent.hung_up():
            self.discard(lent)
            lent.cancel()
        elif lent.deadline <= now and not lent.post.json_only:  # (a JSON-only answer never streams)
            self.discard(lent)
            lent.transport.start_streaming(lent.post)
            if lent.post.mode == "sse":  # not when the response came first
                lent.stream()

    def close(self, timeout: float) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)


class StreamableHTTPApp:
    """A WSGI application serving ``server`` over MCP's HTTP transports.

    ``path`` is the Streamable HTTP endpoint. ``stateless=True`` serves each
    POST with a fresh session and issues no session ids (GET and DELETE then
    get 405); ``json_response=True`` answers every POST with one JSON body,
    never an SSE stream (GET streams, ``subscriptions/listen`` and the legacy
    HTTP+SSE transport still stream). ``allowed_hosts``/``allowed_origins`` are the DNS rebinding
    allow-lists (``None``: the loopback names on any port; ``["*"]``: any).
    ``cors_origins`` turns on CORS for browser pages at those origins (same
    patterns; ``["*"]``: any page, without credentials), with
    ``cors_allow_credentials`` and ``cors_max_age`` (seconds a preflight's
    answer may be reused); an origin listed there passes the ``Origin`` check
    too (the ``Host`` check still applies). Off by default.
    ``token_verifier`` turns on bearer-token authentication, ``required_scopes``
    the scopes every token needs, and ``resource_metadata`` (a dict with at
    least ``authorization_servers``) is served as the RFC 9728 Protected
    Resource Metadata and named in 401 challenges (without it, there is no
    metadata URL). With a token verifier, handlers see the token's facts as
    ``ctx.auth``, a call of a tool, resource or prompt registered with
    ``scopes`` the token lacks gets 403 ``insufficient_scope`` naming every
    scope needed, and listings show only what the token may use
    (``list_all=True``: everything). Sessions idle for ``session_idle_timeout`` seconds end;
    beyond ``max_sessions`` a new one gets 503. ``event_store`` keeps SSE
    events for resumption (default: the backend's: in this process's memory, or in Redis).
    ``legacy_sse`` also serves the 2024-11-05 transport at ``sse_path`` and
    ``messages_path``. SSE streams get a comment ping every ``ping_interval``
    seconds (a client that went away is noticed at the next write) and,
    before 2026-07-28, tell clients to wait ``retry_ms`` before reconnecting.
    Requests at 2026-07-28 are served whatever ``stateless`` says: each by a
    session of its own (``json_response`` leaves ``subscriptions/listen`` a
    stream). Processes that serve the same clients need one
    ``request_state_secret`` (an :class:`MCPServer` option), so that the
    ``requestState`` one process seals, another accepts.

    Whoever hosts the app calls :meth:`close` when it stops, or the open
    streams keep it waiting. The embedded server does; in a gunicorn worker
    the app does it itself: once the worker is told to stop (SIGTERM, or
    ``max_requests`` reached) the app closes within a second, ending every
    stream (see :mod:`~mcp_sync.server.http.hosting`), so that the worker's
    graceful stop does not wait ``graceful_timeout`` for them.

    ``backend`` is what the processes serving ``server`` share (see
    :mod:`~mcp_sync.server.backend`): a :class:`~mcp_sync.server.backend.Backend`,
    or a ``redis://`` (``rediss://``, ``unix://``) URL for a
    :class:`~mcp_sync.server.scale.redis_backend.RedisBackend`; unset, the URL
    in ``MCP_SYNC_REDIS_URL`` if any, else nothing shared (in-process). With
    Redis, the ``requestState`` secret is shared, every process's listen
    and GET streams get the resource updates and list changes raised in any
    of them, and handshake-era sessions are kept in Redis, so that any
    process serves any of their requests (a session's record expires after
    ``session_idle_timeout``; DELETE ends it in every process; a client's
    answer to a handler's request reaching another process is passed on to
    the one that waits; Redis away: 503 for their requests); when Redis
    cannot be reached the app is not made
    (:class:`~mcp_sync.server.backend.BackendUnavailable`). :meth:`close`
    closes the backend.

    >>> app = StreamableHTTPApp(MCPServer("demo"), stateless=True)
    >>> app.path
    '/mcp'
    >>> app.close()
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        path: str = "/mcp",
        stateless: bool = False,
        json_response: bool = False,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        cors_origins: Sequence[str] | None = None,
        cors_allow_credentials: bool = False,
        cors_max_age: int = 600,
        max_body_bytes: int = 4 * 1024 * 1024,
        token_verifier: TokenVerifier | None = None,
        required_scopes: Sequence[str] = (),
        resource_metadata: Mapping[str, Any] | None = None,
        list_all: bool = False,
        session_idle_timeout: float = 3600.0,
        max_sessions: int = 1000,
        event_store: EventStore | None = None,
        legacy_sse: bool = True,
        sse_path: str = "/sse",
        messages_path: str = "/messages/",
        ping_interval: float = 15.0,
        retry_ms: int = 1000,
        clock: Callable[[], float] = time.monotonic,
        backend: Backend | str | None = None,
    ) -> None:
        if resource_metadata is not None and not isinstance(resource_metadata.get("authorization_servers"), list):
            raise ValueError("resource_metadata needs an 'authorization_servers' list (RFC 9728)")
        if not ping_interval > 0:  # (NaN too) zero would have the streams ping and the lend watch look without pause
            raise ValueError(f"ping_interval must be a positive number of seconds, not {ping_interval!r}")
        # First: a backend that cannot be reached stops the app being made, before anything starts.
        self.backend = _open_backend(backend)
        self.backend.attach(server)
        if isinstance(self.backend, RedisBackend):
            share_tasks(server, self.backend)  # any worker answers for any task
        self.server = server
        self.path = path
        self.stateless = stateless
        self.json_response = json_response
        self.allowed_hosts = tuple(allowed_hosts) if allowed_hosts is not None else LOOPBACK_HOSTS
        self.allowed_origins = tuple(allowed_origins) if allowed_origins is not None else None
        self.cors = (
            CORSPolicy(cors_origins, allow_credentials=cors_allow_credentials, max_age=cors_max_age)
            if cors_origins is not None
            else None
        )
        self.max_body_bytes = max_body_bytes
        self.token_verifier = token_verifier
        self.required_scopes = tuple(required_scopes)
        self.resource_metadata = dict(resource_metadata) if resource_metadata is not None else None
        self.list_all = list_all
        self.event_store = event_store if event_store is not None else self.backend.event_store()
        self.legacy_sse = legacy_sse and not stateless
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.ping_interval = ping_interval
        self.retry_ms = retry_ms
        self.sessions = SessionRegistry(max_sessions=max_sessions, idle_timeout=session_idle_timeout, clock=clock)
        if self.backend.shares_sessions:
            self.backend.listen_sessions(self)
        self._throwaway: set[ServerSession] = set()
        self._lock = threading.Lock()
        self._copying = threading.Lock()  # held while a copy of a shared session is made from its record
        self._alone_done = threading.Condition(self._lock)
        # Threads for requests served alone; a request arriving while the app closes
        # still gets its thread (and so its "shutting down" answer).
        self._handlers = ElasticPool("mcp-sync-http-handler", run_after_close=True)
        self._lend_watch = _LendWatch(ping_interval)
        # Each tool's x-mcp-header declarations, worked out once per tool object (a 2026-07-28 call checks them).
        self._declarations: dict[str, tuple[Tool, dict[str, tuple[str, ...]]]] = {}
        self._closed = False
        self._host_checked = False  # whether the app looked for a hosting server to watch (at its first request)
        self._check_host = _Once(self._watch_host)
        self._stop_watch: StopWatch | None = None

    # ---------------------------------------------------------------- WSGI

    def __call__(self, environ: WSGIEnviron, start_response: StartResponse) -> Iterable[bytes]:
        if not self._host_checked:
            self._check_host()
        request = _Request(environ)
        request.start_response = start_response
        try:
            response = self._handle(request)
        except Exception:
            log.exception("the MCP HTTP app failed on %s %s", request.method, request.path)
            response = _http_error(500, "Internal server error", JsonRpcCode.INTERNAL_ERROR)
        if response.started:
            return response.body
        if self.cors is not None:
            response.headers = self.cors.apply(response.headers, request.header("Origin"))
        start_response(_status_line(response.status), response.headers)
        return response.body

    def close(self, timeout: float = 5.0) -> None:
        """End every session and wake every open stream; later requests get 503.

        Requests served alone (stateless, and every 2026-07-28 request) are
        wound down first: their handlers are told to stop and may still
        answer, so that a ``subscriptions/listen`` stream ends with its
        result, and their answers are given time to go out. Then every
        session ends; running handlers are cancelled. All of it takes at most
        ``timeout`` seconds. Then the backend closes (a Redis backend's
        receiving thread stops within its half-second read, or, in the middle
        of a read, its Redis timeout).
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            alone = list(self._throwaway)
            watch, self._stop_watch = self._stop_watch, None
        if watch is not None:
            watch.close()
        for session in alone:
            session.dispatcher.drain(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._alone_done.wait_for(lambda: not self._throwaway, max(0.0, deadline - time.monotonic()))
            throwaway, self._throwaway = self._throwaway, set()
        close_sessions([*self.sessions.take_all(), *throwaway], max(0.0, deadline - time.monotonic()))
        self._lend_watch.close(max(0.0, deadline - time.monotonic()))
        self._handlers.close(max(0.0, deadline - time.monotonic()))
        self.backend.close()

    def _watch_host(self) -> None:
        """At the first request: start the backend; in a gunicorn worker, close the app once the worker is told to stop.

        The backend starts receiving what other processes publish in the
        process that serves (a gunicorn worker forked after the app was made,
        too: threads do not survive a fork). Without the watch, a worker's
        graceful stop would wait ``graceful_timeout`` for the open streams
        (see :mod:`mcp_sync.server.http.hosting`).
        """
        self._host_checked = True
        self.backend.start()
        stopping = gunicorn_worker_stopping()
        if stopping is None:
            return
        with self._lock:
            if not self._closed:
                self._stop_watch = StopWatch(stopping, functools.partial(self.close, HOST_STOP_TIMEOUT))

    def _handle(self, request: _Request) -> _Response:
        if self._closed:
            return _http_error(503, "The server is shutting down", JsonRpcCode.INTERNAL_ERROR)
        host = request.header("Host")
        if host is not None and not _host_allowed(host, tuple(self.allowed_hosts)):
            return _http_error(421, f"Host not allowed: {host}")
        origin = request.header("Origin")
        if origin is not None and not self._origin_allowed(origin):
            return _http_error(403, f"Origin not allowed: {origin}")
        if (
            self.cors is not None
            and origin is not None
            and request.method == "OPTIONS"
            and request.header("Access-Control-Request-Method") is not None
            and self.cors.allows(origin)
        ):  # a CORS preflight from a listed origin, answered for any path
            preflight = self.cors.preflight_headers(origin, request.header("Access-Control-Request-Headers"))
            return _Response(204, preflight)
        if self.resource_metadata is not None:
            resource = self._metadata_resource(request)
            if resource is not None:
                return self._protected_resource(request, resource)
        if request.path == self.path:
            return self._endpoint(request)
        if self.legacy_sse and request.path == self.sse_path:
            return self._legacy_stream(request)
        if self.legacy_sse and request.path == self.messages_path:
            return self._legacy_message(request)
        return _http_error(404, f"Not found: {request.path}")

    def _origin_allowed(self, origin: str) -> bool:
        """The ``Origin`` check: ``allowed_origins`` (or the hosts), and the CORS origins, trusted by being listed."""
        if origin_allowed(origin, self.allowed_origins, self.allowed_hosts):
            return True
        return self.cors is not None and self.cors.allows(origin)

    # ----------------------------------------------------------- endpoint

    def _endpoint(self, request: _Request) -> _Response:
        methods = ("POST",) if self.stateless else ("GET", "POST", "DELETE")
        if request.method not in methods:
            return _http_error(405, f"Method not allowed: {request.method}", Allow=", ".join(methods))
        principal, denied = self._authenticate(request)
        if denied is not None:
            return denied
        version = request.header("MCP-Protocol-Version")
        if request.method == "POST":
            return self._post(request, principal, version)
        if version in STATELESS_REVISIONS:
            # 2026-07-28 has no sessions: nothing to stream or end outside a POST.
            return _http_error(405, f"Method not allowed at {version}: {request.method}", Allow="POST")
        if version is not None and version not in HANDSHAKE_REVISIONS:
            return _unsupported_version(version, None)
        revision = version or DEFAULT_REVISION
        found = self._find_session(request.header(SESSION_HEADER), principal)
        if isinstance(found, _Response):
            return found
        if request.method == "DELETE":
            self.sessions.release(found)
            self.sessions.remove(found.session_id)
            if self.backend.shares_sessions:
                try:
                    self.backend.end_session(found.session_id)
                    if isinstance(self.event_store, SharedEventStore):
                        self.event_store.forget(_get_stream_id(found.session_id))
                except BackendUnavailable:
                    return _backend_down()
            return _Response(204)
        return self._get(request, found, revision)

    def _find_session(
        self, session_id: str | None, principal: str | None, legacy: bool = False
    ) -> HTTPSession | _Response:
        """The session a request names, marked busy; or the error answering the request."""
        if session_id is None:
            return _http_error(400, f"Bad Request: missing {SESSION_HEADER if not legacy else 'session_id'}")
        entry = self.sessions.get(session_id)
        if not legacy and self.backend.shares_sessions:
            try:
                entry = self._shared_session(session_id, entry)
            except BackendUnavailable:
                return _backend_down()
        if entry is not None and (entry.legacy != legacy or entry.principal not in (None, principal)):
            self.sessions.release(entry)
            entry = None
        if entry is None:
            return _http_error(404, "Session not found", JsonRpcCode.SESSION_NOT_FOUND)
        return entry

    # ------------------------------------------------- sessions shared by processes

    def _shared_session(self, session_id: str, entry: HTTPSession | None) -> HTTPSession | None:
        """With a backend sharing sessions: the copy here, if the session lives; else one made from its record.

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
        # copy here: the receiver applies it (session_changed) only once the copy is kept.
        with self._copying:
            record = self.backend.load_session(session_id, ttl)
            if record is None:
                return None
            transport = StreamableSessionTransport(event_store=self.event_store)
            session = self.server.start(transport)
            transport.bind(session)
            self._serve_auth(session, transport)
            _restore(session, record)
            made = HTTPSession(session_id, transport, session, record.principal, 0.0)
            # Shared before it is kept: once kept, the process's other requests of the session use it at once.
            self._share(made)
            kept = self.sessions.adopt(made)
        if kept is not made:  # another request made one first, or the registry is full
            session.close()  # it stops watching the shared stream, and left nothing else
        return kept

    def _share(self, entry: HTTPSession) -> None:
        """Keep ``entry``'s session in the backend as it changes, and number its requests to the client uniquely."""
        if not self.backend.shares_sessions:
            return
        entry.session.dispatcher.prefix_ids(f"{secrets.token_hex(6)}-")
        assert isinstance(entry.transport, StreamableSessionTransport)
        entry.transport.shared = True
        entry.transport.forward = functools.partial(self._forward, entry.session_id)
        entry.transport.share_standalone(_get_stream_id(entry.session_id))
        entry.session.on_change = functools.partial(self._save_session, entry)

    def _forward(self, session_id: str, message: JSONRPCMessage) -> None:
        """Pass on a message for the session's GET stream, open in another process (if in any)."""
        self.backend.send_to_session(session_id, json.loads(encode_message(message)))

    def _save_session(self, entry: HTTPSession, session: ServerSession) -> None:
        record = SessionRecord(
            entry.session_id,
            session.revision or DEFAULT_REVISION,
            capabilities=session.client_capabilities.to_wire(),
            client_info=session.client_info.to_wire() if session.client_info is not None else None,
            log_level=session.log_level,
            subscriptions=session.subscriptions,
            principal=entry.principal,
        )
        self.backend.save_session(record, self.sessions.idle_timeout)

    def session_ended(self, session_id: str) -> None:
        """Another process ended session ``session_id`` (DELETE): end the copy here, if any.

        Called by the backend (see :class:`~mcp_sync.server.backend.SessionListener`)::

            app.session_ended("0123...")   # its open streams end; later requests get 404
        """
        self.sessions.remove(session_id)

    def session_changed(self, record: SessionRecord) -> None:
        """Another process changed a session (log level, subscriptions): the copy here, if any, takes it.

        Called by the backend::

            app.session_changed(SessionRecord(session_id, "2025-11-25", subscriptions=frozenset({"notes://1"})))
        """
        with self._copying:
            entry = self.sessions.peek(record.session_id)
        if entry is not None and not entry.legacy:
            _restore(entry.session, record)

    def session_message(self, session_id: str, message: dict[str, Any]) -> None:
        """A message another process passed on for a session.

        A client's response POSTed there is delivered here if a handler here
        waits for it; a notification or request for the session's GET stream
        (a log message, a request outside a call) is written here if the GET
        stream is open here.

        Called by the backend::

            app.session_message(session_id, {"jsonrpc": "2.0", "id": "a1b2-1", "result": {}})
        """
        entry = self.sessions.peek(session_id)
        if entry is None or not isinstance(entry.transport, StreamableSessionTransport):
            return
        decoded = decode_message(json.dumps(message).encode())
        if _response_to(decoded, entry.session):
            entry.transport.receive(decoded)
        elif isinstance(decoded, (JSONRPCNotification, JSONRPCRequest)):
            entry.transport.write_standalone(decoded)

    def session_stream_opened(self, session_id: str) -> None:
        """The session's GET stream opened in another process: the one open here, if any, ends (one stream each).

        Called by the backend::

            app.session_stream_opened(session_id)
        """
        entry = self.sessions.peek(session_id)
        if entry is not None and isinstance(entry.transport, StreamableSessionTransport):
            entry.transport.end_standalone()

    def sessions_missed(self) -> None:
        """The backend was away: what other processes said of sessions meanwhile is lost, so each copy here takes
        its record again (one whose record is gone ends at its next request).

        Called by the backend, subscribed again::

            app.sessions_missed()
        """
        ttl = self.sessions.idle_timeout
        for entry in self.sessions.entries():
            if not entry.legacy and (record := self.backend.load_session(entry.session_id, ttl)) is not None:
                _restore(entry.session, record)

    def _post(self, request: _Request, principal: str | None, version: str | None) -> _Response:
        accept = request.header("Accept")
        json_ok, sse_ok = accepts(accept, JSON), accepts(accept, EVENT_STREAM)
        body = self._read_body(request)
        if isinstance(body, _Response):
            return body
        message = decode_message(body)
        if isinstance(message, InvalidMessage):
            # The era rule (see accepts_batch): a batch may be served only at 2025-03-26, which a POST naming no
            # revision may be; a session's revision decides then (or, without sessions, 2025-03-26 is assumed).
            if message.batch is not None and version in (None, BATCH_REVISION):
                return self._post_batch(request, principal, version, message, (json_ok, sse_ok))
            return self._refuse_invalid(request, message, body, principal)
        refused = self._scope_refusal(request, message)
        if refused is not None:
            return refused
        lend_to = request if request.environ.get(WRITE_FROM_ANY_THREAD) else None
        if _is_stateless(version, message):
            answer = _Answer(json_ok, sse_ok, priming=False, stateless=True, auth=request.auth, lend_to=lend_to)
            return self._post_stateless_era(request, message, version, answer)
        if not (json_ok or sse_ok) or (self.json_response and not json_ok):
            return _http_error(406, f"Not Acceptable: the client must accept {JSON} and {EVENT_STREAM}")
        revision = version or DEFAULT_REVISION
        answer = _Answer(json_ok, sse_ok and not self.json_response, priming=at_least(revision, PRIMING_SINCE))
        answer.auth = request.auth
        answer.lend_to = lend_to
        if self.stateless:
            return self._post_stateless(message, answer, revision)
        session_id = request.header(SESSION_HEADER)
        if session_id is None and isinstance(message, JSONRPCRequest) and message.method == "initialize":
            return self._initialize(message, answer, principal)
        found = self._find_session(session_id, principal)
        if isinstance(found, _Response):
            return found
        entry = found
        answer.headers.append((SESSION_HEADER, entry.session_id))
        assert isinstance(entry.transport, StreamableSessionTransport)
        if self.backend.shares_sessions and _is_response(message) and not _response_to(message, entry.session):
            # An answer to a request of another process's handler (sampling, elicitation, roots): pass it on there.
            self.sessions.release(entry)
            try:
                self.backend.send_to_session(entry.session_id, json.loads(encode_message(message)))
            except BackendUnavailable:
                return _backend_down()
            return _Response(202, answer.headers)
        done = _Once(lambda: self.sessions.release(entry))
        try:
            return self._pass_on(entry.transport, message, answer, done)
        except BaseException:
            done()
            raise

    def _refuse_invalid(
        self, request: _Request, message: InvalidMessage, body: bytes, principal: str | None, legacy: bool = False
    ) -> _Response:
        """400 for a body that is no JSON-RPC message; a broken answer to a request of a session's handler is
        passed to the session too, so that the handler's call fails at once rather than wait out its timeout."""
        if message.id is None and message.error.code == JsonRpcCode.PARSE_ERROR and reads_as_response(body):
            message = InvalidMessage(message.error, recover_id(body), reply=False)
        session_id = request.query("session_id") if legacy else request.header(SESSION_HEADER)
        if not message.reply and message.id is not None and session_id is not None:
            found = self._find_session(session_id, principal, legacy)
            if not isinstance(found, _Response):  # no such session (or its backend is away): nothing waits here
                try:
                    found.transport.receive(message)
                finally:
                    self.sessions.release(found)
        return _refusal(message)

    def _post_batch(
        self,
        request: _Request,
        principal: str | None,
        version: str | None,
        message: InvalidMessage,
        accepted: tuple[bool, bool],
    ) -> _Response:
        """A POSTed JSON-RPC batch, which 2025-03-26 allows: each element passed to the session as if sent alone,
        the answers to its requests sent together, as one JSON array or as an SSE stream of them that ends after
        the last (elsewhere the one ``-32600`` any array gets).

        The handlers' own notifications and requests go on the GET stream, as in JSON-response mode.
        """
        assert message.batch is not None
        json_ok, sse_ok = accepted
        if not (json_ok or sse_ok) or (self.json_response and not json_ok):
            return _http_error(406, f"Not Acceptable: the client must accept {JSON} and {EVENT_STREAM}")
        if self.stateless:
            return self._post_batch_alone(request, message, sse_ok)
        session_id = request.header(SESSION_HEADER)
        if session_id is None:
            # Nothing but initialize is served without a session, and initialize MUST NOT be part of a batch.
            return _http_error(400, "Bad Request: a batch needs a session (send initialize alone, not in a batch)")
        found = self._find_session(session_id, principal)
        if isinstance(found, _Response):
            return found
        entry = found
        # The era rule (see accepts_batch): the request's MCP-Protocol-Version, or else the session's revision.
        if not accepts_batch(version or entry.session.revision):
            self.sessions.release(entry)
            return _refusal(message)
        elements = batch_elements(message.batch)
        refused = self._batch_scope_refusal(request, elements)
        if refused is not None:
            self.sessions.release(entry)
            return refused
        if self.backend.shares_sessions:
            # Answers to requests of another process's handlers (sampling, elicitation, roots) go on there, first:
            # should the backend be away, nothing of the batch was served, and the client may send it again.
            foreign = [e for e in elements if not isinstance(e, InvalidMessage) and _is_response(e)]
            foreign = [e for e in foreign if not _response_to(e, entry.session)]
            try:
                for answer in foreign:
                    self.backend.send_to_session(entry.session_id, json.loads(encode_message(answer)))
            except BackendUnavailable:
                self.sessions.release(entry)
                return _backend_down()
            elements = [e for e in elements if not any(e is answer for answer in foreign)]
        transport = entry.transport
        assert isinstance(transport, StreamableSessionTransport)
        done = _Once(lambda: self.sessions.release(entry))
        return self._serve_batch(request, transport, elements, sse_ok, [(SESSION_HEADER, entry.session_id)], done)

    def _post_batch_alone(self, request: _Request, message: InvalidMessage, sse_ok: bool) -> _Response:
        """Without sessions: a batch served at 2025-03-26 by a session of its own, ended once the batch is answered.

        (Only a POST naming 2025-03-26, or no revision, which then means 2025-03-26, comes here: see :meth:`_post`.)
        """
        assert message.batch is not None
        elements = batch_elements(message.batch)
        refused = self._batch_scope_refusal(request, elements)
        if refused is not None:
            return refused
        transport = StreamableSessionTransport(event_store=None)
        session = self.server.start(transport)
        session.serves_one_request = True
        transport.bind(session)
        self._serve_auth(session, transport)
        session.assume_initialized(BATCH_REVISION)
        done = self._keep_alone(session)
        if done is None:
            return _http_error(503, "The server is shutting down", JsonRpcCode.INTERNAL_ERROR)
        return self._serve_batch(request, transport, elements, sse_ok, [], done)

    def _batch_scope_refusal(
        self, request: _Request, elements: Sequence[JSONRPCMessage | InvalidMessage]
    ) -> _Response | None:
        """403 for a batch holding a request its token lacks a scope of: one such request refuses the whole batch."""
        for element in elements:
            refused = self._scope_refusal(request, element) if isinstance(element, JSONRPCRequest) else None
            if refused is not None:
                return refused
        return None

    def _serve_batch(
        self,
        request: _Request,
        transport: StreamableSessionTransport,
        elements: Sequence[JSONRPCMessage | InvalidMessage],
        sse_ok: bool,
        headers: list[tuple[str, str]],
        done: _Once,
    ) -> _Response:
        """Pass a batch's elements to the session, and answer with what answers its requests (``done`` once sent)."""
        requests = [element for element in elements if isinstance(element, JSONRPCRequest)]
        errors = [element.response() for element in elements if isinstance(element, InvalidMessage) and element.reply]
        answers = _BatchAnswers(len(requests), errors)
        for call in requests:
            transport.open_post(call.id, json_only=True, priming=False, auth=request.auth, reader=answers.slot(call.id))
        for element in elements:
            if not isinstance(element, InvalidMessage):  # (an invalid one has its error among the answers, or none)
                self._receive(transport, element)
        if not (requests or errors):
            done()
            return _Response(202, headers)
        if self.json_response or not sse_ok:
            responses = answers.collect()
            done()
            if not responses:  # its requests were all cancelled
                return _Response(202, headers)
            body = encode_batch(responses)
            return _Response(200, [("Content-Type", JSON), ("Content-Length", str(len(body))), *headers], [body])
        stream = _SSEBody(answers, first=b": batch\n\n", ping_interval=self.ping_interval, on_close=done)
        return _Response(200, [*_SSE_HEADERS, *headers], stream)

    def _initialize(self, message: JSONRPCRequest, answer: _Answer, principal: str | None) -> _Response:
        transport = StreamableSessionTransport(event_store=self.event_store)
        session = self.server.start(transport)
        transport.bind(session)
        self._serve_auth(session, transport)
        entry = HTTPSession(SessionRegistry.new_id(), transport, session, principal, 0.0)
        if not self.sessions.add(entry):
            session.close()
            return _http_error(503, "Too many sessions: try again later", JsonRpcCode.INTERNAL_ERROR, Retry_After="5")
        self._share(entry)
        answer.headers.append((SESSION_HEADER, entry.session_id))
        response = self._pass_on(transport, message, answer, _Once(lambda: self.sessions.release(entry)))
        if isinstance(response.message, JSONRPCErrorResponse):
            # A failed initialize opens no session.
            self.sessions.remove(entry.session_id)
            response.headers.remove((SESSION_HEADER, entry.session_id))
        return response

    def _post_stateless(self, message: JSONRPCMessage, answer: _Answer, revision: str) -> _Response:
        if not isinstance(message, JSONRPCRequest):
            # Without sessions nothing waits for a notification or a response.
            return _Response(202)
        return self._serve_alone(message, answer, None if message.method == "initialize" else revision)

    def _serve_alone(
        self, message: JSONRPCRequest, answer: _Answer, revision: str | None, read: StatelessRequest | None = None
    ) -> _Response:
        """Serve one request with a session of its own, ended when its answer is sent.

        ``revision`` is the handshake revision to assume; ``None`` for a
        request that needs none (``initialize``, or any 2026-07-28 request,
        which describes itself). A session of its own keeps the request ids
        of different clients apart, and closing it when the client goes away
        cancels the request. ``read`` is what the app already read from a
        2026-07-28 request's ``_meta``: the session takes it rather than read it again.
        """
        transport = StreamableSessionTransport(event_store=None, inline=True)
        session = self.server.start(transport)
        session.serves_one_request = True
        if read is not None and message.params is not None:
            session.read_ahead = (message.params, read)
        transport.bind(session)
        self._serve_auth(session, transport)
        if revision is not None:
            session.assume_initialized(revision)
        done = self._keep_alone(session)
        if done is None:
            return _http_error(503, "The server is shutting down", JsonRpcCode.INTERNAL_ERROR)
        try:
            return self._pass_on(transport, message, answer, done)
        except BaseException:
            done()
            raise

    def _keep_alone(self, session: ServerSession) -> _Once | None:
        """Count ``session``, which serves one POST, among those :meth:`close` waits for; what ends it when the POST
        is answered. ``None`` when the app is closing: the session is closed at once."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._throwaway.add(session)
        if closed:
            session.close()
            return None

        def finish() -> None:
            with self._lock:
                self._throwaway.discard(session)
                if self._closed:  # only close() waits for the last of them (it set the flag under this lock)
                    self._alone_done.notify_all()
            session.close()

        return _Once(finish)

    # ---------------------------------------------------------- 2026-07-28

    def _post_stateless_era(
        self, request: _Request, message: JSONRPCMessage, version: str | None, answer: _Answer
    ) -> _Response:
        """A POST of the stateless revision: its headers checked against its body, then served alone."""
        if not isinstance(message, JSONRPCRequest):
            # 2026-07-28 defines no notification from the client over HTTP: nothing to do.
            return _Response(202) if version in STATELESS_REVISIONS else _unsupported_version(version or "", None)
        try:
            read = self._check_stateless(request, message, version)
        except MCPError as error:
            return _stateless_error(400, message.id, error.jsonrpc_code, error.message, error.data)
        listen = message.method == "subscriptions/listen"
        if not (answer.sse_ok if listen else answer.json_ok or answer.sse_ok):
            wanted = EVENT_STREAM if listen else f"{JSON} or {EVENT_STREAM}"
            return _stateless_error(406, message.id, JsonRpcCode.INVALID_REQUEST, f"Not Acceptable: accept {wanted}")
        # A subscription is a stream from the start; other answers are JSON unless the handler talks first.
        answer.json_ok = answer.json_ok and not listen
        answer.sse_ok = answer.sse_ok and (listen or not self.json_response)
        return self._serve_alone(message, answer, None, read)

    def _check_stateless(self, request: _Request, message: JSONRPCRequest, version: str | None) -> StatelessRequest:
        """What the request's ``_meta`` says; raise the error refusing a request whose headers disagree with its
        body or whose ``_meta`` is malformed.

        In order: ``MCP-Protocol-Version`` against ``_meta`` (``HEADER_MISMATCH``),
        the revision (``PROTOCOL_VERSION_MISMATCH``), ``Mcp-Method`` and
        ``Mcp-Name`` (``HEADER_MISMATCH``), ``_meta`` itself (``INVALID_PARAMS``),
        the ``Mcp-Param-*`` headers of the tool called (``HEADER_MISMATCH``).
        The caller answers each with 400 and the error's JSON-RPC code.
        """
        params = message.params or {}
        meta = params.get("_meta")
        claimed = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
        mismatch: str | None = None
        if version is None:
            mismatch = "header MCP-Protocol-Version is missing"
        elif claimed is not None and claimed != version:
            mismatch = f"header MCP-Protocol-Version ({version}) does not match _meta ({claimed})"
        elif version not in STATELESS_REVISIONS:
            raise _version_refused(version)
        else:
            mismatch = _standard_header_problem(request, message.method, params)
        if mismatch is None:
            read = StatelessRequest.read(params)  # a malformed _meta, before the tool it names is looked at
            if message.method == "tools/call":
                mismatch = self._param_header_problem(request, params)
            if mismatch is None:
                return read
        raise MCPError(MCP_CODES.HEADER_MISMATCH, f"Header mismatch: {mismatch}")

    def _param_header_problem(self, request: _Request, params: dict[str, Any]) -> str | None:
        """Whether the ``Mcp-Param-*`` headers of a ``tools/call`` match the arguments its tool mirrors."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            return None  # the session answers for invalid params
        tool = self.server.get_tool(name)
        if tool is None:
            return None  # the session answers for an unknown tool
        cached = self._declarations.get(name)
        if cached is None or cached[0] is not tool:  # a tool registered again under the name is a new one
            try:
                cached = (tool, header_declarations(tool.input_schema))
            except InvalidHeaderDeclaration:
                cached = (tool, {})  # clients drop such a tool: there are no headers to hold it to
            self._declarations[name] = cached
        for header, path in cached[1].items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            problem = param_header_problem(header, request.header(f"Mcp-Param-{header}"), value)
            if problem is not None:
                return problem
        return None

    def _pass_on(
        self, transport: StreamableSessionTransport, message: JSONRPCMessage, answer: _Answer, done: _Once
    ) -> _Response:
        """Give ``message`` to the session; for a request, wait for what answers it."""
        if not isinstance(message, JSONRPCRequest):
            self._receive(transport, message)
            done()
            return _Response(202, answer.headers)
        json_only = not answer.sse_ok
        post = transport.open_post(message.id, json_only=json_only, priming=answer.priming, auth=answer.auth)
        if not answer.json_ok:
            transport.start_streaming(post)
        if transport.handoff_reading is not None:
            if answer.lend_to is not None and answer.json_ok:
                return self._serve_lent(_Lent(self, transport, post, answer, done), message)
            # A session of this request only: its handler runs on a thread kept for the purpose.
            self._handlers.submit(functools.partial(self._deliver, transport, message, done))
        else:
            transport.receive(message)
        return self._await_answer(transport, post, answer, done)

    @staticmethod
    def _receive(transport: StreamableSessionTransport, message: JSONRPCMessage) -> None:
        """Give ``message`` to the session; a cancellation also ends the POSTs that wait for the request."""
        transport.receive(message)
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, (str, int)) and not isinstance(cancelled, bool):
                transport.cancel(cancelled)

    def _serve_lent(self, lent: _Lent, message: JSONRPCRequest) -> _Response:
        """Serve a request of a session of its own on the thread that brought it: no hand-off to a handler thread
        and back. Should its answer turn into a stream while the handler runs, a handler thread streams it
        meanwhile, and this one waits for that stream to end (which the response ends) once its handler is done.
        """
        self._lend_watch.add(lent)
        try:
            self._deliver(lent.transport, message, lent.done)
        finally:
            self._lend_watch.discard(lent)
        streamed = lent.settle()
        if streamed is None:
            return self._await_answer(lent.transport, lent.post, lent.answer, lent.done)
        # Bounded: the response (or the session's end) is queued, and each write has the server's timeout.
        streamed.wait()
        return _Response(200, body=iter(()), started=True)

    def _stream_lent(self, lent: _Lent) -> None:
        """Write the answer of a lent request (on a handler thread) while its handler still runs."""
        response = self._await_answer(lent.transport, lent.post, lent.answer, lent.done)
        body = response.body
        request = lent.answer.lend_to
        assert request is not None
        headers = response.headers
        if self.cors is not None:
            headers = self.cors.apply(headers, request.header("Origin"))
        try:
            assert request.start_response is not None
            write = request.start_response(_status_line(response.status), headers)
            for chunk in body:
                write(chunk)
        except OSError as error:  # the client went away: closing a stream's body ends what it waits for
            log.debug("the answer to request %r was cut short: %s", lent.post.request_id, error)
        finally:
            if isinstance(body, _SSEBody):
                body.close()

    @staticmethod
    def _deliver(transport: StreamableSessionTransport, message: JSONRPCRequest, done: _Once) -> None:
        """Pass a request to the session serving it alone, on a handler thread (or the connection's, lent)."""
        try:
            transport.receive(message)
        except Exception:
            log.exception("the MCP HTTP app failed to pass on request %r", message.id)
            done()  # its session ends, and so the POST waiting for the answer does

    def _await_answer(
        self, transport: StreamableSessionTransport, post: PostedRequest, answer: _Answer, done: _Once
    ) -> _Response:
        """Wait until the first message for ``post`` decides between JSON and SSE."""
        pending: list[Item] = []
        # A JSON-only answer waits for the response, the session's end or a
        # cancellation; the others start streaming after a ping interval, so
        # that pings keep the connection alive while the handler works.
        timeout = None if post.json_only else self.ping_interval
        while post.mode != "sse":
            try:
                item = post.queue.get(timeout=timeout)
            except queue.Empty:
                transport.start_streaming(post)
                continue
            if isinstance(item, StreamEvent) and post.mode == "json":
                done()
                assert item.message is not None
                return _json(answer.status(item.message), item.message, answer.headers)
            if isinstance(item, StreamEvent):
                pending.append(item)
                break
            if item is Signal.END and not post.json_only:
                pending.append(item)
                break
            done()
            if item is Signal.END:
                cancelled = error_response(post.request_id, JsonRpcCode.REQUEST_CANCELLED, "Request cancelled")
                return _json(200, cancelled, answer.headers)
            return _json(200, _session_ended(post), answer.headers)

        def finished() -> None:
            transport.detach(post, post.queue)
            done()

        body = _SSEBody(
            post.queue,
            # 2026-07-28 streams cannot be resumed: no reconnection delay to advise.
            first=b": stream\n\n" if answer.stateless else self._retry_field(),
            ping_interval=self.ping_interval,
            on_close=finished,
            pending=pending,
            closing=_session_ended(post),
        )
        return _Response(200, [*_SSE_HEADERS, *answer.headers], body)

    def _get(self, request: _Request, entry: HTTPSession, revision: str) -> _Response:
        if not accepts(request.header("Accept"), EVENT_STREAM):
            self.sessions.release(entry)
            return _http_error(406, f"Not Acceptable: the client must accept {EVENT_STREAM}")
        transport = entry.transport
        assert isinstance(transport, StreamableSessionTransport)
        try:
            attached = transport.attach(request.header("Last-Event-ID"), priming=at_least(revision, PRIMING_SINCE))
        except BackendUnavailable:  # a shared event store, away
            self.sessions.release(entry)
            return _backend_down()
        if attached is None:
            self.sessions.release(entry)
            return _http_error(409, "Conflict: the session's GET stream is already open on another connection")
        stream, reader = attached
        if self.backend.shares_sessions and stream is transport.standalone:
            try:
                self.backend.stream_opened(entry.session_id)  # a GET stream open in another process ends
            except BackendUnavailable:
                transport.detach(stream, reader)
                self.sessions.release(entry)
                return _backend_down()

        def finished(stream: SSEStream = stream) -> None:
            transport.detach(stream, reader)
            self.sessions.release(entry)

        body = _SSEBody(reader, first=self._retry_field(), ping_interval=self.ping_interval, on_close=finished)
        return _Response(200, [*_SSE_HEADERS, (SESSION_HEADER, entry.session_id)], body)

    def _retry_field(self) -> bytes:
        return f"retry: {self.retry_ms}\n\n".encode()

    def _read_body(self, request: _Request) -> bytes | _Response:
        if not _json_utf8(request.header("Content-Type") or ""):
            return _http_error(415, f"Unsupported Media Type: the body must be {JSON} (UTF-8)")
        length = request.header("Content-Length")
        if not length:
            if not request.environ.get("wsgi.input_terminated"):
                return _http_error(411, "Length Required")
            size = self.max_body_bytes + 1  # read to the end; one byte more than allowed tells it is too much
        else:
            try:
                size = int(length)
            except ValueError:
                return _http_error(400, "Bad Request: invalid Content-Length")
            if size > self.max_body_bytes:
                return _http_error(413, f"Payload Too Large: the limit is {self.max_body_bytes} bytes")
        try:
            data = bytes(request.environ["wsgi.input"].read(size)) if size > 0 else b""
        except Exception as error:
            # The server could not read the body: malformed chunked framing, or a body
            # cut short. The client's fault, not ours. Our server then closes the
            # connection (with Connection: close); gunicorn closes it too; waitress
            # answers such bodies itself, without calling the app.
            log.debug("the request body could not be read: %s", error)
            return _http_error(400, f"Bad Request: the request body could not be read ({error})")
        if length and len(data) != size:
            return _http_error(400, "Bad Request: the body ended early")
        if len(data) > self.max_body_bytes:
            return _http_error(413, f"Payload Too Large: the limit is {self.max_body_bytes} bytes")
        return data

    # --------------------------------------------------------------- auth

    def _authenticate(self, request: _Request) -> tuple[str | None, _Response | None]:
        """The principal of the request's token, or the 401/403 that refuses it."""
        if self.token_verifier is None:
            return None, None
        token = bearer_token(request.header("Authorization"))
        if token is None:
            return None, self._refuse(request, 401, None, "Missing bearer token")
        if not well_formed(token):  # RFC 6750 section 3.1: a malformed request is 400 invalid_request
            return None, self._refuse(request, 400, "invalid_request", "The Authorization header holds no bearer token")
        try:
            claims = self.token_verifier(token)
        except InsufficientScope as refused:  # a subclass of InvalidToken: first
            needed = " ".join(sorted(set(refused.scope.split()) | set(self.required_scopes)))
            return None, self._refuse(request, 403, refused.error, refused.description, scope=needed)
        except InvalidToken as refused:
            return None, self._refuse(request, 401, refused.error, refused.description)
        except VerifierUnavailable as down:
            # Not the client's fault: no challenge (it would sign in again for nothing), a retry later instead.
            log.warning("cannot verify a bearer token now: %s", down.description)
            body = {"error": "temporarily_unavailable", "error_description": "The token cannot be checked now"}
            return None, _json(503, body, [("Retry-After", str(math.ceil(down.retry_after or 5)))])
        except Exception as exc:
            # The traceback without the token: a verifier's error may quote what it was given.
            trace = "".join(traceback.format_exception(exc)).replace(token, "[the token]")
            log.error("the token verifier failed: %s", trace)
            claims = None
        # A verifier with a leeway has judged the expiry already; the app's own check allows the same.
        leeway = float(getattr(self.token_verifier, "leeway", 0.0))
        if claims is None or token_expired(claims, time.time() - leeway):
            return None, self._refuse(request, 401, "invalid_token", "Invalid or expired token")
        missing = set(self.required_scopes) - token_scopes(claims)
        if missing:
            return None, self._refuse(
                request, 403, "insufficient_scope", f"Missing scopes: {' '.join(sorted(missing))}"
            )
        request.auth = AuthInfo.from_claims(claims)
        return token_principal(claims), None

    def _serve_auth(self, session: ServerSession, transport: StreamableSessionTransport) -> None:
        """Give a new session each request's auth (with a token verifier) and the listing rule."""
        session.list_all = self.list_all
        if self.token_verifier is not None:
            session.request_auth = transport.auth_of

    def _scope_refusal(self, request: _Request, message: JSONRPCMessage) -> _Response | None:
        """403 ``insufficient_scope`` for a request naming a tool, resource or prompt its token lacks a scope of.

        Answered before the request reaches a session, so in every era and
        whatever the client accepts; the challenge's ``scope`` is every scope
        needed (the item's and ``required_scopes``), what a client steps up to.
        """
        auth = request.auth
        if auth is None or not isinstance(message, JSONRPCRequest):
            return None
        needed = self.server.scopes_for(message.method, message.params or {})
        if auth.allows(needed):
            return None
        missing = " ".join(sorted(needed - auth.scopes))
        scope = " ".join(sorted(needed | set(self.required_scopes)))
        return self._refuse(request, 403, "insufficient_scope", f"Missing scopes: {missing}", scope=scope)

    def _refuse(
        self, request: _Request, status: int, error: str | None, description: str, scope: str | None = None
    ) -> _Response:
        value = challenge(
            error=error,
            error_description=description,
            scope=scope or " ".join(self.required_scopes) or None,
            resource_metadata=self._metadata_url(request),
        )
        body = {"error": error or "invalid_request", "error_description": description}
        return _json(status, body, [("WWW-Authenticate", value)])

    def _resource(self, request: _Request) -> str:
        """The resource's URL: the configured ``resource``, else the endpoint's URL under the mount point."""
        assert self.resource_metadata is not None
        resource = self.resource_metadata.get("resource")
        if resource:
            return str(resource)
        # An endpoint at the mount point itself (path "/") is the mount's URL, as clients name it.
        return request.base_url + (self.path.rstrip("/") or ("" if request.environ.get("SCRIPT_NAME") else "/"))

    def _metadata_url(self, request: _Request) -> str | None:
        """The metadata URL named in challenges.

        With a configured ``resource``, its RFC 9728 well-known URL (whoever
        configured it routes that URL here); else the well-known path under
        the app's own mount point (``SCRIPT_NAME``), which reaches the app
        wherever it is mounted (for an app at the root, the two are the same).
        """
        if self.resource_metadata is None:
            return None
        if self.resource_metadata.get("resource"):
            parts = urlsplit(self._resource(request))
            return f"{parts.scheme}://{parts.netloc}{PROTECTED_RESOURCE_PATH}{parts.path.rstrip('/')}"
        return f"{request.base_url}{PROTECTED_RESOURCE_PATH}{self.path.rstrip('/')}"

    def _metadata_resource(self, request: _Request) -> str | None:
        """The resource a metadata request is about, or ``None`` when the request is not for metadata.

        Relative to the app, ``/.well-known/oauth-protected-resource`` and
        ``/.well-known/oauth-protected-resource<path>`` describe the app's
        endpoint under its mount point. A request whose full path
        (``SCRIPT_NAME`` + ``PATH_INFO``) is the RFC 9728 well-known URL of a
        resource ending in the endpoint's path (the host routed it here, say
        ``/.well-known/oauth-protected-resource/api/mcp`` for an app mounted
        at ``/api``) describes that resource.
        """
        endpoint = self.path.rstrip("/")
        if request.path in (PROTECTED_RESOURCE_PATH, PROTECTED_RESOURCE_PATH + endpoint):
            return self._resource(request)
        # The raw PATH_INFO: a host that mounts the well-known URL itself passes an empty one (not "/").
        full = str(request.environ.get("SCRIPT_NAME", "")) + str(request.environ.get("PATH_INFO", ""))
        if full.startswith(PROTECTED_RESOURCE_PATH + "/") and full.endswith(endpoint):
            assert self.resource_metadata is not None
            if self.resource_metadata.get("resource"):
                return self._resource(request)
            parts = urlsplit(request.base_url)
            return f"{parts.scheme}://{parts.netloc}{full[len(PROTECTED_RESOURCE_PATH) :]}"
        return None

    def _protected_resource(self, request: _Request, resource: str) -> _Response:
        if request.method != "GET":
            return _http_error(405, f"Method not allowed: {request.method}", Allow="GET")
        assert self.resource_metadata is not None
        document = {**self.resource_metadata, "resource": resource}
        scopes = sorted(set(self.required_scopes) | self.server.all_scopes())
        if scopes:
            document.setdefault("scopes_supported", scopes)
        return _json(200, document, [("Cache-Control", "max-age=3600")])

    # ------------------------------------------------------- legacy HTTP+SSE

    def _legacy_stream(self, request: _Request) -> _Response:
        if request.method != "GET":
            return _http_error(405, f"Method not allowed: {request.method}", Allow="GET")
        principal, denied = self._authenticate(request)
        if denied is not None:
            return denied
        if not accepts(request.header("Accept"), EVENT_STREAM):
            return _http_error(406, f"Not Acceptable: the client must accept {EVENT_STREAM}")
        transport = LegacySSETransport()
        session = self.server.start(transport)
        session.auth, session.list_all = request.auth, self.list_all  # no POST per request: the stream's token
        entry = HTTPSession(SessionRegistry.new_id(), transport, session, principal, 0.0)
        if not self.sessions.add(entry):
            session.close()
            return _http_error(503, "Too many sessions: try again later", JsonRpcCode.INTERNAL_ERROR, Retry_After="5")

        def finished() -> None:
            self.sessions.release(entry)
            self.sessions.remove(entry.session_id)

        script = str(request.environ.get("SCRIPT_NAME", ""))
        endpoint = f"event: endpoint\ndata: {script}{self.messages_path}?session_id={entry.session_id}\n\n"
        body = _SSEBody(transport.reader, first=endpoint.encode(), ping_interval=self.ping_interval, on_close=finished)
        return _Response(200, list(_SSE_HEADERS), body)

    def _legacy_message(self, request: _Request) -> _Response:
        if request.method != "POST":
            return _http_error(405, f"Method not allowed: {request.method}", Allow="POST")
        principal, denied = self._authenticate(request)
        if denied is not None:
            return denied
        body = self._read_body(request)
        if isinstance(body, _Response):
            return body
        message = decode_message(body)
        if isinstance(message, InvalidMessage):
            return self._legacy_batch(request, principal, message, body)
        refused = self._scope_refusal(request, message)
        if refused is not None:
            return refused
        found = self._find_session(request.query("session_id"), principal, legacy=True)
        if isinstance(found, _Response):
            return found
        try:
            assert isinstance(found.transport, LegacySSETransport)
            found.transport.receive(message)
        finally:
            self.sessions.release(found)
        return _Response(202)

    def _legacy_batch(
        self, request: _Request, principal: str | None, message: InvalidMessage, body: bytes
    ) -> _Response:
        """A body of the 2024-11-05 transport that is no single message: a batch, served when the connection
        negotiated 2025-03-26 (each answer then goes on its stream as an event of its own); else 400."""
        if message.batch is None:
            return self._refuse_invalid(request, message, body, principal, legacy=True)
        found = self._find_session(request.query("session_id"), principal, legacy=True)
        if isinstance(found, _Response):
            return found
        try:
            if not accepts_batch(found.session.revision):  # the era rule: see accepts_batch
                return _refusal(message)
            refused = self._batch_scope_refusal(request, batch_elements(message.batch))
            if refused is not None:
                return refused
            found.transport.receive(message)  # the session's dispatcher serves the batch
        finally:
            self.sessions.release(found)
        return _Response(202)


def _open_backend(backend: Backend | str | None) -> Backend:
    """The backend an app was given: itself, one for a Redis URL, or (unset) from the environment."""
    if backend is None:
        backend = os.environ.get(REDIS_URL_VARIABLE) or None
    if backend is None:
        return InProcessBackend()
    if isinstance(backend, str):
        return RedisBackend(backend)
    return backend


def _get_stream_id(session_id: str) -> str:
    """The id of a shared session's GET stream, the same in every process."""
    return f"{session_id}.get"


def _backend_down() -> _Response:
    """503 for a request that needs the backend (a shared session) while it cannot be reached."""
    return _http_error(
        503, "The server's backend is unavailable: try again later", JsonRpcCode.INTERNAL_ERROR, Retry_After="1"
    )


def _is_response(message: JSONRPCMessage) -> bool:
    return isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse))


def _response_to(message: JSONRPCMessage | InvalidMessage, session: ServerSession) -> bool:
    """Whether ``message`` answers a request ``session`` sent and still waits for."""
    if not isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)) or message.id is None:
        return False
    return session.dispatcher.awaits(message.id)


def _restore(session: ServerSession, record: SessionRecord) -> None:
    """Give ``session`` the state another process keeps for it."""
    session.restore(
        record.revision,
        capabilities=ClientCapabilities.model_validate(record.capabilities),
        client_info=Implementation.model_validate(record.client_info) if record.client_info is not None else None,
        log_level=cast(LoggingLevel | None, record.log_level),
        subscriptions=record.subscriptions,
    )


@dataclass
class _Answer:
    """How a POSTed request may be answered, and the headers every answer carries."""

    json_ok: bool
    sse_ok: bool
    priming: bool
    headers: list[tuple[str, str]] = field(default_factory=list)
    stateless: bool = False
    """A 2026-07-28 request: some errors have their own HTTP status."""
    auth: AuthInfo | None = None
    """The facts of the request's bearer token, for its handler's ``ctx.auth``."""
    lend_to: _Request | None = None
    """The request, when its server lets another thread write its answer (see :class:`_Lent`)."""

    def status(self, message: JSONRPCMessage) -> int:
        """The HTTP status of a JSON answer carrying ``message``."""
        if self.stateless and isinstance(message, JSONRPCErrorResponse):
            return _STATELESS_STATUS.get(message.error.code, 200)
        return 200


_STATELESS_STATUS = {
    JsonRpcCode.METHOD_NOT_FOUND: 404,
    JsonRpcCode.HEADER_MISMATCH: 400,
    JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
}
"""The HTTP status of a 2026-07-28 error answered as JSON, when not 200."""


def _is_stateless(version: str | None, message: JSONRPCMessage) -> bool:
    """Whether a POST belongs to the stateless revision (or claims to: its checks then refuse it).

    So it does when its ``MCP-Protocol-Version`` is not a handshake revision,
    or when its body says so (a ``_meta`` protocol version, or
    ``server/discover``) without a header to tell otherwise; a handshake
    header with another ``_meta`` version is a mismatch, refused there.
    """
    if version is not None and version not in HANDSHAKE_REVISIONS:
        return True
    if not isinstance(message, JSONRPCRequest):
        return False
    claimed = meta_revision(message.params)
    if version is None:
        return claimed is not None or message.method == "server/discover"
    return claimed is not None and claimed != version


def _standard_header_problem(request: _Request, method: str, params: dict[str, Any]) -> str | None:
    """What is wrong with ``Mcp-Method`` and ``Mcp-Name`` (values exact, surrounding whitespace aside), if anything."""
    sent = request.header("Mcp-Method")
    if sent is None:
        return "header Mcp-Method is missing"
    if sent.strip(" \t") != method:
        return f"header Mcp-Method ({sent.strip()!r}) does not match the method ({method!r})"
    field = NAMED_BY.get(method)
    named = request.header("Mcp-Name")
    if field is None and method in NAMED_BY_TASK_ID:
        field = "taskId"
        if named is None:
            return None  # checked when sent (SEP-2663 names it; older clients of the extension do not send it)
    if field is None:
        return None
    if named is None:
        return "header Mcp-Name is missing"
    text = header_text(named)
    if text is None:
        return "header Mcp-Name is not a valid value"
    value = params.get(field)
    if isinstance(value, str) and text != value:
        return f"header Mcp-Name ({text!r}) does not match params.{field} ({value!r})"
    return None


def _stateless_error(status: int, request_id: RequestId | None, code: int, message: str, data: Any = None) -> _Response:
    """A refusal of a 2026-07-28 request: the HTTP status, and a JSON-RPC error echoing its id."""
    return _json(status, JSONRPCErrorResponse(id=request_id, error=Error(code=code, message=message, data=data)))


def _version_refused(requested: str) -> MCPError:
    """The error for an ``MCP-Protocol-Version`` this app does not serve, listing those it does (newest first).

    It travels as 2026-07-28's ``UnsupportedProtocolVersionError`` (code
    ``-32022``): clients of any era can retry with a listed version.
    """
    supported = [*reversed(STATELESS_REVISIONS), *reversed(HANDSHAKE_REVISIONS)]
    return MCPError(
        MCP_CODES.PROTOCOL_VERSION_MISMATCH,
        f"Unsupported protocol version (MCP-Protocol-Version: {requested})",
        data={"requested": requested, "supported": supported},
    )


def _unsupported_version(requested: str, request_id: RequestId | None) -> _Response:
    """400 refusing an ``MCP-Protocol-Version`` this app does not serve (see :func:`_version_refused`)."""
    error = _version_refused(requested)
    return _stateless_error(400, request_id, error.jsonrpc_code, error.message, error.data)


def _refusal(message: InvalidMessage) -> _Response:
    """400 for a body that is not a JSON-RPC message, with the JSON-RPC error in the body.

    The error carries the request's id when one could be read; never the id
    of a broken response (that id is the server's own, not the client's).
    """
    request_id = message.id if message.reply else None
    return _json(400, JSONRPCErrorResponse(id=request_id, error=message.error))


def _session_ended(post: PostedRequest | RequestId) -> JSONRPCMessage:
    request_id = post.request_id if isinstance(post, PostedRequest) else post
    return error_response(request_id, JsonRpcCode.INTERNAL_ERROR, "The session ended before the request was answered")


# ------------------------------------------------------------------ serving


class RunningHTTPServer:
    """An MCP server served over HTTP in the background, by :func:`start_http`.

    ``url`` is the endpoint's full URL; ``app`` the WSGI application;
    :meth:`close` (or leaving a ``with`` block) ends every session and stream,
    then stops the embedded server and joins its threads.
    """

    def __init__(self, app: StreamableHTTPApp, host: str, port: int, max_connections: int = MAX_CONNECTIONS) -> None:
        self.app = app
        self._server = _embedded(app, host, port, max_connections)
        self.url = self._server.url + app.path
        self._server.start()

    def close(self) -> None:
        """Stop serving: end every session and stream, then the listening socket and its threads."""
        self._server.close()

    def __enter__(self) -> RunningHTTPServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def start_http(
    server: MCPServer,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_connections: int = MAX_CONNECTIONS,
    **options: Any,
) -> RunningHTTPServer:
    """Serve ``server`` over HTTP in the background; ``options`` go to :class:`StreamableHTTPApp`.

    Port 0 picks a free port; the returned handle's ``url`` tells which.
    ``max_connections`` bounds the connections served at once (each open
    stream holds one; see :class:`~mcp_sync.server.http.wsgi.WSGIServer`).

    >>> running = start_http(MCPServer("demo"))
    >>> running.url.startswith("http://127.0.0.1:") and running.url.endswith("/mcp")
    True
    >>> running.close()
    """
    return RunningHTTPServer(StreamableHTTPApp(server, **options), host, port, max_connections)


def serve_http(
    server: MCPServer,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_connections: int = MAX_CONNECTIONS,
    **options: Any,
) -> None:
    """Serve ``server`` over HTTP until interrupted (Ctrl-C); ``options`` go to :class:`StreamableHTTPApp`.

    The endpoint's URL is logged (logger ``mcp_sync.http``, level INFO).
    ``max_connections`` bounds the connections served at once: each open
    GET or listen stream holds one, so a server that keeps thousands of
    clients listening raises it (and ``max_sessions`` for handshake-era
    clients)::

        serve_http(server, port=8000)        # http://127.0.0.1:8000/mcp
        serve_http(server, port=8000, max_connections=5000, max_sessions=5000)
    """
    app = StreamableHTTPApp(server, **options)
    embedded = _embedded(app, host, port, max_connections)
    log.info("serving MCP on %s%s", embedded.url, app.path)
    embedded.serve_forever()


def _embedded(app: StreamableHTTPApp, host: str, port: int, max_connections: int) -> WSGIServer:
    """The embedded server for ``app``; closing it closes the app first, which wakes every stream."""
    embedded = WSGIServer(app, host, port, max_connections=max_connections)
    embedded.on_close(app.close)
    return embedded
