"""Where a client is in one SSE stream, and how long it waits before resuming it.

A Streamable HTTP client resumes a broken stream with a GET that names the
last event id it saw, after the wait the server advised in a ``retry``
field, or else after a backoff that doubles at each fruitless attempt, up
to :data:`MAX_RECONNECT_DELAY`.

>>> cursor = StreamCursor()
>>> cursor.delay(2, 1.0)
4.0
"""

from __future__ import annotations

from ._common import SSEEvent

__all__ = ["MAX_RECONNECT_DELAY", "StreamCursor"]

MAX_RECONNECT_DELAY = 30.0
"""The longest wait before resuming a stream, the server's advice included (seconds)."""


class StreamCursor:
    """Where a client is in one SSE stream: the last event id, the server's retry advice, the events seen."""

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry: float | None = None
        self.events = 0

    def saw(self, event: SSEEvent) -> None:
        """Note ``event``: its id (an empty one forgets the last) and its retry advice."""
        self.events += 1
        if event.id is not None:
            self.last_event_id = event.id or None
        retry = str(event.retry) if event.retry is not None else ""
        if retry.isascii() and retry.isdigit():
            # Advice beyond our own ceiling waits the ceiling: a huge wait overflows the timers, and int() refuses
            # a line of thousands of digits.
            millis = int(retry) if len(retry) <= 9 else MAX_RECONNECT_DELAY * 1000
            self.retry = min(millis / 1000.0, MAX_RECONNECT_DELAY)

    def delay(self, failures: int, base: float) -> float:
        """Seconds to wait before the next attempt: the server's advice, else a growing backoff."""
        if self.retry is not None:
            return self.retry
        return float(min(base * 2**failures, MAX_RECONNECT_DELAY))
