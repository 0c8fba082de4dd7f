"""Tests of mcp_sync.runtime.dispatcher: real dispatchers on both ends of a real in-memory pair.

Where a test needs to see or forge raw wire traffic it uses :class:`WireTransport`,
a small :class:`BaseTransport` whose far end is the test itself.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pydantic import BaseModel, ValidationError, model_validator

from mcp_sync.errors import MCP_CODES, MCPError, MCPProtocolError, MCPTransportError
from mcp_sync.protocol.errors import format_validation_error
from mcp_sync.protocol.jsonrpc import InvalidMessage, decode_message, encode_message
from mcp_sync.runtime.cancellation import CancelEvent
from mcp_sync.runtime.dispatcher import (
    DEFAULT_TIMEOUT,
    JsonRpcDispatcher,
    PendingRequest,
    SystemClock,
)
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
from mcp_sync.runtime.request_context import RequestContext, current_request
from mcp_sync.runtime.telemetry import Telemetry, default_telemetry
from mcp_sync.runtime.transport import BaseTransport, Route
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CallToolResult,
    JSONRPCMessage,
    JSONRPCRequest,
    ProgressNotificationParams,
    TextContent,
)

WAIT = 5.0
"""Upper bound of every wait; a passing test never comes near it."""


# ---------------------------------------------------------------- test kit


class FakeClock:
    """Virtual time: ``wait`` never blocks, it moves time on by the timeout and reports the future's state.

    ``on_wait(n)`` runs before the n-th wait returns, to act at a chosen point of a waiting loop.
    """

    def __init__(self, on_wait: Callable[[int], None] | None = None) -> None:
        self.now = 1000.0
        self.waits: list[float | None] = []
        self.on_wait = on_wait

    def monotonic(self) -> float:
        return self.now

    def wait(self, future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
        self.waits.append(timeout)
        if self.on_wait is not None:
            self.on_wait(len(self.waits))
        self.now += timeout or 0.0
        return future.done()


class WireTransport(BaseTransport):
    """A transport whose far end is the test: ``feed`` delivers raw input, ``take`` returns what was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: queue.Queue[bytes] = queue.Queue()
        self.fail_with: Exception | None = None

    def feed(self, data: bytes | str | dict[str, Any]) -> None:
        raw = json.dumps(data) if isinstance(data, dict) else data
        self._deliver(decode_message(raw))

    def hang_up(self, reason: BaseException | None) -> None:
        self._closed_by_peer(reason)

    def take(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.sent.get(timeout=WAIT))
        return value

    def _handlers_changed(self) -> None:
        pass

    def _write(self, message: JSONRPCMessage) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.sent.put(encode_message(message))

    def _shutdown(self) -> None:
        pass


class Blocker:
    """A handler that says when it starts, then waits until its request is cancelled."""

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.finished = threading.Semaphore(0)
        self.saw_cancel: list[bool] = []
        self.contexts: list[RequestContext] = []
        self._lock = threading.Lock()

    def __call__(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        with self._lock:
            self.contexts.append(ctx)
        self.started.release()
        saw = ctx.cancelled.wait(WAIT)
        with self._lock:
            self.saw_cancel.append(saw)
        self.finished.release()
        return {"late": True}

    def wait_started(self, count: int = 1) -> None:
        for _ in range(count):
            assert self.started.acquire(timeout=WAIT)

    def wait_finished(self, count: int = 1) -> None:
        for _ in range(count):
            assert self.finished.acquire(timeout=WAIT)


class Collector:
    """A listener that queues what it gets."""

    def __init__(self) -> None:
        self.queue: queue.Queue[Any] = queue.Queue()

    def __call__(self, item: Any) -> None:
        self.queue.put(item)

    def take(self) -> Any:
        return self.queue.get(timeout=WAIT)

    def empty(self) -> bool:
        return self.queue.empty()


Connect = Callable[..., tuple[JsonRpcDispatcher, JsonRpcDispatcher]]


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Make a started client and server dispatcher on the two ends of an in-memory pair."""
    made: list[JsonRpcDispatcher] = []

    def make(
        client: dict[str, Any] | None = None, server: dict[str, Any] | None = None
    ) -> tuple[JsonRpcDispatcher, JsonRpcDispatcher]:
        client_end, server_end = InMemoryTransport.pair()
        client_d = JsonRpcDispatcher(client_end, side="client", **(client or {}))
        server_d = JsonRpcDispatcher(server_end, side="server", **(server or {}))
        made.extend([client_d, server_d])
        server_d.start()
        client_d.start()
        return client_d, server_d

    yield make
    for dispatcher in made:
        dispatcher.close()


@pytest.fixture
def wire() -> Iterator[WireTransport]:
    transport = WireTransport()
    yield transport
    transport.close()


def raised(call: Callable[[], Any]) -> MCPError:
    with pytest.raises(MCPError) as info:
        call()
    return info.value


def echo(params: Any, ctx: RequestContext) -> Any:
    return params


# ------------------------------------------------------ requests, responses


def test_request_gets_its_result(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    assert client.request("echo", {"said": "hi", "n": [1, None]}, timeout=WAIT) == {"said": "hi", "n": [1, None]}
    assert client.request("echo", timeout=WAIT) == {}


def test_ids_come_from_the_injected_generator(connect: Connect) -> None:
    ids = iter(["c-1", "c-2", 77])
    client, server = connect(client={"id_generator": lambda: next(ids)})
    server.register_handler("whoami", lambda params, ctx: {"id": ctx.request_id, "method": ctx.method})
    assert client.request("whoami", timeout=WAIT) == {"id": "c-1", "method": "whoami"}
    assert client.request("whoami", timeout=WAIT) == {"id": "c-2", "method": "whoami"}
    assert client.request("whoami", timeout=WAIT) == {"id": 77, "method": "whoami"}


def test_default_ids_count_from_one(wire: WireTransport) -> None:
    client = JsonRpcDispatcher(wire, clock=FakeClock())
    client.start()
    first = client.send_request("a")
    second = client.send_request("b", {"k": 1})
    assert (first.id, first.method, first.started) == (1, "a", 1000.0)
    assert wire.take() == {"jsonrpc": "2.0", "id": 1, "method": "a"}
    assert wire.take() == {"jsonrpc": "2.0", "id": 2, "method": "b", "params": {"k": 1}}
    assert second.id == 2
    client.close()


def test_responses_are_correlated_out_of_order(connect: Connect) -> None:
    client, server = connect()
    gate = threading.Event()

    def slow(params: Any, ctx: RequestContext) -> Any:
        assert gate.wait(WAIT)
        return {"who": "slow"}

    server.register_handler("slow", slow)
    server.register_handler("fast", lambda params, ctx: {"who": "fast"})
    slow_call = client.send_request("slow")
    fast_call = client.send_request("fast")
    assert client.wait(fast_call, WAIT) == {"who": "fast"}
    assert not slow_call.future.done()
    gate.set()
    assert client.wait(slow_call, WAIT) == {"who": "slow"}


def test_handler_results_of_every_kind(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("none", lambda params, ctx: None)
    server.register_handler(
        "model", lambda params, ctx: CallToolResult(content=[TextContent(text="hi")], structured_content={"x": 1})
    )
    server.register_handler("pairs", lambda params, ctx: [("a", 1), ("b", 2)])
    assert client.request("none", timeout=WAIT) == {}
    assert client.request("model", timeout=WAIT) == {
        "content": [{"type": "text", "text": "hi"}],
        "structuredContent": {"x": 1},
    }
    assert client.request("pairs", timeout=WAIT) == {"a": 1, "b": 2}


def test_request_params_from_a_wire_model_use_wire_names(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    params = ProgressNotificationParams(progress_token="t", progress=0.5)
    assert client.request("echo", params, timeout=WAIT) == {"progressToken": "t", "progress": 0.5}


def test_wait_without_timeout(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    assert client.request("echo", {"a": 1}, timeout=None) == {"a": 1}


def test_wait_with_a_cancel_event_that_is_never_set(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    assert client.request("echo", {"a": 1}, timeout=WAIT, cancel=threading.Event()) == {"a": 1}


# ----------------------------------------------------------- notifications


def test_notify_reaches_the_listeners_in_order(connect: Connect) -> None:
    client, server = connect()
    got = Collector()
    server.on_notification("notifications/hello", lambda params: got(("first", params)))
    server.on_notification("notifications/hello", lambda params: got(("second", params)))
    client.notify("notifications/hello", {"n": 1})
    client.notify("notifications/hello")
    assert [got.take() for _ in range(4)] == [
        ("first", {"n": 1}),
        ("second", {"n": 1}),
        ("first", {}),
        ("second", {}),
    ]


def test_notification_unsubscribe(connect: Connect) -> None:
    client, server = connect()
    dropped, kept = Collector(), Collector()
    unsubscribe = server.on_notification("notifications/x", dropped)
    server.on_notification("notifications/x", kept)
    unsubscribe()
    unsubscribe()
    client.notify("notifications/x", {"n": 1})
    assert kept.take() == {"n": 1}
    assert dropped.empty()


def test_raising_listener_is_logged_and_others_still_run(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_sync.runtime.dispatcher")
    client, server = connect()

    def broken(params: dict[str, Any]) -> None:
        raise RuntimeError("listener bug")

    kept = Collector()
    server.on_notification("notifications/x", broken)
    server.on_notification("notifications/x", kept)
    client.notify("notifications/x", {"n": 1})
    client.notify("notifications/x", {"n": 2})
    assert [kept.take(), kept.take()] == [{"n": 1}, {"n": 2}]
    assert [r.getMessage() for r in caplog.records] == ["listener for notifications/x failed"] * 2


def test_unlistened_notification_is_ignored(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    client.notify("notifications/nobody")
    assert client.request("echo", {"still": "fine"}, timeout=WAIT) == {"still": "fine"}


# ------------------------------------------------------------- registration


def test_unregistered_method_is_method_not_found(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    assert client.request("echo", {"a": 1}, timeout=WAIT) == {"a": 1}
    server.unregister_handler("echo")
    server.unregister_handler("never-registered")  # not an error: there is nothing to remove
    err = raised(lambda: client.request("echo", {"a": 1}, timeout=WAIT))
    assert type(err) is MCPError
    assert err.code == MCP_CODES.METHOD_NOT_FOUND
    assert err.jsonrpc_code == -32601
    assert err.message == "Method not found: echo"
    assert err.context == {"method": "echo"}


def test_register_again_replaces_the_handler(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("m", lambda params, ctx: {"v": 1})
    server.register_handler("m", lambda params, ctx: {"v": 2})
    assert client.request("m", timeout=WAIT) == {"v": 2}


class Arguments(BaseModel):
    a: int
    b: int = 0


class CallParams(BaseModel):
    name: str
    arguments: Arguments


class Ordered(BaseModel):
    low: int
    high: int

    @model_validator(mode="after")
    def check(self) -> Ordered:
        if self.low > self.high:
            raise ValueError("low is above high")
        return self


def test_params_model_validates_and_is_passed_to_the_handler(connect: Connect) -> None:
    client, server = connect()
    seen: list[Any] = []

    def add(params: CallParams, ctx: RequestContext) -> dict[str, Any]:
        seen.append(params)
        return {"sum": params.arguments.a + params.arguments.b}

    server.register_handler("add", add, CallParams)
    assert client.request("add", {"name": "add", "arguments": {"a": 2, "b": 3}}, timeout=WAIT) == {"sum": 5}
    assert seen == [CallParams(name="add", arguments=Arguments(a=2, b=3))]


def test_params_model_rejection_names_the_field_path(connect: Connect) -> None:
    client, server = connect()
    called: list[Any] = []
    server.register_handler("add", lambda params, ctx: called.append(params), CallParams)
    err = raised(lambda: client.request("add", {"name": "add", "arguments": {"a": "x"}}, timeout=WAIT))
    assert err.code == MCP_CODES.INVALID_PARAMS
    assert err.jsonrpc_code == -32602
    assert err.message.startswith("Invalid params: ")
    assert "arguments.a:" in err.message
    assert "Traceback" not in err.message
    err = raised(lambda: client.request("add", {"arguments": {}}, timeout=WAIT))
    assert "name: Field required" in err.message
    assert "arguments.a: Field required" in err.message
    assert called == []


def test_root_level_rejection_is_named_root(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("range", lambda params, ctx: {}, Ordered)
    err = raised(lambda: client.request("range", {"low": 5, "high": 1}, timeout=WAIT))
    assert err.code == MCP_CODES.INVALID_PARAMS
    assert "(root): Value error, low is above high" in err.message


def test_format_validation_error() -> None:
    with pytest.raises(ValidationError) as info:
        CallParams.model_validate({"name": 1, "arguments": {"a": "x"}})
    assert format_validation_error(info.value) == (
        "name: Input should be a valid string; "
        "arguments.a: Input should be a valid integer, unable to parse string as an integer"
    )


# ------------------------------------------------------------ handler errors


def test_handler_mcp_error_keeps_its_code_message_and_data(connect: Connect) -> None:
    client, server = connect()

    def missing(params: Any, ctx: RequestContext) -> Any:
        raise MCPError(MCP_CODES.NOT_FOUND, "no tool 'x'", data={"name": "x"}, context={"secret": "local only"})

    server.register_handler("tools/call", missing)
    err = raised(lambda: client.request("tools/call", {"name": "x"}, timeout=WAIT))
    assert type(err) is MCPError
    assert (err.code, err.jsonrpc_code, err.message, err.data) == (
        MCP_CODES.NOT_FOUND,
        -32002,
        "no tool 'x'",
        {"name": "x"},
    )
    assert err.context == {"method": "tools/call"}


@pytest.mark.parametrize(
    ("raised_error", "code", "wire", "kind"),
    [
        (MCPError(MCP_CODES.UNAUTHORIZED, "who are you"), MCP_CODES.UNAUTHORIZED, -32001, MCPError),
        (MCPError(MCP_CODES.PROTOCOL_INVALID, "bad request"), MCP_CODES.PROTOCOL_INVALID, -32600, MCPProtocolError),
        (MCPError(MCP_CODES.PARSE_ERROR, "bad json"), MCP_CODES.PARSE_ERROR, -32700, MCPProtocolError),
        (MCPError(MCP_CODES.TIMEOUT, "local code"), MCP_CODES.INTERNAL_ERROR, -32603, MCPError),
        (
            MCPError(MCP_CODES.HANDLER_FAILED, "app error", jsonrpc_code=-32000),
            MCP_CODES.HANDLER_FAILED,
            -32000,
            MCPError,
        ),
        (
            MCPError(MCP_CODES.PROTOCOL_VERSION_MISMATCH, "too new"),
            MCP_CODES.PROTOCOL_VERSION_MISMATCH,
            -32022,
            MCPProtocolError,  # the code decides the class, on the wire's far side too
        ),
    ],
)
def test_error_responses_map_back_to_exceptions(
    connect: Connect, raised_error: MCPError, code: str, wire: int, kind: type[MCPError]
) -> None:
    client, server = connect()

    def fail(params: Any, ctx: RequestContext) -> Any:
        raise raised_error

    server.register_handler("fail", fail)
    err = raised(lambda: client.request("fail", timeout=WAIT))
    assert type(err) is kind
    assert (err.code, err.jsonrpc_code, err.message) == (code, wire, raised_error.message)


def test_other_handler_exception_is_internal_error_without_traceback(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_sync.runtime.dispatcher")
    client, server = connect()

    def broken(params: Any, ctx: RequestContext) -> Any:
        raise RuntimeError("db down")

    server.register_handler("broken", broken)
    err = raised(lambda: client.request("broken", timeout=WAIT))
    assert (err.code, err.jsonrpc_code) == (MCP_CODES.INTERNAL_ERROR, -32603)
    assert err.message == "Internal error: db down"
    assert "Traceback" not in err.message
    assert err.data is None
    records = [r for r in caplog.records if r.getMessage() == "handler for broken failed"]
    assert len(records) == 1
    assert records[0].exc_info is not None


def test_result_that_cannot_be_sent_is_answered_with_internal_error(connect: Connect) -> None:
    """Before the fix, the response failed to encode, the failure was only logged, and the caller hung."""
    client, server = connect()
    server.register_handler("weird", lambda params, ctx: {"value": object()})
    err = raised(lambda: client.request("weird", timeout=WAIT))
    assert (err.code, err.jsonrpc_code) == (MCP_CODES.INTERNAL_ERROR, -32603)
    assert err.message.startswith("Internal error: could not send")
    assert "serialize" in err.message


def test_error_data_that_cannot_be_sent_is_answered_with_internal_error(connect: Connect) -> None:
    client, server = connect()

    def fail(params: Any, ctx: RequestContext) -> Any:
        raise MCPError(MCP_CODES.NOT_FOUND, "gone", data={"thing": object()})

    server.register_handler("fail", fail)
    err = raised(lambda: client.request("fail", timeout=WAIT))
    assert err.code == MCP_CODES.INTERNAL_ERROR
    assert err.data is None


# ------------------------------------------------------ timeouts, cancelling


def test_timeout_with_a_fake_clock_then_the_peer_is_told(connect: Connect) -> None:
    clock = FakeClock()
    client, server = connect(client={"clock": clock})
    blocker = Blocker()
    server.register_handler("slow", blocker)
    cancels = Collector()
    server.on_notification("notifications/cancelled", cancels)
    err = raised(lambda: client.request("slow", {"x": 1}, timeout=30))
    assert err.code == MCP_CODES.TIMEOUT
    assert err.message == "slow timed out after 30 s"
    assert err.context == {"method": "slow", "timeout": 30}
    assert clock.waits == [30]  # one virtual wait: no real time passed
    assert cancels.take() == {"requestId": 1, "reason": "timed out"}
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]


def test_default_timeout_is_the_dispatchers(connect: Connect) -> None:
    clock = FakeClock()
    client, server = connect(client={"clock": clock, "timeout": 7})
    assert client.timeout == 7
    server.register_handler("slow", Blocker())
    err = raised(lambda: client.request("slow"))
    assert err.message == "slow timed out after 7 s"
    assert clock.waits == [7]
    assert JsonRpcDispatcher(InMemoryTransport()).timeout == DEFAULT_TIMEOUT == 60.0


def test_cancel_event_is_polled_until_set(connect: Connect) -> None:
    cancel = threading.Event()
    clock = FakeClock(on_wait=lambda n: cancel.set() if n == 3 else None)
    client, server = connect(client={"clock": clock})
    blocker = Blocker()
    server.register_handler("slow", blocker)
    err = raised(lambda: client.request("slow", timeout=10, cancel=cancel))
    assert err.code == MCP_CODES.REQUEST_CANCELLED
    assert err.message == "slow was cancelled: cancelled by the caller"
    assert err.context == {"method": "slow"}
    assert clock.waits == [0.02, 0.02, 0.02]
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]


@pytest.mark.parametrize("kind", [threading.Event, CancelEvent])
def test_a_request_cancelled_before_it_is_sent_is_never_sent(connect: Connect, kind: type[threading.Event]) -> None:
    client, server = connect()
    heard: list[Any] = []
    server.register_handler("slow", lambda params, ctx: heard.append(params))
    cancel = kind()
    cancel.set()
    err = raised(lambda: client.request("slow", {"n": 1}, timeout=10, cancel=cancel))
    assert err.code == MCP_CODES.REQUEST_CANCELLED
    assert err.message == "slow was cancelled before it was sent"
    assert client.request("slow", {"n": 2}, timeout=10) == {}  # the next request is the first the server hears
    assert heard == [{"n": 2}]


def test_cancel_event_without_timeout_polls(connect: Connect) -> None:
    cancel = threading.Event()
    clock = FakeClock(on_wait=lambda n: cancel.set() if n == 2 else None)
    client, server = connect(client={"clock": clock})
    server.register_handler("slow", Blocker())
    err = raised(lambda: client.request("slow", timeout=None, cancel=cancel))
    assert err.code == MCP_CODES.REQUEST_CANCELLED
    assert clock.waits == [0.02, 0.02]


def test_a_cancel_event_of_ours_is_not_polled_it_calls_back(connect: Connect) -> None:
    # A handler's ctx.cancelled (a CancelEvent) ends the wait when set: one wait for the whole timeout, no 20 ms looks.
    cancel = CancelEvent()
    clock = FakeClock(on_wait=lambda n: cancel.set())
    client, server = connect(client={"clock": clock})
    blocker = Blocker()
    server.register_handler("slow", blocker)
    seen = Collector()
    server.on_notification("notifications/cancelled", seen)
    err = raised(lambda: client.request("slow", timeout=10, cancel=cancel))
    assert err.code == MCP_CODES.REQUEST_CANCELLED
    assert err.message == "slow was cancelled: cancelled by the caller"
    assert clock.waits == [10]
    assert seen.take()["reason"] == "cancelled by the caller"
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]
    assert cancel._callbacks is None  # called once, then dropped


class ThreadNoting(WireTransport):
    """A WireTransport that notes which thread sent each message."""

    def __init__(self) -> None:
        super().__init__()
        self.senders: list[tuple[str, str]] = []

    def _write(self, message: JSONRPCMessage) -> None:
        self.senders.append((getattr(message, "method", "?"), threading.current_thread().name))
        super()._write(message)


def test_the_thread_that_sets_a_cancel_event_sends_nothing() -> None:
    # The setter may be a reader delivering the peer's cancellation: it must not wait on a write. The waiting
    # thread, woken, sends notifications/cancelled.
    wire = ThreadNoting()
    client = JsonRpcDispatcher(wire)
    client.start()
    try:
        cancel = CancelEvent()
        pending = client.send_request("slow")

        def set_once_waited() -> None:
            deadline = time.monotonic() + WAIT
            while not cancel._callbacks and time.monotonic() < deadline:  # the waiting thread has registered
                time.sleep(0.001)
            cancel.set()

        setter = threading.Thread(target=set_once_waited, name="test-setter")
        setter.start()
        err = raised(lambda: client.wait(pending, WAIT, cancel))
        setter.join(WAIT)
        assert err.code == MCP_CODES.REQUEST_CANCELLED
        assert wire.senders == [("slow", "MainThread"), ("notifications/cancelled", "MainThread")]
    finally:
        client.close()
        wire.close()


def test_a_wait_answered_in_time_forgets_its_cancel_callback(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", lambda params, ctx: params)
    cancel = CancelEvent()
    assert client.request("echo", {"a": 1}, timeout=WAIT, cancel=cancel) == {"a": 1}
    assert cancel._callbacks == []  # nothing left to call (and nothing is sent) when it is set later
    cancel.set()
    assert cancel._callbacks is None


def test_caller_cancellation_with_the_real_clock_reaches_the_handler(connect: Connect) -> None:
    client, server = connect()
    cancel = threading.Event()
    saw: list[bool] = []
    done = threading.Event()

    def slow(params: Any, ctx: RequestContext) -> Any:
        cancel.set()  # the caller gives up while this runs
        saw.append(ctx.cancelled.wait(WAIT))
        done.set()
        return {}

    server.register_handler("slow", slow)
    err = raised(lambda: client.request("slow", timeout=WAIT, cancel=cancel))
    assert err.code == MCP_CODES.REQUEST_CANCELLED
    assert done.wait(WAIT)
    assert saw == [True]


def test_cancel_a_pending_request(connect: Connect) -> None:
    client, server = connect()
    blocker = Blocker()
    server.register_handler("slow", blocker)
    seen = Collector()
    server.on_notification("notifications/cancelled", seen)
    server.on_notification("marker", lambda params: seen("marker"))
    pending = client.send_request("slow")
    blocker.wait_started()
    client.cancel(pending, "user gave up")
    assert pending.future.done()
    err = raised(lambda: client.wait(pending, WAIT))
    assert err.code == MCP_CODES.REQUEST_CANCELLED
    assert err.message == "slow was cancelled: user gave up"
    assert seen.take() == {"requestId": pending.id, "reason": "user gave up"}
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]
    client.cancel(pending)  # already given up: nothing more is sent
    client.notify("marker")
    assert seen.take() == "marker"


def test_cancel_after_the_answer_changes_nothing(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    seen = Collector()
    server.on_notification("notifications/cancelled", seen)
    server.on_notification("marker", lambda params: seen("marker"))
    pending = client.send_request("echo", {"v": 1})
    assert client.wait(pending, WAIT) == {"v": 1}
    client.cancel(pending)
    assert client.wait(pending, WAIT) == {"v": 1}
    client.notify("marker")
    assert seen.take() == "marker"


def test_incoming_cancel_sets_the_event_and_no_response_is_sent(connect: Connect) -> None:
    server_events = EventBus()
    completed = Collector()
    server_events.on(REQUEST_COMPLETED, completed)
    client, server = connect(server={"events": server_events})
    blocker = Blocker()
    server.register_handler("slow", blocker)
    server.register_handler("echo", echo)
    raw = Collector()
    client.transport.on_message(raw)
    pending = client.send_request("slow")
    blocker.wait_started()
    client.notify("notifications/cancelled", {"requestId": pending.id, "reason": "stop"})
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]
    done = completed.take()
    assert (done.method, done.outcome) == ("slow", "cancelled")
    # Anything the cancelled handler sent would arrive before this answer.
    assert client.request("echo", {"after": True}, timeout=WAIT) == {"after": True}
    received = [encode_message(raw.take())]
    assert raw.empty()
    assert json.loads(received[0]) == {"jsonrpc": "2.0", "id": 2, "result": {"after": True}}
    assert not pending.future.done()
    client.cancel(pending)  # no answer will come: the caller gives up
    assert raised(lambda: client.wait(pending, WAIT)).code == MCP_CODES.REQUEST_CANCELLED


def test_cancel_for_an_unknown_request_is_harmless(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    client.notify("notifications/cancelled", {"requestId": 12345})
    assert client.request("echo", {"ok": 1}, timeout=WAIT) == {"ok": 1}


@pytest.mark.parametrize(
    "params", [None, {}, {"requestId": None}, {"requestId": True}, {"requestId": 1.5}, {"reason": "no id"}]
)
def test_malformed_cancel_is_ignored(connect: Connect, params: dict[str, Any] | None) -> None:
    client, server = connect()
    blocker = Blocker()
    server.register_handler("slow", blocker)
    heard = Collector()
    server.on_notification("notifications/cancelled", heard)
    pending = client.send_request("slow")
    blocker.wait_started()
    client.notify("notifications/cancelled", params)
    assert heard.take() == (params or {})  # the listener runs after the dispatcher looked at it
    ctx = blocker.contexts[0]
    assert not ctx.cancelled.is_set()
    client.cancel(pending)  # a well-formed cancellation does reach the handler
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]


def test_cancel_reaches_every_request_in_flight_with_that_id(wire: WireTransport) -> None:
    server = JsonRpcDispatcher(wire, side="server")
    blocker = Blocker()
    server.register_handler("slow", blocker)
    server.start()
    wire.feed({"jsonrpc": "2.0", "id": 7, "method": "slow"})
    wire.feed({"jsonrpc": "2.0", "id": 7, "method": "slow"})
    blocker.wait_started(2)
    wire.feed({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    blocker.wait_finished(2)
    assert blocker.saw_cancel == [True, True]
    server.close()
    assert wire.sent.empty()


def test_cancel_notification_that_cannot_be_sent_is_only_logged(
    wire: WireTransport, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.runtime.dispatcher")
    client = JsonRpcDispatcher(wire)
    client.start()
    pending = client.send_request("slow")
    assert wire.take()["method"] == "slow"
    wire.fail_with = OSError("broken pipe")
    client.cancel(pending)
    assert raised(lambda: client.wait(pending, WAIT)).code == MCP_CODES.REQUEST_CANCELLED
    assert "could not send notifications/cancelled for 1" in [r.getMessage() for r in caplog.records]
    client.close()


# ------------------------------------------------------------------ progress


def test_progress_reaches_on_progress_by_token(connect: Connect) -> None:
    client, server = connect()
    seen_meta: list[dict[str, Any]] = []

    def work(params: Any, ctx: RequestContext) -> Any:
        seen_meta.append(ctx.meta)
        ctx.progress(1, total=3, message="one")
        ctx.dispatcher.notify("notifications/progress", {"progressToken": ctx.progress_token})  # malformed
        ctx.dispatcher.notify("notifications/progress", {"progressToken": "someone-else", "progress": 9})
        ctx.dispatcher.notify("notifications/progress", {"progressToken": True, "progress": 8})  # not token 1
        ctx.progress(2, total=3)
        return {"done": True, "x": params["x"]}

    server.register_handler("work", work)
    got: list[ProgressNotificationParams] = []
    result = client.request("work", {"x": 1, "_meta": {"traceId": "t"}}, timeout=WAIT, on_progress=got.append)
    assert result == {"done": True, "x": 1}
    assert seen_meta == [{"traceId": "t", "progressToken": 1}]
    # Progress is handled on the reader thread before the response, so it is all here.
    assert [(p.progress_token, p.progress, p.total, p.message) for p in got] == [(1, 1, 3, "one"), (1, 2, 3, None)]


def test_progress_token_without_params(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("work", lambda params, ctx: {"token": ctx.progress_token, "params": params})
    result = client.request("work", timeout=WAIT, on_progress=lambda p: None)
    assert result == {"token": 1, "params": {"_meta": {"progressToken": 1}}}


def test_progress_after_the_answer_is_ignored(connect: Connect) -> None:
    client, server = connect()
    tokens: list[Any] = []
    server.register_handler("work", lambda params, ctx: tokens.append(ctx.progress_token))
    server.register_handler("echo", echo)
    got: list[Any] = []
    assert client.request("work", timeout=WAIT, on_progress=got.append) == {}
    server.notify("notifications/progress", {"progressToken": tokens[0], "progress": 5})
    assert client.request("echo", {"after": 1}, timeout=WAIT) == {"after": 1}
    assert got == []


def test_no_progress_is_sent_when_the_caller_did_not_ask(connect: Connect) -> None:
    client, server = connect()

    def work(params: Any, ctx: RequestContext) -> Any:
        assert ctx.progress_token is None
        ctx.progress(0.5)
        return {}

    server.register_handler("work", work)
    raw = Collector()
    client.transport.on_message(raw)
    assert client.request("work", timeout=WAIT) == {}
    message = raw.take()
    assert not isinstance(message, InvalidMessage)
    assert json.loads(encode_message(message)) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert raw.empty()


def test_raising_progress_callback_is_logged(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_sync.runtime.dispatcher")
    client, server = connect()

    def work(params: Any, ctx: RequestContext) -> Any:
        ctx.progress(1)
        ctx.progress(2)
        return {"ok": True}

    server.register_handler("work", work)
    calls: list[float] = []

    def callback(progress: ProgressNotificationParams) -> None:
        calls.append(progress.progress)
        raise RuntimeError("callback bug")

    assert client.request("work", timeout=WAIT, on_progress=callback) == {"ok": True}
    assert calls == [1, 2]
    assert [r.getMessage() for r in caplog.records] == ["progress callback for work failed"] * 2


@pytest.mark.parametrize(
    ("params", "meta", "token"),
    [
        ({}, {}, None),
        ({"_meta": 5}, {}, None),
        ({"_meta": {"progressToken": True}}, {"progressToken": True}, None),
        ({"_meta": {"progressToken": 1.5}}, {"progressToken": 1.5}, None),
        ({"_meta": {"progressToken": "tok"}}, {"progressToken": "tok"}, "tok"),
        ({"_meta": {"progressToken": 0}}, {"progressToken": 0}, 0),
    ],
)
def test_request_context_reads_meta_defensively(
    wire: WireTransport, params: dict[str, Any], meta: dict[str, Any], token: Any
) -> None:
    server = JsonRpcDispatcher(wire, side="server")
    server.register_handler(
        "m", lambda p, ctx: (ctx.progress(0.5, total=1.0), {"meta": ctx.meta, "token": ctx.progress_token})[1]
    )
    server.start()
    wire.feed({"jsonrpc": "2.0", "id": 3, "method": "m", "params": params})
    first = wire.take()
    if token is not None:
        assert first == {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 0.5, "total": 1.0},
        }
        first = wire.take()
    assert first == {"jsonrpc": "2.0", "id": 3, "result": {"meta": meta, "token": token}}
    server.close()


# ------------------------------------------------------------ close, failure


def test_transport_close_fails_every_pending_call_at_once(connect: Connect) -> None:
    client_events = EventBus()
    closed = threading.Event()
    client_events.on(CONNECTION_CLOSED, lambda event: closed.set())
    client, server = connect(client={"events": client_events})
    blocker = Blocker()
    server.register_handler("slow", blocker)
    calls = [client.send_request("slow", on_progress=lambda p: None) for _ in range(3)]
    blocker.wait_started(3)
    server.close()
    assert closed.wait(WAIT)  # emitted after the pending calls were failed
    for call in calls:
        assert call.future.done()
        err = call.future.exception(0)
        assert isinstance(err, MCPTransportError)
        assert err.code == MCP_CODES.TRANSPORT_CLOSED
        assert err.message == "the connection is closed"
        assert err.cause is None
    assert blocker.saw_cancel == [True, True, True]
    assert client.closed and server.closed
    err = raised(lambda: client.request("slow", timeout=WAIT))
    assert isinstance(err, MCPTransportError)
    assert err.code == MCP_CODES.TRANSPORT_CLOSED


def test_close_reason_context_is_carried(wire: WireTransport) -> None:
    events = EventBus()
    closings = Collector()
    events.on(CONNECTION_CLOSED, closings)
    client = JsonRpcDispatcher(wire, events=events)
    client.start()
    pending = client.send_request("slow")
    reason = MCPTransportError(MCP_CODES.TRANSPORT_ERROR, "server process exited", context={"exit_code": 3})
    wire.hang_up(reason)
    err = pending.future.exception(0)
    assert isinstance(err, MCPTransportError)
    assert err.code == MCP_CODES.TRANSPORT_CLOSED
    assert err.context == {"exit_code": 3}
    assert err.cause is reason
    assert err.message == "the connection is closed: [MCP.TRANSPORT_ERROR] server process exited"
    later = raised(lambda: client.send_request("again"))
    assert (later.code, later.context, later.cause) == (MCP_CODES.TRANSPORT_CLOSED, {"exit_code": 3}, reason)
    event = closings.take()
    assert event == ConnectionClosed("client", client.id, "[MCP.TRANSPORT_ERROR] server process exited")
    client.close()


def test_close_reason_that_is_not_an_mcp_error(wire: WireTransport) -> None:
    client = JsonRpcDispatcher(wire)
    client.start()
    pending = client.send_request("slow")
    reason = ConnectionResetError("reset by peer")
    wire.hang_up(reason)
    err = pending.future.exception(0)
    assert isinstance(err, MCPTransportError)
    assert (err.code, err.context, err.cause) == (MCP_CODES.TRANSPORT_CLOSED, {}, reason)
    assert err.message == "the connection is closed: reset by peer"
    client.close()


def test_send_failure_is_a_transport_error_and_cleans_up(wire: WireTransport) -> None:
    client = JsonRpcDispatcher(wire)
    client.start()
    boom = RuntimeError("pipe burst")
    wire.fail_with = boom
    err = raised(lambda: client.request("x", timeout=WAIT, on_progress=lambda p: None))
    assert isinstance(err, MCPTransportError)
    assert err.code == MCP_CODES.TRANSPORT_ERROR
    assert err.message == "could not send: pipe burst"
    assert err.cause is boom
    assert client._pending == {}
    assert client._progress == {}
    err = raised(lambda: client.notify("notifications/x"))
    assert (err.code, err.cause) == (MCP_CODES.TRANSPORT_ERROR, boom)
    wire.fail_with = None
    pending = client.send_request("y")
    assert wire.take() == {"jsonrpc": "2.0", "id": 2, "method": "y"}
    wire.feed({"jsonrpc": "2.0", "id": 2, "result": {"fine": True}})
    assert client.wait(pending, WAIT) == {"fine": True}
    client.close()


def test_send_on_a_closed_transport_before_the_dispatcher_noticed() -> None:
    end, other = InMemoryTransport.pair()
    client = JsonRpcDispatcher(end)  # never started: it is not told of the close
    end.close()
    err = raised(lambda: client.send_request("x"))
    assert isinstance(err, MCPTransportError)
    assert err.code == MCP_CODES.TRANSPORT_CLOSED
    assert err.message == "cannot send: the transport is closed"
    assert client._pending == {}
    client.close()
    other.close()


def test_start_twice_is_already_connected(connect: Connect) -> None:
    client, _server = connect()
    err = raised(client.start)
    assert err.code == MCP_CODES.ALREADY_CONNECTED


def test_close_is_idempotent_and_joins_the_handler_threads(connect: Connect) -> None:
    events = EventBus()
    closings = Collector()
    events.on(CONNECTION_CLOSED, closings)
    client, server = connect(server={"events": events})
    blocker = Blocker()
    server.register_handler("slow", blocker)
    pending = client.send_request("slow")
    blocker.wait_started()
    server.close()
    server.close()
    assert server.closed
    handler_threads = [t for t in threading.enumerate() if t.name.startswith("mcp-sync-server-handler")]
    assert handler_threads == []
    assert blocker.saw_cancel == [True]
    assert closings.take() == ConnectionClosed("server", server.id, None)
    assert closings.empty()
    assert raised(lambda: client.wait(pending, WAIT)).code == MCP_CODES.TRANSPORT_CLOSED


def test_close_of_a_dispatcher_that_never_started(connect: Connect) -> None:
    events = EventBus()
    seen = Collector()
    events.on(CONNECTION_OPENED, seen)
    events.on(CONNECTION_CLOSED, seen)
    end, other = InMemoryTransport.pair()
    dispatcher = JsonRpcDispatcher(end, events=events)
    dispatcher.close()
    assert dispatcher.closed
    assert end.closed
    assert seen.empty()
    other.close()


def test_a_handler_may_close_its_own_dispatcher(connect: Connect) -> None:
    client, server = connect()
    done = threading.Event()

    def shutdown(params: Any, ctx: RequestContext) -> Any:
        ctx.dispatcher.close()
        done.set()
        return {"bye": True}

    server.register_handler("shutdown", shutdown)
    err = raised(lambda: client.request("shutdown", timeout=WAIT))
    assert err.code == MCP_CODES.TRANSPORT_CLOSED
    assert done.wait(WAIT)
    assert server.closed


def test_request_arriving_while_closing_is_not_run(connect: Connect) -> None:
    end, server_end = InMemoryTransport.pair()
    server = JsonRpcDispatcher(server_end, side="server")
    ran: list[Any] = []
    server.register_handler("work", lambda params, ctx: ran.append(params))
    # Registered before the dispatcher: closes it while this request is being delivered.
    server_end.on_message(lambda message: server.close() if isinstance(message, JSONRPCRequest) else None)
    server.start()
    answers = Collector()
    end.on_message(answers)
    end.send(JSONRPCRequest(id=1, method="work", params={"n": 1}))
    assert end.wait_closed(WAIT)
    assert server.closed
    assert ran == []
    assert answers.empty()
    end.close()


# ----------------------------------------------------------- nested requests


def test_nested_requests_in_both_directions(connect: Connect) -> None:
    client, server = connect()

    def outer(params: Any, ctx: RequestContext) -> Any:
        return {"server_got": ctx.dispatcher.request("middle", {"n": params["n"]}, timeout=WAIT)}

    def middle(params: Any, ctx: RequestContext) -> Any:
        return {"client_got": ctx.dispatcher.request("inner", {"n": params["n"] + 1}, timeout=WAIT)}

    server.register_handler("outer", outer)
    client.register_handler("middle", middle)
    server.register_handler("inner", lambda params, ctx: {"n": params["n"] * 10})
    assert client.request("outer", {"n": 1}, timeout=WAIT) == {"server_got": {"client_got": {"n": 20}}}


# --------------------------------------------------------------- raw input


def test_invalid_input_is_answered_or_dropped(wire: WireTransport, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.runtime.dispatcher")
    server = JsonRpcDispatcher(wire, side="server")
    server.start()
    wire.feed(b"{oops")
    answer = wire.take()
    assert answer["id"] is None
    assert answer["error"]["code"] == -32700
    wire.feed({"jsonrpc": "2.0", "id": 5, "method": 7})
    assert wire.take() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32600, "message": 'Invalid request: "method" must be a string'},
    }
    wire.feed({"jsonrpc": "2.0", "id": 6, "method": "nope"})
    assert wire.take() == {
        "jsonrpc": "2.0",
        "id": 6,
        "error": {"code": -32601, "message": "Method not found: nope"},
    }
    # reply=False: an invalid response and an invalid notification get nothing back
    wire.feed({"jsonrpc": "2.0", "id": 1, "result": 5})
    wire.feed({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]})
    assert wire.sent.empty()
    dropped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dropped invalid message")]
    assert dropped == [
        "dropped invalid message: Invalid response",
        'dropped invalid message: Invalid request: "params" must be an object',
    ]
    server.close()


def test_error_reply_that_cannot_be_sent_is_only_logged(wire: WireTransport, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.runtime.dispatcher")
    server = JsonRpcDispatcher(wire, side="server")
    server.start()
    wire.fail_with = OSError("gone")
    wire.feed(b"{oops")
    assert any(r.getMessage().startswith("could not send a response") for r in caplog.records)
    server.close()


def test_stray_responses_are_dropped(wire: WireTransport, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.runtime.dispatcher")
    client = JsonRpcDispatcher(wire)
    client.start()
    pending = client.send_request("real")
    assert wire.take()["id"] == 1
    wire.feed({"jsonrpc": "2.0", "id": 999, "result": {}})
    wire.feed({"jsonrpc": "2.0", "id": "1", "result": {"wrong": "type of id"}})
    wire.feed({"jsonrpc": "2.0", "id": 998, "error": {"code": -32603, "message": "x"}})
    wire.feed({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    assert not pending.future.done()
    assert wire.sent.empty()
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("dropped a response")] == [
        "dropped a response to unknown request 999",
        "dropped a response to unknown request '1'",
        "dropped a response to unknown request 998",
        "dropped a response to unknown request None",
    ]
    wire.feed({"jsonrpc": "2.0", "id": 1.0, "error": {"code": -32001, "message": "no", "data": {"scope": "x"}}})
    err = raised(lambda: client.wait(pending, WAIT))
    assert (err.code, err.data, err.context) == (MCP_CODES.UNAUTHORIZED, {"scope": "x"}, {"method": "real"})
    caplog.clear()
    wire.feed({"jsonrpc": "2.0", "id": 1, "result": {"late": "duplicate"}})  # already answered: dropped
    assert [r.getMessage() for r in caplog.records] == ["dropped a response to unknown request 1"]
    assert wire.sent.empty()
    client.close()


def test_the_same_request_id_twice_in_flight_gets_two_answers(wire: WireTransport) -> None:
    server = JsonRpcDispatcher(wire, side="server")
    gate = threading.Event()
    started = threading.Semaphore(0)

    def hold(params: Any, ctx: RequestContext) -> Any:
        started.release()
        assert gate.wait(WAIT)
        return {"n": params["n"]}

    server.register_handler("hold", hold)
    server.start()
    wire.feed({"jsonrpc": "2.0", "id": 7, "method": "hold", "params": {"n": 1}})
    wire.feed({"jsonrpc": "2.0", "id": 7, "method": "hold", "params": {"n": 2}})
    assert started.acquire(timeout=WAIT) and started.acquire(timeout=WAIT)
    gate.set()
    answers = sorted([wire.take(), wire.take()], key=lambda a: a["result"]["n"])
    assert answers == [
        {"jsonrpc": "2.0", "id": 7, "result": {"n": 1}},
        {"jsonrpc": "2.0", "id": 7, "result": {"n": 2}},
    ]
    server.close()


# --------------------------------------------------------------- concurrency


def test_many_threads_on_one_dispatcher_each_get_their_own_results(connect: Connect) -> None:
    client, server = connect()
    server.register_handler("echo", echo)
    wrong: list[Any] = []

    def caller(thread: int) -> None:
        for call in range(200):
            params = {"thread": thread, "call": call}
            result = client.request("echo", params, timeout=WAIT)
            if result != params:
                wrong.append((params, result))

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert wrong == []
    assert client._pending == {}


# -------------------------------------------------------------- observability


def counts(reader: InMemoryMetricReader, name: str) -> dict[frozenset[Any], Any]:
    data = reader.get_metrics_data()
    found: dict[frozenset[Any], Any] = {}
    if data is None:  # nothing recorded yet
        return found
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        found[frozenset(point.attributes.items())] = getattr(point, "value", None) or point.count
    return found


def request_key(direction: str, method: str, status: str) -> frozenset[Any]:
    return frozenset({"direction": direction, "method": method, "status": status}.items())


def test_telemetry_counts_client_and_server_outcomes(connect: Connect) -> None:
    reader = InMemoryMetricReader()
    telemetry = Telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    server_events = EventBus()
    completed = Collector()
    server_events.on(REQUEST_COMPLETED, completed)
    client, server = connect(client={"telemetry": telemetry}, server={"telemetry": telemetry, "events": server_events})
    assert client.telemetry is telemetry
    blocker = Blocker()
    server.register_handler("echo", echo)
    server.register_handler("slow", blocker)

    def fail(params: Any, ctx: RequestContext) -> Any:
        raise MCPError(MCP_CODES.NOT_FOUND, "nope")

    server.register_handler("fail", fail)
    assert client.request("echo", {"a": 1}, timeout=WAIT) == {"a": 1}
    assert client.request("echo", {"a": 2}, timeout=WAIT) == {"a": 2}
    assert raised(lambda: client.request("fail", timeout=WAIT)).code == MCP_CODES.NOT_FOUND
    pending = client.send_request("slow")
    blocker.wait_started()
    client.cancel(pending)
    blocker.wait_finished()
    assert blocker.saw_cancel == [True]
    outcomes = sorted((done.method, done.outcome) for done in [completed.take() for _ in range(4)])
    assert outcomes == [("echo", "success"), ("echo", "success"), ("fail", "error"), ("slow", "cancelled")]
    assert counts(reader, "mcp_request_total") == {
        request_key("client", "echo", "success"): 2,
        request_key("client", "fail", "error"): 1,
        request_key("client", "slow", "cancelled"): 1,
        request_key("server", "echo", "success"): 2,
        request_key("server", "fail", "error"): 1,
        request_key("server", "slow", "cancelled"): 1,
    }
    notifications = counts(reader, "mcp_notification_total")
    assert notifications == {
        frozenset({"direction": "sent", "method": "notifications/cancelled"}.items()): 1,
        frozenset({"direction": "received", "method": "notifications/cancelled"}.items()): 1,
    }
    durations = counts(reader, "mcp_request_duration_ms")
    assert durations[frozenset({"direction": "client", "method": "echo"}.items())] == 2


def test_a_call_is_counted_before_its_caller_wakes_up(connect: Connect) -> None:
    """The future's done-callbacks run when it completes: the measurement must already be there."""
    reader = InMemoryMetricReader()
    telemetry = Telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    client, server = connect(client={"telemetry": telemetry})
    server.register_handler("echo", echo)
    server.register_handler("slow", Blocker())
    seen_at_completion: list[dict[frozenset[Any], Any]] = []

    def snapshot(future: concurrent.futures.Future[Any]) -> None:
        seen_at_completion.append(counts(reader, "mcp_request_total"))

    answered = client.send_request("echo")
    answered.future.add_done_callback(snapshot)
    assert client.wait(answered, WAIT) == {}
    missing = client.send_request("nope")
    missing.future.add_done_callback(snapshot)
    assert raised(lambda: client.wait(missing, WAIT)).code == MCP_CODES.METHOD_NOT_FOUND
    given_up = client.send_request("slow")
    given_up.future.add_done_callback(snapshot)
    client.cancel(given_up)
    assert raised(lambda: client.wait(given_up, WAIT)).code == MCP_CODES.REQUEST_CANCELLED
    cut_off = client.send_request("slow")
    cut_off.future.add_done_callback(snapshot)
    client.close()
    assert raised(lambda: client.wait(cut_off, WAIT)).code == MCP_CODES.TRANSPORT_CLOSED
    assert len(seen_at_completion) == 4
    assert seen_at_completion[0] == {request_key("client", "echo", "success"): 1}
    assert seen_at_completion[1][request_key("client", "nope", "error")] == 1
    assert seen_at_completion[2][request_key("client", "slow", "cancelled")] == 1
    assert seen_at_completion[3][request_key("client", "slow", "error")] == 1


def test_default_telemetry_is_shared(connect: Connect) -> None:
    client, _server = connect()
    assert client.telemetry is default_telemetry()


def test_lifecycle_events(connect: Connect) -> None:
    client_events, server_events = EventBus(), EventBus()
    client_seen, server_seen = Collector(), Collector()
    for event in (CONNECTION_OPENED, CONNECTION_CLOSED, NOTIFICATION_EMITTED, REQUEST_RECEIVED, REQUEST_COMPLETED):
        client_events.on(event, client_seen)
        server_events.on(event, server_seen)
    clock = FakeClock()
    client, server = connect(client={"events": client_events}, server={"events": server_events, "clock": clock})
    assert server_seen.take() == ConnectionOpened("server", server.id)
    assert client_seen.take() == ConnectionOpened("client", client.id)

    def tick(params: Any, ctx: RequestContext) -> Any:
        clock.now += 0.25  # the handler "takes" 250 ms of virtual time
        return {}

    def fail(params: Any, ctx: RequestContext) -> Any:
        raise ValueError("x")

    server.register_handler("tick", tick)
    server.register_handler("fail", fail)
    assert client.request("tick", {"a": 1}, timeout=WAIT) == {}
    assert server_seen.take() == RequestReceived("server", "tick", 1)
    assert server_seen.take() == RequestCompleted("server", "tick", 1, duration_ms=250.0, outcome="success")
    assert raised(lambda: client.request("fail", timeout=WAIT)).message == "Internal error: x"
    assert server_seen.take() == RequestReceived("server", "fail", 2)
    done = server_seen.take()
    assert (done.method, done.id, done.outcome, done.duration_ms) == ("fail", 2, "error", 0.0)
    client.notify("notifications/roots/list_changed", {"x": 1})
    client.notify("notifications/initialized")
    assert client_seen.take() == NotificationEmitted("client", "notifications/roots/list_changed", {"x": 1})
    assert client_seen.take() == NotificationEmitted("client", "notifications/initialized", None)
    client.close()
    assert client_seen.take() == ConnectionClosed("client", client.id, None)
    assert server_seen.take() == ConnectionClosed("server", server.id, None)
    assert client_seen.empty()
    assert server_seen.empty()


# ---------------------------------------------------------------- the clock


def test_system_clock() -> None:
    clock = SystemClock()
    first = clock.monotonic()
    assert clock.monotonic() >= first
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    assert clock.wait(future, 0.001) is False
    future.set_exception(RuntimeError("done badly"))
    assert clock.wait(future, 0) is True
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    done.set_result({})
    assert clock.wait(done, None) is True


def test_pending_request_is_a_plain_record() -> None:
    pending = PendingRequest(1, "m", 0.0)
    assert not pending.future.done()
    assert pending.on_progress is None
    assert pending != PendingRequest(1, "m", 0.0)  # identity, not value


# ------------------------------------------------------------------ draining


def test_drain_lets_running_handlers_answer_and_refuses_new_requests(wire: WireTransport) -> None:
    dispatcher = JsonRpcDispatcher(wire, side="server")
    blocker = Blocker()
    dispatcher.register_handler("block", blocker)
    dispatcher.start()
    wire.feed({"jsonrpc": "2.0", "id": 1, "method": "block"})
    blocker.wait_started()
    dispatcher.drain(timeout=WAIT)
    # The handler saw the cancellation and its own answer went out.
    assert wire.take() == {"jsonrpc": "2.0", "id": 1, "result": {"late": True}}
    wire.feed({"jsonrpc": "2.0", "id": 2, "method": "block"})
    assert wire.take() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32603, "message": "The server is shutting down"},
    }
    dispatcher.close()


def test_drain_answers_handlers_that_do_not_stop_in_time_once(wire: WireTransport) -> None:
    dispatcher = JsonRpcDispatcher(wire, side="server")
    release = threading.Event()
    started = threading.Event()

    def stubborn(params: Any, ctx: RequestContext) -> dict[str, Any]:
        started.set()
        release.wait(WAIT)
        return {"too": "late"}

    dispatcher.register_handler("stubborn", stubborn)
    dispatcher.start()
    wire.feed({"jsonrpc": "2.0", "id": "s", "method": "stubborn"})
    assert started.wait(WAIT)
    dispatcher.drain(timeout=0.05)
    assert wire.take()["error"]["message"] == "The server is shutting down"
    release.set()
    dispatcher.close()
    assert wire.sent.empty()  # the late result was not sent after the error


def test_current_request_names_the_request_a_handler_serves(connect: Connect) -> None:
    client, server = connect()
    seen: list[Any] = []
    server.register_handler("who", lambda params, ctx: seen.append(current_request()) or {})
    assert client.request("who", timeout=WAIT) == {}
    assert seen[0] is not None and seen[0].method == "who"
    assert current_request() is None


def test_current_request_is_none_outside_handlers_on_every_thread(connect: Connect) -> None:
    """A thread that never served reads ``None``; a handler reads its own request, also when it raises, and the
    thread reads ``None`` again once the handler is done (the next request's handler never sees the last one's)."""
    client, server = connect()
    fresh: list[Any] = []
    thread = threading.Thread(target=lambda: fresh.append(current_request()))
    thread.start()
    thread.join(WAIT)
    assert fresh == [None]
    seen: list[Any] = []
    after: list[Any] = []

    def who(params: Any, ctx: RequestContext) -> dict[str, Any]:
        seen.append(current_request())
        if params.get("fail"):
            raise ValueError("no")
        return {}

    def last(params: Any, ctx: RequestContext) -> dict[str, Any]:
        after.append(current_request())
        return {}

    server.register_handler("who", who)
    server.register_handler("last", last)
    with pytest.raises(MCPError):
        client.request("who", {"fail": True}, timeout=WAIT)
    assert client.request("who", timeout=WAIT) == {}
    assert client.request("last", timeout=WAIT) == {}
    assert [ctx.method for ctx in seen] == ["who", "who"] and seen[0] is not seen[1]
    assert after[0].method == "last"
    assert current_request() is None


def test_a_request_served_with_a_writer_of_its_own_is_answered_there() -> None:
    """serve(): a request that came with its own way back is answered through it, not over the transport;
    a dispatcher closed meanwhile answers that it is shutting down."""
    left, right = InMemoryTransport.pair()
    dispatcher = JsonRpcDispatcher(left, side="server")
    dispatcher.start()
    heard: list[Any] = []
    unsubscribe = right.on_message(heard.append)
    answers: list[Any] = []

    def handler(params: Any, ctx: RequestContext) -> dict[str, Any]:
        ctx.progress(1, 2)  # (no progress token: nothing sent)
        dispatcher.notify("notifications/message", {"level": "info", "data": "aside"}, route=Route(request=ctx))
        return {"echo": params["text"]}

    dispatcher.serve(JSONRPCRequest(id=3, method="echo", params={"text": "hi"}), handler, writer=answers.append)
    assert [getattr(a, "method", None) for a in answers] == ["notifications/message", None]
    assert answers[1].id == 3 and answers[1].result == {"echo": "hi"}
    dispatcher.close()
    dispatcher.serve(JSONRPCRequest(id=4, method="echo", params={"text": "late"}), handler, writer=answers.append)
    assert answers[2].id == 4 and "shutting down" in answers[2].error.message
    unsubscribe()
    assert heard == []  # nothing went over the transport
