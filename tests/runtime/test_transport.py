"""Tests of the transport interface (mcp_sync.runtime.transport) and the in-memory pair (transports.memory)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import pytest

from mcp_sync.errors import MCP_CODES, MCPTransportError
from mcp_sync.protocol.jsonrpc import InvalidMessage, decode_message
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.runtime.transport import BaseTransport, Transport
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
)

WAIT = 5.0

Received = JSONRPCMessage | InvalidMessage


class Inbox:
    """A message handler that queues what it receives, for the test thread to take."""

    def __init__(self) -> None:
        self.queue: queue.Queue[Received] = queue.Queue()

    def __call__(self, message: Received) -> None:
        self.queue.put(message)

    def take(self) -> Received:
        return self.queue.get(timeout=WAIT)

    def take_many(self, count: int) -> list[Received]:
        return [self.take() for _ in range(count)]

    def empty(self) -> bool:
        return self.queue.empty()


def reader_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "mcp-sync-inmemory-reader"}


@pytest.fixture
def pair() -> Any:
    left, right = InMemoryTransport.pair()
    yield left, right
    left.close()
    right.close()


MESSAGES: list[JSONRPCMessage] = [
    JSONRPCRequest(id=1, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": [None, 2.5]}}),
    JSONRPCRequest(id="abc", method="ping"),
    JSONRPCNotification(method="notifications/initialized"),
    JSONRPCNotification(method="notifications/progress", params={"progressToken": "t", "progress": 0.5}),
    JSONRPCResultResponse(id=1, result={"content": [{"type": "text", "text": "héllo ✓"}]}),
    JSONRPCErrorResponse(id=2, error=Error(code=-32602, message="bad", data={"path": "a"})),
    JSONRPCErrorResponse(id=None, error=Error(code=-32700, message="Parse error")),
]


def test_in_memory_transport_satisfies_the_protocol() -> None:
    left, right = InMemoryTransport.pair()
    assert isinstance(left, Transport)
    assert isinstance(left, BaseTransport)
    assert not left.closed
    assert left.close_reason is None
    left.close()
    right.close()


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_pair_round_trips_a_message_both_ways(pair: Any, message: JSONRPCMessage) -> None:
    left, right = pair
    at_left, at_right = Inbox(), Inbox()
    left.on_message(at_left)
    right.on_message(at_right)
    left.send(message)
    got = at_right.take()
    assert got == message
    assert got is not message  # it went through the JSON codec
    right.send(message)
    assert at_left.take() == message


def test_order_is_preserved_across_many_messages(pair: Any) -> None:
    left, right = pair
    inbox = Inbox()
    right.on_message(inbox)
    count = 1000
    for n in range(count):
        if n % 3 == 0:
            left.send(JSONRPCRequest(id=n, method="m", params={"n": n}))
        else:
            left.send(JSONRPCNotification(method="n", params={"n": n}))
    got = inbox.take_many(count)
    assert [m.params for m in got] == [{"n": n} for n in range(count)]  # type: ignore[union-attr]
    assert inbox.empty()


def test_messages_sent_before_a_handler_registers_are_delivered_in_order(pair: Any) -> None:
    left, right = pair
    for n in range(5):
        left.send(JSONRPCNotification(method="early", params={"n": n}))
    inbox = Inbox()
    right.on_message(inbox)
    got = inbox.take_many(5)
    assert [m.params for m in got] == [{"n": n} for n in range(5)]  # type: ignore[union-attr]


def test_every_handler_gets_every_message_in_registration_order(pair: Any) -> None:
    left, right = pair
    calls: list[tuple[str, Any]] = []
    done = threading.Event()
    right.on_message(lambda m: calls.append(("first", m.params)))
    right.on_message(lambda m: (calls.append(("second", m.params)), done.set()))
    left.send(JSONRPCNotification(method="n", params={"k": 1}))
    assert done.wait(WAIT)
    assert calls == [("first", {"k": 1}), ("second", {"k": 1})]


def test_unsubscribe_stops_delivery_to_that_handler_only(pair: Any) -> None:
    left, right = pair
    dropped, kept = Inbox(), Inbox()
    unsubscribe = right.on_message(dropped)
    right.on_message(kept)
    left.send(JSONRPCNotification(method="one"))
    assert kept.take().method == "one"  # type: ignore[union-attr]
    assert dropped.take().method == "one"  # type: ignore[union-attr]
    unsubscribe()
    unsubscribe()  # a second call is harmless
    left.send(JSONRPCNotification(method="two"))
    assert kept.take().method == "two"  # type: ignore[union-attr]
    assert dropped.empty()


def test_close_is_idempotent_and_runs_close_handlers_once(pair: Any) -> None:
    left, _right = pair
    reasons: list[BaseException | None] = []
    left.on_close(reasons.append)
    left.close()
    left.close()
    assert left.closed
    assert left.wait_closed(0)
    assert reasons == [None]
    assert left.close_reason is None


def test_peer_learns_of_the_close_and_send_fails_on_both_ends(pair: Any) -> None:
    left, right = pair
    peer_reasons: list[BaseException | None] = []
    peer_closed = threading.Event()
    right.on_message(Inbox())
    right.on_close(lambda reason: (peer_reasons.append(reason), peer_closed.set()))
    left.close()
    assert right.wait_closed(WAIT)
    assert peer_closed.wait(WAIT)
    assert peer_reasons == [None]
    assert right.close_reason is None
    for end in (left, right):
        with pytest.raises(MCPTransportError) as info:
            end.send(JSONRPCNotification(method="late"))
        assert info.value.code == MCP_CODES.TRANSPORT_CLOSED


def test_messages_sent_before_the_close_reach_a_late_reader_then_it_closes() -> None:
    left, right = InMemoryTransport.pair()
    left.send(JSONRPCNotification(method="last words"))
    left.close()
    # Like a socket: a peer that is not reading has not noticed yet.
    assert not right.closed
    inbox = Inbox()
    right.on_message(inbox)
    assert inbox.take().method == "last words"  # type: ignore[union-attr]
    assert right.wait_closed(WAIT)
    assert inbox.empty()


def test_close_without_a_reader_still_tells_a_reading_peer() -> None:
    left, right = InMemoryTransport.pair()
    right.on_message(Inbox())
    left.close()  # left never read: nothing of its own to stop
    assert right.wait_closed(WAIT)


def test_wait_closed_times_out(pair: Any) -> None:
    left, _right = pair
    assert left.wait_closed(0.01) is False
    assert not left.closed


def test_unsubscribed_close_handler_is_not_called(pair: Any) -> None:
    left, _right = pair
    called: list[BaseException | None] = []
    unsubscribe = left.on_close(called.append)
    unsubscribe()
    left.close()
    assert called == []


def test_raising_message_handler_is_logged_and_does_not_break_delivery(
    pair: Any, caplog: pytest.LogCaptureFixture
) -> None:
    left, right = pair
    caplog.set_level(logging.ERROR, logger="mcp_sync.runtime.transport")

    def broken(message: Received) -> None:
        raise RuntimeError("handler bug")

    right.on_message(broken)
    inbox = Inbox()
    right.on_message(inbox)
    left.send(JSONRPCNotification(method="one"))
    left.send(JSONRPCNotification(method="two"))
    assert [m.method for m in inbox.take_many(2)] == ["one", "two"]  # type: ignore[union-attr]
    failures = [r for r in caplog.records if r.getMessage() == "message handler failed"]
    assert len(failures) == 2
    assert failures[0].exc_info is not None
    assert isinstance(failures[0].exc_info[1], RuntimeError)


def test_raising_close_handler_is_logged_and_the_others_still_run(pair: Any, caplog: pytest.LogCaptureFixture) -> None:
    left, _right = pair
    caplog.set_level(logging.ERROR, logger="mcp_sync.runtime.transport")
    called: list[BaseException | None] = []

    def broken(reason: BaseException | None) -> None:
        raise RuntimeError("close bug")

    left.on_close(broken)
    left.on_close(called.append)
    left.close()
    assert left.closed
    assert called == [None]
    assert [r.getMessage() for r in caplog.records] == ["close handler failed"]


def test_a_handler_may_close_its_own_transport(pair: Any) -> None:
    left, right = pair
    right.on_message(lambda message: right.close())
    left.on_message(Inbox())
    left.send(JSONRPCNotification(method="bye"))
    assert right.wait_closed(WAIT)
    assert left.wait_closed(WAIT)


def test_registering_after_close_starts_no_reader(pair: Any) -> None:
    left, _right = pair
    left.close()
    before = reader_threads()
    inbox = Inbox()
    left.on_message(inbox)
    assert reader_threads() <= before
    assert inbox.empty()


def test_invalid_input_is_delivered_as_invalid_message() -> None:
    received: list[Received] = []

    class Raw(BaseTransport):
        """The far end is the test: feed() delivers raw input."""

        def feed(self, data: bytes) -> None:
            self._deliver(decode_message(data))

        def _handlers_changed(self) -> None:
            pass

        def _write(self, message: JSONRPCMessage) -> None:
            pass

        def _shutdown(self) -> None:
            pass

    raw = Raw()
    raw.on_message(received.append)
    raw.feed(b"{not json")
    assert isinstance(received[0], InvalidMessage)
    assert received[0].error.code == -32700
    raw.close()


def test_closed_by_peer_keeps_the_reason() -> None:
    reasons: list[BaseException | None] = []
    shutdowns: list[str] = []

    class Dying(BaseTransport):
        def die(self, reason: BaseException) -> None:
            self._closed_by_peer(reason)

        def _handlers_changed(self) -> None:
            pass

        def _write(self, message: JSONRPCMessage) -> None:
            pass

        def _shutdown(self) -> None:
            shutdowns.append("shutdown")

    transport = Dying()
    transport.on_close(reasons.append)
    reason = OSError("connection reset")
    transport.die(reason)
    transport.die(OSError("again"))
    transport.close()
    assert reasons == [reason]
    assert transport.close_reason is reason
    assert shutdowns == ["shutdown"]


class HookedLock:
    """A real lock that calls a hook right after its n-th release (to force an interleaving)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.releases = 0
        self.hooks: dict[int, Callable[[], None]] = {}

    def __enter__(self) -> HookedLock:
        self._lock.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._lock.release()
        self.releases += 1
        hook = self.hooks.pop(self.releases, None)
        if hook is not None:
            hook()


def test_close_racing_with_the_first_handler_registration() -> None:
    """close() right after on_message() decided to start the reader must find it started.

    on_message() releases the lock twice: once after adding the handler, once
    in _handlers_changed() after creating the reader. A close() that runs
    after that second release used to join a thread not yet started
    (RuntimeError) and leave the reader running.
    """
    left, right = InMemoryTransport.pair()
    lock = HookedLock()
    left._lock = lock  # type: ignore[assignment]
    lock.hooks[2] = left.close
    before = reader_threads()
    left.on_message(Inbox())
    assert left.closed
    assert not (reader_threads() - before)  # the new reader ran and stopped
    right.close()


class OwnTransport:
    """A transport of one's own, not a BaseTransport: it defines the whole :class:`Transport` interface."""

    handoff_reading = None
    pass_reading = None
    wait_reading = None
    exchange = None
    handshake_only = False

    def __init__(self, inner: InMemoryTransport) -> None:
        self.inner = inner

    def send(self, message: JSONRPCMessage) -> None:
        self.inner.send(message)

    def send_routed(self, message: JSONRPCMessage, request: RequestContext | None, once: str | None = None) -> None:
        self.inner.send(message)  # one stream: nothing to keep apart

    def send_batch(self, messages: Sequence[JSONRPCMessage]) -> None:
        self.inner.send_batch(messages)

    def on_message(self, handler: Callable[[Any], None]) -> Callable[[], None]:
        return self.inner.on_message(handler)

    def on_close(self, handler: Callable[[BaseException | None], None]) -> Callable[[], None]:
        return self.inner.on_close(handler)

    def close(self) -> None:
        self.inner.close()

    @property
    def closed(self) -> bool:
        return self.inner.closed


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_transport_of_ones_own_serves_both_roles(era: str) -> None:
    from mcp_sync import MCPClient, MCPServer

    server = MCPServer("duck")

    @server.tool()
    def echo(text: str) -> str:
        return text

    client_end, server_end = InMemoryTransport.pair()
    duck_client, duck_server = OwnTransport(client_end), OwnTransport(server_end)
    assert isinstance(duck_client, Transport) and not isinstance(duck_client, BaseTransport)
    server.start(duck_server)
    try:
        with MCPClient(era=era) as client:  # type: ignore[arg-type]
            client.connect(duck_client)
            assert client.negotiated_era == era
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    finally:
        server.stop()
