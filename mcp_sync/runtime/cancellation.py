"""A cancel event that calls back when it is set, so that waits watching it need not poll.

A handler's ``ctx.cancelled`` (and a task's) is a :class:`CancelEvent`. A
question the handler asks its client waits for the answer and for the
cancellation at once: with a plain :class:`threading.Event` that wait has to
look at the event every few milliseconds, which for questions pending on a
person for minutes adds up to real CPU. A ``CancelEvent`` tells its waiters
instead.

>>> cancelled = CancelEvent()
>>> heard = []
>>> forget = cancelled.call_when_set(lambda: heard.append("stop"))
>>> cancelled.set()
>>> heard, cancelled.is_set()
(['stop'], True)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

_callbacks_lock = threading.Lock()
"""One lock for the callbacks of every CancelEvent: they are registered only by waits, rarely, and briefly held."""


class CancelEvent(threading.Event):
    """A :class:`threading.Event` whose :meth:`set` also calls what :meth:`call_when_set` registered.

    >>> cancelled = CancelEvent()
    >>> cancelled.set()
    >>> cancelled.call_when_set(lambda: print("already set: called at once"))()
    already set: called at once
    """

    def __init__(self) -> None:
        # What threading.Event.__init__ sets, with the condition on an RLock rather than a Lock: made for every
        # request served, and a Condition on a Lock looks up three RLock methods the Lock lacks (three
        # AttributeErrors raised and caught), which made an event cost about three times as much. The event
        # never takes its lock twice, so the two kinds of lock behave alike here.
        self._cond = threading.Condition(threading.RLock())
        self._flag = False
        self._callbacks: list[Callable[[], None]] | None = None  # made on first use: most events have no waiter

    def set(self) -> None:
        """Set the event, then call each registered callback once (on this thread, outside any lock).

        A callback that raises is logged, and the others are still called: the
        setter (a dispatcher closing, cancelling every handler in turn) must
        not be stopped half-way by one waiter's failure.
        """
        with _callbacks_lock:
            super().set()
            callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            try:
                callback()
            except Exception:
                log.exception("a callback of a cancel event failed")

    def call_when_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the event is set (at once if it is); returns a function that forgets it."""
        with _callbacks_lock:
            if not self.is_set():
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return _nothing

    def _forget(self, callback: Callable[[], None]) -> None:
        with _callbacks_lock:
            if self._callbacks is not None and callback in self._callbacks:
                self._callbacks.remove(callback)


def _nothing() -> None:
    """What forgetting a callback already called does."""
