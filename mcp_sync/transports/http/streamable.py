"""MCP over HTTP, client side: the Streamable HTTP transport.

:class:`StreamableHTTPClientTransport` speaks the Streamable HTTP transport
(protocol revisions 2025-03-26 and later) with :mod:`requests`: each message
is a POST to the server's MCP endpoint, answered with one JSON body or with
an SSE stream, and a standalone GET stream carries what the server sends on
its own. :class:`~mcp_sync.transports.http.sse.SSEClientTransport` speaks the older
HTTP+SSE transport of 2024-11-05. :func:`mcp_sync.client.http_client` connects a client with
either, trying Streamable HTTP first as the spec's backwards-compatibility
section describes::

    from mcp_sync.client import http_client

    with http_client("http://127.0.0.1:8000/mcp") as client:
        print(client.call_tool("echo", {"text": "hi"}).text)

The transport is built on a :class:`requests.Session`, yours if you pass one,
so authentication, proxies, TLS settings and headers work as they do for any
other ``requests`` call:

>>> import requests
>>> session = requests.Session()
>>> session.headers["Authorization"] = "Bearer s3cret"
>>> transport = StreamableHTTPClientTransport("http://127.0.0.1:8000/mcp", session=session)
>>> transport.close()
>>> session.close()
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import pydantic_core
import requests
import requests.adapters
import requests.auth

from ...protocol.errors import MCP_CODES, JsonRpcCode, MCPError, MCPProtocolError, MCPTransportError
from ...protocol.headers import request_headers, screen_tools
from ...protocol.jsonrpc import InvalidMessage, decode_message, encode_message, parse_value
from ...protocol.types import (
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    RequestId,
)
from ...runtime.alarms import Alarms
from ...runtime.http import abort, abort_connections, new_session, shut_down, taking
from ...runtime.transport import BaseTransport
from ...runtime.workers import ElasticPool, PoolClosed
from . import turns
from ._common import (
    DEFAULT_SSE_READ_TIMEOUT,
    DEFAULT_TIMEOUT,
    JOIN_TIMEOUT,
    MAX_BODY_BYTES,
    STREAM_ERRORS,
    Sender,
    SSEClientFactory,
    Timeout,
    broken_answer,
    connect_part,
    connection_broke,
    content_type,
    default_sse_client,
    describe,
    error_answer,
    http_error_answer,
    lost_connection,
    read_body,
    snippet,
    unreachable,
)
from .cursor import StreamCursor

__all__ = [
    "DEFAULT_RECONNECT_ATTEMPTS",
    "StreamableHTTPClientTransport",
]

log = logging.getLogger(__name__)


DEFAULT_RECONNECT_ATTEMPTS = 3
"""How many times in a row a stream is resumed without the server sending anything new."""
DEFAULT_RECONNECT_DELAY = 1.0
"""The wait before resuming a stream when the server suggested none (seconds); it doubles
at each fruitless attempt, up to :data:`~mcp_sync.transports.http.cursor.MAX_RECONNECT_DELAY`."""
DELETE_TIMEOUT = 2.0
"""How long closing waits for the server to end the session (seconds)."""
ONE_WAY_READ_TIMEOUT = 10.0
"""Seconds to wait for the server to acknowledge a notification or response (a 202 comes at once)."""
GET_STREAM_WAIT = 2.0
"""How long a new session waits for its GET stream to be answered before its first request (seconds).

A server may send requests and notifications of its own on that stream as
soon as the session starts, and one with no event store drops what it sends
while no stream is open (the TypeScript SDK's does, silently): a request sent
meanwhile could wait for an elicitation that never comes. Servers answer a
GET at once (200, or 405 without a stream); the bound is for one that holds
the answer back."""

_ACCEPT_ANY = "application/json, text/event-stream"
_ACCEPT_SSE = "text/event-stream"
_SESSION_HEADER = "Mcp-Session-Id"
_SESSION_ID = re.compile(r"[\x21-\x7e]+")
"""What a session id may hold, as the spec says: visible ASCII. It goes back in every request's headers, where a
line break would fold into the next header and other bytes would go as Latin-1."""
_VERSION_HEADER = "MCP-Protocol-Version"
"""The parameter each method's ``Mcp-Name`` header mirrors (2026-07-28)."""
_IDLE_WORKER = 30.0
"""How long an idle POST worker waits for more work before it ends (seconds)."""


# ---------------------------------------------------------------- helpers


class _InflightRequest:
    """A request POSTed and not yet answered, with the response being read for it, so that it can be abandoned."""

    def __init__(self, request: JSONRPCRequest) -> None:
        self.request = request
        self.abandoned = False
        self.response: requests.Response | None = None
        self.connection: Any = None
        """The connection it was last sent on: shut down to abandon it while no response has come."""
        self.inline = False
        """Whether the caller's own thread reads its answer (see :meth:`StreamableHTTPClientTransport.exchange`)."""


class _HandedOff:
    """What the caller's thread got instead of an answer: a worker reads the rest (see ``_hand_off``)."""


_HANDED_OFF = _HandedOff()
_Answer = JSONRPCMessage | _HandedOff | None


class _SessionState:
    """What the server told us about the session, as one consistent snapshot."""

    __slots__ = ("generation", "id", "version")

    def __init__(self, generation: int, session_id: str | None, version: str | None) -> None:
        self.generation = generation
        self.id = session_id
        self.version = version


# ---------------------------------------------------------------- the transport


class _Held:
    """The block of :meth:`StreamableHTTPClientTransport._open`.

    A class rather than a generator: a caller's every request enters one,
    and a generator's context manager took four times as long.
    """

    __slots__ = ("inflight", "response", "transport")

    def __init__(
        self, transport: StreamableHTTPClientTransport, response: requests.Response, inflight: _InflightRequest | None
    ) -> None:
        self.transport = transport
        self.response = response
        self.inflight = inflight

    def __enter__(self) -> requests.Response:
        transport, response, inflight = self.transport, self.response, self.inflight
        with transport._state_lock:
            transport._streams.add(response)
            stop = transport.closed or (inflight is not None and inflight.abandoned)
            if inflight is not None:
                inflight.response = response
        if stop:
            abort(response)
        return response

    def __exit__(self, *exc_info: object) -> None:
        transport, response, inflight = self.transport, self.response, self.inflight
        with transport._state_lock:
            transport._streams.discard(response)
            if inflight is not None:
                inflight.connection = None  # going back to the pool, where another request may take it
        response.close()


class StreamableHTTPClientTransport(BaseTransport):
    """The client end of the Streamable HTTP transport.

    A caller that waits for its call's answer at once, with nothing but its
    timeout to stop it (a client's ``call_tool`` with no ``cancel``),
    POSTs it on its own thread and reads a JSON answer there (see
    :meth:`exchange`); a thread of the transport's (``mcp-sync-http-timer``)
    shuts the request's connection down if its time is up first. Other
    requests are POSTed from worker threads (named ``mcp-sync-http-post``),
    so sending returns at once and a caller's timeout and cancellation work
    as on any transport; so are the answers that come as an SSE stream,
    where the server may send for longer than the call waits, and those
    that need a new session first. Each worker reads its request's answer,
    delivering what else the server sends on the way.
    Notifications and responses are POSTed on the sending thread; a server
    that refuses one, or answers it with what cannot be read, is logged, not
    retried: the same message would be refused again. After ``notifications/initialized`` a GET stream (thread
    ``mcp-sync-http-get``) receives what the server sends on its own; a
    server without one answers 405, which is fine.

    The session id and the negotiated protocol version are learnt from the
    initialize exchange and sent on every later request. When the server
    answers 404 to a request carrying the session id (the session expired),
    a new session is started with the original initialize request and the
    request is sent again, once. A stream that ends before the answer
    arrives is resumed with a GET carrying ``Last-Event-ID``, after the
    server's ``retry`` delay, at most ``reconnect_attempts`` times in a row
    without news. An HTTP error, an answer that cannot be read (a bad
    status line, a header too long, a body cut short, a redirect loop), or
    a connection that breaks (reset, or closed by the server: the process
    serving it died, a load balancer dropped it) fails that request alone,
    and a stream that breaks with no event id to resume from fails its
    request; the next request may reach another of the server's processes.
    Only a server that cannot be reached (no connection can be made: see
    :func:`~mcp_sync.transports.http._common.unreachable`) closes the
    transport, failing every pending call with
    :class:`~mcp_sync.errors.MCPTransportError`. Closing ends the session
    with DELETE and stops every thread of the transport: responses being read
    are aborted and, on the session the transport made for itself, every
    connection is shut down, so that a POST the server never answers ends too
    (on a ``session`` you pass, such a POST ends at its read timeout).

    A request of the stateless revision 2026-07-28 (one whose ``_meta``
    names it) is sent that revision's way: no session id, and headers that
    mirror its body: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
    (the tool or prompt name, the resource URI) and an ``Mcp-Param-{Name}``
    for each tool argument whose schema property declares ``x-mcp-header``
    (values Base64-encoded as the spec requires). The declarations are read
    from the ``tools/list`` results the transport carries; a tool whose
    declarations break the rules is left out of those results, with a
    warning. Once such requests are sent, the client sends no notifications
    (2026-07-28 defines none over HTTP): a cancellation closes the request's
    response stream instead.

    ``timeout`` is the connect and read timeout of each POST;
    ``sse_read_timeout`` the read timeout of SSE streams;
    ``sse_client_factory`` makes the SSE parser of a response
    (default: :func:`default_sse_client`). A ``session`` you pass is used
    as it is (and not closed); its pool should allow a connection per call
    in flight, plus one for the GET stream.

    ::

        transport = StreamableHTTPClientTransport("http://127.0.0.1:8000/mcp", headers={"X-Team": "blue"})
        with MCPClient() as client:
            client.connect(transport)
            client.call_tool("echo", {"text": "hi"})
    """

    network_transport = "tcp"

    def __init__(
        self,
        url: str,
        *,
        session: requests.Session | None = None,
        headers: Mapping[str, str] | None = None,
        auth: requests.auth.AuthBase | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        sse_read_timeout: float = DEFAULT_SSE_READ_TIMEOUT,
        sse_client_factory: SSEClientFactory | None = None,
        reconnect_attempts: int = DEFAULT_RECONNECT_ATTEMPTS,
        reconnect_delay: float = DEFAULT_RECONNECT_DELAY,
        open_get_stream: bool = True,
    ) -> None:
        super().__init__()
        self.url = url
        self.session = session if session is not None else new_session()
        self._send = Sender(self.session, own=session is None)
        self._own_session = session is None
        self.headers = dict(headers or {})
        self.auth = auth
        self.timeout = timeout
        self.sse_read_timeout = sse_read_timeout
        self.sse_client_factory: SSEClientFactory = sse_client_factory or default_sse_client
        self.reconnect_attempts = reconnect_attempts
        self.reconnect_delay = reconnect_delay
        self.open_get_stream = open_get_stream
        self.session_id: str | None = None
        """The server's ``Mcp-Session-Id``, once it gave one."""
        self.protocol_version: str | None = None
        """The negotiated protocol revision, once initialize was answered."""
        self.sessions_started = 0
        """How many sessions were started again after the server forgot ours."""
        self._generation = 0
        self._state_lock = threading.Lock()
        self._renew_lock = threading.Lock()
        self._initialize: JSONRPCRequest | None = None
        self.initialize_status: int | None = None
        self._inflight: dict[RequestId, _InflightRequest] = {}
        self._related: dict[RequestId, RequestId] = {}
        """By id of a server request not answered yet: the id of ours whose POST stream carried it."""
        self._streams: set[requests.Response] = set()
        self._workers = ElasticPool("mcp-sync-http-post", idle_timeout=_IDLE_WORKER)
        self._alarms = Alarms("mcp-sync-http-timer")
        self._listening = False
        self._listener: threading.Thread | None = None
        self._get_answered = threading.Event()  # the listener's GET was answered (or failed): see GET_STREAM_WAIT
        self.stateless_revision: str | None = None
        """The 2026-07-28 revision the requests go at (``None``: the handshake era), as the client's era says."""
        self._declarations: dict[str, dict[str, tuple[str, ...]]] = {}

    def __repr__(self) -> str:
        return f"<StreamableHTTPClientTransport {self.url}>"

    # ------------------------------------------------------------ plumbing

    def _handlers_changed(self) -> None:
        """Nothing to start: reading happens on the threads that send."""

    def _state(self) -> _SessionState:
        with self._state_lock:
            return _SessionState(self._generation, self.session_id, self.protocol_version)

    def _headers(self, state: _SessionState | None, accept: str) -> dict[str, str]:
        headers = {**self.headers, "Accept": accept}
        if state is not None and state.id is not None:
            headers[_SESSION_HEADER] = state.id
        if state is not None and state.version is not None:
            headers[_VERSION_HEADER] = state.version
        return headers

    def set_stateless_revision(self, revision: str | None) -> None:
        """Send the requests that follow at the 2026-07-28 ``revision``; ``None``: the handshake era's way.

        The client's era negotiation calls it as it decides (before its
        ``server/discover`` probe, and again if it falls back to
        ``initialize``): the era is the connection's, decided once, and not
        read back out of each message.

        >>> transport = StreamableHTTPClientTransport("http://127.0.0.1:8000/mcp")
        >>> transport.set_stateless_revision("2026-07-28")
        >>> transport.stateless_revision
        '2026-07-28'
        >>> transport.close()
        """
        self.stateless_revision = revision

    def _stateless_headers(self, request: JSONRPCRequest, revision: str) -> dict[str, str]:
        """The headers of a 2026-07-28 request: its revision, and those that mirror its body (method, name, tool)."""
        headers = {**self.headers, "Accept": _ACCEPT_ANY, _VERSION_HEADER: revision}
        with self._state_lock:
            name = (request.params or {}).get("name")
            declared = self._declarations.get(str(name)) if request.method == "tools/call" else None
        headers.update(request_headers(request.method, request.params, declared))
        return headers

    def _learn_tools(self, answer: JSONRPCResultResponse) -> JSONRPCResultResponse:
        """A 2026-07-28 ``tools/list`` page: keep its tools' header declarations, drop tools whose ones are invalid."""
        tools = answer.result.get("tools")
        if not isinstance(tools, list):
            return answer

        def warn(name: str, reason: str) -> None:
            log.warning(
                "the MCP server at %s lists tool %r with an invalid header: %s; leaving it out", self.url, name, reason
            )

        kept, declarations = screen_tools(tools, warn)
        with self._state_lock:
            self._declarations.update(declarations)
        if len(kept) == len(tools):
            return answer
        return JSONRPCResultResponse(id=answer.id, result={**answer.result, "tools": kept})

    def _post(
        self, message: JSONRPCMessage, state: _SessionState | None, *, stream: bool, timeout: Timeout | None = None
    ) -> requests.Response:
        revision = self.stateless_revision
        if revision is not None and isinstance(message, JSONRPCRequest):
            headers = self._stateless_headers(message, revision)
        else:
            headers = self._headers(state, _ACCEPT_ANY)
        headers["Content-Type"] = "application/json"
        return self._send(
            "POST",
            self.url,
            data=encode_message(message),
            headers=headers,
            auth=self.auth,
            timeout=self.timeout if timeout is None else timeout,
            stream=stream,
        )

    def _get(self, state: _SessionState, last_event_id: str | None) -> requests.Response:
        headers = self._headers(state, _ACCEPT_SSE)
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        timeout = (connect_part(self.timeout), self.sse_read_timeout)
        return self._send("GET", self.url, headers=headers, auth=self.auth, timeout=timeout, stream=True)

    def _open(self, response: requests.Response, inflight: _InflightRequest | None = None) -> _Held:
        """Keep ``response`` where closing (or abandoning ``inflight``) can stop it; close it after the block."""
        return _Held(self, response, inflight)

    def _lose(self, error: MCPTransportError) -> NoReturn:
        """The server cannot be reached: close the transport with ``error`` and raise it."""
        self._closed_by_peer(error)
        raise error

    # -------------------------------------------------------------- writing

    def exchange(self, request: JSONRPCRequest, timeout: float | None) -> None:
        """Send ``request`` from this thread, whose caller waits for its answer, and read a JSON answer here.

        Returns once the answer was delivered, once ``timeout`` seconds
        passed (an alarm then shuts the request's connection down; ``None``:
        no limit), or once a worker took the rest over: an SSE stream (the
        server may send there for longer than the call waits, and the
        caller's wait on its future keeps the call's timeout whatever comes),
        or a session the server forgot (404) and a new one to start first.
        The caller saves a thread's wake-up and a hand-over per call, and,
        while other threads of the process read their answers too, lets one
        waiting for the interpreter lock run before it returns.
        With a ``session`` or an ``auth`` you gave (which may run a sign-in
        of its own while it sends, or hold a connection this transport cannot
        shut down), the request goes as :meth:`send` sends it.

        ::

            transport.exchange(request, 30.0)  # the dispatcher does this for a client's call_tool
        """
        if not self._own_session or self.auth is not None:
            self.send(request)
            return
        self._ensure_open()
        inflight = self._admit(request)
        inflight.inline = True
        alarm = None if timeout is None else self._alarms.set(timeout, functools.partial(self._abandon, request.id))
        with turns.READERS:
            try:
                self._run(inflight)
            finally:
                if alarm is not None:
                    self._alarms.clear(alarm)
            crowded = turns.READERS.crowded()
        if crowded:
            # Let a thread that waits for the interpreter lock have it now, as the hand-over from a worker did:
            # without this, callers that read their own answers hold it for longer stretches, and with 8 threads
            # calling at once the slowest 1% of calls took 7% longer (bench/http_bench.py, the tree before and after
            # in turns). A sched_yield rather than a sleep(0) gave 6% more calls per second with 8 threads, and a
            # p99 3% lower. Alone, a caller has nobody to yield to.
            turns.let_another_run()

    def _admit(self, request: JSONRPCRequest) -> _InflightRequest:
        """Note ``request`` as in flight (where closing, and abandoning it, find it)."""
        if request.method == "initialize":
            self._initialize = request
        inflight = _InflightRequest(request)
        with self._state_lock:
            self._inflight[request.id] = inflight
        return inflight

    def _write(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            inflight = self._admit(message)
            try:
                self._workers.submit(functools.partial(self._run, inflight))
            except PoolClosed:
                # close() ran between send()'s check and here.
                with self._state_lock:
                    self._inflight.pop(message.id, None)
                raise MCPTransportError(MCP_CODES.TRANSPORT_CLOSED, "cannot send: the transport is closed") from None
            return
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self._abandon((message.params or {}).get("requestId"))
        elif isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)) and message.id is not None:
            self._related.pop(message.id, None)
        if self.stateless_revision is not None:
            return  # 2026-07-28 defines no notification over HTTP: closing the stream was the cancellation
        self._send_one_way(message, self._state())
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/initialized":
            self._start_listener()

    def _send_one_way(self, message: JSONRPCMessage, state: _SessionState) -> None:
        """POST a notification or a response; the server should answer 202.

        It runs on the caller's thread (a cancellation is sent by the caller
        that gave up), so it waits for the acknowledgement only briefly.
        """
        try:
            one_way = (connect_part(self.timeout), ONE_WAY_READ_TIMEOUT)
            response = self._post(message, state, stream=False, timeout=one_way)
        except requests.ReadTimeout as exc:
            log.warning("the MCP server at %s did not acknowledge a message in time: %s", self.url, exc)
            return
        except requests.RequestException as exc:
            if unreachable(exc):
                self._lose(lost_connection(self.url, exc, "sending a message"))
            if connection_broke(exc):
                log.warning(
                    "the connection to the MCP server at %s broke under a message: %s", self.url, broken_answer(exc)
                )
            else:
                log.warning("the MCP server at %s answered a message badly: %s", self.url, broken_answer(exc))
            return
        with response:
            if response.status_code >= 400:
                log.warning(
                    "the MCP server at %s refused a message with %s: %s",
                    self.url,
                    describe(response),
                    snippet(read_body(response) or b""),
                )

    def _abandon(self, request_id: Any) -> None:
        """The caller gave up on ``request_id``: stop reading its answer."""
        with self._state_lock:
            inflight = self._inflight.get(request_id) if isinstance(request_id, (str, int)) else None
            if inflight is None:
                return
            inflight.abandoned = True
            response, connection = inflight.response, inflight.connection
            # Under the lock, which is taken to let go of the connection (and its response) before it goes back
            # to the pool: never shut down once another request may have taken it from there.
            if response is not None:
                abort(response)
            elif connection is not None:
                # No response yet (a server that sends its headers with its answer): closing the connection
                # is how the server learns of it, and the 2026-07-28 cancellation.
                shut_down(connection)

    def _post_noted(self, inflight: _InflightRequest, state: _SessionState) -> requests.Response:
        """POST ``inflight``'s request, noting the connection it goes on (see :meth:`_abandon`)."""
        with taking(functools.partial(self._took, inflight)):
            return self._post(inflight.request, state, stream=True)

    def _took(self, inflight: _InflightRequest, connection: Any) -> None:
        """``inflight`` is sent on ``connection`` (``None``: on none now); abandoned already, it is shut down."""
        with self._state_lock:
            inflight.connection = connection
            if connection is None:
                inflight.response = None  # (its connection is going back to the pool: nothing to stop there)
            abandoned = inflight.abandoned
        if abandoned and connection is not None:
            shut_down(connection)

    # ------------------------------------------------------------ requests

    def _run(self, inflight: _InflightRequest) -> None:
        """On a worker thread (or the caller's: see :meth:`exchange`): POST a request and deliver its answer."""
        if self.closed:
            # Accepted just before the close: every pending call has failed already,
            # and the server must not get a request nobody waits for.
            with self._state_lock:
                self._inflight.pop(inflight.request.id, None)
            return
        self._settle(inflight, functools.partial(self._answer, inflight))

    def _settle(self, inflight: _InflightRequest, answer_of: Callable[[], _Answer]) -> None:
        """Deliver what ``answer_of()`` gives as ``inflight``'s answer, or what its failure means for the call."""
        request = inflight.request
        answer: _Answer = None
        try:
            answer = answer_of()
        except requests.RequestException as exc:
            answer = None if inflight.abandoned or self.closed else self._failure(request, exc)
        except MCPTransportError:
            answer = None  # the transport is closed: every pending call has failed already
        except MCPError as exc:
            # The auth could not sign in (an OAuth flow that failed): the call gets its reason.
            answer = error_answer(request.id, exc.jsonrpc_code, exc.message, exc.data)
        finally:
            if answer is not _HANDED_OFF:
                with self._state_lock:
                    self._inflight.pop(request.id, None)
        if answer is not None and not isinstance(answer, _HandedOff):
            if request.method == "initialize" and isinstance(answer, JSONRPCResultResponse):
                self._learn_version(answer)
            if (
                request.method == "tools/list"
                and isinstance(answer, JSONRPCResultResponse)
                and self.stateless_revision is not None
            ):
                answer = self._learn_tools(answer)
            self._deliver(answer)

    def related_request(self, request_id: RequestId) -> RequestId | None:
        """The id of this client's request on whose response stream the server sent its request ``request_id``.

        ``None`` when the server sent it on the standalone GET stream (it
        relates it to none of ours) or it was answered already. How a client
        that makes several calls at once tells which one a server's question
        (sampling, elicitation, roots) belongs to: :mod:`mcp_sync.compose`
        routes by it (see :meth:`JsonRpcDispatcher.progress_callback
        <mcp_sync.runtime.dispatcher.JsonRpcDispatcher.progress_callback>`).
        """
        return self._related.get(request_id)

    def _failure(self, request: JSONRPCRequest, exc: requests.RequestException) -> JSONRPCMessage | None:
        """What a failed HTTP exchange means: a server that cannot be reached fails the transport, else the call."""
        if isinstance(exc, requests.ReadTimeout):
            return error_answer(
                request.id,
                JsonRpcCode.INTERNAL_ERROR,
                f"the MCP server at {self.url} did not answer {request.method} in time: {exc}",
                {"url": self.url},
            )
        if unreachable(exc):
            self._closed_by_peer(lost_connection(self.url, exc, f"waiting for the answer to {request.method}"))
            return None
        # The server was there: this call fails, the others go on (on other connections, maybe other processes).
        if connection_broke(exc):
            message = f"the connection to the MCP server at {self.url} broke before it answered {request.method}"
        else:
            message = f"the MCP server at {self.url} answered {request.method} with an answer that could not be read"
        return error_answer(
            request.id, JsonRpcCode.INTERNAL_ERROR, f"{message}: {broken_answer(exc)}", {"url": self.url}
        )

    def _answer(self, inflight: _InflightRequest) -> _Answer:
        """The answer to ``inflight``'s request (``None`` when it was abandoned; see :meth:`_hand_off`)."""
        state = self._state()
        response = self._post_noted(inflight, state)
        if inflight.inline and (
            self._forgot(response, state, inflight) or content_type(response) == "text/event-stream"
        ):
            return self._hand_off(inflight, response, state)
        return self._answer_from(inflight, response, state)

    def _forgot(self, response: requests.Response, state: _SessionState, inflight: _InflightRequest) -> bool:
        """Whether ``response`` says the server forgot the session ``state`` names (a 404 for it)."""
        return (
            response.status_code == 404
            and state.id is not None
            and inflight.request.method != "initialize"
            and self.stateless_revision is None
        )

    def _hand_off(self, inflight: _InflightRequest, response: requests.Response, state: _SessionState) -> _Answer:
        """From the caller's thread: leave ``response`` (and the rest of ``inflight``'s answer) to a worker.

        The caller then waits for the answer on its future, where its timeout
        and cancellation hold however long the server streams.
        """
        inflight.inline = False
        rest = functools.partial(self._answer_from, inflight, response, state)
        try:
            self._workers.submit(functools.partial(self._settle, inflight, rest))
        except PoolClosed:
            response.close()
            return None  # closed meanwhile: every pending call has failed already
        return _HANDED_OFF

    def _answer_from(
        self, inflight: _InflightRequest, response: requests.Response, state: _SessionState
    ) -> JSONRPCMessage | None:
        """The answer to ``inflight``'s request, given the ``response`` to its POST in session ``state``."""
        request = inflight.request
        if self._forgot(response, state, inflight):
            # No longer this request's to shut down, before it goes back to the pool (where another may take it).
            self._took(inflight, None)
            response.close()
            if not self._renew(state):
                return error_answer(
                    request.id,
                    JsonRpcCode.INTERNAL_ERROR,
                    f"the session with the MCP server at {self.url} expired and a new one could not be started",
                    {"url": self.url},
                )
            response = self._post_noted(inflight, self._state())
        with self._open(response, inflight):
            if request.method == "initialize":
                self.initialize_status = response.status_code
                self._learn_session(response)
            return self._read_answer(inflight, response)

    def _read_answer(self, inflight: _InflightRequest, response: requests.Response) -> JSONRPCMessage | None:
        request = inflight.request
        if response.status_code >= 400:
            return http_error_answer(self.url, request, response)
        kind = content_type(response)
        if kind == "application/json":
            body = read_body(response)
            if body is None:
                return error_answer(
                    request.id,
                    JsonRpcCode.INTERNAL_ERROR,
                    f"the MCP server at {self.url} answered {request.method} with a body over {MAX_BODY_BYTES} bytes",
                    {"url": self.url},
                )
            return self._json_answer(request, body)
        if kind == "text/event-stream":
            return self._stream_answer(inflight, response)
        return error_answer(
            request.id,
            JsonRpcCode.INTERNAL_ERROR,
            f"the MCP server at {self.url} answered {request.method} with {describe(response)} "
            f"and content type {kind or 'none'}, not JSON or an SSE stream",
            {"status": response.status_code, "url": self.url},
        )

    def _json_answer(self, request: JSONRPCRequest, body: bytes) -> JSONRPCMessage:
        try:
            value = pydantic_core.from_json(body)
        except ValueError:
            # Built as the MCPProtocolError the caller gets, then carried as the answer the server failed to give.
            error = MCPError(
                MCP_CODES.PARSE_ERROR,
                f"the MCP server at {self.url} answered {request.method} with invalid JSON: {snippet(body)}",
            )
            return error_answer(request.id, error.jsonrpc_code, error.message)
        answer = None
        for item in value if isinstance(value, list) else [value]:
            found = self._incoming(parse_value(item), request)
            if answer is None:
                answer = found
        return answer or error_answer(
            request.id,
            JsonRpcCode.INTERNAL_ERROR,
            f"the MCP server at {self.url} sent no answer to {request.method}: {snippet(body)}",
        )

    def _incoming(
        self, message: JSONRPCMessage | InvalidMessage, request: JSONRPCRequest | None
    ) -> JSONRPCMessage | None:
        """Deliver ``message``, unless it answers ``request``: then return it."""
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            # The server withdrew a question of its own: it gets no answer, so it is forgotten here.
            withdrawn = (message.params or {}).get("requestId")
            if isinstance(withdrawn, (str, int)):  # (a malformed id, a list say, cannot be a key: nothing to forget)
                self._related.pop(withdrawn, None)
        if request is not None:
            if isinstance(message, InvalidMessage):
                if message.id == request.id:
                    # A broken envelope breaks the protocol: the caller gets an MCPProtocolError.
                    return error_answer(
                        request.id,
                        JsonRpcCode.INVALID_REQUEST,
                        f"the MCP server at {self.url} sent an invalid answer to {request.method}: "
                        f"{message.error.message}",
                    )
            elif isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)):
                if message.id == request.id:
                    return message
                if message.id is None and isinstance(message, JSONRPCErrorResponse):
                    return JSONRPCErrorResponse(id=request.id, error=message.error)
            elif isinstance(message, JSONRPCRequest):
                self._related[message.id] = request.id  # forgotten as it is answered (_write)
        self._deliver(message)
        return None

    def _pump(
        self, response: requests.Response, cursor: StreamCursor, request: JSONRPCRequest | None
    ) -> JSONRPCMessage | None:
        """Deliver an SSE response's messages until it ends or the answer to ``request`` comes; that answer."""
        source = self.sse_client_factory(response)
        for event in source.events():
            cursor.saw(event)
            if event.event == "message" and event.data.strip():
                answer = self._incoming(decode_message(event.data), request)
                if answer is not None:
                    return answer
        return None

    def _read_once(
        self, response: requests.Response, cursor: StreamCursor, request: JSONRPCRequest
    ) -> tuple[JSONRPCMessage | None, str | None, bool]:
        """Read one SSE response: the answer if it came, what broke the stream, whether anything came."""
        seen = cursor.events
        try:
            answer = self._pump(response, cursor, request)
        except STREAM_ERRORS as exc:
            # Said in words: the exception would hold, through its traceback, this frame and its callers', whose
            # locals hold it (a cycle only the garbage collector breaks), and with them the response, its pool and
            # the pool's connections, open until then (urllib3 2 closes a pool's connections once it is freed).
            return None, str(exc), cursor.events > seen
        return answer, None, cursor.events > seen

    def _stream_answer(self, inflight: _InflightRequest, response: requests.Response) -> JSONRPCMessage | None:
        """Read the answer from an SSE stream, resuming the stream with GETs while it breaks off early."""
        request = inflight.request
        cursor = StreamCursor()
        failures = 0
        answer, broken, news = self._read_once(response, cursor, request)
        while answer is None and not inflight.abandoned and not self.closed:
            if cursor.last_event_id is None:
                # No event id to resume the stream from (2026-07-28 streams have none): the request is lost, not the
                # connection, whether the stream broke (the process serving it died, the client refused an event
                # too big to read) or ended.
                if broken is not None:
                    return error_answer(
                        request.id,
                        JsonRpcCode.INTERNAL_ERROR,
                        f"the stream answering {request.method} from the MCP server at {self.url} broke: {broken}",
                        {"url": self.url},
                    )
                return error_answer(
                    request.id,
                    JsonRpcCode.INTERNAL_ERROR,
                    f"the MCP server at {self.url} ended the stream without answering {request.method}",
                )
            failures = 0 if news else failures + 1
            if failures > self.reconnect_attempts:
                return error_answer(
                    request.id,
                    JsonRpcCode.INTERNAL_ERROR,
                    f"gave up resuming the answer to {request.method} from the MCP server at {self.url} "
                    f"after {self.reconnect_attempts} attempts without news",
                )
            if self._closed.wait(cursor.delay(failures, self.reconnect_delay)):
                return None
            with taking(functools.partial(self._took, inflight)):  # (let go of as it goes back to the pool)
                resumed = self._get(self._state(), cursor.last_event_id)
            with self._open(resumed, inflight):
                if resumed.status_code != 200 or content_type(resumed) != "text/event-stream":
                    return error_answer(
                        request.id,
                        JsonRpcCode.INTERNAL_ERROR,
                        f"could not resume the answer to {request.method}: the MCP server at {self.url} "
                        f"answered the GET with {describe(resumed)}",
                        {"status": resumed.status_code, "url": self.url},
                    )
                answer, broken, news = self._read_once(resumed, cursor, request)
        return answer

    # ------------------------------------------------------------ sessions

    def _learn_session(self, response: requests.Response) -> None:
        """An initialize was accepted: the session is the one it names (none when it names none)."""
        if response.status_code < 300:
            session_id = response.headers.get(_SESSION_HEADER) or None
            if session_id is not None and not _SESSION_ID.fullmatch(session_id):
                # The id is not quoted: it is the session's credential.
                raise MCPProtocolError(
                    MCP_CODES.PROTOCOL_INVALID,
                    f"the MCP server at {self.url} named a session id that is not visible ASCII",
                    context={"url": self.url},
                )
            with self._state_lock:
                self.session_id = session_id

    def _learn_version(self, answer: JSONRPCResultResponse) -> None:
        version = answer.result.get("protocolVersion")
        if isinstance(version, str):
            with self._state_lock:
                self.protocol_version = version

    def _renew(self, stale: _SessionState) -> bool:
        """Start a new session after the server forgot ``stale``; whether there is one now."""
        with self._renew_lock:
            if self._state().generation != stale.generation:
                return True  # another thread started one already
            initialize = self._initialize
            if initialize is None:
                return False
            self.sessions_started += 1
            request = JSONRPCRequest(
                id=f"mcp-sync-renew-{self.sessions_started}", method="initialize", params=initialize.params
            )
            log.info("the MCP server at %s forgot session %s: starting a new one", self.url, stale.id)
            try:
                response = self._post(request, None, stream=True)
                with self._open(response):
                    self._learn_session(response)
                    answer = self._read_answer(_InflightRequest(request), response)
            except (requests.RequestException, MCPError) as exc:
                log.warning("could not start a new session with the MCP server at %s: %s", self.url, exc)
                return False
            if not isinstance(answer, JSONRPCResultResponse):
                log.warning("the MCP server at %s refused a new session: %s", self.url, answer)
                return False
            self._learn_version(answer)
            with self._state_lock:
                self._generation += 1
            self._send_one_way(JSONRPCNotification(method="notifications/initialized"), self._state())
        self._start_listener()
        self._started_new_session()
        return True

    # ------------------------------------------------------------ the GET stream

    def _start_listener(self) -> None:
        """Start the GET stream's thread, and wait (up to :data:`GET_STREAM_WAIT`) until the server answered it."""
        with self._state_lock:
            if not self.open_get_stream or self._listening or self.closed:
                return
            self._listening = True
            self._get_answered.clear()
            self._listener = threading.Thread(target=self._listen, name="mcp-sync-http-get", daemon=True)
            self._listener.start()
        if not self._get_answered.wait(GET_STREAM_WAIT):
            log.debug("the MCP server at %s has not answered the GET stream yet: going on", self.url)

    def _listen(self) -> None:
        """The standalone GET stream: deliver what the server sends on its own, reconnecting as told.

        It ends when the server has no stream for us (405, or any refusal),
        after ``reconnect_attempts`` fruitless attempts in a row, or on close;
        a new session started meanwhile gets a stream of its own.
        """
        generation = -1
        cursor, failures = StreamCursor(), 0
        while not self.closed:
            state = self._state()
            if state.generation != generation:
                generation, cursor, failures = state.generation, StreamCursor(), 0
            seen, refused = cursor.events, False
            try:
                try:
                    response = self._get(state, cursor.last_event_id)
                finally:
                    self._get_answered.set()  # (answered, refused or failed: the session's first request may go)
                with self._open(response):
                    refused = response.status_code != 200 or content_type(response) != "text/event-stream"
                    if refused:
                        log.debug("no GET stream from the MCP server at %s: %s", self.url, describe(response))
                    else:
                        self._pump(response, cursor, None)
            except STREAM_ERRORS as exc:
                log.debug("the GET stream from the MCP server at %s broke: %s", self.url, exc)
            except MCPError as exc:  # the auth could not sign in: as good as a refusal
                log.warning("no GET stream from the MCP server at %s: %s", self.url, exc.message)
                refused = True
            failures = 0 if cursor.events > seen else failures + 1
            if refused or failures > self.reconnect_attempts:
                if self._keep_listening(generation):
                    continue
                return
            self._closed.wait(cursor.delay(failures, self.reconnect_delay))

    def _keep_listening(self, generation: int) -> bool:
        """The GET stream is done; whether to go on because a new session started meanwhile."""
        with self._state_lock:
            if self._generation != generation and not self.closed:
                return True
            self._listening = False
            return False

    # ------------------------------------------------------------ closing

    def _shutdown(self) -> None:
        deadline = time.monotonic() + JOIN_TIMEOUT
        self._get_answered.set()  # a connect waiting for the GET stream goes on: there will be none
        with self._state_lock:
            streams = list(self._streams)
            session_id = self.session_id
            listener = self._listener
        for response in streams:
            abort(response)
        if session_id is not None and self.close_reason is None:
            self._end_session()
        if self._own_session:
            # A POST still waiting for its response holds a connection no stream stands for: shut them all down.
            abort_connections(self.session)
        self._workers.close(max(0.0, deadline - time.monotonic()))
        self._alarms.close(max(0.0, deadline - time.monotonic()))
        if listener is not None and listener is not threading.current_thread():
            listener.join(max(0.0, deadline - time.monotonic()))
        if self._own_session:
            self.session.close()

    def _owns(self, thread: threading.Thread) -> bool:
        return thread is self._listener or thread is self._alarms.thread or thread in self._workers.threads

    def _end_session(self) -> None:
        """DELETE the session; a server that does not allow it (405) or fails is fine."""
        try:
            response = self._send(
                "DELETE",
                self.url,
                headers=self._headers(self._state(), _ACCEPT_ANY),
                auth=self.auth,
                timeout=(connect_part(self.timeout), DELETE_TIMEOUT),
            )
        except requests.RequestException as exc:
            log.debug("could not end the session with the MCP server at %s: %s", self.url, exc)
            return
        response.close()
        if response.status_code >= 400 and response.status_code != 405:
            log.debug("the MCP server at %s answered DELETE with %s", self.url, describe(response))


# ---------------------------------------------------------------- connecting
