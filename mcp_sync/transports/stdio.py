"""The stdio transport: one JSON-RPC message per line over a pair of byte streams.

:class:`StdioTransport` frames messages on any readable and writable binary
streams; :class:`ProcessTransport` starts a server process and speaks to it
over its stdin and stdout. Serving an MCPServer on this process's own stdin
and stdout is :func:`mcp_sync.server.stdio.serve_stdio`, on this framing.

>>> import io
>>> out = io.BytesIO()
>>> transport = StdioTransport(io.BytesIO(b""), out)
>>> from mcp_sync.types import JSONRPCNotification
>>> transport.send(JSONRPCNotification(method="notifications/initialized"))
>>> out.getvalue()
b'{"jsonrpc":"2.0","method":"notifications/initialized"}\\n'
>>> transport.close()
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import io
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from ..protocol.batch import encode_batch
from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPTransportError
from ..protocol.jsonrpc import ID_SCAN_BYTES as _ID_SCAN_BYTES
from ..protocol.jsonrpc import InvalidMessage, decode_message, encode_message, reads_as_response, recover_id
from ..protocol.types import Error, JSONRPCMessage, JSONRPCRequest
from ..runtime.transport import BaseTransport

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "ProcessTransport",
    "StderrTarget",
    "StdioTransport",
    "recover_id",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line (one message) read by default: 64 MiB."""

_READ_SIZE = 1 << 16

_HANDOFF_AFTER = 0.002
"""Seconds a handler may run on the reading thread before another thread takes over reading."""
_WATCHER_IDLE_WAIT = 5.0
"""How long the watcher sleeps at a time while no handler runs (it is woken when one starts)."""
_CALLER_POLL = 0.02
"""How often a caller reading for its own response looks whether another thread settled it, in seconds."""
_CALLER_READS_FOR = 0.1
"""How long a caller reads for its own response before it leaves a slow one to the reader threads, in seconds (and
waits without looking every _CALLER_POLL seconds for as long as the call takes)."""

StderrTarget = IO[str] | Callable[[str], None] | logging.Logger | None
"""Where a server process's stderr lines go: a text stream, a callable, a logger
(at INFO), or ``None`` for this process's ``sys.stderr`` (whatever object it is)."""


class _Oversized:
    """A line that was over the size limit; ``head`` is its start, kept to read its id."""

    # Not a dataclass: one compiles its methods when the module is imported, which
    # a stdio server's start would pay for a class it rarely makes.
    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head


class StdioTransport(BaseTransport):
    """Newline-delimited JSON-RPC over a readable and a writable binary stream.

    Reading tolerates CRLF, blank lines and any chunking. A line that is
    not JSON is delivered as an :class:`InvalidMessage` (the dispatcher
    answers it with ``-32700``, using the request's id when it can be read);
    a line longer than ``max_line_bytes`` is skipped without being held in
    memory and answered the same way with ``-32600``. Writes from many
    threads never interleave. The reader thread starts when the first
    message handler is registered and ends at end of input or on close.
    """

    network_transport = "pipe"

    def __init__(
        self,
        readable: BinaryIO | IO[bytes],
        writable: BinaryIO | IO[bytes],
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        close_on_eof: bool = True,
    ) -> None:
        super().__init__()
        self._readable = readable
        self._writable = writable
        self.max_line_bytes = max_line_bytes
        self.close_on_eof = close_on_eof
        self.input_ended = threading.Event()
        self._write_lock = threading.Lock()
        self.last_invalid_line: bytes | None = None
        self._readers: list[threading.Thread] = []
        self._reading = threading.Lock()  # held by the thread whose turn it is to read
        self._turn = threading.local()
        self._standby = 0
        # Lending (see handoff_reading): the thread running a handler with the turn, how many
        # times the turn was lent, and the watcher that hands reading off for a slow handler.
        self._lent_by: threading.Thread | None = None
        self._lent_to_caller = False  # lent to a caller between its calls (not to a reader running a handler)
        self._lends = 0
        self._watch = threading.Condition(self._lock)
        self._watcher: threading.Thread | None = None
        self._watcher_idle = False
        self._items: collections.deque[bytes | _Oversized] = collections.deque()
        self._partial = bytearray()
        self._skipping = False  # inside a line that is over the limit
        self._skipped_head = b""
        # A pipe stream is read with select() on it and on a wake-up pipe,
        # so that close() can stop a reader blocked on a silent peer.
        self._wakeup: tuple[int, int] | None = os.pipe() if isinstance(readable, io.FileIO) else None
        # Held around each select/read on those descriptors and by close() as it closes them: a reader
        # that outlived close() (kept in a slow listener) sees them closed, and never touches their
        # numbers, which may be another file's by then.
        self._fds_lock = threading.Lock()
        self._fds_closed = False

    # -------------------------------------------------------------- writing

    def _write(self, message: JSONRPCMessage) -> None:
        self._write_line(encode_message(message) + b"\n")

    def _write_batch(self, messages: Sequence[JSONRPCMessage]) -> None:
        self._write_line(encode_batch(messages) + b"\n")

    def _write_line(self, data: bytes) -> None:
        try:
            with self._write_lock:
                view = memoryview(data)
                while view:
                    written = self._writable.write(view)
                    view = view[written:]
                self._writable.flush()
        except (OSError, ValueError) as exc:
            reason = MCPTransportError(MCP_CODES.TRANSPORT_CLOSED, f"the output stream is closed: {exc}", cause=exc)
            self._closed_by_peer(self._describe_close(reason))
            raise reason from exc

    # -------------------------------------------------------------- reading
    #
    # Reading is a role that threads take in turn ("leader/follower"): the
    # thread that holds the turn reads and delivers messages; a handler that
    # is about to do real work on that thread calls handoff_reading(), and the
    # handler runs where it is, without a hop to another thread.
    #
    # The turn is only lent to the handler: most handlers are done in well
    # under a millisecond, and the thread then reads on. A watcher thread
    # looks every _HANDOFF_AFTER seconds while handlers run; one that has
    # held the turn for a whole look (a slow tool, one waiting for the client
    # or for its cancellation) has reading handed off for it, and a standby
    # thread reads while it runs. Handing off at every request instead woke
    # another thread per request, about a quarter of a stdio server's CPU.

    def _handlers_changed(self) -> None:
        with self._lock:
            if self._readers or self._closed.is_set():
                return
            reader = self._new_reader()
        reader.start()

    def _new_reader(self) -> threading.Thread:
        reader = threading.Thread(target=self._read_loop, name="mcp-sync-stdio-reader", daemon=True)
        self._readers.append(reader)
        return reader

    def handoff_reading(self) -> None:
        """If this thread holds the reading turn, let another thread read should the handler it runs take long.

        The turn is lent: when the handler returns within ``_HANDOFF_AFTER``
        seconds this thread reads on; otherwise another thread (which may be
        new) has taken the turn meanwhile, and this one stands by. When more
        messages are already read and waiting, the turn is passed at once.
        """
        if not getattr(self._turn, "held", False):
            return
        if self._items:
            # More messages are read and waiting (calls in flight at once): hand reading
            # off now, so that they are served alongside this one.
            self._turn.held = False
            with self._lock:
                reader = self._new_reader() if self._standby == 0 and not self._closed.is_set() else None
            self._reading.release()
            if reader is not None:
                reader.start()
            return
        self._turn.lent = True
        self._lend(threading.current_thread(), caller=False)

    def _lend(self, thread: threading.Thread, *, caller: bool) -> None:
        """Lend the turn (held by this thread) to ``thread``, for the watcher to take back if it is kept too long."""
        with self._lock:
            if caller and self._closed.is_set():
                # Closing: nothing would take the turn back (the watcher has stopped, and the close's revoke
                # came first, or sees it lent): the reader threads get it, to read to the end and stop.
                self._reading.release()
                return
            self._lent_by = thread
            self._lent_to_caller = caller
            self._lends += 1
            if self._watcher_idle:
                self._watch.notify()
            watcher = None
            if self._watcher is None and not self._closed.is_set():
                watcher = self._watcher = threading.Thread(
                    target=self._watch_lends, name="mcp-sync-stdio-handoff", daemon=True
                )
        if watcher is not None:
            watcher.start()

    # A caller waiting for a response (a client's call_tool, say) reads it itself when it can:
    # a reader thread that delivers the response of the only call in flight lends the turn to
    # its caller instead of reading on (pass_reading), and the caller's next wait (wait_reading)
    # reads on its own thread, without a reader thread woken to hand each response over. The
    # caller keeps the turn lent between its calls; the watcher takes it back after
    # _HANDOFF_AFTER seconds without a call, and a reader thread reads on. A request from the
    # peer is left to the reader threads, so that no handler ever runs on a caller's thread.

    def pass_reading(self, to: threading.Thread) -> None:
        """On a reader thread delivering the response ``to`` waits for: lend ``to`` the reading turn.

        Only when nothing more is read and waiting, and ``to`` can read
        itself (a pipe); otherwise this thread reads on.
        """
        turn = self._turn
        if self._wakeup is None or self._items or not getattr(turn, "reader", False) or turn.lent:
            return
        turn.held = False  # this thread stands by once the response is delivered
        self._lend(to, caller=True)

    def wait_reading(
        self, future: concurrent.futures.Future[Any], timeout: float | None, keep: Callable[[], bool]
    ) -> bool:
        """Wait up to ``timeout`` seconds for ``future``; ``True`` if it is done.

        A thread lent the turn (see :meth:`pass_reading`) reads and delivers
        messages meanwhile; when it is done it keeps the turn lent if ``keep()``
        says so (no other call waits), and gives it back to the reader threads
        otherwise.
        """
        if self._reclaim_lend():
            kept = False
            try:
                kept = self._read_for(future, timeout) and not self._items and keep()
            finally:
                if self._turn.held:  # (a close on this thread, from a listener say, gave the turn back already)
                    self._turn.held = False
                    if kept:
                        self._lend(threading.current_thread(), caller=True)
                    else:
                        self._reading.release()  # a reader thread (the one that lent it, at least) stands by
            return future.done()
        try:
            future.exception(timeout)
        except concurrent.futures.TimeoutError:
            return False
        return True

    def _reclaim_lend(self) -> bool:
        """Whether this thread, not a reader, now holds the turn: lent to it, or to another caller that is idle.

        A caller between two calls does not read: the next caller, whichever
        thread it is, takes the turn over (taken under the lock, the watcher
        can no longer hand it off). A turn lent to a reader running a handler
        stays with it.
        """
        with self._lock:
            lent = self._lent_by
            claim = (
                lent is not None
                and not getattr(self._turn, "held", False)
                and (lent is threading.current_thread() or self._lent_to_caller)
            )
            if claim:
                self._lent_by = None
        if claim:
            self._turn.held = True
        return claim

    def _read_for(self, future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
        """Read and deliver on this thread until ``future`` is done or ``timeout`` passes.

        ``False`` when the reader threads must take over: at the end of the
        input, or closing, for a request or an oversized line, or for a
        response slower than :data:`_CALLER_READS_FOR`.
        """
        assert self._wakeup is not None
        wakeup = self._wakeup[0]
        deadline = None if timeout is None else time.monotonic() + timeout
        give_up = time.monotonic() + _CALLER_READS_FOR
        items = self._items
        turn = self._turn
        while not future.done() and turn.held:
            if items:
                item = items[0]
                if not isinstance(item, bytes):
                    return False
                message = self._decode(item)
                if isinstance(message, JSONRPCRequest):
                    return False  # left in line for a reader thread, where its handler runs
                items.popleft()
                if message is not None:
                    self._deliver(message)
                continue
            now = time.monotonic()
            wait = _CALLER_POLL if deadline is None else min(_CALLER_POLL, deadline - now)
            if wait <= 0:
                return True
            if now >= give_up:
                return False  # a slow answer: a reader thread waits for it, this thread on the call's future
            try:
                with self._fds_lock:
                    # Once close() closed the pipes (under this lock), fileno() raises: their numbers, which may
                    # be reused by then, are never selected on.
                    fd = self._readable.fileno()
                    ready, _, _ = select.select([fd, wakeup], [], [], wait)
                    chunk = os.read(fd, _READ_SIZE) if fd in ready and wakeup not in ready else None
            except (OSError, ValueError):
                return False  # the reader threads meet the failure too, and report it
            if chunk is not None:
                if not chunk:
                    return False  # the end of the input: a reader thread meets it and closes
                self._split(chunk)
            elif ready:
                return False  # closing
        return True

    def _revoke_lend(self) -> None:
        """On close: take back a lent turn, so that the reader threads can read to the end and stop."""
        with self._lock:
            lent, self._lent_by = self._lent_by, None
        if lent is not None:
            self._reading.release()
        turn = self._turn
        if getattr(turn, "held", False) and not getattr(turn, "reader", False):
            # Closed on a caller's thread that reads for itself (by a listener of its, say): the turn it holds
            # goes back to the reader threads now, or the close would wait for them, and they for it.
            turn.held = False
            self._reading.release()

    def _reclaim(self) -> None:
        """After a handler ran on this thread: keep reading, unless the watcher handed reading off meanwhile."""
        self._turn.lent = False
        with self._lock:
            if self._lent_by is threading.current_thread():
                self._lent_by = None
                return
        self._turn.held = False

    def _watch_lends(self) -> None:
        """The watcher: hands reading off for a handler that holds the turn from one look to the next."""
        seen: int | None = None
        with self._lock:
            while not self._closed.is_set():
                if self._lent_by is not None and self._lends == seen:
                    self._lent_by = None
                    seen = None
                    reader = self._new_reader() if self._standby == 0 else None
                    self._reading.release()  # released for the lending thread, which no longer reads
                    if reader is not None:
                        reader.start()
                elif self._lent_by is None and self._lends == seen:
                    self._watcher_idle = True  # no handler started since the last look: sleep until one does
                    self._watch.wait(_WATCHER_IDLE_WAIT)
                    self._watcher_idle = False
                else:
                    seen = self._lends
                    self._watch.wait(_HANDOFF_AFTER)

    def _take_turn(self) -> bool:
        """Wait for the reading turn; ``False`` once the input has ended."""
        with self._lock:
            self._standby += 1
        self._reading.acquire()
        with self._lock:
            self._standby -= 1
        if self.input_ended.is_set():
            self._reading.release()
            return False
        self._turn.held = True
        self._turn.lent = False
        return True

    def _read_loop(self) -> None:
        read = self._chunk_reader()
        self._turn.reader = True
        while self._take_turn():
            reason: BaseException | None = None
            try:
                while self._turn.held:
                    item = self._next_item(read)
                    if item is None:
                        break
                    if isinstance(item, bytes):
                        self._line(item)
                    else:
                        self._refuse_oversized(item.head)
                    if self._turn.lent:
                        self._reclaim()
                else:
                    continue  # handed off: wait for another turn
            except (OSError, ValueError) as exc:
                if not self.closed:
                    reason = MCPTransportError(MCP_CODES.TRANSPORT_ERROR, f"reading failed: {exc}", cause=exc)
            self.input_ended.set()
            self._turn.held = False
            self._reading.release()
            if self.close_on_eof or reason is not None:
                self._closed_by_peer(self._describe_close(reason))
            return

    def _chunk_reader(self) -> Callable[[], bytes]:
        """A function returning the next chunk of input, or ``b""`` at its end."""
        if self._wakeup is None:
            read = getattr(self._readable, "read1", self._readable.read)
            return lambda: bytes(read(_READ_SIZE))
        fd, wakeup = self._readable.fileno(), self._wakeup[0]

        def read_pipe() -> bytes:
            with self._fds_lock:  # (close() wrote to the wake-up pipe before it waits for this lock)
                if self._fds_closed:
                    return b""
                ready, _, _ = select.select([fd, wakeup], [], [])
                return os.read(fd, _READ_SIZE) if fd in ready else b""

        return read_pipe

    def _next_item(self, read: Callable[[], bytes]) -> bytes | _Oversized | None:
        """The next complete line (or oversized line), reading more as needed; ``None`` at the end."""
        while not self._items:
            chunk = read()
            if not chunk:
                self._flush_partial()
                return self._items.popleft() if self._items else None
            self._split(chunk)
        return self._items.popleft()

    def _split(self, chunk: bytes) -> None:
        limit = self.max_line_bytes
        items = self._items
        start = 0
        while (newline := chunk.find(b"\n", start)) != -1:
            if self._skipping:
                self._skipping = False
                items.append(_Oversized(self._skipped_head))
            else:
                if self._partial:
                    self._partial += chunk[start:newline]
                    line = bytes(self._partial)
                    self._partial.clear()
                else:
                    line = chunk[start:newline]
                items.append(line if len(line) <= limit else _Oversized(line[:_ID_SCAN_BYTES]))
            start = newline + 1
        if self._skipping:
            return
        self._partial += chunk[start:]
        if len(self._partial) > limit:
            self._skipping = True
            self._skipped_head = bytes(self._partial[:_ID_SCAN_BYTES])
            self._partial.clear()

    def _flush_partial(self) -> None:
        """At the end of input: a last line without a newline still counts."""
        if self._skipping:
            self._skipping = False
            self._items.append(_Oversized(self._skipped_head))
        elif self._partial.strip():
            self._items.append(bytes(self._partial))
            self._partial.clear()

    def _line(self, line: bytes) -> None:
        message = self._decode(line)
        if message is not None:
            self._deliver(message)

    def _decode(self, line: bytes) -> JSONRPCMessage | InvalidMessage | None:
        """The message a line holds; ``None`` for a blank line or a stray one (see :meth:`_stray`)."""
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line or line.isspace():  # (what strip() would empty, without copying the line)
            return None
        message = decode_message(line)
        if isinstance(message, InvalidMessage):
            self.last_invalid_line = line[:200]
            if message.id is None and message.error.code == JsonRpcCode.PARSE_ERROR:
                # A broken answer to one of our calls gets no reply: the call fails at once (see reads_as_response).
                message = InvalidMessage(message.error, recover_id(line), reply=not reads_as_response(line))
            if message.id is None and self._stray(line):
                return None
        return message

    def _stray(self, line: bytes) -> bool:
        """Hook: a line that is no JSON-RPC message and names no id came in; whether it is dealt with.

        By default it is not: it is delivered as an :class:`InvalidMessage`,
        which a server answers with ``-32700`` or ``-32600``.
        """
        return False

    def _refuse_oversized(self, head: bytes) -> None:
        error = Error(
            code=JsonRpcCode.INVALID_REQUEST,
            message=f"Invalid request: message larger than the limit of {self.max_line_bytes} bytes",
        )
        self._deliver(InvalidMessage(error, recover_id(head), reply=not reads_as_response(head)))

    # -------------------------------------------------------------- closing

    def _describe_close(self, reason: BaseException | None) -> BaseException | None:
        """Hook for subclasses: the reason given to close handlers."""
        return reason

    def _owns(self, thread: threading.Thread) -> bool:
        return thread in self._readers

    def _shutdown(self) -> None:
        self._revoke_lend()
        if self._wakeup is not None:
            os.write(self._wakeup[1], b"x")
        with contextlib.suppress(OSError, ValueError):
            self._writable.close()
        deadline = time.monotonic() + 2.0
        with self._lock:
            self._watch.notify_all()  # the watcher ends, seeing the transport closed
            readers = [*self._readers, *([self._watcher] if self._watcher is not None else [])]
        for reader in readers:
            if reader is not threading.current_thread():
                reader.join(max(0.0, deadline - time.monotonic()))
        with self._fds_lock:
            self._fds_closed = True
            with contextlib.suppress(OSError, ValueError):
                self._readable.close()
            if self._wakeup is not None:
                for fd in self._wakeup:
                    os.close(fd)


def _stderr_writer(target: StderrTarget) -> Callable[[str], None]:
    if isinstance(target, logging.Logger):
        logger = target
        return lambda line: logger.info("%s", line.rstrip("\n"))
    if callable(target):
        return target

    def write(line: str) -> None:
        stream = sys.stderr if target is None else target
        stream.write(line)
        stream.flush()

    return write


class ProcessTransport(StdioTransport):
    """A server process, spoken to over its stdin and stdout.

    The process runs in its own process group with a safe default
    environment plus ``env``. Its stderr goes, line by line, to ``stderr``
    (see :data:`StderrTarget`); the last lines are kept for error messages.
    ``process`` takes over a server that :func:`~mcp_sync.transports.process.start_server`
    already started with this command line (``env``, ``inherit_env`` and
    ``cwd`` were then its own): :func:`mcp_sync.connect` and
    :meth:`MCPClient.stdio <mcp_sync.client.MCPClient.stdio>` start the
    server before they load or make the client (see
    :func:`~mcp_sync.transports.process.started_early`).

    A line on its stdout that is not a JSON-RPC message and names no request
    id (a banner, a stray ``print``, a log record written as JSON) is skipped:
    it goes to ``stderr`` too, where it belonged, and the first one is logged
    as a warning (logger ``mcp_sync.transports.stdio``). Such a line never
    fails the connection and is never answered. A line that names an id is
    taken for a broken message with that id: a response whose ``result`` or
    ``error`` is malformed fails the pending call it answers at once (an
    :class:`~mcp_sync.errors.MCPProtocolError`); anything else is answered
    with an error carrying the id.

    Closing ends the process as the spec describes: stdin is closed, then
    after ``shutdown_timeout / 2`` SIGTERM goes to the group, then after as
    long again SIGKILL. That holds whatever state the connection is in: when
    the server ended it first (closing its stdout while it keeps running,
    say), :meth:`close` waits for the same stages, run by the thread that met
    the end, and returns once the process and the transport's threads are gone.

    >>> transport = ProcessTransport([sys.executable, "-c", "pass"])
    >>> transport.close()
    >>> transport.returncode
    0
    """

    def __init__(
        self,
        command: str | Sequence[str],
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrTarget = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        shutdown_timeout: float = 4.0,
        stderr_lines: int = 20,
        process: subprocess.Popen[bytes] | None = None,
    ) -> None:
        # Loaded here, not with the module: a stdio server frames its own stdin
        # and stdout with StdioTransport and never starts a process, so its
        # start-up does without subprocess and shlex.
        from . import process as processes

        self.argv = processes.server_argv(command, args)
        self.command_line = processes.command_line(self.argv)
        self.shutdown_timeout = shutdown_timeout
        try:
            self.process = (
                process
                if process is not None
                else processes.start_server(self.argv, env=env, inherit_env=inherit_env, cwd=cwd)
            )
        except (OSError, ValueError) as exc:
            raise MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                f"could not start server `{self.command_line}`: {exc}",
                cause=exc,
                context={"command": self.command_line},
            ) from exc
        assert self.process.stdin is not None and self.process.stdout is not None
        super().__init__(self.process.stdout, self.process.stdin, max_line_bytes=max_line_bytes)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self.stray_lines = 0
        """How many lines of the server's stdout were skipped for not being JSON-RPC messages."""
        self._stderr_write = _stderr_writer(stderr)
        self._report_lock = threading.Lock()  # stderr lines and stray stdout lines come from two threads
        self._stderr_reader = threading.Thread(target=self._pump_stderr, name="mcp-sync-stdio-stderr", daemon=True)
        self._stderr_reader.start()
        # Popen.wait(timeout) polls with growing sleeps; a thread blocked in
        # wait() learns of the exit at once, which keeps close() fast.
        self._exited = threading.Event()
        self._waiter = threading.Thread(target=self._wait_for_exit, name="mcp-sync-stdio-waiter", daemon=True)
        self._waiter.start()

    @property
    def returncode(self) -> int | None:
        """The process's exit code, once it has exited."""
        return self.process.returncode

    def _wait_for_exit(self) -> None:
        self.process.wait()
        self._exited.set()

    def _pump_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            self.stderr_tail.append(line.rstrip("\n"))
            self._report(line)

    def _report(self, line: str) -> None:
        """Pass a line of the server's output to the stderr target."""
        try:
            with self._report_lock:
                self._stderr_write(line)
        except Exception:
            log.exception("the stderr target of `%s` failed", self.command_line)

    def _stray(self, line: bytes) -> bool:
        """Not a JSON-RPC message on the server's stdout: to the stderr target (the first also to the log)."""
        text = line.decode("utf-8", errors="replace")
        self.stray_lines += 1
        if self.stray_lines == 1:
            log.warning(
                "server `%s` wrote a line that is not a JSON-RPC message to stdout; skipping it "
                "(and any more, which go to its stderr target): %.200s",
                self.command_line,
                text,
            )
        self._report(text + "\n")
        return True

    def _owns(self, thread: threading.Thread) -> bool:
        return thread is self._stderr_reader or thread is self._waiter or super()._owns(thread)

    def _describe_close(self, reason: BaseException | None) -> BaseException | None:
        """The process went away: say how, with its exit code and last stderr lines."""
        self._exited.wait(1.0)
        self._stderr_reader.join(timeout=0.5)
        code = self.process.returncode
        status = "is still running" if code is None else f"exited with code {code}"
        tail = "\n".join(self.stderr_tail)
        detail = f"; stderr:\n{tail}" if tail else ""
        return MCPTransportError(
            MCP_CODES.TRANSPORT_CLOSED,
            f"server `{self.command_line}` {status}{detail}",
            cause=reason,
            context={"command": self.command_line, "exit_code": code, "stderr": tail},
        )

    def _shutdown(self) -> None:
        from .process import signal_group  # (loaded by __init__ already)

        process = self.process
        half = self.shutdown_timeout / 2
        self._revoke_lend()  # (the output is read on while the process ends)
        with contextlib.suppress(OSError, ValueError):
            self._writable.close()
        if not self._exited.wait(half):
            signal_group(self.process, signal.SIGTERM)
            if not self._exited.wait(half):
                signal_group(self.process, signal.SIGKILL)
        self._waiter.join()
        signal_group(self.process, signal.SIGTERM)  # grandchildren left in the group
        super()._shutdown()
        self._stderr_reader.join(timeout=1.0)
        with contextlib.suppress(OSError, ValueError):
            assert process.stderr is not None
            process.stderr.close()
