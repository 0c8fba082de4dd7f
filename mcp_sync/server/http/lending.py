"""A request served on the thread that brought it: its handler is lent the connection's thread.

The embedded server lets any thread write a response (it sets
``WRITE_FROM_ANY_THREAD`` in the environ), and so do gunicorn's ``gthread``
and ``sync`` workers (see
:func:`~mcp_sync.server.http.hosting.gunicorn_writes_from_any_thread`), so a
request whose answer may be JSON (every 2026-07-28 request, stateless mode,
and a handshake-era session's request from a client that accepts JSON) runs
its handler on the connection's thread: no hand-off to a handler thread and
back. The answer stays JSON unless it turns into a stream while the
handler runs (the handler sends something first, or runs past the ping
interval); a handler thread then writes the stream meanwhile.
:class:`Lender` serves such requests, a :class:`Lent` is one of them, and
:class:`LendWatch` looks after the long ones (and after 2026-07-28 clients
that hang up, which cancels).
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ...runtime.workers import ElasticPool
from .answers import Answer, AnswerSource, SSEBody, await_answer
from .cors import CORSPolicy
from .sessions import Item, PostedRequest
from .wire import Once, Response, status_line
from .wsgi import CONNECTION_SOCKET

log = logging.getLogger(__name__)

HANG_UP_LOOK = 0.5
"""How often, in seconds, the lend watch looks whether the clients of lent requests still hold their connections."""
GUNICORN_SOCKET = "gunicorn.socket"
"""The environ key under which gunicorn's workers give the request's client socket."""
WAITRESS_DISCONNECTED = "waitress.client_disconnected"
"""The environ key under which waitress gives a callable saying whether the client hung up (it reads ahead)."""


def hang_up_test(environ: Mapping[str, Any]) -> Callable[[], bool] | None:
    """How to tell that the client of the request in ``environ`` closed its connection, if its server says.

    The embedded server and gunicorn give the connection's socket, which is
    peeked at (never read); waitress gives a callable of its own. Other
    servers give nothing: ``None``, and only a failed write tells.

    >>> hang_up_test({}) is None
    True
    >>> hang_up_test({WAITRESS_DISCONNECTED: lambda: True})()
    True
    """
    sock = environ.get(CONNECTION_SOCKET) or environ.get(GUNICORN_SOCKET)
    if isinstance(sock, socket.socket):
        return lambda: _closed_by_peer(sock)
    disconnected = environ.get(WAITRESS_DISCONNECTED)
    return disconnected if callable(disconnected) else None


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False  # nothing to read: the client waits
    except OSError:
        return True  # reset


class HangUp:
    """A 2026-07-28 request answered on a handler thread, watched for its client hanging up (then ``cancel``)."""

    __slots__ = ("cancel", "hung_up")

    def __init__(self, hung_up: Callable[[], bool], cancel: Callable[[], None]) -> None:
        self.hung_up = hung_up
        self.cancel = cancel


class StreamTrigger(queue.SimpleQueue[Item]):
    """The queue of a lent request's POST: an item that finds the POST streaming, or that another thread puts
    while the handler still runs (an answer meant for this POST: the response to an id another POST reused,
    a cancellation, the session's end), has a handler thread write the answer (see :meth:`Lent.stream`)."""

    lent: Lent | None
    """Let go of once the handler is done (a cycle otherwise: the request's objects would wait for the collector)."""

    def put(self, item: Item, block: bool = True, timeout: float | None = None) -> None:
        super().put(item)
        lent = self.lent
        if lent is not None and (lent.post.mode == "sse" or threading.get_ident() != lent.thread):
            lent.stream()


class Lent:
    """A request served on the thread that brought it (its handler is lent that thread).

    Its answer is JSON unless the POST turns into a stream while the handler
    runs: the handler sends something first, or runs past the ping interval
    (:class:`LendWatch` sees to that). Then :meth:`stream` has ``start`` run
    ``write`` on a handler thread, which writes through the server's
    ``start_response`` from that thread (only a server that allows it: see
    the module's docstring). ``source`` is where the answer
    comes from; ``cancel``, when given, cancels the request if its client hangs
    up (2026-07-28, where closing the connection is the request's cancellation).
    """

    __slots__ = (
        "_cancel",
        "_hung_up",
        "_lock",
        "_settled",
        "_start",
        "_trigger",
        "_write",
        "answer",
        "deadline",
        "done",
        "post",
        "source",
        "streamed",
        "thread",
    )

    def __init__(
        self,
        source: AnswerSource,
        post: PostedRequest,
        answer: Answer,
        done: Once,
        *,
        ping_interval: float,
        start: Callable[[Callable[[], None]], object],
        write: Callable[[Lent], None],
        cancel: Callable[[], None] | None,
    ) -> None:
        self.source = source
        self._cancel = cancel
        self.post = post
        self.answer = answer
        self.done = done
        self._start = start
        self._write = write
        self.deadline = time.monotonic() + ping_interval
        self.thread = threading.get_ident()
        """The thread lent to the handler (the one making this)."""
        self._hung_up = answer.hung_up
        self.streamed: threading.Event | None = None
        self._settled = False
        self._lock = threading.Lock()
        self._trigger = trigger = StreamTrigger()
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
        self._start(self._stream)

    def settle(self) -> threading.Event | None:
        """The handler is done: no stream starts from now on; the one started meanwhile, if any."""
        with self._lock:
            self._settled = True
            self._trigger.lent = None
            return self.streamed

    def hung_up(self) -> bool:
        """Whether a 2026-07-28 client closed the connection it sent this request on."""
        if self._hung_up is None or self._cancel is None:
            return False  # (before 2026-07-28 a disconnection is no cancellation: nothing to cancel by it)
        return self._hung_up()

    def cancel(self) -> None:
        """The client hung up: in 2026-07-28 that is the request's cancellation (its handler is told; no answer)."""
        assert self._cancel is not None  # (only a request that hangs up can be cancelled so: see hung_up)
        self._cancel()

    def _stream(self) -> None:
        try:
            self._write(self)
        finally:
            assert self.streamed is not None
            self.streamed.set()


class LendWatch:
    """Turns the answer of a lent request whose handler runs past the ping interval into a stream, so that
    pings keep its connection alive (as a request served on a handler thread would); and cancels a 2026-07-28
    request, lent or not (a :class:`HangUp`), whose client hung up (closing the connection is that era's
    cancellation). Without the watch, a request served on a handler thread would learn of it only when a write
    to the gone client fails, at the next ping: its handler and the server's thread would be held until then.

    One thread per app (``mcp-sync-http-lend-watch``), started with the first
    lent request and looking every :data:`HANG_UP_LOOK` seconds (at least
    twice per ping interval), so that serving a request costs no thread
    wake-up here.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._cond = threading.Condition()
        self._lent: dict[Lent | HangUp, None] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, lent: Lent | HangUp) -> None:
        """Look after ``lent`` until :meth:`discard`."""
        with self._cond:
            self._lent[lent] = None
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="mcp-sync-http-lend-watch", daemon=True)
                self._thread.start()

    def discard(self, lent: Lent | HangUp) -> None:
        """Stop looking after ``lent`` (its handler is done, or the watch acted on it)."""
        with self._cond:
            self._lent.pop(lent, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._cond.wait_for(lambda: self._closed, min(self._interval / 2, HANG_UP_LOOK)):
                    return
                now = time.monotonic()
                lent_now = list(self._lent)
            for lent in lent_now:
                try:
                    self._look(lent, now)
                except Exception:  # one request's failure must not end the watch of all the others
                    log.exception("the lend watch failed on a request")
                    self.discard(lent)

    def _look(self, lent: Lent | HangUp, now: float) -> None:
        if lent.hung_up():
            self.discard(lent)
            lent.cancel()
        elif isinstance(lent, Lent) and lent.deadline <= now and not lent.post.json_only:  # (JSON-only never streams)
            self.discard(lent)
            lent.source.start_streaming(lent.post)
            if lent.post.mode == "sse":  # not when the response came first
                lent.stream()

    def close(self, timeout: float) -> None:
        """Stop the watch's thread (``timeout`` seconds at most)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)


class Lender:
    """Serves requests on the thread that brought them (see the module's docstring).

    ``handlers`` runs what must not wait for the handler (a stream written
    meanwhile); ``cors`` adds its headers to such a stream, as the app does to
    every answer it returns itself.
    """

    def __init__(self, handlers: ElasticPool, *, ping_interval: float, retry_ms: int, cors: CORSPolicy | None) -> None:
        self._handlers = handlers
        self._ping_interval = ping_interval
        self._retry_ms = retry_ms
        self._cors = cors
        self._watch = LendWatch(ping_interval)

    def serve(
        self,
        source: AnswerSource,
        post: PostedRequest,
        run: Callable[[], None],
        answer: Answer,
        done: Once,
        *,
        cancel: Callable[[], None] | None = None,
    ) -> Response:
        """Serve a request on this thread: ``run`` runs its handler, ``source`` gives its answer for ``post``.
        Should the answer turn into a stream while the handler runs, a handler thread streams it meanwhile, and
        this one waits for that stream to end (which the response ends) once its handler is done. ``cancel``
        cancels the request, should its client hang up meanwhile (2026-07-28; ``None``: nothing cancels it so)."""
        lent = self.lend(source, post, answer, done, cancel=cancel)
        self._watch.add(lent)
        try:
            run()
        finally:
            self._watch.discard(lent)
        streamed = lent.settle()
        if streamed is None:
            return self._await(lent)
        # Bounded: the response (or the session's end) is queued, and each write has the server's timeout.
        streamed.wait()
        return Response(200, body=iter(()), started=True)

    def watch_hang_up(self, hung_up: Callable[[], bool], cancel: Callable[[], None]) -> HangUp:
        """Have ``cancel`` run once ``hung_up`` says the client closed the connection (a 2026-07-28 request
        answered on a handler thread); until :meth:`forget`."""
        watched = HangUp(hung_up, cancel)
        self._watch.add(watched)
        return watched

    def forget(self, watched: HangUp) -> None:
        """Stop watching (the request is answered, or its client went away)."""
        self._watch.discard(watched)

    def lend(
        self,
        source: AnswerSource,
        post: PostedRequest,
        answer: Answer,
        done: Once,
        *,
        cancel: Callable[[], None] | None = None,
    ) -> Lent:
        """The :class:`Lent` of a POST about to be served on this thread."""
        return Lent(
            source,
            post,
            answer,
            done,
            ping_interval=self._ping_interval,
            start=self._handlers.submit,
            write=self.write,
            cancel=cancel,
        )

    def write(self, lent: Lent) -> None:
        """Write the answer of a lent request (on a handler thread) while its handler still runs."""
        response = self._await(lent)
        body = response.body
        request = lent.answer.lend_to
        assert request is not None and request.start_response is not None
        headers = response.headers
        if self._cors is not None:
            headers = self._cors.apply(headers, request.header("Origin"))
        try:
            write = request.start_response(status_line(response.status), headers)
            for chunk in body:
                write(chunk)
        except OSError as error:  # the client went away: closing a stream's body ends what it waits for
            log.debug("the answer to request %r was cut short: %s", lent.post.request_id, error)
        finally:
            if isinstance(body, SSEBody):
                body.close()

    def close(self, timeout: float) -> None:
        """Stop watching lent requests (``timeout`` seconds at most)."""
        self._watch.close(timeout)

    def _await(self, lent: Lent) -> Response:
        return await_answer(
            lent.source,
            lent.post,
            lent.answer,
            lent.done,
            ping_interval=self._ping_interval,
            retry_ms=self._retry_ms,
        )
