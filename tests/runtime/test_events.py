"""Tests of mcp_sync.runtime.events: the event bus and the lifecycle payloads."""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

import pytest

from mcp_sync.runtime.events import (
    CONNECTION_CLOSED,
    CONNECTION_OPENED,
    NOTIFICATION_EMITTED,
    REQUEST_COMPLETED,
    REQUEST_RECEIVED,
    ConnectionClosed,
    ConnectionOpened,
    EventBus,
    NotificationEmitted,
    RequestCompleted,
    RequestReceived,
)


def test_event_names() -> None:
    assert CONNECTION_OPENED == "connection:opened"
    assert CONNECTION_CLOSED == "connection:closed"
    assert REQUEST_RECEIVED == "request:received"
    assert REQUEST_COMPLETED == "request:completed"
    assert NOTIFICATION_EMITTED == "notification:emitted"


def test_listeners_run_in_subscription_order() -> None:
    bus = EventBus()
    calls: list[tuple[str, object]] = []
    bus.on(REQUEST_RECEIVED, lambda p: calls.append(("first", p)))
    bus.on(REQUEST_RECEIVED, lambda p: calls.append(("second", p)))
    bus.on(REQUEST_RECEIVED, lambda p: calls.append(("third", p)))

    payload = RequestReceived("server", "tools/list", 1)
    bus.emit(REQUEST_RECEIVED, payload)

    assert calls == [("first", payload), ("second", payload), ("third", payload)]
    assert all(p is payload for _, p in calls)


def test_listeners_only_hear_their_event() -> None:
    bus = EventBus()
    opened: list[object] = []
    closed: list[object] = []
    bus.on(CONNECTION_OPENED, opened.append)
    bus.on(CONNECTION_CLOSED, closed.append)

    bus.emit(CONNECTION_OPENED, "up")

    assert opened == ["up"]
    assert closed == []


def test_listener_runs_on_emitting_thread() -> None:
    bus = EventBus()
    threads: list[threading.Thread] = []
    bus.on("x", lambda _: threads.append(threading.current_thread()))

    worker = threading.Thread(target=bus.emit, args=("x", None))
    worker.start()
    worker.join()

    assert threads == [worker]


def test_unsubscribe_stops_delivery_and_is_idempotent() -> None:
    bus = EventBus()
    kept: list[object] = []
    dropped: list[object] = []
    bus.on("x", kept.append)
    stop = bus.on("x", dropped.append)

    bus.emit("x", 1)
    stop()
    bus.emit("x", 2)
    stop()  # second call: nothing left to remove, other listeners untouched
    bus.emit("x", 3)

    assert dropped == [1]
    assert kept == [1, 2, 3]
    assert bus.has_listeners("x")


def test_unsubscribing_the_last_listener_twice() -> None:
    bus = EventBus()
    seen: list[object] = []
    stop = bus.on("x", seen.append)

    stop()
    assert not bus.has_listeners("x")
    stop()
    assert not bus.has_listeners("x")
    bus.emit("x", 1)

    assert seen == []


def test_same_listener_subscribed_twice_is_removed_one_subscription_at_a_time() -> None:
    bus = EventBus()
    seen: list[object] = []
    stop_first = bus.on("x", seen.append)
    stop_second = bus.on("x", seen.append)

    bus.emit("x", "a")
    stop_first()
    stop_first()
    bus.emit("x", "b")
    stop_second()
    bus.emit("x", "c")

    assert seen == ["a", "a", "b"]


def test_raising_listener_is_logged_and_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    seen: list[str] = []

    def broken(payload: Any) -> None:
        seen.append("broken")
        raise RuntimeError("listener exploded")

    bus.on(REQUEST_COMPLETED, lambda _: seen.append("before"))
    bus.on(REQUEST_COMPLETED, broken)
    bus.on(REQUEST_COMPLETED, lambda _: seen.append("after"))

    with caplog.at_level(logging.ERROR, logger="mcp_sync.runtime.events"):
        bus.emit(REQUEST_COMPLETED, None)  # must not raise

    assert seen == ["before", "broken", "after"]
    [record] = caplog.records
    assert record.name == "mcp_sync.runtime.events"
    assert record.levelno == logging.ERROR
    assert REQUEST_COMPLETED in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)
    assert str(record.exc_info[1]) == "listener exploded"


def test_base_exceptions_are_not_swallowed() -> None:
    bus = EventBus()

    def interrupt(payload: Any) -> None:
        raise KeyboardInterrupt

    bus.on("x", interrupt)
    with pytest.raises(KeyboardInterrupt):
        bus.emit("x", None)


def test_emit_without_listeners_is_a_no_op(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.runtime.events"):
        bus.emit(CONNECTION_OPENED, ConnectionOpened("client", "d-1"))
        bus.emit("never:subscribed", object())
    assert caplog.records == []
    assert not bus.has_listeners(CONNECTION_OPENED)


def test_has_listeners_follows_subscriptions() -> None:
    bus = EventBus()
    assert not bus.has_listeners(NOTIFICATION_EMITTED)

    stop_a = bus.on(NOTIFICATION_EMITTED, lambda _: None)
    stop_b = bus.on(NOTIFICATION_EMITTED, lambda _: None)
    assert bus.has_listeners(NOTIFICATION_EMITTED)
    assert not bus.has_listeners(NOTIFICATION_EMITTED.upper())

    stop_a()
    assert bus.has_listeners(NOTIFICATION_EMITTED)
    stop_b()
    assert not bus.has_listeners(NOTIFICATION_EMITTED)


def test_unknown_event_names_are_accepted() -> None:
    bus = EventBus()
    seen: list[object] = []
    bus.on("app:custom", seen.append)
    bus.emit("app:custom", 42)
    assert seen == [42]


def test_subscribing_during_emit_takes_effect_on_the_next_emit() -> None:
    bus = EventBus()
    calls: list[str] = []

    def late(payload: Any) -> None:
        calls.append(f"late:{payload}")

    def subscriber(payload: Any) -> None:
        calls.append(f"subscriber:{payload}")
        if payload == 1:
            bus.on("x", late)

    bus.on("x", subscriber)
    bus.emit("x", 1)
    assert calls == ["subscriber:1"]

    bus.emit("x", 2)
    assert calls == ["subscriber:1", "subscriber:2", "late:2"]


def test_unsubscribing_during_emit_keeps_the_current_delivery() -> None:
    bus = EventBus()
    calls: list[str] = []
    stops: dict[str, Any] = {}

    def first(payload: Any) -> None:
        calls.append(f"first:{payload}")
        stops["second"]()
        stops["first"]()

    stops["first"] = bus.on("x", first)
    stops["second"] = bus.on("x", lambda p: calls.append(f"second:{p}"))
    bus.on("x", lambda p: calls.append(f"third:{p}"))

    bus.emit("x", 1)
    bus.emit("x", 2)

    assert calls == ["first:1", "second:1", "third:1", "third:2"]


def test_concurrent_subscriptions_are_not_lost() -> None:
    bus = EventBus()
    counter: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def listener(payload: Any) -> None:
        with lock:
            counter.append(payload)

    def subscribe_many() -> None:
        start.wait()
        for _ in range(200):
            bus.on("x", listener)

    workers = [threading.Thread(target=subscribe_many) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    bus.emit("x", 1)
    assert len(counter) == 8 * 200


def test_concurrent_unsubscriptions_remove_everything() -> None:
    bus = EventBus()
    seen: list[object] = []
    stops = [bus.on("x", seen.append) for _ in range(400)]
    start = threading.Barrier(4)

    def unsubscribe_slice(part: list[Any]) -> None:
        start.wait()
        for stop in part:
            stop()

    workers = [threading.Thread(target=unsubscribe_slice, args=(stops[i::4],)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert not bus.has_listeners("x")
    bus.emit("x", 1)
    assert seen == []


PAYLOADS: list[Any] = [
    ConnectionOpened("client", "d-1"),
    ConnectionClosed("server", "d-2", reason="peer went away"),
    RequestReceived("server", "tools/call", "req-1"),
    RequestCompleted("server", "tools/call", 5, duration_ms=1.5, outcome="cancelled"),
    NotificationEmitted("client", "notifications/initialized", {"k": 1}),
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: type(p).__name__)
def test_payloads_are_frozen_and_slotted(payload: Any) -> None:
    field = dataclasses.fields(payload)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(payload, field, "changed")
    assert getattr(payload, field) != "changed"
    assert not hasattr(payload, "__dict__")
    with pytest.raises((AttributeError, TypeError)):
        payload.extra = 1


def test_payload_fields_and_defaults() -> None:
    assert [f.name for f in dataclasses.fields(ConnectionOpened)] == ["side", "dispatcher_id"]
    assert [f.name for f in dataclasses.fields(ConnectionClosed)] == [
        "side",
        "dispatcher_id",
        "reason",
    ]
    assert [f.name for f in dataclasses.fields(RequestReceived)] == ["side", "method", "id"]
    assert [f.name for f in dataclasses.fields(RequestCompleted)] == [
        "side",
        "method",
        "id",
        "duration_ms",
        "outcome",
    ]
    assert [f.name for f in dataclasses.fields(NotificationEmitted)] == [
        "side",
        "method",
        "params",
    ]
    assert ConnectionClosed("client", "d-1").reason is None
    assert RequestCompleted("client", "ping", 1, 2.0, "error") == RequestCompleted(
        side="client", method="ping", id=1, duration_ms=2.0, outcome="error"
    )
    # frozen dataclasses are hashable, so listeners can keep them in sets
    assert len({RequestReceived("server", "ping", 1), RequestReceived("server", "ping", 1)}) == 1
