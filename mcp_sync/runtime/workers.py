"""An elastic pool of named threads that end when idle, so a waiting task never waits for a free thread."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


class HandlerThreads:
    """Threads that pass requests to sessions serving them inline, kept for the next request.

    Starting a thread per request would cost more than serving most
    requests. A thread that has passed its request on (and so ran its
    handler) waits ``idle_timeout`` seconds for another before it ends.
    There is no upper bound: a request keeps its thread as long as its
    handler runs (a subscription, as long as it lasts). Once :meth:`close`
    is called no thread waits for another request: the idle ones end at
    once, the busy ones when their task is done.
    """

    def __init__(self, idle_timeout: float = 30.0) -> None:
        self.idle_timeout = idle_timeout
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: set[threading.Thread] = set()
        self._closed = False

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` on an idle thread, or on a new one when none is idle (always a new one once closed)."""
        with self._lock:
            if self._idle and not self._closed:
                self._idle -= 1  # an idle thread is spoken for: it will take this task
                self._tasks.put(task)  # under the lock: before any stop signal of close()
                return
            thread = threading.Thread(target=self._work, args=(task,), name="mcp-sync-http-handler", daemon=True)
            self._threads.add(thread)
        thread.start()

    def _work(self, task: Callable[[], None] | None) -> None:
        while task is not None:
            task()
            with self._lock:
                if self._closed:
                    break
                self._idle += 1
            task = self._next()
        with self._lock:
            self._threads.discard(threading.current_thread())

    def _next(self) -> Callable[[], None] | None:
        """The next task for an idle thread; ``None`` once idle too long (or told to stop)."""
        while True:
            try:
                return self._tasks.get(timeout=self.idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # no task is on its way to an idle thread: one of them may go
                        self._idle -= 1
                        return None

    def close(self, timeout: float = 5.0) -> None:
        """End every thread once its task is done, waiting at most ``timeout`` seconds in all.

        The idle threads are told to stop; a busy one ends after its task
        (it is joined as long as the time allows). A task submitted later
        runs on a thread of its own, which ends with it.
        """
        with self._lock:
            self._closed = True
            threads = list(self._threads)
            for _ in range(self._idle):
                self._tasks.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _stay() -> None:
    """Nothing to hand off: the thread that passes a request in is the one meant to serve it."""
