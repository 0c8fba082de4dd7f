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

__all__ = ["Trickler"]


class Trickler:
    """Answers every request with ``body`` trickled ``pace`` s per byte (see the module docstring)."""

    def __init__(
        self, body: bytes, *, pace: float = 0.0, stall: bool = False, head_pace: float = 0.0, length: bool = True
    ) -> None:
        self.body, self.pace, self.stall, self.head_pace = body, pace, stall, head_pace
        self.head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        self.head += f"Content-Length: {len(body)}\r\n\r\n".encode() if length else b"Connection: close\r\n\r\n"
        self.sent = 0
        """Bytes of body sent so far, over all answers."""
        self.head_sent = 0
        """Bytes of status line and headers sent so far, over all answers."""
        self.requests = 0
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, name="test-trickler")
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            with connection:
                self._answer(connection)

    def _answer(self, connection: socket.socket) -> None:
        connection.settimeout(5)
        received = b""
        try:
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            head, _, body = received.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            while length is not None and len(body) < int(length.group(1)):
                body += connection.recv(65536)  # read it all: closing on unread bytes resets the connection
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
        except OSError:
            return  # the client hung up

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._listener.close()
