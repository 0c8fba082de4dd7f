"""The thread on which a client runs what a notification starts (a list refresh, a re-read): :class:`BackgroundPool`.

A notification arrives on the reader thread, which must not wait for a
request of its own (its answer would come on that very thread). So the
work it starts is handed to this pool.

>>> import threading
>>> done = threading.Event()
>>> pool = BackgroundPool()
>>> pool.submit("key", done.set)
>>> done.wait(5)
True
>>> pool.shutdown()
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Hashable

__all__ = ["BackgroundPool"]


class BackgroundPool:
    """The one thread that runs what a notification starts (a list refresh, a re-read) off the reader thread.

    It knows its own thread, so that a disconnect made from that very thread
    (by a callback, say) does not wait for itself to finish.
    """

    def __init__(self) -> None:
        self._membership = threading.local()  # set in the pool's thread only, by the initializer
        self._executor = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="mcp-sync-client-refresh", initializer=self._enrol
        )
        self._queued: set[Hashable] = set()
        self._queued_lock = threading.Lock()

    def _enrol(self) -> None:
        self._membership.inside = True

    def submit(self, key: Hashable, fn: Callable[[], None]) -> None:
        """Queue ``fn``, unless work under the same ``key`` waits in the queue already.

        A server may send the same notification thousands of times in a row:
        each would cost a refresh (a full listing) without this. Work that has
        started is not waited for: a notification during a refresh queues the
        next one.
        """
        with self._queued_lock:
            if key in self._queued:
                return
            self._queued.add(key)

        def run() -> None:
            with self._queued_lock:
                self._queued.discard(key)
            fn()

        self._executor.submit(run)

    def shutdown(self) -> None:
        """Drop the queued work and wait for the running one, unless called from the pool's own thread."""
        inside: bool = getattr(self._membership, "inside", False)
        self._executor.shutdown(wait=not inside, cancel_futures=True)
