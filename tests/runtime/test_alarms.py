"""Alarms: callbacks run at set times by one thread, which ends on close."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from mcp_sync.runtime.alarms import Alarms

NAME = "mcp-sync-test-alarms"


def test_alarms_ring_in_the_order_of_their_times_and_a_cleared_one_never_rings() -> None:
    alarms = Alarms(NAME)
    rang: list[str] = []
    last = threading.Event()
    try:
        alarms.set(0.3, lambda: (rang.append("late"), last.set()))
        cleared = alarms.set(0.1, lambda: rang.append("cleared"))
        alarms.set(0.05, lambda: rang.append("early"))  # earlier than the one the thread sleeps towards: wakes it
        alarms.clear(cleared)
        alarms.clear(cleared)  # (twice: nothing to do)
        assert last.wait(5.0)
        assert rang == ["early", "late"]
    finally:
        alarms.close()


def test_alarms_found_due_at_once_ring_in_the_order_of_their_times() -> None:
    # The thread is held by a first callback while the next two fall due: it finds them due together.
    alarms = Alarms(NAME)
    release, done = threading.Event(), threading.Event()
    rang: list[str] = []
    try:
        alarms.set(0.0, lambda: release.wait(5.0))
        alarms.set(0.02, lambda: (rang.append("second"), done.set()))
        alarms.set(0.01, lambda: rang.append("first"))
        time.sleep(0.05)  # both are due now
        release.set()
        assert done.wait(5.0)
        assert rang == ["first", "second"]
    finally:
        release.set()
        alarms.close()


def test_an_alarm_set_after_every_other_rang_wakes_the_sleeping_thread() -> None:
    alarms = Alarms(NAME)
    first, second = threading.Event(), threading.Event()
    try:
        alarms.set(0.01, first.set)
        assert first.wait(5.0)
        time.sleep(0.05)  # the thread now sleeps until it is told of an alarm
        alarms.set(0.01, second.set)
        assert second.wait(5.0)
    finally:
        alarms.close()


def test_a_callback_that_raises_is_logged_and_the_others_still_ring(caplog: pytest.LogCaptureFixture) -> None:
    alarms = Alarms(NAME)
    rang = threading.Event()

    def broken() -> None:
        raise RuntimeError("boom")

    try:
        with caplog.at_level(logging.ERROR, logger="mcp_sync.runtime.alarms"):
            alarms.set(0.01, broken)
            alarms.set(0.01, rang.set)
            assert rang.wait(5.0)
        assert "an alarm's callback failed" in caplog.text and "boom" in caplog.text
    finally:
        alarms.close()


def test_close_ends_the_thread_and_forgets_every_alarm() -> None:
    alarms = Alarms(NAME)
    assert alarms.thread is None
    alarms.close()  # no thread yet: nothing to end
    assert alarms.thread is None
    rang = threading.Event()
    alarms.set(0.05, rang.set)  # closed: it never rings, and starts no thread
    assert alarms.thread is None and not rang.wait(0.2)

    alarms = Alarms(NAME)
    alarms.set(0.2, rang.set)
    thread = alarms.thread
    assert thread is not None and thread.name == NAME
    alarms.close()
    assert not thread.is_alive()
    assert not rang.wait(0.3)
    alarms.close()  # again: nothing to do


def test_close_from_a_callback_does_not_wait_for_its_own_thread() -> None:
    alarms = Alarms(NAME)
    closed = threading.Event()

    def close() -> None:
        alarms.close()
        closed.set()

    alarms.set(0.01, close)
    assert closed.wait(5.0)
    thread = alarms.thread
    assert thread is not None
    thread.join(5.0)
    assert not thread.is_alive()
