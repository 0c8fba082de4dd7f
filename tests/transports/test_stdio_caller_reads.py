"""A caller waiting on a stdio pipe reads its own response, once a reader thread lent it the reading turn.

The far end is a peer thread of the test speaking raw JSON lines over two
OS pipes, so that each test decides exactly what arrives, and in which write.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import current_frames, wait_until

from mcp_sync import MCP_CODES, MCPError, MCPTransportError
from mcp_sync.client import stdio_client
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher, PendingRequest
from mcp_sync.transports import stdio as stdio_module
from mcp_sync.transports.stdio import StdioTransport

ROOT = Path(__file__).parent.parent.parent
READER = "mcp-sync-stdio-reader"

Script = Callable[[dict[str, Any]], bytes | None]


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def answer(request: dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "id": request["id"], "result": {"method": request["method"]}})


def note(text: str) -> bytes:
    return line({"jsonrpc": "2.0", "method": "note", "params": {"text": text}})


class Peer:
    """A client dispatcher on a StdioTransport over OS pipes, and the test's peer thread at the far end.

    The peer answers each request with what ``scripts[method](request)``
    returns (one write; ``None``: nothing), by default a plain result.
    """

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        in_r, self.in_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.readable = os.fdopen(in_r, "rb", buffering=0)
        self.transport = StdioTransport(
            self.readable, os.fdopen(out_w, "wb", buffering=0), max_line_bytes=max_line_bytes
        )
        self.dispatcher = JsonRpcDispatcher(self.transport, side="client", timeout=5.0)
        self.scripts: dict[str, Script] = {}
        self.pending: dict[str, PendingRequest] = {}
        self.notes: list[tuple[str, threading.Thread]] = []
        self.dispatcher.on_notification("note", lambda params: self.notes.append((params["text"], current())))
        self.probes: list[threading.Thread] = []
        self.dispatcher.on_notification("probe", lambda params: self.probes.append(current()))
        self.dispatcher.start()
        self._thread = threading.Thread(target=self._serve, name="test-stdio-peer", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with os.fdopen(self.out_r, "rb", buffering=0) as stream:
            for raw in iter(stream.readline, b""):
                message = json.loads(raw)
                if "method" not in message or "id" not in message:
                    continue  # the client's answers to our requests, and its notifications
                script = self.scripts.get(message["method"], answer)
                data = script(message)
                if data:
                    self.write(data)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.in_w, view) :]

    def call(self, method: str, timeout: float | None = 5.0) -> dict[str, Any]:
        """``method``, recorded in :attr:`pending` before its caller waits."""
        pending = self.dispatcher.send_request(method)
        self.pending[method] = pending
        return self.dispatcher.wait(pending, timeout)

    def when_waited(self, method: str) -> PendingRequest:
        """On the peer's thread: the call of ``method``, once its caller waits for it."""
        wait_until(lambda: method in self.pending and self.pending[method].waiter is not None)
        return self.pending[method]

    def lend_to_caller(self) -> None:
        """Calls answered once their caller waits, until one is read on the caller's own thread.

        The reader thread that delivers the first lends the turn to its
        caller; a call read by the caller itself ends with the turn lent to
        it, so that its next call, made at once, reads too.
        """

        def answered_once_waited(request: dict[str, Any]) -> bytes:
            self.when_waited("first")
            return line({"jsonrpc": "2.0", "method": "probe"}) + answer(request)

        self.scripts["first"] = answered_once_waited
        for _ in range(50):  # (the watcher takes the turn back from a caller slow to wake, now and then)
            assert self.call("first") == {"method": "first"}
            if self.probes[-1] is current():
                return
        raise AssertionError("no call was read by its caller")

    def close(self) -> None:
        self.dispatcher.close()
        os.close(self.in_w)
        self._thread.join(5.0)


def current() -> threading.Thread:
    return threading.current_thread()


@pytest.fixture
def peer() -> Iterator[Peer]:
    peer = Peer()
    yield peer
    peer.close()


def test_after_a_first_call_the_caller_reads_its_responses_on_its_own_thread(peer: Peer) -> None:
    def first(request: dict[str, Any]) -> bytes:
        peer.when_waited("first")
        return note("first") + answer(request)

    peer.scripts["first"] = first
    peer.scripts["call"] = lambda request: note(str(request["id"])) + b"\n" + answer(request)  # and a blank line
    assert peer.call("first") == {"method": "first"}
    for _ in range(20):
        assert peer.call("call") == {"method": "call"}
    threads = [thread for _, thread in peer.notes]
    assert threads[0].name == READER  # delivered before the turn was lent
    assert current() in threads[1:]  # read here, by the caller (the watcher may take the turn back now and then)
    assert all(thread is current() or thread.name == READER for thread in threads)


def test_a_caller_that_stops_calling_has_the_turn_taken_back(peer: Peer) -> None:
    peer.lend_to_caller()
    peer.write(note("unprompted"))
    wait_until(lambda: len(peer.notes) == 1)
    assert peer.notes[0][1].name == READER


def test_requests_from_the_peer_run_on_reader_threads_never_on_the_caller(peer: Peer) -> None:
    asked: list[threading.Thread] = []
    peer.dispatcher.register_handler("ask", lambda params, ctx: asked.append(current()) or {})
    ask = {"jsonrpc": "2.0", "id": "q", "method": "ask"}
    peer.scripts["call"] = lambda request: line(ask) + answer(request)
    peer.lend_to_caller()
    for _ in range(10):
        assert peer.call("call") == {"method": "call"}
    wait_until(lambda: len(asked) == 10)
    assert {thread.name for thread in asked} == {READER}


def test_a_line_over_the_limit_is_left_to_the_reader_threads() -> None:
    peer = Peer(max_line_bytes=64)
    try:
        peer.scripts["call"] = lambda request: note("x" * 100) + answer(request)
        peer.lend_to_caller()
        assert peer.call("call") == {"method": "call"}
        assert peer.notes == []  # the oversized note was refused, not delivered
        assert peer.call("call") == {"method": "call"}
    finally:
        peer.close()


def test_what_arrives_after_the_response_is_delivered_by_a_reader_thread(peer: Peer) -> None:
    peer.scripts["call"] = lambda request: answer(request) + note("after")
    peer.lend_to_caller()
    assert peer.call("call") == {"method": "call"}
    wait_until(lambda: len(peer.notes) == 1)
    assert peer.notes[0][1].name == READER
    assert peer.call("plain") == {"method": "plain"}


def test_a_call_that_times_out_while_its_caller_reads(peer: Peer) -> None:
    peer.scripts["slow"] = lambda request: None
    with pytest.raises(MCPError) as before:
        peer.call("slow", timeout=0.05)  # not lent yet: waited for on its future
    assert before.value.code == MCP_CODES.TIMEOUT
    peer.lend_to_caller()
    with pytest.raises(MCPError) as reading:
        peer.call("slow", timeout=0.05)
    assert reading.value.code == MCP_CODES.TIMEOUT
    assert peer.call("next") == {"method": "next"}


def test_a_call_without_a_timeout_is_cancelled_by_another_thread(peer: Peer) -> None:
    peer.scripts["never"] = lambda request: None
    peer.lend_to_caller()

    def cancel() -> None:
        peer.dispatcher.cancel(peer.when_waited("never"))

    canceller = threading.Thread(target=cancel, name="test-canceller")
    canceller.start()
    with pytest.raises(MCPError) as cancelled:
        peer.call("never", timeout=None)
    canceller.join(5.0)
    assert cancelled.value.code == MCP_CODES.REQUEST_CANCELLED


def test_two_calls_in_flight_both_answered(peer: Peer) -> None:
    """The caller that reads both answers gives the turn back: the other call is still waited for."""
    peer.lend_to_caller()
    held: list[dict[str, Any]] = []
    peer.scripts["other"] = lambda request: held.append(request)

    def mine(request: dict[str, Any]) -> bytes:
        peer.write(answer(request))
        return answer(held[0])

    peer.scripts["mine"] = mine
    other: list[dict[str, Any]] = []
    thread = threading.Thread(target=lambda: other.append(peer.call("other")), name="test-other-caller")
    thread.start()
    wait_until(lambda: len(held) == 1)
    # The peer answers "other" only after "mine", in a write of its own.
    assert peer.call("mine") == {"method": "mine"}
    thread.join(5.0)
    assert other == [{"method": "other"}]


def test_the_end_of_the_input_while_the_caller_reads(peer: Peer) -> None:
    peer.lend_to_caller()

    def end(request: dict[str, Any]) -> bytes | None:
        # The pipe's write end is closed by dup2 onto it, in one step: its fd number stays the test's (closed
        # again by the fixture), never free for another file to take meanwhile.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, peer.in_w)
        os.close(devnull)
        return None

    peer.scripts["last"] = end
    with pytest.raises(MCPTransportError) as ended:
        peer.call("last")
    assert ended.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert peer.transport.wait_closed(5.0)


def test_closing_while_the_caller_reads(peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A close wakes a caller blocked reading for itself (its select sees the wake-up pipe): its call fails at once.
    # Made certain rather than likely: the watcher leaves the lent turn with the caller between its calls, the
    # caller reads for itself for as long as the test needs (not a tenth of a second, which a loaded machine may
    # spend before the close comes), and the close comes once the caller has taken the lent turn back to read.
    monkeypatch.setattr(stdio_module, "_HANDOFF_AFTER", 60.0)
    monkeypatch.setattr(stdio_module, "_CALLER_READS_FOR", 60.0)

    def close_once_the_caller_reads(request: dict[str, Any]) -> None:
        wait_until(lambda: peer.transport._lent_by is None)  # taken back by the caller, which reads
        peer.transport.close()

    peer.scripts["held"] = close_once_the_caller_reads
    peer.lend_to_caller()
    assert peer.transport._lent_by is current()
    with pytest.raises(MCPTransportError) as closed:
        peer.call("held", timeout=None)
    assert closed.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert peer.transport.closed


def test_closing_while_the_turn_is_lent_ends_the_readers(peer: Peer) -> None:
    peer.lend_to_caller()
    peer.dispatcher.close()  # the turn lent to this thread is taken back: the reader threads end (see conftest)
    assert peer.transport.closed


def test_a_stream_closed_under_the_caller_fails_its_call(peer: Peer) -> None:
    """A listener closes the input stream (on the thread reading it): the call fails, and the transport closes."""
    peer.dispatcher.on_notification("shut", lambda params: peer.readable.close())
    peer.scripts["call"] = lambda request: line({"jsonrpc": "2.0", "method": "shut"})
    peer.lend_to_caller()
    with pytest.raises(MCPTransportError):
        peer.call("call")
    assert peer.transport.wait_closed(5.0)


def test_a_server_process_answers_its_caller_directly() -> None:
    """With a real server process: many calls, a notification between them, and a prompt close."""
    env = {"PYTHONPATH": str(ROOT)}
    client = stdio_client([sys.executable, str(ROOT / "examples" / "echo_server.py")], env=env, inherit_env=True)
    try:
        for n in range(50):
            assert client.call_tool("echo", {"text": f"hello {n}"}).text == f"hello {n}"
    finally:
        client.close()


def test_the_next_caller_takes_over_a_turn_lent_to_an_idle_one(peer: Peer) -> None:
    """Threads calling one after the other (a pool, say) each read their own response."""
    peer.scripts["call"] = lambda request: note(str(request["id"])) + answer(request)
    peer.lend_to_caller()
    callers: list[threading.Thread] = []
    for n in range(50):  # (each caller must come within the watcher's look of the last: most do)
        thread = threading.Thread(target=peer.call, args=("call",), name=f"test-caller-{n}")
        callers.append(thread)
        thread.start()
        thread.join(5.0)
    readers = {thread for _, thread in peer.notes}
    assert readers & set(callers)  # some read on the caller's own thread (the watcher may take the turn back)
    assert all(thread in callers or thread.name == READER for thread in readers)


def in_frame(thread: threading.Thread, function: str) -> bool:
    """Whether ``thread`` is running ``function`` now (somewhere on its stack)."""
    frame = current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def test_closing_from_a_listener_on_the_callers_own_thread(peer: Peer) -> None:
    # The caller holds the reading turn while it delivers: its close gives the turn back to the reader threads
    # at once (they read to the end and stop), instead of waiting for them while they wait for it.
    outcome: dict[str, Any] = {}

    def close_here(params: dict[str, Any]) -> None:
        outcome["thread"] = current()
        peer.transport.close()

    peer.dispatcher.on_notification("shut", close_here)
    peer.lend_to_caller()
    peer.scripts["call"] = lambda request: line({"jsonrpc": "2.0", "method": "shut"})  # and no answer
    with pytest.raises(MCPTransportError):
        peer.call("call", timeout=5.0)
    assert outcome["thread"] is current()
    for reader in [*peer.transport._readers]:
        reader.join(5.0)
        assert not reader.is_alive()
    assert peer.transport._lent_by is None and not peer.transport._reading.locked()


def test_closing_from_another_thread_while_the_caller_delivers(peer: Peer) -> None:
    # The close has taken back what was lent and waits for the readers when the caller, done delivering, would lend
    # the turn to itself again: closing, it goes to the readers instead, which end.
    closer: list[threading.Thread] = []

    def close_elsewhere(params: dict[str, Any]) -> None:
        thread = threading.Thread(target=peer.transport.close, name="test-closer")
        closer.append(thread)
        thread.start()
        wait_until(lambda: in_frame(thread, "join"))  # past the revoke, waiting for the reader threads

    peer.dispatcher.on_notification("slow", close_elsewhere)
    peer.lend_to_caller()
    peer.scripts["call"] = lambda request: line({"jsonrpc": "2.0", "method": "slow"})  # and no answer
    with pytest.raises(MCPTransportError):
        peer.call("call", timeout=5.0)
    closer[0].join(5.0)
    assert not closer[0].is_alive()
    for reader in [*peer.transport._readers]:
        reader.join(5.0)
        assert not reader.is_alive()
    assert peer.transport._lent_by is None


def test_a_slow_answer_is_left_to_the_reader_threads(peer: Peer) -> None:
    # The caller reads for itself only briefly: for a slow answer a reader thread waits, and the caller waits on its
    # call without looking every few milliseconds for as long as the call takes.
    def slow(request: dict[str, Any]) -> bytes:
        readers = [thread for thread in peer.transport._readers if thread.is_alive()]
        wait_until(lambda: any(in_frame(thread, "read_pipe") for thread in readers))  # a reader reads again
        return note("late") + answer(request)

    peer.lend_to_caller()
    peer.scripts["slow"] = slow
    assert peer.call("slow") == {"method": "slow"}
    assert [thread.name for text, thread in peer.notes if text == "late"] == [READER]
