"""An elastic pool of named threads: a task never waits for a busy thread, and idle threads end.

Both HTTP ends need threads whose work may block on other work: a server
handler served alone may wait for the client it serves, a client POST may
wait for an answer that a handler of this very client has to give first. A
bounded pool could deadlock there, so :class:`ElasticPool` has no bound: a
task goes to a thread that waits for work, or to a new thread when none
does. A thread left without work for ``idle_timeout`` seconds ends, so the
pool shrinks back once a burst is over.

A connection's handlers (:class:`~mcp_sync.runtime.dispatcher.JsonRpcDispatcher`)
use one with ``max_threads``: past that many busy threads a task waits in
line for the first thread to come free.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

__all__ = ["ElasticPool", "PoolClosed", "stay_on_this_thread"]

log = logging.getLogger(__name__)

Task = Callable[[], None]

DEFAULT_IDLE_TIMEOUT = 30.0
"""Seconds a thread without work waits for a task before it ends."""


class PoolClosed(RuntimeError):
    """A task was submitted to a closed :class:`ElasticPool` that refuses late work."""


class ElasticPool:
    """Threads started on demand, kept ``idle_timeout`` seconds for the next task, then ended.

    Every thread is named ``name`` (the test suite tells mcp_sync's threads
    by their ``mcp-sync`` prefix) and tracked until it ends, so that
    :meth:`close` can join it. A task that raises is logged; its thread goes
    on serving.

    With ``max_threads``, no more threads than that run at once: a task
    submitted while they are all busy waits in line, and the first thread
    to finish its task takes it.

    Once :meth:`close` was called no thread waits for another task: idle
    threads end at once, busy ones when their task returns. A task handed
    to a waiting thread before the close still runs; one still waiting in
    line for a busy thread does not. A task submitted after the close is
    refused with :class:`PoolClosed`, or, with ``run_after_close=True``,
    runs on a thread of its own that ends with it (for callers that must
    never lose a task).

    >>> pool = ElasticPool("mcp-sync-doctest", idle_timeout=1.0)
    >>> done = threading.Event()
    >>> pool.submit(done.set)
    >>> done.wait(5.0)
    True
    >>> pool.close()
    >>> pool.threads
    []
    """

    def __init__(
        self,
        name: str,
        *,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        run_after_close: bool = False,
        max_threads: int | None = None,
    ) -> None:
        if max_threads is not None and max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.name = name
        self.idle_timeout = idle_timeout
        self.run_after_close = run_after_close
        self.max_threads = max_threads
        # A SimpleQueue hands a task over in C, with no Condition to build per wait: the hop from
        # a submitter to a waiting thread is on the path of every HTTP request, both ends.
        self._tasks: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._lock = threading.RLock()
        self._idle = 0  # waiting threads not yet promised a task; a submitter claims one by decrementing
        # Tasks in the queue that no waiting thread was promised (every thread busy, at max_threads):
        # a thread that finishes its task takes one of these before it counts itself idle.
        self._backlog = 0
        self._threads: set[threading.Thread] = set()
        self._closed = False

    @property
    def threads(self) -> list[threading.Thread]:
        """The pool's threads that have not ended yet (a snapshot)."""
        with self._lock:
            return list(self._threads)

    @property
    def idle(self) -> int:
        """How many threads wait for a task now (and are not yet promised one)."""
        with self._lock:
            return self._idle

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def submit(self, task: Task) -> None:
        """Run ``task`` on a waiting thread, or on a new one when every thread is busy.

        Raises :class:`PoolClosed` after :meth:`close`, unless the pool runs
        late tasks (``run_after_close``).
        """
        with self._lock:
            if self._closed and not self.run_after_close:
                raise PoolClosed(f"the {self.name} threads are closed")
            if self._idle and not self._closed:
                self._idle -= 1  # that waiting thread is spoken for: it takes this task
                self._tasks.put(task)  # under the lock, so before any stop signal of close()
                return
            if self.max_threads is not None and len(self._threads) >= self.max_threads and not self._closed:
                self._backlog += 1
                self._tasks.put(task)
                return
            # The first task goes in a list the thread empties: a Thread keeps its args until its
            # target returns, and this one runs for many tasks.
            thread = threading.Thread(target=self._work, args=([task],), name=self.name, daemon=True)
            # Tracked and started under the lock, so close() never misses a thread it must join.
            self._threads.add(thread)
            thread.start()

    def _work(self, first: list[Task]) -> None:
        task: Task | None = first.pop()
        try:
            while task is not None:
                try:
                    task()
                except Exception:
                    log.exception("a task on an %s thread failed", self.name)
                task = None  # what the task holds is let go of while this thread waits for the next
                with self._lock:
                    if self._closed:
                        break
                    if self._backlog:
                        self._backlog -= 1  # a task waits in line: take it, without counting as idle
                        waiting = True
                    else:
                        self._idle += 1
                        waiting = False
                task = self._tasks.get() if waiting else self._next()
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _next(self) -> Task | None:
        """The next task for this waiting thread; ``None`` once idle too long or told to stop.

        When the wait runs out just as a submitter claimed a waiting thread
        (no unclaimed one is left), the task is on its way: take it.
        """
        while True:
            try:
                return self._tasks.get(timeout=self.idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle:
                        self._idle -= 1
                        return None

    def close(self, timeout: float = 5.0) -> None:
        """Stop keeping threads: the idle end now, the busy after their task; wait ``timeout`` seconds in all.

        Tasks handed to waiting threads before the close still run (they are
        ahead of the stop signals in the queue). The calling thread is not
        waited for when it is one of the pool's (a task may close the pool
        that runs it).
        """
        with self._lock:
            self._closed = True
            for _ in range(self._idle):
                self._tasks.put(None)
            self._idle = 0
            self._backlog = 0  # busy threads stop after their task: what waits in line is not run
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


def stay_on_this_thread() -> None:
    """A ``handoff_reading`` with nothing to hand off: the thread passing a request in is meant to serve it."""
