"""The one deadline type: made from a timeout or ``None``, on the real clock or an injected one."""

from __future__ import annotations

import time

from mcp_sync.runtime.deadline import Deadline


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_deadline_counts_down_on_its_clock_and_never_below_zero() -> None:
    clock = Clock(50.0)
    deadline = Deadline.after(2.0, clock=clock)
    assert (deadline.remaining(), deadline.expired) == (2.0, False)
    clock.now = 51.5
    assert (deadline.remaining(), deadline.expired) == (0.5, False)
    clock.now = 52.0  # the moment itself counts as come
    assert (deadline.remaining(), deadline.expired) == (0.0, True)
    clock.now = 1e9
    assert deadline.remaining() == 0.0


def test_no_timeout_is_no_deadline() -> None:
    deadline = Deadline.after(None)
    assert (deadline.at, deadline.remaining(), deadline.expired) == (None, None, False)
    assert deadline.within(None) is None and deadline.within(3.0) == 3.0


def test_zero_and_negative_timeouts_are_expired_at_once() -> None:
    assert Deadline.after(0.0).expired and Deadline.after(-5.0).remaining() == 0.0


def test_within_takes_the_shorter_wait() -> None:
    deadline = Deadline(10.0, clock=Clock(4.0))
    assert (deadline.within(None), deadline.within(2.0), deadline.within(60.0)) == (6.0, 2.0, 6.0)


def test_earlier_picks_the_first_moment_and_a_real_one_over_none() -> None:
    soon, late, never = Deadline(1.0), Deadline(2.0), Deadline(None)
    assert soon.earlier(late) is soon and late.earlier(soon) is soon
    assert never.earlier(late) is late and late.earlier(never) is late and never.earlier(never) is never
    assert repr(soon) == "Deadline(at=1.0)"


def test_the_default_clock_is_monotonic() -> None:
    before = time.monotonic()
    deadline = Deadline.after(100.0)
    assert deadline.clock is time.monotonic and before + 100.0 <= deadline.at <= time.monotonic() + 100.0  # type: ignore[operator]
