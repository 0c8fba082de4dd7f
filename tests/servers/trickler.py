"""A raw HTTP server on 127.0.0.1 that answers as slowly as a test says: the hostile peer of bounded reads.

Every request gets the same answer: a status line and headers (one byte
every ``head_pace`` seconds, if given), then ``body`` one byte every ``pace``
seconds (``stall=True``: no body at all, until the client hangs up;
``length=False``: no ``Content-Length``, the body ends when the connection
does). It stops sending as soon as the client hangs up or the test ends,
and counts the bytes it sent.

Example::

    slow = Trickler(b'{"keys": []}', pace=0.05)
    try:
        ...  # point a client at slow.url
        assert slow.sent < len(slow.body)
    finally:
        slow.close()
"""

from __future__ import annotations

import re
import socket
import threading

__all__ = ["RawServer", "Trickler"]


class RawServer:
    """A raw HTTP server on 127.0.0.1: one thread accepts connections, one at a time, and a subclass answers.

    Each request is read whole (head and ``Content-Length`` body: closing on
    unread bytes would reset the connection) and passed to :meth:`answer`;
    a client that hangs up ends its connection quietly.
    """

    def __init__(self, path: str = "") -> None:
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}{path}"
        self._thread = threading.Thread(target=self._serve, name=f"test-{type(self).__name__.lower()}")
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                try:
                    received = b""
                    while b"\r\n\r\n" not in received:
                        received += connection.recv(65536)
                    head, _, body = received.partition(b"\r\n\r\n")
                    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                    while length is not None and len(body) < int(length.group(1)):
                        body += connection.recv(65536)
                    self.answer(connection, head)
                except OSError:
                    pass  # the client hung up

    def answer(self, connection: socket.socket, head: bytes) -> None:
        """Answer the request whose head (request line and headers) is ``head``."""
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._listener.close()


class Trickler(RawServer):
    """Answers every request with ``body`` trickled ``pace`` s per byte (see the module docstring)."""

    def __init__(
        self, body: bytes, *, pace: float = 0.0, stall: bool = False, head_pace: float = 0.0, length: bool = True
    ) -> None:
        self.body, self.pace, self.stall, self.head_pace = body, pace, stall, head_pace
        # Connection: close, always: the server closes each connection after one answer, and a client told
        # nothing would keep it for its next request, which then meets the close (a reset, now and then).
        self.head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        self.head += f"Content-Length: {len(body)}\r\n\r\n".encode() if length else b"\r\n"
        self.sent = 0
        """Bytes of body sent so far, over all answers."""
        self.head_sent = 0
        """Bytes of status line and headers sent so far, over all answers."""
        self.requests = 0
        super().__init__()

    def answer(self, connection: socket.socket, head: bytes) -> None:
        self.requests += 1
        if not self.head_pace:
            connection.sendall(self.head)
            self.head_sent += len(self.head)
        else:
            for byte in self.head:
                connection.sendall(bytes([byte]))
                self.head_sent += 1
                if self._stop.wait(self.head_pace):
                    return
        if self.stall:
            connection.recv(1)  # until the client hangs up (or 5 s)
            return
        if not self.pace:
            connection.sendall(self.body)
            self.sent = len(self.body)
            return
        for byte in self.body:
            connection.sendall(bytes([byte]))
            self.sent += 1
            if self._stop.wait(self.pace):
                return
