"""Callbacks run at set times by one thread: :class:`Alarms`.

A caller that reads its own answer from a socket (the HTTP client, see
:meth:`StreamableHTTPClientTransport.exchange
<mcp_sync.transports.http.streamable.StreamableHTTPClientTransport.exchange>`)
cannot watch the clock while it is blocked there: an alarm stops the read
for it when its time is up. One thread serves every alarm of its owner.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["Alarms"]

log = logging.getLogger(__name__)


class Alarms:
    """Callbacks run at set times, on one thread started by the first :meth:`set` and ended by :meth:`close`.

    Made for limits on many short waits that nearly all end in time: an
    alarm set no earlier than those set before it (waits of one length, one
    after the other) wakes no thread, and clearing one never does. The
    thread sleeps until the earliest alarm it knows of, runs those that are
    due, and sleeps again; with none left, it sleeps until one is set. A
    callback that raises is logged; the others still run. An alarm set
    after :meth:`close` never rings.

    >>> rang = threading.Event()
    >>> alarms = Alarms("mcp-sync-doctest-alarms")
    >>> key = alarms.set(0.01, rang.set)
    >>> rang.wait(5.0)
    True
    >>> alarms.close()
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._alarms: dict[int, tuple[float, Callable[[], None]]] = {}
        self._keys = itertools.count()
        self._sleeping_until: float | None = None
        """When the thread wakes by itself next (``None``: only when told to)."""
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def thread(self) -> threading.Thread | None:
        """The thread that rings the alarms, once one was set."""
        return self._thread

    def set(self, delay: float, callback: Callable[[], None]) -> int:
        """Run ``callback`` in ``delay`` seconds unless :meth:`clear` is called with the key returned first."""
        due = time.monotonic() + delay
        with self._lock:
            key = next(self._keys)
            if self._closed:
                return key
            self._alarms[key] = (due, callback)
            if self._thread is None:
                self._thread = threading.Thread(target=self._ring, name=self.name, daemon=True)
                self._thread.start()
            elif self._sleeping_until is None or due < self._sleeping_until:
                self._wake.notify()
        return key

    def clear(self, key: int) -> None:
        """The alarm ``key`` will not ring (rung already, or unknown: nothing to do)."""
        with self._lock:
            self._alarms.pop(key, None)

    def close(self, timeout: float = 1.0) -> None:
        """Forget every alarm and end the thread (waiting up to ``timeout`` seconds for it). Idempotent."""
        with self._lock:
            self._closed = True
            self._alarms.clear()
            self._wake.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _ring(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                # In the order of their times (a thread woken late finds several due at once).
                due = sorted((when, key) for key, (when, _) in self._alarms.items() if when <= now)
                if due:
                    callbacks = [self._alarms.pop(key)[1] for _, key in due]
                    self._sleeping_until = None
                    self._lock.release()
                    try:
                        for callback in callbacks:
                            try:
                                callback()
                            except Exception:
                                log.exception("an alarm's callback failed")
                    finally:
                        self._lock.acquire()
                    continue
                self._sleeping_until = min((when for when, _ in self._alarms.values()), default=None)
                self._wake.wait(None if self._sleeping_until is None else self._sleeping_until - now)
