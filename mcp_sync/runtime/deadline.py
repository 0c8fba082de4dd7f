"""A deadline: the one way a bounded wait knows how long it has left.

Every wait bounded in time (a call's timeout, a drain, a bounded HTTP
request, a cache entry's life) is a :class:`Deadline` made from a timeout
in seconds, or ``None`` for no bound, and asked :meth:`~Deadline.remaining`
before each wait. The clock is :func:`time.monotonic` unless one is given
(tests and modules with an injected clock pass theirs).

>>> deadline = Deadline.after(30.0)
>>> deadline.expired, 29.0 < deadline.remaining() <= 30.0
(False, True)
>>> Deadline.after(None).remaining() is None
True
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Deadline"]


class Deadline:
    """A moment on a monotonic ``clock`` by which something must be done (``at=None``: never).

    >>> now = [100.0]
    >>> deadline = Deadline.after(5.0, clock=lambda: now[0])
    >>> deadline.at, deadline.remaining(), deadline.expired
    (105.0, 5.0, False)
    >>> now[0] = 106.0
    >>> deadline.remaining(), deadline.expired
    (0.0, True)
    """

    __slots__ = ("at", "clock")

    def __init__(self, at: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.at = at
        """The moment on ``clock`` (``None``: no deadline)."""
        self.clock = clock

    @classmethod
    def after(cls, seconds: float | None, *, clock: Callable[[], float] = time.monotonic) -> Deadline:
        """The deadline ``seconds`` from now on ``clock`` (``None``: no deadline)."""
        return cls(None if seconds is None else clock() + seconds, clock=clock)

    def remaining(self) -> float | None:
        """Seconds left, never below 0 (``None``: no deadline, wait as long as it takes)."""
        if self.at is None:
            return None
        return max(0.0, self.at - self.clock())

    @property
    def expired(self) -> bool:
        """Whether the moment has come (never, without a deadline)."""
        return self.at is not None and self.clock() >= self.at

    def within(self, seconds: float | None) -> float | None:
        """The shorter of ``seconds`` and what is left: one wait of at most ``seconds`` that ends by the deadline.

        >>> Deadline.after(None).within(2.0), Deadline.after(None).within(None)
        (2.0, None)
        >>> Deadline(10.0, clock=lambda: 9.0).within(2.0)
        1.0
        """
        left = self.remaining()
        if left is None:
            return seconds
        return left if seconds is None else min(left, seconds)

    def earlier(self, other: Deadline) -> Deadline:
        """Whichever of the two comes first (one without a moment comes last; both on this one's clock).

        >>> Deadline(5.0).earlier(Deadline(3.0)).at, Deadline(None).earlier(Deadline(3.0)).at
        (3.0, 3.0)
        >>> Deadline(5.0).earlier(Deadline(None)).at
        5.0
        """
        if other.at is None or (self.at is not None and self.at <= other.at):
            return self
        return other

    def __repr__(self) -> str:
        return f"Deadline(at={self.at!r})"
