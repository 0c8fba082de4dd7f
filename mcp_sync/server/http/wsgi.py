"""An embedded, dependency-free, thread-per-connection WSGI server.

:class:`WSGIServer` runs any PEP 3333 application over HTTP/1.1 with
keep-alive, chunked request bodies and chunked, flushed-per-chunk responses,
so Server-Sent Events reach the client while the application is still
producing them. ``wsgiref`` cannot do that (HTTP/1.0, no keep-alive); a
production server (gunicorn, waitress) can host the same application.

Each connection is served by its own daemon thread named
``mcp-sync-http-conn``; the accept loop runs in ``mcp-sync-http-server``.
:meth:`WSGIServer.close` stops both and joins them.

>>> import http.client
>>> def app(environ, start_response):
...     start_response("200 OK", [("Content-Type", "text/plain")])
...     return [b"hello from ", environ["PATH_INFO"].encode()]
>>> with WSGIServer(app) as server:
...     connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
...     connection.request("GET", "/greeting")
...     connection.getresponse().read()
...     connection.close()
b'hello from /greeting'
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import logging
import re
import selectors
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes, urlsplit

from ...protocol.headers import TOKEN

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import WSGIApplication

__all__ = [
    "CONNECTION_SOCKET",
    "MAX_CONNECTIONS",
    "WRITE_FROM_ANY_THREAD",
    "ClientDisconnected",
    "RequestBodyError",
    "WSGIServer",
    "serve",
]

log = logging.getLogger(__name__)

WRITE_FROM_ANY_THREAD = "mcp_sync.write_from_any_thread"
"""An environ key this server sets (``True``): the application may call ``start_response`` and its ``write()``
from another thread while the application call is still running, provided the calls do not overlap and end
before it returns. PEP 3333 neither grants nor forbids it; an application that relies on it checks for the key."""
CONNECTION_SOCKET = "mcp_sync.connection_socket"
"""An environ key this server sets: the socket of the request's connection, which the application may watch (with
``MSG_PEEK``, never reading or writing it) to learn that the client hung up while it works on the answer."""
MAX_CONNECTIONS = 256
"""Connections served at once by default; each holds a thread (an open stream holds its connection)."""
_MAX_LINE = 65536
"""The longest request line or header line, as in ``http.server``."""
_MAX_HEADERS = 100
"""The most header lines in one request, as in ``http.client``."""
_DRAIN_LIMIT = 1 << 20
"""Unread request body bytes discarded to keep a connection alive; beyond this it is closed."""
_LINGER_READS = 64
"""At most this many reads (of 64 KiB) of unwanted input while closing a connection."""
_LINGER_TIMEOUT = 2.0
"""How long a closing connection waits for more unwanted input (at most ``idle_timeout``)."""
_ACCEPT_RETRY_DELAY = 0.1
"""Pause after a failed accept() (out of file descriptors, say) before trying again."""
_SWEEP_INTERVAL = 1.0
"""How often, at most, the accept loop looks for connections past their read deadline (seconds)."""

_BLANK_LINES = (b"\r\n", b"\n")
_NO_DEADLINE = float("inf")
_TOKEN = TOKEN.pattern.encode("ascii")
"""A field-name token, as bytes: the request line and headers are parsed before any decoding."""
_REQUEST_LINE = re.compile(rb"(%s) ([^\x00-\x20\x7f]+) (HTTP/[0-9]\.[0-9])\r?\n" % _TOKEN)
_HEADER_LINE = re.compile(rb"(%s):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*\r?\n" % _TOKEN)
_HEADER_BLOCK_LINE = re.compile(rb"^(%s):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*\r\n" % _TOKEN, re.MULTILINE)
"""A whole CRLF header line, found at a line start of a header block (a value holds no CR or LF)."""
_CHUNK_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(;[^\r\n]*)?\r?\n")
_DIGITS = re.compile(r"[0-9]{1,18}")
_STATUS = re.compile(r"[1-9][0-9][0-9] [^\x00-\x08\x0a-\x1f\x7f]*")
_HEADER_NAME = TOKEN
_BAD_HEADER_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_HOP_BY_HOP = frozenset(
    [
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    ]
)


class ClientDisconnected(ConnectionError):
    """The client went away (or stopped reading) while the response was being sent.

    Raised by the ``write()`` callable of ``start_response``; when a response
    iterable is being sent, the server stops iterating and closes it instead.
    """


class RequestBodyError(OSError):
    """The request body is malformed or ended early; raised by ``wsgi.input`` reads.

    An application that lets it propagate gets a ``400 Bad Request`` response.
    """


_date_cache: tuple[int, str] = (0, "")


def _date_header() -> str:
    """The ``Date`` header line, formatted once per second."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, f"Date: {email.utils.formatdate(now, usegmt=True)}\r\n")
    return _date_cache[1]


@functools.lru_cache(maxsize=512)
def _environ_key(raw_name: bytes) -> str:
    """The environ key of a header field name (``Content-Type`` -> ``CONTENT_TYPE``, others ``HTTP_...``).

    Cached: a client sends the same few names with every request, so each is
    worked out once (the bound keeps made-up names from growing it).
    """
    name = raw_name.decode("latin-1").upper().replace("-", "_")
    return name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + name


@functools.lru_cache(maxsize=256)
def _response_header_name(name: str) -> str | None:
    """A response header's name in lower case, or ``None`` if it is not a valid name (each checked once)."""
    return name.lower() if _HEADER_NAME.fullmatch(name) else None


@functools.lru_cache(maxsize=64)
def _keep_alive(connection: str | None, http11: bool) -> bool:
    """Whether a request with this ``Connection`` header keeps its connection open (HTTP/1.1 does by default)."""
    tokens = {token.strip() for token in connection.lower().split(",")} if connection else set()
    return ("close" not in tokens) if http11 else ("keep-alive" in tokens)


def _error_response(code: int, detail: str) -> bytes:
    """A complete plain-text error response that closes the connection."""
    reason = HTTPStatus(code).phrase
    body = f"{code} {reason}: {detail}\n".encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{_date_header()}\r\n"
    )
    return head.encode("latin-1") + body


class _Input:
    """``wsgi.input``: a request body that reads as end-of-file where the body ends.

    Subclasses provide ``_read_some``; reads never block past the body.
    ``failed`` tells whether a read found the body malformed or cut short:
    the connection cannot carry another request then.
    """

    __slots__ = ("_ended", "failed")

    def __init__(self, ended: Callable[[], None]) -> None:
        self.failed = False
        self._ended = ended
        """Called once the body is read to its end: the connection's read deadline is lifted."""

    def _fail(self, reason: str) -> RequestBodyError:
        """The error to raise for a malformed body; the connection is marked as not reusable."""
        self.failed = True
        return RequestBodyError(reason)

    _read_some: Callable[[int, bool], bytes]
    """Up to ``limit`` (> 0) bytes of the body, ending at a newline if ``line``; ``b""`` at its end."""

    def read(self, size: int | None = -1, /) -> bytes:
        """Read up to ``size`` bytes (all the rest if negative or ``None``)."""
        left = sys.maxsize if size is None or size < 0 else size
        parts = []
        while left > 0 and (data := self._read_some(left, False)):
            parts.append(data)
            left -= len(data)
        return b"".join(parts)

    def readline(self, size: int | None = -1, /) -> bytes:
        """Read one line, newline included, of at most ``size`` bytes if that is not negative."""
        left = sys.maxsize if size is None or size < 0 else size
        parts = []
        while left > 0 and (data := self._read_some(left, True)):
            parts.append(data)
            left -= len(data)
            if data.endswith(b"\n"):
                break
        return b"".join(parts)

    def readlines(self, hint: int = -1, /) -> list[bytes]:
        """Read lines until the end, or until their total size reaches ``hint`` if that is positive."""
        lines = []
        total = 0
        while line := self.readline():
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                break
        return lines

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")

    def drain(self) -> bool:
        """Discard what the application left unread; whether the body was read to its end."""
        budget = _DRAIN_LIMIT
        try:
            while data := self._read_some(budget, False):
                budget -= len(data)
                if budget <= 0:
                    return False
        except OSError:
            return False
        return True


class _LengthInput(_Input):
    """A body of ``Content-Length`` bytes."""

    __slots__ = ("_left", "_rfile")

    def __init__(self, rfile: Any, length: int, ended: Callable[[], None]) -> None:
        super().__init__(ended)
        self._rfile = rfile
        self._left = length
        if not length:
            ended()

    def _read_some(self, limit: int, line: bool) -> bytes:
        count = min(limit, self._left)
        if count == 0:
            return b""
        data: bytes | None = self._rfile.readline(count) if line else self._rfile.read(count)
        if not data:  # None: the read ran out of time
            raise self._fail(f"the connection ended {self._left} bytes before the end of the request body")
        self._left -= len(data)
        if not self._left:
            self._ended()
        return data


class _ChunkedInput(_Input):
    """A body sent with ``Transfer-Encoding: chunked``, decoded."""

    __slots__ = ("_done", "_extensions", "_left", "_rfile", "_started")

    def __init__(self, rfile: Any, ended: Callable[[], None]) -> None:
        super().__init__(ended)
        self._rfile = rfile
        self._left = 0
        self._started = False
        self._done = False
        # What chunk extensions may still take, all chunks together: they are skipped, not counted as body, so
        # without a bound a body of one-byte chunks, each with a long extension, would be read for ever.
        self._extensions = _MAX_LINE

    def _line(self) -> bytes:
        line: bytes = self._rfile.readline(_MAX_LINE + 1)
        if not line.endswith(b"\n") or len(line) > _MAX_LINE:
            raise self._fail("a chunked request body ended early or has a line that is too long")
        return line

    def _next_chunk(self) -> None:
        """Read up to the data of the next chunk; after the last one, read the trailer."""
        if self._started and self._line() not in _BLANK_LINES:
            raise self._fail("chunk data is not followed by CRLF")
        self._started = True
        match = _CHUNK_SIZE_LINE.fullmatch(self._line())
        if match is None:
            raise self._fail("malformed chunk size line")
        self._extensions -= len(match[2] or b"")
        if self._extensions < 0:
            raise self._fail("too many chunk extensions")
        self._left = int(match[1], 16)
        if self._left == 0:
            self._done = True
            # Trailer fields are not passed on; as many as header lines are allowed (a client
            # could send them for ever, and the read would go on for ever).
            for _ in range(_MAX_HEADERS + 1):
                if self._line() in _BLANK_LINES:
                    self._ended()
                    return
            raise self._fail("too many trailer fields")

    def _read_some(self, limit: int, line: bool) -> bytes:
        if self._left == 0 and not self._done:
            self._next_chunk()
        count = min(limit, self._left)
        if count == 0:
            return b""
        data: bytes | None = self._rfile.readline(count) if line else self._rfile.read(count)
        if not data:  # None: the read ran out of time
            raise self._fail("the connection ended inside a chunk of the request body")
        self._left -= len(data)
        return data


class _ResponseWriter:
    """The response side of one request: what ``start_response`` stored and what was sent."""

    __slots__ = (
        "body",
        "body_allowed",
        "chunked",
        "code",
        "dated",
        "head_only",
        "headers",
        "http11",
        "keep_alive",
        "length",
        "sent",
        "sock",
        "status",
    )

    def __init__(self, sock: socket.socket, http11: bool, head_only: bool, keep_alive: bool, body: _Input) -> None:
        self.sock = sock
        self.body = body
        self.http11 = http11
        self.head_only = head_only
        self.keep_alive = keep_alive
        self.body_allowed = not head_only
        self.status: str | None = None
        self.code = 0
        self.headers: list[tuple[str, str]] = []
        self.length: int | None = None
        self.sent = False
        self.chunked = False
        self.dated = False

    def start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None, /
    ) -> Callable[[bytes], object]:
        """PEP 3333's ``start_response``: check and store the status and headers."""
        error = None if exc_info is None else exc_info[1]
        if error is None:
            if self.status is not None:
                raise RuntimeError("start_response() was called twice without exc_info")
        elif self.sent:
            raise error.with_traceback(error.__traceback__)  # too late to replace the head
        if not _STATUS.fullmatch(status):
            raise ValueError(f"invalid status line {status!r}")
        length = None
        dated = False
        for name, value in headers:
            lower = _response_header_name(name)
            if lower is None or _BAD_HEADER_VALUE.search(value):
                raise ValueError(f"invalid response header {name!r}: {value!r}")
            if lower in _HOP_BY_HOP:
                raise ValueError(f"{name} is a hop-by-hop header, which a WSGI application must not set")
            if lower == "content-length":
                if not _DIGITS.fullmatch(value):
                    raise ValueError(f"invalid Content-Length {value!r}")
                length = int(value)
            elif lower == "date":
                dated = True
        self.status = status
        self.code = int(status[:3])
        self.headers = headers
        self.length = length
        self.dated = dated
        return self.write

    def write(self, data: bytes) -> None:
        """PEP 3333's ``write()`` callable: send ``data`` at once."""
        if data:
            self.send(data)

    def _head(self, total: int | None) -> bytes:
        """The status line and headers, choosing how the body is delimited."""
        if self.status is None:
            raise RuntimeError("the application produced a body before calling start_response()")
        self.sent = True
        parts = [f"HTTP/1.1 {self.status}\r\n"]
        parts += [f"{name}: {value}\r\n" for name, value in self.headers]
        if self.code < 200 or self.code in (204, 304):
            self.body_allowed = False
        elif self.length is None:
            if total is not None:
                parts.append(f"Content-Length: {total}\r\n")
                self.length = total
            elif self.http11:
                parts.append("Transfer-Encoding: chunked\r\n")
                self.chunked = True
            else:
                self.keep_alive = False  # an HTTP/1.0 body without a length ends when the connection does
        if not self.body_allowed:
            self.length = None
        if self.body.failed:
            self.keep_alive = False  # the application answered a malformed body: the rest of the input is lost
        if not self.keep_alive:
            parts.append("Connection: close\r\n")
        elif not self.http11:
            parts.append("Connection: keep-alive\r\n")
        if not self.dated:
            parts.append(_date_header())
        parts.append("\r\n")
        return "".join(parts).encode("latin-1")

    def send(self, data: bytes, total: int | None = None) -> None:
        """Send a piece of the body (``total`` is the whole body's size, if known), after the head."""
        head = b"" if self.sent else self._head(total)
        if not self.body_allowed:
            data = b""
        elif self.chunked:
            data = b"%x\r\n%b\r\n" % (len(data), data)
        elif self.length is not None:
            if len(data) > self.length:
                self._sendall(head + data[: self.length])
                self.length = 0
                self.keep_alive = False
                raise ValueError("the application sent more bytes than its Content-Length")
            self.length -= len(data)
        self._sendall(head + data)

    def finish(self) -> None:
        """End the response: the head if nothing was sent, the last chunk if chunked."""
        if not self.sent:
            self.send(b"", 0)
        elif self.chunked and self.body_allowed:
            self._sendall(b"0\r\n\r\n")
        if self.length:
            log.warning("the application sent %d bytes fewer than its Content-Length; closing", self.length)
            self.keep_alive = False

    def _sendall(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as error:
            raise ClientDisconnected(f"the client went away: {error}") from error


class _Connection:
    """One client connection, served by its own thread."""

    __slots__ = ("address", "base", "deadline", "rfile", "server", "sock")

    def __init__(self, server: WSGIServer, sock: socket.socket, address: Any) -> None:
        self.server = server
        self.sock = sock
        self.address = address
        self.rfile = sock.makefile("rb")
        self.base: dict[str, Any] = {}
        self.deadline = _NO_DEADLINE
        """When the input awaited now (the next request's head, a body, lingering input) is overdue: the
        accept loop then shuts the reading side down (see :meth:`WSGIServer._sweep`); ``inf`` when none is."""

    def end_reading(self) -> None:
        """Nothing more is awaited from the client for now: lift the read deadline."""
        self.deadline = _NO_DEADLINE

    def run(self) -> None:
        server = self.server
        try:
            # A socket left blocking, its reads and writes bounded by the kernel: Python's own timeout would
            # poll() before each recv() and send(), two more system calls (and GIL hand-offs) per request.
            # A read that runs out of time then reads as the end of the input, a write as a failure.
            seconds = server.idle_timeout
            bound = struct.pack("ll", int(seconds), int(seconds % 1 * 1_000_000))  # struct timeval
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, bound)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, bound)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.base = {
                "SCRIPT_NAME": "",
                "SERVER_NAME": server.host,
                "SERVER_PORT": str(server.port),
                "SERVER_SOFTWARE": "mcp-sync",
                "REMOTE_ADDR": self.address[0],
                "REMOTE_PORT": str(self.address[1]),
                "wsgi.version": (1, 0),
                "wsgi.url_scheme": "http",
                "wsgi.errors": sys.stderr,
                "wsgi.multithread": True,
                "wsgi.multiprocess": False,
                "wsgi.run_once": False,
                "wsgi.input_terminated": True,
                WRITE_FROM_ANY_THREAD: True,
                CONNECTION_SOCKET: self.sock,
            }
            while self._handle_one():
                pass
            self._linger()
        except OSError as error:  # idle timeout, reset, or shut down by close()
            log.debug("connection from %s ended: %r", self.address, error)
        finally:
            server.forget(self)

    def shutdown(self) -> None:
        """Wake the thread: reads see end-of-file and writes fail (called under the server lock)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def _linger(self) -> None:
        """Half-close, then read what the client still sends, so that closing with
        unread input does not reset the connection before the client reads our response."""
        sock = self.sock
        linger = min(_LINGER_TIMEOUT, self.server.idle_timeout)
        self.deadline = time.monotonic() + linger
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(linger)
            for _ in range(_LINGER_READS):
                if not sock.recv(65536):
                    break

    def _reject(self, code: int, detail: str) -> bool:
        self.sock.sendall(_error_response(code, detail))
        return False

    @staticmethod
    def _header_block(rfile: Any) -> list[tuple[bytes, bytes]] | None:
        """The header fields, read at once when the whole header block is buffered already; else ``None``.

        A client usually sends its request head in one segment: one search of
        the buffer and one regular expression over the block replace a read
        and a match per line. Anything unusual (a bare LF, a malformed or
        overlong line, too many fields, a block not yet received) is left in
        the buffer for the line-by-line reading, which answers it exactly.
        """
        buffered: bytes = rfile.peek()
        end = buffered.find(b"\r\n\r\n", 0, _MAX_LINE)
        if end < 0:
            return None
        block = buffered[: end + 2]
        fields: list[tuple[bytes, bytes]] = _HEADER_BLOCK_LINE.findall(block)
        # Each found line starts a line and ends with its CRLF: as many as LFs means every line is well formed.
        if len(fields) != block.count(b"\n") or len(fields) > _MAX_HEADERS:
            return None
        rfile.read(end + 4)
        return fields

    @staticmethod
    def _header(environ: dict[str, Any], raw_name: bytes, raw_value: bytes) -> None:
        """Put one header field in ``environ`` (a repeated field joins the earlier ones)."""
        if b"_" in raw_name:
            return  # it would be confused with its dashed twin in environ
        key = _environ_key(raw_name)
        value = raw_value.decode("latin-1")
        if key in environ:
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value

    def _handle_one(self) -> bool:
        """Serve one request; whether to keep the connection open for another."""
        rfile = self.rfile
        # Each read is bounded by idle_timeout (SO_RCVTIMEO), but a client trickling a byte at a time would
        # hold the connection for ever: the whole head, and then the whole body, must come within it.
        self.deadline = time.monotonic() + self.server.idle_timeout
        line = rfile.readline(_MAX_LINE + 1)
        while line in _BLANK_LINES:  # a robust server ignores empty lines before a request
            line = rfile.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            return self._reject(414, "request line too long")
        if not line.endswith(b"\n"):
            return False  # the client closed the connection
        match = _REQUEST_LINE.fullmatch(line)
        if match is None:
            return self._reject(400, "malformed request line")
        method, target, version = match.groups()
        if version == b"HTTP/1.1":
            http11 = True
        elif version == b"HTTP/1.0":
            http11 = False
        else:
            return self._reject(505, "only HTTP/1.0 and HTTP/1.1 are supported")

        environ = self.base.copy()
        fields = self._header_block(rfile)
        if fields is not None:
            for raw_name, raw_value in fields:
                self._header(environ, raw_name, raw_value)
        count = 0
        while fields is None and (line := rfile.readline(_MAX_LINE + 1)) not in _BLANK_LINES:
            if len(line) > _MAX_LINE:
                return self._reject(431, "header line too long")
            if not line.endswith(b"\n"):
                return False
            count += 1
            if count > _MAX_HEADERS:
                return self._reject(431, "too many headers")
            header = _HEADER_LINE.fullmatch(line)
            if header is None:
                return self._reject(400, "malformed header line")
            self._header(environ, *header.groups())

        if http11 and "HTTP_HOST" not in environ:
            return self._reject(400, "an HTTP/1.1 request needs a Host header")
        keep_alive = _keep_alive(environ.get("HTTP_CONNECTION"), http11)

        encoding = environ.get("HTTP_TRANSFER_ENCODING")
        length = environ.get("CONTENT_LENGTH")
        body: _Input
        if encoding is not None:
            if encoding.strip().lower() != "chunked":
                return self._reject(501, "only the chunked transfer coding is supported")
            if length is not None:
                return self._reject(400, "both Content-Length and Transfer-Encoding")
            self.deadline = time.monotonic() + self.server.idle_timeout
            body = _ChunkedInput(rfile, self.end_reading)
        elif length is None:
            body = _LengthInput(rfile, 0, self.end_reading)
        elif _DIGITS.fullmatch(length):
            self.deadline = time.monotonic() + self.server.idle_timeout
            body = _LengthInput(rfile, int(length), self.end_reading)
        else:
            return self._reject(400, "invalid Content-Length")
        if http11 and environ.get("HTTP_EXPECT", "").lower() == "100-continue":
            self.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

        if target.startswith(b"/"):
            path, _, query = target.partition(b"?")
        else:  # absolute-form (sent to proxies) or "*"
            parts = urlsplit(target)
            path, query = parts.path or b"/", parts.query
        environ["REQUEST_METHOD"] = method.decode("latin-1")
        environ["PATH_INFO"] = (unquote_to_bytes(path) if b"%" in path else path).decode("latin-1")
        environ["QUERY_STRING"] = query.decode("latin-1")
        environ["REQUEST_URI"] = target.decode("latin-1")
        environ["SERVER_PROTOCOL"] = version.decode("latin-1")
        environ["wsgi.input"] = body

        writer = _ResponseWriter(self.sock, http11, method == b"HEAD", keep_alive and not self.server.closing, body)
        if not self._respond(environ, writer):
            return False
        return writer.keep_alive and body.drain()

    def _respond(self, environ: dict[str, Any], writer: _ResponseWriter) -> bool:
        """Run the application and send its response; False if the connection must close."""
        result: Iterable[bytes] | None = None
        try:
            result = self.server.app(environ, writer.start_response)
            if isinstance(result, (list, tuple)):
                whole = b"".join(result)
                writer.send(whole, len(whole))
            else:
                for data in result:
                    if data:
                        writer.send(data)
                        if not writer.body_allowed:
                            break  # a HEAD request, or a status without a body: the head is out
            writer.finish()
            return True
        except ClientDisconnected as error:
            log.debug("%s", error)
            return False
        except Exception as error:
            if isinstance(error, RequestBodyError):
                log.info("bad request body from %s: %s", self.address, error)
                code, detail = 400, str(error)
            else:
                log.exception("the WSGI application failed on %s", environ["REQUEST_URI"])
                code, detail = 500, "the application failed"
            if not writer.sent:
                self._reject(code, detail)
            return False
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    log.exception("the close() method of a WSGI response failed")


class WSGIServer:
    """A thread-per-connection HTTP/1.1 server for one WSGI application.

    The socket is bound at construction (``port=0`` picks a free port; see
    :attr:`port` and :attr:`url`). :meth:`start` serves in a background thread,
    :meth:`serve_forever` in the calling one; :meth:`close` stops serving.

    ``max_connections`` bounds the connections served at once: one more is
    answered ``503 Service Unavailable`` and closed. ``idle_timeout`` (seconds)
    closes a connection on which no whole request head arrives for that long,
    and fails a request body not received within that long after its head
    (``400``), so a client trickling its request cannot hold a connection; it
    also bounds each write, so a client that stops reading a streamed response
    is dropped after that long.

    A streaming application usually blocks between events (on a queue, say).
    :meth:`close` shuts every connection's socket down, so the next write
    fails and the response iterable is closed, but it cannot wake a blocked
    generator: register a callback with :meth:`on_close` that does.

    >>> import http.client
    >>> def app(environ, start_response):
    ...     start_response("200 OK", [("Content-Type", "text/event-stream")])
    ...     yield b"data: one\\n\\n"
    ...     yield b"data: two\\n\\n"
    >>> server = WSGIServer(app, port=0).start()
    >>> server.url.startswith("http://127.0.0.1:")
    True
    >>> connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
    >>> connection.request("GET", "/events")
    >>> response = connection.getresponse()
    >>> response.getheader("Transfer-Encoding"), response.read()
    ('chunked', b'data: one\\n\\ndata: two\\n\\n')
    >>> connection.close()
    >>> server.close()
    """

    def __init__(
        self,
        app: WSGIApplication,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = 60.0,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if not idle_timeout > 0:
            raise ValueError("idle_timeout must be positive")
        self.app = app
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family)
        self.host: str = host
        """The address the server listens on."""
        self.port: int = self._listener.getsockname()[1]
        """The port the server listens on (the one picked when ``port=0`` was asked)."""
        self.url: str = f"http://[{host}]:{self.port}" if family == socket.AF_INET6 else f"http://{host}:{self.port}"
        """The server's base URL, such as ``http://127.0.0.1:54321``."""
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._lock = threading.Lock()
        self._closing = False
        self._started = False
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._loop_done = threading.Event()
        self._connections: dict[_Connection, threading.Thread] = {}
        self._rejected: dict[socket.socket, None] = {}
        self._close_callbacks: list[Callable[[], object]] = []

    def __repr__(self) -> str:
        return f"<WSGIServer {self.url}>"

    def __enter__(self) -> WSGIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _claim(self) -> None:
        if self._started or self._closing:
            raise RuntimeError("a WSGIServer serves once: it is already started or closed")
        self._started = True

    def start(self) -> WSGIServer:
        """Serve in a background thread (``mcp-sync-http-server``); return the server.

        >>> server = WSGIServer(lambda environ, start_response: []).start()
        >>> server.close()
        """
        with self._lock:
            self._claim()
            self._thread = threading.Thread(target=self._serve_loop, name="mcp-sync-http-server", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`close` (from another thread) or Ctrl-C.

        The server is closed when this returns::

            server = WSGIServer(app, "127.0.0.1", 8000)
            print("serving on", server.url)
            server.serve_forever()
        """
        with self._lock:
            self._claim()
        try:
            self._serve_loop()
        except KeyboardInterrupt:
            log.info("interrupted; closing %s", self.url)
        finally:
            self.close()

    def on_close(self, callback: Callable[[], object]) -> Callable[[], object]:
        """Have ``callback()`` called at the start of :meth:`close`; returns it (a decorator).

        Use it to wake generators that wait for events to stream, so they end.
        A callback must not call :meth:`close` itself.

        >>> import queue
        >>> events = queue.Queue()
        >>> server = WSGIServer(lambda environ, start_response: [])
        >>> @server.on_close
        ... def wake_streams():
        ...     events.put(None)
        >>> server.close()
        >>> events.get_nowait() is None
        True
        """
        with self._lock:
            self._close_callbacks.append(callback)
        return callback

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving and join every thread; idempotent.

        In order: run the :meth:`on_close` callbacks, stop accepting, shut down
        every connection (an idle one ends at once; a response being sent fails
        at its next write and its iterable is closed), then wait for the
        threads, for at most ``timeout`` seconds in all.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            first = not self._closing
            self._closing = True
            callbacks = list(self._close_callbacks) if first else []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("an on_close callback failed")
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")
        with self._lock:
            for connection in self._connections:
                connection.shutdown()
            threads = list(self._connections.values())
        if self._started:
            self._loop_done.wait(max(0.0, deadline - time.monotonic()))
        self._listener.close()
        self._wake_reader.close()
        self._wake_writer.close()
        if self._thread is not None:
            threads.append(self._thread)
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
        running = [thread for thread in threads if thread.is_alive() and thread is not current]
        if running:
            log.warning(
                "%d thread(s) of %s still running after close(); wake blocked streams from an on_close callback",
                len(running),
                self,
            )

    @property
    def closing(self) -> bool:
        """Whether :meth:`close` began: a response sent now closes its connection instead of keeping it alive."""
        return self._closing

    def forget(self, connection: _Connection) -> None:
        """Let go of ``connection``, whose thread ended, and close its socket (its thread calls this last)."""
        with self._lock:
            del self._connections[connection]
            connection.rfile.close()
            connection.sock.close()

    def _serve_loop(self) -> None:
        selector = selectors.DefaultSelector()
        interval = min(_SWEEP_INTERVAL, self.idle_timeout / 2)
        next_sweep = time.monotonic() + interval
        try:
            selector.register(self._listener, selectors.EVENT_READ, functools.partial(self._accept, selector))
            selector.register(self._wake_reader, selectors.EVENT_READ, lambda: None)
            while not self._closing:
                for key, _ in selector.select(max(0.0, next_sweep - time.monotonic())):
                    key.data()
                if (now := time.monotonic()) >= next_sweep:
                    self._sweep(now)
                    next_sweep = now + interval
        finally:
            for sock in self._rejected:
                sock.close()
            self._rejected.clear()
            selector.close()
            self._loop_done.set()

    def _sweep(self, now: float) -> None:
        """Shut the reading side of each connection whose awaited input is overdue (a slow-loris client).

        Its thread then reads end-of-input: an unfinished head ends the connection, an unfinished body fails
        with :class:`RequestBodyError` (answered ``400``); a response being written is left to complete.
        """
        with self._lock:  # held: a connection's socket is closed under it, and its number could be reused
            overdue = [connection for connection in self._connections if connection.deadline <= now]
            for connection in overdue:
                connection.deadline = _NO_DEADLINE  # told once
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RD)
        for connection in overdue:
            log.info("closed the connection from %s: its request did not arrive in time", connection.address)

    def _accept(self, selector: selectors.BaseSelector) -> None:
        try:
            sock, address = self._listener.accept()
        except OSError as error:  # out of file descriptors, for one
            log.warning("accept() failed on %s: %s", self.url, error)
            self._stopping.wait(_ACCEPT_RETRY_DELAY)
            return
        with self._lock:
            if len(self._connections) < self.max_connections and not self._closing:
                connection = _Connection(self, sock, address)
                thread = threading.Thread(target=connection.run, name="mcp-sync-http-conn", daemon=True)
                self._connections[connection] = thread
                thread.start()
                return
        self._reject(selector, sock)

    def _reject(self, selector: selectors.BaseSelector, sock: socket.socket) -> None:
        """Answer 503 and half-close; read and drop the request until the client closes.

        At most ``max_connections`` rejected sockets linger so; the oldest is closed first.
        """
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.send(_error_response(503, "too many connections"))
            sock.shutdown(socket.SHUT_WR)
        if len(self._rejected) >= self.max_connections:
            self._drop_rejected(selector, next(iter(self._rejected)))
        self._rejected[sock] = None
        selector.register(sock, selectors.EVENT_READ, functools.partial(self._read_rejected, selector, sock))

    def _read_rejected(self, selector: selectors.BaseSelector, sock: socket.socket) -> None:
        data = b""
        with contextlib.suppress(OSError):
            data = sock.recv(65536)
        if not data:
            self._drop_rejected(selector, sock)

    def _drop_rejected(self, selector: selectors.BaseSelector, sock: socket.socket) -> None:
        # An event may still come for a socket dropped earlier in the same batch: closed, it has no fd.
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(sock)
        self._rejected.pop(sock, None)
        sock.close()


def serve(
    app: WSGIApplication,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_connections: int = MAX_CONNECTIONS,
    idle_timeout: float = 60.0,
) -> None:
    """Serve ``app`` until Ctrl-C: a blocking convenience over :class:`WSGIServer`.

    The URL is logged (logger ``mcp_sync.server.http.wsgi``, level INFO)::

        from mcp_sync.server.http.wsgi import serve
        serve(my_wsgi_app, port=8000)
    """
    server = WSGIServer(app, host, port, max_connections=max_connections, idle_timeout=idle_timeout)
    log.info("serving on %s", server.url)
    server.serve_forever()
