"""Test helpers: a connected in-memory client/server pair, a wire recorder, a free loopback port, a kernel spec,
a call bounded in time, the processes running."""

from __future__ import annotations

import gc
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from mcp_sync.client.core import MCPClient
from mcp_sync.protocol.jsonrpc import InvalidMessage, encode_message
from mcp_sync.runtime.http import ClosableAdapter
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.runtime.transport import MessageHandler, ReadingWait
from mcp_sync.server.core import MCPServer
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import JSONRPCMessage

T = TypeVar("T")


class RecordingTransport:
    """Wraps a transport and records every message sent and received, as wire JSON."""

    def __init__(self, inner: InMemoryTransport) -> None:
        self.inner = inner
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self.inner.closed

    @property
    def handoff_reading(self) -> Callable[[], None] | None:
        return self.inner.handoff_reading

    @property
    def pass_reading(self) -> Callable[[threading.Thread], None] | None:
        return self.inner.pass_reading

    @property
    def wait_reading(self) -> ReadingWait | None:
        return self.inner.wait_reading

    @property
    def handshake_only(self) -> bool:
        return self.inner.handshake_only

    def send(self, message: JSONRPCMessage) -> None:
        with self._lock:
            self.sent.append(encode_message(message))
        self.inner.send(message)

    def send_routed(self, message: JSONRPCMessage, request: RequestContext | None, once: str | None = None) -> None:
        with self._lock:
            self.sent.append(encode_message(message))
        self.inner.send_routed(message, request, once)

    def send_batch(self, messages: Sequence[JSONRPCMessage]) -> None:
        with self._lock:
            self.sent.extend(encode_message(message) for message in messages)
        self.inner.send_batch(messages)

    def on_message(self, handler: MessageHandler) -> Callable[[], None]:
        def record(message: JSONRPCMessage | InvalidMessage) -> None:
            if not isinstance(message, InvalidMessage):
                with self._lock:
                    self.received.append(encode_message(message))
            handler(message)

        return self.inner.on_message(record)

    def on_close(self, handler: Callable[[BaseException | None], None]) -> Callable[[], None]:
        return self.inner.on_close(handler)

    def close(self) -> None:
        self.inner.close()


def connect_pair(server: MCPServer, client: MCPClient | None = None, **connect: Any) -> MCPClient:
    """Start ``server`` on one end of an in-memory pair and connect a client to the other."""
    client = client or MCPClient()
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    client.connect(client_end, **connect)
    return client


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def kernel_spec(directory: Path, name: str, pythonpath: Iterable[str | None]) -> dict[str, str]:
    """Write a Jupyter kernel spec for this Python's ipykernel under ``directory``; the environment that finds it.

    The caller sets the returned variables (``JUPYTER_PATH`` and friends, and
    ``PYTHONPATH`` from the non-empty entries of ``pythonpath``) for the kernel it starts.
    """
    spec = directory / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name, "language": "python"}))
    return {
        "JUPYTER_PATH": str(directory / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(directory / "runtime"),
        "IPYTHONDIR": str(directory / "ipython"),
        "PYTHONPATH": os.pathsep.join(filter(None, pythonpath)),
    }


def end_raw_peer(process: subprocess.Popen[str], reader: threading.Thread, timeout: float) -> None:
    """End a server process a test drives by hand: stdin closed, waited for (killed if it lingers), reader joined."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    try:
        process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=timeout)
        reader.join(timeout)
        process.stdout.close()


def finish_within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result (or exception), made on a thread of its own, if it ends within ``seconds``; else a failure.

    For a call that would hang: the test fails at the bound instead of waiting
    for it (the thread, a daemon, ends when the test closes what holds it).
    """
    outcome: list[Any] = []
    ended = threading.Event()

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)
        finally:
            ended.set()

    threading.Thread(target=run, name="test-finish-within", daemon=True).start()
    assert ended.wait(seconds), f"still not finished after {seconds} s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return cast("T", outcome[0])


class PutHookAdapter(ClosableAdapter):
    """A ClosableAdapter whose pools call :attr:`on_put` once, just after a connection is back in the pool
    (where urllib3's release_conn has put it and not yet marked its response released)."""

    on_put: Callable[[Any], None] | None = None

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        adapter = self
        base = self.poolmanager.pool_classes_by_scheme["http"]

        class Hooked(base):  # type: ignore[valid-type,misc]
            def _put_conn(self, conn: Any) -> None:
                super()._put_conn(conn)
                hook, adapter.on_put = adapter.on_put, None  # once
                if hook is not None:
                    hook(conn)

        self.poolmanager.pool_classes_by_scheme = {**self.poolmanager.pool_classes_by_scheme, "http": Hooked}


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` (every millisecond) until it holds; fail the test if ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.001)


def processes() -> Iterator[tuple[int, str, int, int]]:
    """Every process in ``/proc``: its pid, state, parent's pid and group id (one that ends while read is left out)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended while we looked
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after its last ")".
        state, parent, group = text.rpartition(")")[2].split()[:3]
        yield int(text.split(" ", 1)[0]), state, int(parent), int(group)


def children() -> set[int]:
    """This process's child processes, zombies included."""
    return {pid for pid, _, parent, _ in processes() if parent == os.getpid()}


def current_frames() -> dict[int, Any]:
    """``sys._current_frames()``, with the garbage collector held off while it runs.

    CPython 3.11 builds the frame objects holding the interpreter's thread list lock; a collection
    started there runs finalizers that may wait for another thread, which waits for that lock: the
    whole process hangs, no timeout firing (seen: a test polling a reader's stack, 1 run in 20).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        if enabled:
            gc.enable()


class KeepAliveJSONHandler(http.server.BaseHTTPRequestHandler):
    """A scripted HTTP/1.1 server's handler (keep-alive: its connections go back to a client's pool and are
    reused), quiet, with :meth:`_send` for a JSON answer; subclasses write ``do_POST``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
