"""Serving 2026-07-28 requests over HTTP: each POST answered by one kernel call, nothing built for it.

A 2026-07-28 request describes itself, so no session, dispatcher or
transport is made for it. :class:`StatelessHost` holds one session of the
app's server for all of them (:attr:`~mcp_sync.server.session.ServerSession.per_request`:
each request stands alone; no client is kept between requests) and serves
each POST with :meth:`~mcp_sync.server.session.ServerSession.serve_one`,
the kernel, on the connection's thread when the server allows it (see
:mod:`~mcp_sync.server.http.lending`) or on a handler thread. The request
comes with its way back, a :class:`RequestWriter`: what its handler sends
first decides between one JSON body (the response came first) and an SSE
stream (a notification came first), as for every POST.
"""

from __future__ import annotations

import functools
import logging
import threading
import time

from ...protocol.errors import MCP_CODES, MCPTransportError
from ...protocol.types import JSONRPCErrorResponse, JSONRPCMessage, JSONRPCRequest, JSONRPCResultResponse, RequestId
from ...runtime.cancellation import CancelEvent
from ...runtime.transport import BaseTransport
from ...runtime.workers import ElasticPool
from ..authorization import AuthInfo
from ..core import MCPServer
from ..session import ServerSession
from ..stateless import StatelessRequest
from .answers import Answer, await_answer
from .lending import HangUp, Lender
from .sessions import Item, PostedRequest, Signal, StreamEvent
from .wire import Once, Response, shutting_down

log = logging.getLogger(__name__)


class RequestWriter:
    """The way back of one 2026-07-28 POST: what its handler sends, then its response, into the POST's queue.

    >>> from mcp_sync.protocol.jsonrpc import error_response
    >>> writer = RequestWriter(1, json_only=False)
    >>> writer(error_response(1, -32601, "Method not found"))
    >>> writer.post.mode, writer.post.finished
    ('json', True)
    """

    def __init__(self, request_id: RequestId, *, json_only: bool) -> None:
        self.post = PostedRequest(request_id, json_only=json_only, priming=False)
        self.cancelled = CancelEvent()
        """The request's cancel event: set when its client hangs up, or as the app closes."""
        self._lock = threading.Lock()

    def __call__(self, message: JSONRPCMessage) -> None:
        post = self.post
        with self._lock:
            if post.finished:
                return  # answered, cancelled or ended: nothing more goes out
            if isinstance(message, (JSONRPCResultResponse, JSONRPCErrorResponse)):
                post.finished = True
                if post.mode == "sse":
                    post.put(StreamEvent(None, message))
                    post.put(Signal.END)
                else:
                    post.mode = "json"
                    post.put(StreamEvent(None, message))
                return
            if not post.json_only:
                post.mode = "sse"
                post.put(StreamEvent(None, message))
                return
        if isinstance(message, JSONRPCRequest):  # (2026-07-28 asks in input rounds: never so)
            raise MCPTransportError(MCP_CODES.TRANSPORT_ERROR, "a JSON answer cannot carry a request to the client")
        log.debug("dropped %s: a JSON answer carries the response alone", getattr(message, "method", "a message"))

    def start_streaming(self, post: PostedRequest) -> None:
        """Turn the answer into an SSE stream now, unless its response came first."""
        with self._lock:
            if post.mode == "undecided":
                post.mode = "sse"

    def detach(self, post: PostedRequest, reader: object) -> None:
        """The stream ended: nothing is kept for it (2026-07-28 streams cannot be resumed)."""

    def cancel(self) -> None:
        """The client hung up (or the answer went out): a handler still running is told, and the POST ends
        without an answer."""
        if self._end(Signal.END):
            self.cancelled.set()

    def end(self) -> None:
        """The app closed before the request was answered: the POST gets the error saying so."""
        self._end(Signal.CLOSED)

    def _end(self, item: Item) -> bool:
        """End the POST with ``item`` unless it ended already; whether it did now."""
        with self._lock:
            if self.post.finished:
                return False
            self.post.finished = True
        self.post.put(item)
        return True


class _NoConnection(BaseTransport):
    """The host session's transport: nothing is read from it, and nothing sent without a request's own writer."""

    network_transport = "tcp"  # (for spans: each request came over HTTP, as a session's would)

    def _write(self, message: JSONRPCMessage) -> None:
        log.debug("dropped %s: a 2026-07-28 request is answered on its own POST", getattr(message, "method", "it"))

    def _handlers_changed(self) -> None:
        """Nothing to read."""

    def _shutdown(self) -> None:
        """Nothing to release."""


class StatelessHost:
    """Serves an app's 2026-07-28 POSTs (see the module's docstring).

    The host session is made at the first request, so an app that never
    serves one has none. ``list_all`` is the app's listing rule.
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        list_all: bool,
        handlers: ElasticPool,
        lender: Lender,
        ping_interval: float,
    ) -> None:
        self._server = server
        self._list_all = list_all
        self._handlers = handlers
        self._lender = lender
        self._ping_interval = ping_interval
        self._session: ServerSession | None = None
        self._open: set[RequestWriter] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    @property
    def session(self) -> ServerSession | None:
        """The session that serves the requests (``None`` before the first)."""
        return self._session

    def post(self, message: JSONRPCRequest, read: StatelessRequest, answer: Answer) -> Response:
        """Serve a POSTed 2026-07-28 request whose headers were checked (``read``: what its ``_meta`` says)."""
        writer = RequestWriter(message.id, json_only=not answer.sse_ok)
        if not answer.json_ok:
            writer.start_streaming(writer.post)
        with self._lock:
            if self._closed:
                return shutting_down()
            self._open.add(writer)
            host = self._session
            if host is None:
                host = self._session = self._server.start(_NoConnection(), per_request=True)
                host.list_all = self._list_all
        run = functools.partial(self._serve, host, message, read, writer, answer.auth)
        if answer.lend_to is not None and answer.json_ok:
            done = Once(functools.partial(self._forget, writer, None))
            return self._lender.serve(writer, writer.post, run, answer, done, cancel=writer.cancel)
        # On a handler thread: the watch tells it if the client hangs up (else only the next ping's write would).
        watched = None if answer.hung_up is None else self._lender.watch_hang_up(answer.hung_up, writer.cancel)
        done = Once(functools.partial(self._forget, writer, watched))
        self._handlers.submit(run)
        # (retry_ms is never used: a 2026-07-28 stream cannot be resumed, so it advises no reconnection delay)
        return await_answer(writer, writer.post, answer, done, ping_interval=self._ping_interval, retry_ms=0)

    @staticmethod
    def _serve(
        host: ServerSession,
        message: JSONRPCRequest,
        read: StatelessRequest,
        writer: RequestWriter,
        auth: AuthInfo | None,
    ) -> None:
        try:
            host.serve_one(message, read, writer=writer, cancelled=writer.cancelled, auth=auth)
        except Exception:
            log.exception("the MCP HTTP app failed to serve request %r", message.id)
            writer.end()  # the POST waiting for the answer gets the error saying so

    def _forget(self, writer: RequestWriter, watched: HangUp | None) -> None:
        """The POST's answer is sent, or its client went away: a handler still running is told (closing the
        stream is the request's cancellation)."""
        if watched is not None:
            self._lender.forget(watched)
        writer.cancel()
        with self._lock:
            self._open.discard(writer)
            if self._closed:  # only close() waits for the last of them (it set the flag under this lock)
                self._idle.notify_all()

    def close(self, timeout: float) -> None:
        """Wind down: running handlers are told to stop and may still answer (a listen ends with its result),
        their answers are given time to go out, then the POSTs still open end; ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            host = self._session
        if host is None:
            return
        host.dispatcher.drain(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._idle.wait_for(lambda: not self._open, max(0.0, deadline - time.monotonic()))
            left = list(self._open)
        for writer in left:
            writer.end()
        host.close(max(0.0, deadline - time.monotonic()))
