"""Noticing that the server hosting a WSGI app is stopping, where WSGI gives no way to say so.

An SSE stream never ends by itself, and a WSGI server does not tell its
applications that it stops. gunicorn stops a worker gracefully: told to stop
(SIGTERM from the master, or its ``max_requests`` reached), the worker sets
its ``alive`` attribute to false, stops accepting, and waits up to
``graceful_timeout`` (30 s by default) for the connections in progress: an
open stream holds it that long, then it is killed.

The worker's SIGTERM handler is a method of the worker, installed before
the application is loaded; :func:`gunicorn_worker_stopping` finds the worker
through it (from any thread: reading a handler is allowed where setting one
is not) and :class:`StopWatch` watches its flag, so that
:class:`~mcp_sync.server.http.StreamableHTTPApp` closes itself, ending its
streams, as soon as its worker is told to stop. Nothing needs configuring, in
every worker class and with ``--preload`` too (the app looks when it serves
its first request, in the worker).

>>> gunicorn_worker_stopping() is None  # not in a gunicorn worker
True
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

__all__ = ["POLL_INTERVAL", "StopWatch", "gunicorn_worker_stopping", "gunicorn_writes_from_any_thread"]

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.1
"""How often a :class:`StopWatch` looks whether the host is stopping (seconds)."""
JOIN_TIMEOUT = 2.0
"""How long closing a :class:`StopWatch` waits for its thread (seconds)."""


_THREADED_WORKERS = frozenset([("gunicorn.workers.gthread", "ThreadWorker"), ("gunicorn.workers.sync", "SyncWorker")])
"""gunicorn's worker classes that serve each request on an OS thread and whose ``write()`` is a plain blocking
socket write (``gthread`` and ``sync``)."""


def _gunicorn_worker() -> object | None:
    """This process's gunicorn worker, if it is one: the object whose method handles SIGTERM, an instance of
    ``gunicorn.workers.base.Worker`` (gunicorn is not imported for the test)."""
    worker = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    if any(kind.__module__ == "gunicorn.workers.base" and kind.__name__ == "Worker" for kind in type(worker).__mro__):
        return worker
    return None


def gunicorn_worker_stopping() -> Callable[[], bool] | None:
    """A check telling whether this process's gunicorn worker was told to stop; ``None`` outside a worker."""
    worker = _gunicorn_worker()
    if worker is None:
        return None
    return lambda: not getattr(worker, "alive", True)


def gunicorn_writes_from_any_thread() -> bool:
    """Whether this process is a gunicorn ``gthread`` or ``sync`` worker, whose ``start_response`` and ``write()``
    another thread may call while the application call waits (they write to the blocking client socket and keep
    no per-thread state), provided the calls do not overlap and end before it returns: what the embedded server's
    ``WRITE_FROM_ANY_THREAD`` promises. Other workers (gevent, eventlet, tornado) are not relied on so.

    >>> gunicorn_writes_from_any_thread()  # not in a gunicorn worker
    False
    """
    kind = type(_gunicorn_worker())
    return (kind.__module__, kind.__name__) in _THREADED_WORKERS


class StopWatch:
    """A thread (``mcp-sync-http-stop-watch``) that calls ``on_stop`` once ``stopping()`` is true.

    It looks every :data:`POLL_INTERVAL` seconds, calls ``on_stop`` at most
    once, and ends then or when closed.
    """

    def __init__(self, stopping: Callable[[], bool], on_stop: Callable[[], None]) -> None:
        self._stopping = stopping
        self._on_stop = on_stop
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcp-sync-http-stop-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(POLL_INTERVAL):
            if self._stopping():
                log.info("the server hosting the MCP app is stopping: closing the app, which ends its streams")
                self._on_stop()
                return

    def close(self) -> None:
        """Stop watching; wait for the thread (unless called from it, by ``on_stop``)."""
        self._done.set()
        if self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)
