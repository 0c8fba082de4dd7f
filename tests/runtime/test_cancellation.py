"""CancelEvent: a threading.Event that calls back when set, so that a wait can watch ctx.cancelled without polling."""

from __future__ import annotations

import threading

from mcp_sync.runtime.cancellation import CancelEvent


def test_callbacks_run_once_on_the_setting_thread_and_the_event_is_set_first() -> None:
    cancelled = CancelEvent()
    heard: list[tuple[str, bool, str]] = []
    cancelled.call_when_set(lambda: heard.append(("a", cancelled.is_set(), threading.current_thread().name)))
    cancelled.call_when_set(lambda: heard.append(("b", cancelled.is_set(), threading.current_thread().name)))
    setter = threading.Thread(target=cancelled.set, name="setter")
    setter.start()
    setter.join(5)
    cancelled.set()  # a second set calls nothing again
    assert heard == [("a", True, "setter"), ("b", True, "setter")]
    assert cancelled.wait(0)


def test_a_forgotten_callback_is_not_called_and_forgetting_twice_is_harmless() -> None:
    cancelled = CancelEvent()
    heard: list[str] = []
    forget = cancelled.call_when_set(lambda: heard.append("forgotten"))
    cancelled.call_when_set(lambda: heard.append("kept"))
    forget()
    forget()
    cancelled.set()
    forget()  # after the set, too
    assert heard == ["kept"]


def test_registering_on_a_set_event_calls_at_once() -> None:
    cancelled = CancelEvent()
    cancelled.set()
    heard: list[str] = []
    forget = cancelled.call_when_set(lambda: heard.append("now"))
    assert heard == ["now"]
    forget()
    assert heard == ["now"]


def test_it_still_is_an_event() -> None:
    cancelled = CancelEvent()
    assert isinstance(cancelled, threading.Event) and not cancelled.is_set()
    cancelled.set()
    cancelled.clear()
    assert not cancelled.wait(0)


def test_a_wait_on_another_thread_is_woken_by_set_and_times_out_otherwise() -> None:
    """The event's own condition (built on an RLock, not Event's Lock): waiters on other threads wake at set(),
    several at once, a wait with a timeout returns False when nobody sets it, and clear() lets it be set again."""
    cancelled = CancelEvent()
    assert cancelled.wait(0.01) is False
    woken: list[bool] = []
    waiting = threading.Semaphore(0)

    def waiter() -> None:
        waiting.release()
        woken.append(cancelled.wait(30))

    threads = [threading.Thread(target=waiter) for _ in range(3)]
    for thread in threads:
        thread.start()
    for _ in threads:
        assert waiting.acquire(timeout=30)
    cancelled.set()
    for thread in threads:
        thread.join(30)
    assert woken == [True, True, True]
    cancelled.clear()
    assert not cancelled.is_set() and cancelled.wait(0.01) is False
    again = threading.Thread(target=lambda: woken.append(cancelled.wait(30)))
    again.start()
    cancelled.set()
    again.join(30)
    assert woken[-1] is True and not again.is_alive()
