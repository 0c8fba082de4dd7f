"""The stdio transport, server processes, and serving over stdio, with real pipes and processes."""

from __future__ import annotations

import io
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCP_CODES, MCPError, MCPServer, MCPTransportError
from mcp_sync.client import stdio_client
from mcp_sync.protocol.jsonrpc import InvalidMessage
from mcp_sync.transports.process import default_environment
from mcp_sync.transports.stdio import ProcessTransport, StdioTransport, recover_id
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    NumberId,
    TextContent,
)

HERE = Path(__file__).parent.parent
MISBEHAVING = [sys.executable, str(HERE / "servers" / "misbehaving.py")]
ECHO_SERVER = [sys.executable, str(HERE.parent / "examples" / "echo_server.py")]
ENV = {"PYTHONPATH": str(HERE.parent)}
# Servers whose own code the suite measures inherit the environment, which
# carries coverage's settings for subprocesses.
SERVE = {"env": ENV, "inherit_env": True}


class RawWire:
    """An MCPServer on a StdioTransport over two OS pipes; the test speaks raw bytes."""

    def __init__(self, server: MCPServer, max_line_bytes: int = 1 << 20) -> None:
        in_r, self.in_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.transport = StdioTransport(
            os.fdopen(in_r, "rb", buffering=0), os.fdopen(out_w, "wb", buffering=0), max_line_bytes=max_line_bytes
        )
        self.session = server.start(self.transport)
        self._buffer = b""

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.in_w, view) :]

    def read(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """The next message the server wrote, or None when nothing comes within ``timeout``."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.out_r], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(self.out_r, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def close(self) -> None:
        os.close(self.in_w)
        self.session.close()
        os.close(self.out_r)


@pytest.fixture
def wire() -> Iterator[RawWire]:
    server = MCPServer("raw")
    server.register_tool("echo", lambda args, ctx: args["text"], description="echo")
    raw = RawWire(server, max_line_bytes=4096)
    yield raw
    raw.close()
    server.stop()


# ---------------------------------------------------------------- framing


def test_send_frames_compact_json_and_a_newline() -> None:
    out = io.BytesIO()
    transport = StdioTransport(io.BytesIO(), out)
    transport.send(JSONRPCRequest(id=1, method="ping", params={"a": [1, 2]}))
    transport.send(JSONRPCNotification(method="x"))
    assert (
        out.getvalue()
        == b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,2]}}\n{"jsonrpc":"2.0","method":"x"}\n'
    )
    transport.close()
    with pytest.raises(MCPTransportError) as err:
        transport.send(JSONRPCNotification(method="x"))
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED


class Trickle(io.RawIOBase):
    """A readable that hands out its bytes a few at a time."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = data
        self._step = step

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        chunk, self._data = self._data[: self._step], self._data[self._step :]
        return chunk


def read_all(data: bytes, step: int = 3, **options: Any) -> list[JSONRPCMessage | InvalidMessage]:
    transport = StdioTransport(Trickle(data, step), io.BytesIO(), **options)
    got: list[JSONRPCMessage | InvalidMessage] = []
    transport.on_message(got.append)
    assert transport.wait_closed(5)
    return got


@pytest.mark.parametrize("step", [1, 2, 7, 1 << 16])
def test_reading_tolerates_crlf_blank_lines_and_any_chunking(step: int) -> None:
    data = b'{"jsonrpc":"2.0","method":"a"}\r\n\n   \n{"jsonrpc":"2.0","method":"b"}\n{"jsonrpc":"2.0","method":"c"}'
    got = read_all(data, step)
    assert [m.method for m in got if isinstance(m, JSONRPCNotification)] == ["a", "b", "c"]


def test_an_oversized_line_is_refused_and_the_stream_goes_on() -> None:
    big = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"text":"' + b"x" * 5000 + b'"}}\n'
    data = big + b'{"jsonrpc":"2.0","method":"after"}\n' + big[:-1]
    for step in (1000, 1 << 16):
        got = read_all(data, step, max_line_bytes=1024)
        assert len(got) == 3
        first, second, third = got
        assert isinstance(first, InvalidMessage) and first.id == 41 and first.error.code == -32600
        assert "larger than the limit of 1024 bytes" in first.error.message
        assert isinstance(second, JSONRPCNotification) and second.method == "after"
        assert isinstance(third, InvalidMessage) and third.id == 41


def test_recover_id_reads_only_top_level_ids() -> None:
    assert recover_id(b'{"jsonrpc":"2.0","params":{"id":3},"id":"a\\"b", NaN') == 'a"b'
    assert recover_id(b'{"id": 7, "x": Infinity}') == 7
    assert recover_id(b'{"id": 1.0, "x": NaN}') == NumberId(1, "1.0")
    assert recover_id(b'{"params":{"id":3}} trailing') is None
    assert recover_id(b'{"id":"\\ud800", "x": NaN}') is None
    assert recover_id(b'{"id": 1.5e3, "x": NaN}') == NumberId(1500, "1.5e3")
    assert recover_id(b'{"id": 1.5, "x": NaN}') is None
    assert recover_id(b'{"a":"quote \\" and {[ brackets","id":5, NaN') == 5


def test_a_failing_stream_closes_the_transport_with_a_transport_error() -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read1(self, size: int = -1) -> bytes:
            raise OSError("device gone")

    transport = StdioTransport(Broken(), io.BytesIO())
    reasons: list[BaseException | None] = []
    transport.on_close(reasons.append)
    transport.on_message(lambda message: None)
    assert transport.wait_closed(5)
    assert isinstance(reasons[0], MCPTransportError) and reasons[0].code == MCP_CODES.TRANSPORT_ERROR


def test_a_stream_that_fails_because_it_was_closed_is_not_reported_as_an_error() -> None:
    release = threading.Event()

    class ClosesUnderTheReader(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read1(self, size: int = -1) -> bytes:
            release.wait(5)
            raise ValueError("I/O operation on closed file")

    transport = StdioTransport(ClosesUnderTheReader(), io.BytesIO())
    reasons: list[BaseException | None] = []
    transport.on_close(reasons.append)
    transport.on_close(lambda reason: release.set())
    transport.on_message(lambda message: None)
    transport.on_message(lambda message: None)  # a second handler shares the one reader
    transport.close()
    assert transport.input_ended.wait(5)
    assert reasons == [None]


def test_handoff_from_a_thread_that_does_not_read_changes_nothing() -> None:
    transport = StdioTransport(io.BytesIO(b'{"jsonrpc":"2.0","method":"a"}\n'), io.BytesIO())
    transport.handoff_reading()
    got: list[Any] = []
    transport.on_message(got.append)
    assert transport.wait_closed(5)
    assert len(got) == 1 and len(transport._readers) == 1


class LendingReader:
    """A StdioTransport over an OS pipe whose handler lends the reading turn and runs where it was delivered.

    ``slow`` handlers wait until ``release`` is set (a tool waiting for the
    client, say); every other message is done at once.
    """

    def __init__(self) -> None:
        read_end, self.write_end = os.pipe()
        self.transport = StdioTransport(os.fdopen(read_end, "rb", buffering=0), io.BytesIO())
        self.delivered: list[tuple[str, threading.Thread]] = []  # (method, thread it ran on), in delivery order
        self.running = threading.Event()
        self.release = threading.Event()
        self.transport.on_message(self.handle)

    def handle(self, message: JSONRPCMessage | InvalidMessage) -> None:
        assert isinstance(message, JSONRPCNotification)
        self.transport.handoff_reading()
        self.delivered.append((message.method, threading.current_thread()))
        if message.method == "slow":
            self.running.set()
            assert self.release.wait(10)

    def send(self, method: str) -> None:
        os.write(self.write_end, b'{"jsonrpc":"2.0","method":"%s"}\n' % method.encode())

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 10
        while len(self.delivered) < count and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(self.delivered) >= count

    def close(self) -> None:
        os.close(self.write_end)
        self.transport.close()


def test_a_handler_that_takes_long_has_reading_handed_off_while_it_runs() -> None:
    """The turn lent to a slow handler is handed to another thread, which reads and delivers meanwhile."""
    wire = LendingReader()
    try:
        for round_ in range(2):  # the second time, the thread the first slow handler ran on stands by and takes over
            wire.running.clear()
            wire.release.clear()
            wire.send("slow")
            assert wire.running.wait(10)
            wire.send("quick")
            wire.wait_for(2 * round_ + 2)  # delivered while the slow handler still runs
            assert not wire.release.is_set() and wire.delivered[-1][0] == "quick"
            wire.release.set()
        slow, quick = wire.delivered[0][1], wire.delivered[1][1]
        assert slow is not quick and {slow.name, quick.name} == {"mcp-sync-stdio-reader"}
        assert len(wire.transport._readers) == 2
    finally:
        wire.release.set()
        wire.close()
    assert not [t for t in threading.enumerate() if t.name == "mcp-sync-stdio-handoff"]


def test_waiting_messages_are_handed_off_at_once_and_a_late_slow_one_still_hands_off() -> None:
    """Waiting messages are served alongside; after a quiet spell the watcher sleeps, and wakes for the next handler."""
    wire = LendingReader()
    try:
        # One write, read as one chunk: while messages wait, each is handed off at once (and run
        # alongside the next); the last finds none waiting and keeps the turn it lent.
        os.write(wire.write_end, b"".join(b'{"jsonrpc":"2.0","method":"quick-%d"}\n' % n for n in range(20)))
        wire.wait_for(20)
        assert sorted(method for method, _ in wire.delivered) == sorted(f"quick-{n}" for n in range(20))
        assert {thread.name for _, thread in wire.delivered} == {"mcp-sync-stdio-reader"}
        deadline = time.monotonic() + 10
        while wire.transport._standby == 0 and time.monotonic() < deadline:
            time.sleep(0.005)  # the threads those ran on stand by for the turn
        readers = len(wire.transport._readers)
        os.write(wire.write_end, b'{"jsonrpc":"2.0","method":"again-1"}\n{"jsonrpc":"2.0","method":"again-2"}\n')
        wire.wait_for(22)
        assert len(wire.transport._readers) == readers  # handed to a thread standing by, none started
        deadline = time.monotonic() + 10
        while not wire.transport._watcher_idle and time.monotonic() < deadline:
            time.sleep(0.005)  # no handler runs: the watcher goes to sleep until one starts
        assert wire.transport._watcher_idle
        wire.send("slow")
        assert wire.running.wait(10)
        wire.send("after")
        wire.wait_for(24)
        assert wire.delivered[-1][0] == "after" and not wire.release.is_set()
    finally:
        wire.release.set()
        wire.close()


def test_a_closed_output_stream_fails_the_send_and_closes_the_transport() -> None:
    out = io.BytesIO()
    transport = StdioTransport(io.BytesIO(), out)
    out.close()
    with pytest.raises(MCPTransportError) as err:
        transport.send(JSONRPCNotification(method="x"))
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert transport.closed


def test_writes_from_many_threads_never_interleave() -> None:
    read_end, write_end = os.pipe()
    transport = StdioTransport(io.BytesIO(), os.fdopen(write_end, "wb", buffering=0))
    lines: list[bytes] = []

    def drain() -> None:
        with os.fdopen(read_end, "rb") as stream:
            lines.extend(stream.read().splitlines())

    reader = threading.Thread(target=drain)
    reader.start()

    def blast(n: int) -> None:
        for i in range(50):
            transport.send(JSONRPCNotification(method=f"t{n}", params={"i": i, "pad": "y" * (n * 3000)}))

    threads = [threading.Thread(target=blast, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    transport.close()
    reader.join(10)
    assert len(lines) == 16 * 50
    decoded = [json.loads(line) for line in lines]
    for n in range(16):
        assert [m["params"]["i"] for m in decoded if m["method"] == f"t{n}"] == list(range(50))


# ------------------------------------------- every request gets one answer

ODD_INPUTS = [
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}', 1, -32600),
    (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":2,"method":"ping"}', 2, None),
    (b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"s":"\\ud800"}}', 3, -32700),
    (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"s":"\xff\xfe"}}', 4, -32700),
    (b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}', 1, None),
    (b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"deep":' + b"[" * 1500 + b"]" * 1500 + b"}}", 6, -32700),
    (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"n":NaN}}', 7, -32700),
    (b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"n":Infinity}}', 8, -32700),
    (b'{"jsonrpc":"2.0","id":9,"method":"no/such"}', 9, -32601),
    (b"this is not json", None, -32700),
    (b'{"jsonrpc":"2.0","id":' + b'"' + b"k" * 300 + b'"' + b',"method":"ping"}', "k" * 300, None),
]


ODD_INPUT_NAMES = [
    "array-params",
    "bom",
    "lone-surrogate",
    "invalid-utf8",
    "float-id",
    "deep-nesting",
    "nan",
    "infinity",
    "unknown-method",
    "not-json",
    "long-string-id",
]


@pytest.mark.parametrize(("line", "expected_id", "code"), ODD_INPUTS, ids=ODD_INPUT_NAMES)
def test_every_request_gets_exactly_one_answer(wire: RawWire, line: bytes, expected_id: Any, code: int | None) -> None:
    wire.write(line + b"\n")
    answer = wire.read()
    assert answer is not None
    assert answer["id"] == expected_id
    if code is None:
        assert answer["result"] == {}
    else:
        assert answer["error"]["code"] == code
    # Exactly one: the next answer is for the next request.
    wire.write(b'{"jsonrpc":"2.0","id":"next","method":"ping"}\n')
    following = wire.read()
    assert following is not None and following["id"] == "next"


def test_an_oversized_request_is_refused_with_its_id_and_the_server_goes_on(wire: RawWire) -> None:
    wire.write(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"' + b"z" * 100_000 + b'"}}\n')
    answer = wire.read()
    assert answer is not None and answer["id"] == "big" and answer["error"]["code"] == -32600
    wire.write(b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n')
    assert wire.read() == {"jsonrpc": "2.0", "id": "after", "result": {}}


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","method":"notifications/whatever","params":{"n":1}}',
        b'{"jsonrpc":"2.0","id":99,"result":{}}',
        b'{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}',
        b'{"jsonrpc":"2.0","method":"notifications/broken","params":[1]}',
    ],
)
def test_notifications_and_stray_responses_get_no_answer(wire: RawWire, line: bytes) -> None:
    wire.write(line + b"\n")
    wire.write(b'{"jsonrpc":"2.0","id":"probe","method":"ping"}\n')
    assert wire.read() == {"jsonrpc": "2.0", "id": "probe", "result": {}}


# --------------------------------------------------------- server processes


def test_stdio_client_talks_to_a_real_server_process() -> None:
    with stdio_client(ECHO_SERVER, env=ENV) as client:
        assert [t.name for t in client.tools()] == ["echo", "add"]
        assert client.call_tool("add", {"a": 2, "b": 40}).text == "42"
        assert client.call_tool("echo", {"text": "é" * 1000}).text == "é" * 1000
        transport = client._dispatcher.transport if client._dispatcher else None
    assert isinstance(transport, ProcessTransport)
    assert transport.returncode == 0
    assert transport.closed


def test_many_threads_share_one_server_process_and_each_gets_its_own_answer() -> None:
    with stdio_client(ECHO_SERVER, env=ENV) as client:
        results: dict[int, list[str]] = {}

        def worker(n: int) -> None:
            results[n] = [client.call_tool("echo", {"text": f"{n}-{i}"}).text for i in range(40)]

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == {n: [f"{n}-{i}" for i in range(40)] for n in range(16)}


def test_a_handler_may_call_back_into_the_client_and_wait_over_stdio() -> None:
    def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        question = params.messages[0].content
        assert isinstance(question, TextContent)
        return CreateMessageResult(role="assistant", content=TextContent(text=question.text.upper()), model="m")

    with stdio_client([*MISBEHAVING, "serve"], **SERVE, stderr=lambda line: None, sampling_provider=sampling) as client:
        answers = [client.call_tool("ask", {"question": f"q{i}"}, timeout=10).text for i in range(5)]
    assert answers == [f"Q{i}" for i in range(5)]


def test_a_command_line_string_is_split_like_a_shell() -> None:
    transport = ProcessTransport(f"{sys.executable} -c 'import sys; sys.exit(0)'")
    transport.close()
    assert transport.argv[1:] == ["-c", "import sys; sys.exit(0)"]
    assert transport.returncode == 0


def test_the_child_gets_a_safe_environment_plus_what_is_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_SECRET", "do-not-leak")
    env = default_environment({"EXTRA": "1"})
    assert "MCP_SYNC_SECRET" not in env and env["EXTRA"] == "1" and env["PATH"] == os.environ["PATH"]
    code = "import os, sys; sys.stderr.write(os.environ.get('MCP_SYNC_SECRET', 'absent') + os.environ['EXTRA'])"
    lines: list[str] = []
    transport = ProcessTransport([sys.executable, "-c", code], env={"EXTRA": "!"}, stderr=lines.append)
    transport.close()
    assert "".join(lines) == "absent!"
    inherited: list[str] = []
    transport = ProcessTransport(
        [sys.executable, "-c", code], env={"EXTRA": "?"}, stderr=inherited.append, inherit_env=True
    )
    transport.close()
    assert "".join(inherited) == "do-not-leak?"


class NoFilenoStream(io.StringIO):
    """Like a Jupyter kernel's stderr: writable, but without a file descriptor."""

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no fileno")


def test_stderr_goes_to_a_stream_without_a_file_descriptor() -> None:
    sink = NoFilenoStream()
    code = "import sys; sys.stderr.write('line one\\nline two\\n')"
    transport = ProcessTransport([sys.executable, "-c", code], stderr=sink)
    transport.close()
    assert sink.getvalue() == "line one\nline two\n"
    assert list(transport.stderr_tail) == ["line one", "line two"]


def test_stderr_goes_to_a_logger_or_to_sys_stderr(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = "import sys; sys.stderr.write('hello from the server\\n')"
    with caplog.at_level(logging.INFO, logger="test.server"):
        ProcessTransport([sys.executable, "-c", code], stderr=logging.getLogger("test.server")).close()
    assert [r.getMessage() for r in caplog.records if r.name == "test.server"] == ["hello from the server"]
    fake_stderr = NoFilenoStream()
    monkeypatch.setattr(sys, "stderr", fake_stderr)
    ProcessTransport([sys.executable, "-c", code]).close()
    assert fake_stderr.getvalue() == "hello from the server\n"


def test_a_failing_stderr_target_is_logged_and_reading_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def explode(line: str) -> None:
        raise RuntimeError("sink broke")

    code = "import sys; sys.stderr.write('a\\nb\\n')"
    transport = ProcessTransport([sys.executable, "-c", code], stderr=explode)
    transport.close()
    assert list(transport.stderr_tail) == ["a", "b"]
    assert "stderr target" in caplog.text


def test_a_server_that_dies_mid_call_fails_pending_calls_with_its_exit_code_and_stderr() -> None:
    client = stdio_client([*MISBEHAVING, "serve"], **SERVE, stderr=lambda line: None)
    started = time.monotonic()
    with pytest.raises(MCPTransportError) as err:
        client.call_tool("crash", timeout=30)
    elapsed = time.monotonic() - started
    client.disconnect()
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert err.value.context["exit_code"] == 7
    assert "about to crash" in err.value.context["stderr"]
    assert "exited with code 7" in err.value.message
    assert elapsed < 10  # a hang would hit the 30 s timeout


def test_print_inside_a_tool_cannot_corrupt_the_protocol_and_stdin_reads_give_eof() -> None:
    lines: list[str] = []
    with stdio_client([*MISBEHAVING, "serve"], **SERVE, stderr=lines.append) as client:
        assert client.call_tool("noisy").text == "printed"
        assert client.call_tool("read_stdin").text == "''"
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"
    assert "this goes to stderr, not into the protocol\n" in lines
    assert "so does a raw write to fd 1\n" in lines
    assert "serve_stdio returned\n" in lines


def test_grandchildren_do_not_outlive_close() -> None:
    with stdio_client([*MISBEHAVING, "serve"], **SERVE, stderr=lambda line: None) as client:
        grandchild = int(client.call_tool("spawn").text)
        os.kill(grandchild, 0)  # alive while the server runs
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the grandchild outlived close()")


def test_a_stubborn_server_is_killed_within_the_shutdown_timeout() -> None:
    lines: list[str] = []
    transport = ProcessTransport([*MISBEHAVING, "stubborn"], env=ENV, shutdown_timeout=0.6, stderr=lines.append)
    deadline = time.monotonic() + 30
    while "stubborn: ignoring SIGTERM\n" not in lines and time.monotonic() < deadline:
        time.sleep(0.01)  # until it has installed its SIGTERM handler (its imports take a while on a busy machine)
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 5
    assert transport.returncode == -signal.SIGKILL
    transport.close()  # idempotent


def test_sigterm_makes_serve_stdio_fail_pending_calls_and_return() -> None:
    lines: list[str] = []
    client = stdio_client([*MISBEHAVING, "serve"], **SERVE, stderr=lines.append)
    transport = client._dispatcher.transport if client._dispatcher else None
    assert isinstance(transport, ProcessTransport)
    outcome: list[BaseException | str] = []

    def call() -> None:
        try:
            outcome.append(client.call_tool("block", timeout=30).text)
        except MCPError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 10
    while "block: waiting\n" not in lines and time.monotonic() < deadline:
        time.sleep(0.01)  # until the server runs the handler
    transport.process.send_signal(signal.SIGTERM)
    caller.join(10)
    client.disconnect()
    # The call was answered before the server exited (not failed by the closing pipe):
    # the handler saw the cancellation, and the server reported the call cancelled.
    assert not caller.is_alive() and len(outcome) == 1
    answer = outcome[0]
    assert isinstance(answer, MCPError) and answer.code != MCP_CODES.TRANSPORT_CLOSED
    assert "was cancelled" in answer.message
    assert transport.returncode == 0
    assert "serve_stdio returned\n" in lines


# ------------------------------------------------------------ launch failures


def test_a_missing_command_is_named_in_the_error() -> None:
    with pytest.raises(MCPTransportError) as err:
        stdio_client(["definitely-not-a-real-mcp-server", "--flag"])
    assert err.value.code == MCP_CODES.TRANSPORT_ERROR
    assert "definitely-not-a-real-mcp-server --flag" in err.value.message


def test_a_server_that_exits_at_once_is_named_with_its_exit_code_and_stderr() -> None:
    with pytest.raises(MCPTransportError) as err:
        stdio_client([*MISBEHAVING, "exit"], env=ENV, stderr=lambda line: None)
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    assert "misbehaving.py exit" in err.value.message
    assert "exited with code 3" in err.value.message
    assert "fatal: no configuration" in err.value.message


def test_a_server_that_writes_garbage_is_named_with_what_it_wrote() -> None:
    with pytest.raises(MCPError) as err:
        stdio_client([*MISBEHAVING, "garbage"], env=ENV, connect_timeout=1.0, stderr=lambda line: None)
    assert err.value.code == MCP_CODES.TIMEOUT
    assert "misbehaving.py garbage" in err.value.message
    assert "Welcome to my server!" in err.value.message


def test_a_server_that_never_answers_times_out_naming_the_command() -> None:
    with pytest.raises(MCPError) as err:
        stdio_client([*MISBEHAVING, "silent"], env=ENV, connect_timeout=0.5, stderr=lambda line: None)
    assert err.value.code == MCP_CODES.TIMEOUT
    assert "misbehaving.py silent" in err.value.message
    assert "stderr:\nwaiting for nothing" in err.value.message


def test_serve_stdio_works_from_a_thread_other_than_the_main_one() -> None:
    lines: list[str] = []
    with stdio_client([*MISBEHAVING, "thread"], **SERVE, stderr=lines.append) as client:
        assert client.call_tool("echo", {"text": "from a thread"}).text == "from a thread"
    assert "served from a thread\n" in lines


def test_no_zombie_remains_after_close() -> None:
    transport = ProcessTransport(ECHO_SERVER, env=ENV)
    pid = transport.process.pid
    transport.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip() == ""


def test_a_request_on_a_broken_output_fails_once_and_is_counted_once() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
    from mcp_sync.runtime.telemetry import Telemetry

    reader = InMemoryMetricReader()
    out = io.BytesIO()
    transport = StdioTransport(io.BytesIO(), out, close_on_eof=False)
    dispatcher = JsonRpcDispatcher(transport, telemetry=Telemetry(MeterProvider(metric_readers=[reader])))
    dispatcher.start()
    out.close()
    with pytest.raises(MCPTransportError) as err:
        dispatcher.request("ping", timeout=5)
    assert err.value.code == MCP_CODES.TRANSPORT_CLOSED
    dispatcher.close()
    data = reader.get_metrics_data()
    assert data is not None
    counts = [
        point.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "mcp_request_total"
        for point in metric.data.data_points
    ]
    assert counts == [1]


# ------------------------------------- exactness (issue 12), with a real server process


class RawProcess:
    """``examples/echo_server.py`` in a subprocess; the test writes raw bytes and reads raw lines."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ECHO_SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **ENV},  # inherited: coverage measures the server too
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.out = self.process.stdout.fileno()
        self._buffer = b""
        self.send(
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}\n'
        )
        assert json.loads(self.line())["id"] == 0
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def send(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def line(self, timeout: float = 10.0) -> bytes:
        """The next line the server wrote (without its newline); fails after ``timeout`` or at the end."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.out], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no answer within {timeout} s"
            chunk = os.read(self.out, 1 << 16)
            assert chunk, "the server closed its output"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def rest(self, timeout: float = 10.0) -> list[bytes]:
        """Every line until the server ends its output (after stdin is closed)."""
        self.stdin.close()
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self.out], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"the server did not end its output within {timeout} s"
            chunk = os.read(self.out, 1 << 16)
            if not chunk:
                break
            self._buffer += chunk
        lines, self._buffer = self._buffer.splitlines(), b""
        return lines

    def close(self) -> None:
        if not self.stdin.closed:
            self.stdin.close()
        assert self.process.wait(10) == 0
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def echo_process() -> Iterator[RawProcess]:
    process = RawProcess()
    yield process
    process.close()


def call(request_id: bytes, method: str = "tools/call", params: bytes | None = None, extra: bytes = b"") -> bytes:
    """A raw request line; ``params`` defaults to an echo of "hi" for tools/call."""
    if params is None and method == "tools/call":
        params = b'{"name":"echo","arguments":{"text":"hi"}}'
    body = b'{"jsonrpc":"2.0","id":' + request_id + b',"method":"' + method.encode() + b'"'
    if params is not None:
        body += b',"params":' + params
    return body + extra + b"}\n"


EXACT_TOKENS = [b"2.0", b"1e3", b"1E+2", b"-0.0", b"-0", b"7.000", b"2.5e1"]


def test_an_integral_number_id_is_answered_exactly_as_sent_over_stdio(echo_process: RawProcess) -> None:
    for token in EXACT_TOKENS:
        head = b'{"jsonrpc":"2.0","id":' + token + b","
        echo_process.send(call(token))
        assert echo_process.line() == head + b'"result":{"content":[{"type":"text","text":"hi"}]}}'
        echo_process.send(call(token, "no/such"))
        assert echo_process.line().startswith(head + b'"error":{"code":-32601,')
        echo_process.send(call(token, "ping", b"[1]"))  # an invalid envelope, refused with the id
        assert echo_process.line().startswith(head + b'"error":{"code":-32600,')
        echo_process.send(call(token, "ping", b'{"n":NaN}'))  # not JSON, the id whole: recovered as written
        assert echo_process.line().startswith(head + b'"error":{"code":-32700,')


def test_an_id_cut_short_is_never_recovered_over_stdio(echo_process: RawProcess) -> None:
    echo_process.send(b'{"jsonrpc":"2.0","id":"abc"\n')  # the string ends, but nothing says the id does
    echo_process.send(b'{"jsonrpc":"2.0","id":"ab\n')
    echo_process.send(b'{"jsonrpc":"2.0","id":12 ,"method":"ping","params":{"n":NaN}}\n')  # whole: recovered
    echo_process.send(b'{"jsonrpc":"2.0","id":1234')  # at the end of input: the writer may have been cut in 123456
    answers = [json.loads(line) for line in echo_process.rest()]
    assert [(answer["id"], answer["error"]["code"]) for answer in answers] == [
        (None, -32700),
        (None, -32700),
        (12, -32700),
        (None, -32700),
    ]


def test_a_request_carrying_a_result_or_an_error_is_refused_over_stdio(echo_process: RawProcess) -> None:
    echo_process.send(call(b"5", extra=b',"result":{}'))
    echo_process.send(call(b'"six"', extra=b',"error":{"code":1,"message":"x"}'))
    echo_process.send(call(b"7.0", "ping", extra=b',"result":{}'))
    echo_process.send(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"},"result":{}}\n')  # no id
    echo_process.send(call(b'"probe"', "ping"))
    answers = [echo_process.line() for _ in range(4)]
    assert [json.loads(answer)["id"] for answer in answers] == [5, "six", 7.0, "probe"]
    assert answers[2].startswith(b'{"jsonrpc":"2.0","id":7.0,')
    for answer in answers[:3]:
        error = json.loads(answer)["error"]
        assert error["code"] == -32600 and "result" in error["message"]
    assert json.loads(answers[3])["result"] == {}


def test_a_request_carrying_a_result_is_never_executed() -> None:
    server = MCPServer("raw")
    calls: list[str] = []
    server.register_tool("note", lambda args, ctx: calls.append("ran") or "noted", description="note")
    raw = RawWire(server)
    try:
        raw.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"note"},"result":{}}\n')
        assert raw.read() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32600, "message": 'Invalid request: a request cannot carry "result" or "error"'},
        }
        raw.write(b'{"jsonrpc":"2.0","id":"probe","method":"ping"}\n')
        assert raw.read() == {"jsonrpc": "2.0", "id": "probe", "result": {}}
        assert calls == []
    finally:
        raw.close()
        server.stop()


@pytest.mark.parametrize("token", [b"1.5", b"true", b"null", b"{}", b"[1]"])
def test_an_invalid_progress_token_is_invalid_params_for_every_request_over_stdio(
    echo_process: RawProcess, token: bytes
) -> None:
    meta = b'"_meta":{"progressToken":' + token + b"}"
    for method, params in [
        ("tools/call", b'{"name":"echo","arguments":{"text":"hi"},' + meta + b"}"),
        ("tools/list", b"{" + meta + b"}"),
        ("resources/list", b"{" + meta + b"}"),
        ("prompts/list", b"{" + meta + b"}"),
        ("ping", b"{" + meta + b"}"),
    ]:
        echo_process.send(call(b"3", method, params))
        error = json.loads(echo_process.line())["error"]
        assert error["code"] == -32602, (method, error)
        assert "progressToken" in error["message"]


def test_a_valid_progress_token_is_accepted_over_stdio(echo_process: RawProcess) -> None:
    for token in (b'"t"', b"0", b"-5", b"2.0"):
        params = b'{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":' + token + b"}}"
        echo_process.send(call(b"4", "tools/call", params))
        assert json.loads(echo_process.line())["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_stdio_server_freezes_its_objects_at_exit_so_close_does_not_wait_for_the_collector() -> None:
    """serve_stdio has the objects alive at exit frozen before teardown, once however often it served."""
    script = (
        "import atexit, gc, sys\n"
        "from mcp_sync import MCPServer\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "print('frozen before:', gc.get_freeze_count() > 0, file=sys.stderr)\n"
        "MCPServer('first').serve_stdio()\n"
        "MCPServer('second').serve_stdio()\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", script],
        input=b"",
        capture_output=True,
        env={**os.environ, **ENV},
        timeout=30,
        check=True,
    )
    lines = process.stderr.decode().splitlines()
    assert lines == ["frozen before: False", "frozen at exit: True"]
