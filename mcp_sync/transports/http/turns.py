"""Turns at the interpreter lock among the threads of this process that read their own HTTP answers.

A caller of :meth:`StreamableHTTPClientTransport.exchange
<mcp_sync.transports.http.streamable.StreamableHTTPClientTransport.exchange>`
reads its JSON answer on its own thread instead of being handed it by a
worker. That hand-over used to let a thread waiting for the interpreter
lock run; with several callers at once, each now does so itself after its
call (:func:`let_another_run`), and only while another thread is reading
an answer of its own too (:data:`READERS`): alone, a caller has nobody to
yield to.

Example::

    with READERS:
        ...  # send the request, read its answer
        crowded = READERS.crowded()
    if crowded:
        let_another_run()
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable

__all__ = ["READERS", "Readers", "let_another_run"]


class Readers:
    """How many threads of this process are reading their own answers now, whatever their transport.

    ``with readers:`` counts this thread in for the block; :meth:`crowded`
    says whether another is in too.

    >>> readers = Readers()
    >>> with readers:
    ...     readers.crowded()
    False
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._count -= 1

    def crowded(self) -> bool:
        """Whether a thread other than this one (counted in) is reading its answer."""
        return self._count > 1


READERS = Readers()
"""The process's count, shared by every transport."""

_yield: Callable[[], None] = getattr(os, "sched_yield", functools.partial(time.sleep, 0))


def let_another_run() -> None:
    """Let a thread that waits for the interpreter lock take it.

    ``os.sched_yield`` releases the lock and gives the CPU to a thread ready
    to run, without the timer that ``time.sleep(0)`` arms on Linux (a lone
    ``sleep(0)`` took about 80 microseconds here); Windows, which has no
    ``sched_yield``, gets ``sleep(0)``.
    """
    _yield()
