"""Serving an :class:`~mcp_sync.server.MCPServer` on this process's own stdin and stdout.

Hosting, not transport: :func:`serve_stdio` isolates file descriptors 0 and 1
from stray prints, installs SIGTERM/SIGINT handlers and drains so that every
accepted request is answered; the framing is
:class:`~mcp_sync.transports.stdio.StdioTransport`'s.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from ..transports.stdio import DEFAULT_MAX_LINE_BYTES, StdioTransport

if TYPE_CHECKING:
    from .core import MCPServer


def serve_stdio(server: MCPServer, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, drain_timeout: float = 0.5) -> None:
    """Serve ``server`` on this process's stdin and stdout until stdin closes or SIGTERM/SIGINT.

    Then running handlers are cancelled and get ``drain_timeout`` seconds to
    answer; requests still unanswered get an error, so no client waits in vain.

    While it serves, the protocol owns duplicates of file descriptors 0 and
    1: ``print()`` and anything else written to fd 1 goes to stderr, and
    reading stdin gives end-of-file, so tools cannot corrupt the protocol.
    Everything is restored before it returns.

    At interpreter exit the objects alive then are frozen (:func:`gc.freeze`)
    before Python tears its modules down, so that the exit does not walk the
    graph of every class, schema and validator built at import: a client's
    ``close()`` waits for the server process to end, and that walk was most
    of the wait (about 45 ms of 55 for a server importing mcp_sync). Memory
    is freed by reference counting as usual; only reference cycles still
    alive at exit are left to the operating system.
    """
    # Registered at most once however often this runs; atexit handlers run
    # last-registered first, so handlers registered before still run after it.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    saved_fds = os.dup(0), os.dup(1)
    saved_streams = sys.stdin, sys.stdout
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = sys.stderr
    transport = StdioTransport(protocol_in, protocol_out, max_line_bytes=max_line_bytes, close_on_eof=False)
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, lambda *_: transport.input_ended.set())
    try:
        session = server.start(transport)
        transport.input_ended.wait()
        session.dispatcher.drain(drain_timeout)
        session.close()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        sys.stdin, sys.stdout = saved_streams
        os.dup2(saved_fds[0], 0)
        os.dup2(saved_fds[1], 1)
        for fd in saved_fds:
            os.close(fd)
