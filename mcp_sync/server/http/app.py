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

A request whose answer may be JSON (every 2026-07-28 request, and in a
handshake-era session each one whose client accepts JSON) runs its handler
on the thread that read it when the embedded server or a gunicorn
``gthread`` or ``sync`` worker hosts the app: no hand-off to another thread
and back. Should its answer turn into a stream while the handler runs, a
handler thread writes it meanwhile (those servers allow that; other servers
get the hand-off). A session's stream resumed elsewhere while its handler
runs so ends its first connection when the handler returns.

A POST whose ``MCP-Protocol-Version`` is 2026-07-28 (or, without the header,
whose body's ``_meta`` names a revision, or which calls ``server/discover``)
is served the stateless way: no session id is issued or read, and nothing
is made for the request (see :mod:`~mcp_sync.server.http.stateless_host`);
closing its response stream cancels it. Before that, every header that mirrors the body
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

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...protocol.batch import BATCH_REVISION
from ...protocol.errors import JsonRpcCode, MCPError
from ...protocol.jsonrpc import InvalidMessage, decode_message, reads_as_response, recover_id
from ...protocol.types import JSONRPCErrorResponse, JSONRPCMessage, JSONRPCRequest
from ...protocol.versions import HANDSHAKE_REVISIONS, STATELESS_REVISIONS, at_least
from ...runtime.workers import ElasticPool
from ..authorization.tokens import TokenVerifier
from ..backend import Backend, BackendUnavailable
from ..core import MCPServer
from ..scale.redis_backend import RedisBackend
from ..scale.redis_tasks import share_tasks
from ..session import ServerSession
from . import legacy_sse
from .answers import Answer, SSEBody, await_answer, deliver, receive, retry_field
from .batches import post_batch
from .bearer import BearerGate
from .cors import CORSPolicy
from .event_store import EventStore
from .hosting import StopWatch, gunicorn_worker_stopping, gunicorn_writes_from_any_thread
from .lending import Lender, hang_up_test
from .security import LOOPBACK_HOSTS, accepts, host_allowed, origin_allowed
from .sessions import HTTPSession, SessionRegistry, SSEStream, StreamableSessionTransport, close_sessions
from .shared_sessions import SharedSessions, is_cancellation, is_response, open_backend, response_to
from .stateless_era import HeaderChecks, is_stateless, stateless_error, unsupported_version
from .stateless_host import StatelessHost
from .wire import (
    DEFAULT_REVISION,
    EVENT_STREAM,
    JSON,
    PRIMING_SINCE,
    SESSION_HEADER,
    SSE_HEADERS,
    Once,
    Request,
    Response,
    StartResponse,
    WSGIEnviron,
    backend_down,
    http_error,
    read_body,
    refusal,
    shutting_down,
    status_line,
)
from .wsgi import WRITE_FROM_ANY_THREAD

__all__ = ["StreamableHTTPApp"]

log = logging.getLogger(__name__)

HOST_STOP_TIMEOUT = 1.0
"""How long the app gives itself to close when its hosting server stops (seconds): its streams end by then."""


@functools.lru_cache(maxsize=256)  # a client sends the same Host with every request
def _host_allowed(host: str, patterns: tuple[str, ...]) -> bool:
    """:func:`host_allowed`, judged once per ``Host`` value and list of patterns."""
    return host_allowed(host, patterns)


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
    Requests at 2026-07-28 are served whatever ``stateless`` says, each
    standing alone (``json_response`` leaves ``subscriptions/listen`` a
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
        if not ping_interval > 0:  # (NaN too) zero would have the streams ping and the lend watch look without pause
            raise ValueError(f"ping_interval must be a positive number of seconds, not {ping_interval!r}")
        gate = BearerGate(
            server,
            path=path,
            token_verifier=token_verifier,
            required_scopes=required_scopes,
            resource_metadata=resource_metadata,
        )
        # Then: a backend that cannot be reached stops the app being made, before anything starts.
        self.backend = open_backend(backend)
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
        self.gate = gate
        """The bearer-token gate and the Protected Resource Metadata (see :mod:`~mcp_sync.server.http.bearer`)."""
        self.list_all = list_all
        self.event_store = event_store if event_store is not None else self.backend.event_store()
        self.legacy_sse = legacy_sse and not stateless
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.ping_interval = ping_interval
        self.retry_ms = retry_ms
        self.sessions = SessionRegistry(max_sessions=max_sessions, idle_timeout=session_idle_timeout, clock=clock)
        self.shared = SharedSessions(self.backend, self.sessions, self.event_store, self.start_session)
        """This process's part in sessions the backend shares (see :mod:`~mcp_sync.server.http.shared_sessions`)."""
        self._throwaway: set[ServerSession] = set()
        self._lock = threading.Lock()
        self._alone_done = threading.Condition(self._lock)
        # Threads for requests served alone; a request arriving while the app closes
        # still gets its thread (and so its "shutting down" answer).
        self._handlers = ElasticPool("mcp-sync-http-handler", run_after_close=True)
        self._lender = Lender(self._handlers, ping_interval=ping_interval, retry_ms=retry_ms, cors=self.cors)
        self._header_checks = HeaderChecks(server)
        self._stateless_host = StatelessHost(
            server, list_all=list_all, handlers=self._handlers, lender=self._lender, ping_interval=ping_interval
        )
        self._closed = False
        self._host_checked = False  # whether the app looked for a hosting server to watch (at its first request)
        # Whether the hosting server lets another thread write a response (gunicorn's gthread and sync workers;
        # the embedded server says so in each request's environ instead), known from the first request.
        self._writes_from_any_thread = False
        self._check_host = Once(self._watch_host)
        self._stop_watch: StopWatch | None = None

    # ---------------------------------------------------------------- WSGI

    def __call__(self, environ: WSGIEnviron, start_response: StartResponse) -> Iterable[bytes]:
        if not self._host_checked:
            self._check_host()
        request = Request(environ, start_response)
        try:
            response = self._handle(request)
        except Exception:
            log.exception("the MCP HTTP app failed on %s %s", request.method, request.path)
            response = http_error(500, "Internal server error", JsonRpcCode.INTERNAL_ERROR)
        if response.started:
            return response.body
        if self.cors is not None:
            response.headers = self.cors.apply(response.headers, request.header("Origin"))
        start_response(status_line(response.status), response.headers)
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
        self._stateless_host.close(max(0.0, deadline - time.monotonic()))
        for session in alone:
            session.dispatcher.drain(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._alone_done.wait_for(lambda: not self._throwaway, max(0.0, deadline - time.monotonic()))
            throwaway, self._throwaway = self._throwaway, set()
        close_sessions([*self.sessions.take_all(), *throwaway], max(0.0, deadline - time.monotonic()))
        self._lender.close(max(0.0, deadline - time.monotonic()))
        self._handlers.close(max(0.0, deadline - time.monotonic()))
        self.backend.close()

    def _watch_host(self) -> None:
        """At the first request: start the backend; learn whether the host lets another thread write a response; in
        a gunicorn worker, close the app once the worker is told to stop.

        The backend starts receiving what other processes publish in the
        process that serves (a gunicorn worker forked after the app was made,
        too: threads do not survive a fork). Without the watch, a worker's
        graceful stop would wait ``graceful_timeout`` for the open streams
        (see :mod:`mcp_sync.server.http.hosting`).
        """
        self._host_checked = True
        self.backend.start()
        self._writes_from_any_thread = gunicorn_writes_from_any_thread()
        stopping = gunicorn_worker_stopping()
        if stopping is None:
            return
        with self._lock:
            if not self._closed:
                self._stop_watch = StopWatch(stopping, functools.partial(self.close, HOST_STOP_TIMEOUT))

    def _handle(self, request: Request) -> Response:
        """The router: the checks every request passes, then the part of the app that serves its path."""
        if self._closed:
            return shutting_down()
        host = request.header("Host")
        if host is not None and not _host_allowed(host, tuple(self.allowed_hosts)):
            return http_error(421, f"Host not allowed: {host}")
        origin = request.header("Origin")
        if origin is not None and not self._origin_allowed(origin):
            return http_error(403, f"Origin not allowed: {origin}")
        if (
            self.cors is not None
            and origin is not None
            and request.method == "OPTIONS"
            and request.header("Access-Control-Request-Method") is not None
            and self.cors.allows(origin)
        ):  # a CORS preflight from a listed origin, answered for any path
            return Response(204, self.cors.preflight_headers(origin, request.header("Access-Control-Request-Headers")))
        resource = self.gate.metadata_resource(request)
        if resource is not None:
            return self.gate.protected_resource(request, resource)
        if request.path == self.path:
            return self._endpoint(request)
        if self.legacy_sse and request.path == self.sse_path:
            return legacy_sse.open_stream(self, request)
        if self.legacy_sse and request.path == self.messages_path:
            return legacy_sse.post_message(self, request)
        return http_error(404, f"Not found: {request.path}")

    def _origin_allowed(self, origin: str) -> bool:
        """The ``Origin`` check: ``allowed_origins`` (or the hosts), and the CORS origins, trusted by being listed."""
        if origin_allowed(origin, self.allowed_origins, self.allowed_hosts):
            return True
        return self.cors is not None and self.cors.allows(origin)

    # ----------------------------------------------------------- endpoint

    def _endpoint(self, request: Request) -> Response:
        methods = ("POST",) if self.stateless else ("GET", "POST", "DELETE")
        if request.method not in methods:
            return http_error(405, f"Method not allowed: {request.method}", Allow=", ".join(methods))
        principal, denied = self.gate.authenticate(request)
        if denied is not None:
            return denied
        version = request.header("MCP-Protocol-Version")
        if request.method == "POST":
            return self._post(request, principal, version)
        if version in STATELESS_REVISIONS:
            # 2026-07-28 has no sessions: nothing to stream or end outside a POST.
            return http_error(405, f"Method not allowed at {version}: {request.method}", Allow="POST")
        if version is not None and version not in HANDSHAKE_REVISIONS:
            return unsupported_version(version, None)
        found = self.find_session(request.header(SESSION_HEADER), principal)
        if isinstance(found, Response):
            return found
        if request.method == "DELETE":
            self.sessions.release(found)
            self.sessions.remove(found.session_id)
            try:
                self.shared.end(found.session_id)
            except BackendUnavailable:
                return backend_down()
            return Response(204)
        return self._get(request, found, version or DEFAULT_REVISION)

    def find_session(
        self, session_id: str | None, principal: str | None, legacy: bool = False
    ) -> HTTPSession | Response:
        """The session a request names, marked busy (release it with ``sessions.release``); or the error answering
        the request (400 without an id, 404 for a session unknown, ended or of another principal)."""
        if session_id is None:
            return http_error(400, f"Bad Request: missing {SESSION_HEADER if not legacy else 'session_id'}")
        entry = self.sessions.get(session_id)
        if not legacy and self.backend.shares_sessions:
            try:
                entry = self.shared.find(session_id, entry)
            except BackendUnavailable:
                return backend_down()
        if entry is not None and (entry.legacy != legacy or entry.principal not in (None, principal)):
            self.sessions.release(entry)
            entry = None
        if entry is None:
            return http_error(404, "Session not found", JsonRpcCode.SESSION_NOT_FOUND)
        return entry

    def start_session(self, transport: StreamableSessionTransport, *, per_request: bool = False) -> ServerSession:
        """A session of ``server`` on ``transport``, told each request's auth (with a token verifier) and the
        listing rule (``per_request``: each of its requests stands alone)."""
        session = self.server.start(transport, per_request=per_request)
        transport.bind(session)
        session.list_all = self.list_all
        if self.gate.token_verifier is not None:
            session.request_auth = transport.auth_of
        return session

    def _post(self, request: Request, principal: str | None, version: str | None) -> Response:
        accept = request.header("Accept")
        json_ok, sse_ok = accepts(accept, JSON), accepts(accept, EVENT_STREAM)
        body = read_body(request, self.max_body_bytes)
        if isinstance(body, Response):
            return body
        message = decode_message(body)
        if isinstance(message, InvalidMessage):
            # The era rule (see accepts_batch): a batch may be served only at 2025-03-26, which a POST naming no
            # revision may be; a session's revision decides then (or, without sessions, 2025-03-26 is assumed).
            if message.batch is not None and version in (None, BATCH_REVISION):
                return post_batch(self, request, principal, version, message, (json_ok, sse_ok))
            return self.refuse_invalid(request, message, body, principal)
        refused = self.gate.scope_refusal(request, message)
        if refused is not None:
            return refused
        lend_to = request if self._writes_from_any_thread or request.environ.get(WRITE_FROM_ANY_THREAD) else None
        if is_stateless(version, message):
            hung_up = hang_up_test(request.environ)  # (closing the connection cancels only in 2026-07-28)
            answer = Answer(json_ok, sse_ok, False, stateless=True, auth=request.auth, lend_to=lend_to, hung_up=hung_up)
            return self._post_stateless_era(request, message, version, answer)
        if not (json_ok or sse_ok) or (self.json_response and not json_ok):
            return http_error(406, f"Not Acceptable: the client must accept {JSON} and {EVENT_STREAM}")
        revision = version or DEFAULT_REVISION
        priming = at_least(revision, PRIMING_SINCE)
        answer = Answer(json_ok, sse_ok and not self.json_response, priming, auth=request.auth, lend_to=lend_to)
        if self.stateless:
            return self._post_stateless(message, answer, revision)
        session_id = request.header(SESSION_HEADER)
        if session_id is None and isinstance(message, JSONRPCRequest) and message.method == "initialize":
            return self._initialize(message, answer, principal)
        found = self.find_session(session_id, principal)
        if isinstance(found, Response):
            return found
        entry = found
        answer.headers.append((SESSION_HEADER, entry.session_id))
        assert isinstance(entry.transport, StreamableSessionTransport)
        if self.backend.shares_sessions:
            # An answer to a request of another process's handler (sampling, elicitation, roots) is passed on there;
            # a cancellation to every process (the request may run in any), and served here too.
            elsewhere = is_response(message) and not response_to(message, entry.session)
            if elsewhere or is_cancellation(message):
                try:
                    self.shared.pass_on(entry.session_id, message, from_client=True)
                except BackendUnavailable:
                    self.sessions.release(entry)
                    return backend_down()
                if elsewhere:
                    self.sessions.release(entry)
                    return Response(202, answer.headers)
        done = Once(lambda: self.sessions.release(entry))
        try:
            return self._pass_on(entry.transport, message, answer, done)
        except BaseException:
            done()
            raise

    def refuse_invalid(
        self, request: Request, message: InvalidMessage, body: bytes, principal: str | None, legacy: bool = False
    ) -> Response:
        """400 for a body that is no JSON-RPC message; a broken answer to a request of a session's handler is
        passed to the session too, so that the handler's call fails at once rather than wait out its timeout."""
        if message.id is None and message.error.code == JsonRpcCode.PARSE_ERROR and reads_as_response(body):
            message = InvalidMessage(message.error, recover_id(body), reply=False)
        session_id = request.query("session_id") if legacy else request.header(SESSION_HEADER)
        if not message.reply and message.id is not None and session_id is not None:
            found = self.find_session(session_id, principal, legacy)
            if not isinstance(found, Response):  # no such session (or its backend is away): nothing waits here
                try:
                    found.transport.receive(message)
                finally:
                    self.sessions.release(found)
        return refusal(message)

    def _initialize(self, message: JSONRPCRequest, answer: Answer, principal: str | None) -> Response:
        transport = StreamableSessionTransport(event_store=self.event_store)
        session = self.start_session(transport)
        entry = HTTPSession(SessionRegistry.new_id(), transport, session, principal, 0.0)
        if not self.sessions.add(entry):
            session.close()
            return http_error(503, "Too many sessions: try again later", JsonRpcCode.INTERNAL_ERROR, Retry_After="5")
        self.shared.share(entry)
        answer.headers.append((SESSION_HEADER, entry.session_id))
        response = self._pass_on(transport, message, answer, Once(lambda: self.sessions.release(entry)))
        if isinstance(response.message, JSONRPCErrorResponse):
            # A failed initialize opens no session.
            self.sessions.remove(entry.session_id)
            response.headers.remove((SESSION_HEADER, entry.session_id))
        return response

    # ------------------------------------------------------ requests served alone

    def _post_stateless(self, message: JSONRPCMessage, answer: Answer, revision: str) -> Response:
        if not isinstance(message, JSONRPCRequest):
            # Without sessions nothing waits for a notification or a response.
            return Response(202)
        return self._serve_alone(message, answer, None if message.method == "initialize" else revision)

    def _post_stateless_era(
        self, request: Request, message: JSONRPCMessage, version: str | None, answer: Answer
    ) -> Response:
        """A POST of the stateless revision: its headers checked against its body, then served alone."""
        if not isinstance(message, JSONRPCRequest):
            # 2026-07-28 defines no notification from the client over HTTP: nothing to do.
            return Response(202) if version in STATELESS_REVISIONS else unsupported_version(version or "", None)
        try:
            read = self._header_checks.check(request, message, version)
        except MCPError as error:
            return stateless_error(400, message.id, error.jsonrpc_code, error.message, error.data)
        listen = message.method == "subscriptions/listen"
        if not (answer.sse_ok if listen else answer.json_ok or answer.sse_ok):
            wanted = EVENT_STREAM if listen else f"{JSON} or {EVENT_STREAM}"
            return stateless_error(406, message.id, JsonRpcCode.INVALID_REQUEST, f"Not Acceptable: accept {wanted}")
        # A subscription is a stream from the start; other answers are JSON unless the handler talks first.
        answer.json_ok = answer.json_ok and not listen
        answer.sse_ok = answer.sse_ok and (listen or not self.json_response)
        return self._stateless_host.post(message, read, answer)

    def _serve_alone(self, message: JSONRPCRequest, answer: Answer, revision: str | None) -> Response:
        """Serve one request of a handshake revision without sessions (stateless mode) with a session of its own,
        ended when its answer is sent.

        ``revision`` is the handshake revision to assume; ``None`` for
        ``initialize``. A session of its own keeps the request ids of
        different clients apart.
        """
        transport = StreamableSessionTransport(event_store=None, inline=True)
        done = self.start_alone(transport, revision)
        if done is None:
            return shutting_down()
        try:
            return self._pass_on(transport, message, answer, done)
        except BaseException:
            done()
            raise

    def start_alone(self, transport: StreamableSessionTransport, revision: str | None) -> Once | None:
        """Start a session on ``transport`` that serves one POST (as at handshake ``revision``, if one), counted
        among those :meth:`close` waits for; what ends it once the POST is answered (``None``: the app is closing,
        and the session was closed at once)."""
        session = self.start_session(transport, per_request=True)
        if revision is not None:
            session.assume_initialized(revision)
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

        return Once(finish)

    def _pass_on(
        self, transport: StreamableSessionTransport, message: JSONRPCMessage, answer: Answer, done: Once
    ) -> Response:
        """Give ``message`` to the session; for a request, wait for what answers it."""
        if not isinstance(message, JSONRPCRequest):
            receive(transport, message)
            done()
            return Response(202, answer.headers)
        json_only = not answer.sse_ok
        post = transport.open_post(message.id, json_only=json_only, priming=answer.priming, auth=answer.auth)
        if not answer.json_ok:
            transport.start_streaming(post)
        if answer.lend_to is not None and answer.json_ok:
            # The handler runs on this thread (a thread writes the answer meanwhile, should it turn into a stream).
            # A session of many requests fails the POST if it cannot take this one (500), as when it is not lent.
            run = (
                functools.partial(deliver, transport, message, done)
                if transport.inline
                else functools.partial(transport.serve_here, message)
            )
            return self._lender.serve(transport, post, run, answer, done)  # (hanging up cancels nothing here)
        if transport.inline:
            # A session of this request only: its handler runs on a thread kept for the purpose.
            self._handlers.submit(functools.partial(deliver, transport, message, done))
        else:
            transport.receive(message)
        return await_answer(transport, post, answer, done, ping_interval=self.ping_interval, retry_ms=self.retry_ms)

    # --------------------------------------------------------------- GET

    def _get(self, request: Request, entry: HTTPSession, revision: str) -> Response:
        if not accepts(request.header("Accept"), EVENT_STREAM):
            self.sessions.release(entry)
            return http_error(406, f"Not Acceptable: the client must accept {EVENT_STREAM}")
        transport = entry.transport
        assert isinstance(transport, StreamableSessionTransport)
        try:
            attached = transport.attach(request.header("Last-Event-ID"), priming=at_least(revision, PRIMING_SINCE))
        except BackendUnavailable:  # a shared event store, away
            self.sessions.release(entry)
            return backend_down()
        if attached is None:
            self.sessions.release(entry)
            return http_error(409, "Conflict: the session's GET stream is already open on another connection")
        stream, reader = attached
        if self.backend.shares_sessions and stream is transport.standalone:
            try:
                self.backend.stream_opened(entry.session_id)  # a GET stream open in another process ends
            except BackendUnavailable:
                transport.detach(stream, reader)
                self.sessions.release(entry)
                return backend_down()

        def finished(stream: SSEStream = stream) -> None:
            transport.detach(stream, reader)
            self.sessions.release(entry)

        first = retry_field(self.retry_ms)
        # Shared, the session's record lives as long as it is used: an open GET stream uses it.
        keep = functools.partial(self.shared.keep, entry.session_id) if self.backend.shares_sessions else None
        body = SSEBody(reader, first=first, ping_interval=self.ping_interval, on_close=finished, on_ping=keep)
        return Response(200, [*SSE_HEADERS, (SESSION_HEADER, entry.session_id)], body)
