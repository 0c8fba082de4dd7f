"""What both HTTP client transports share: timeouts, the ``requests`` session, SSE parsing, errors as answers."""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast

import pydantic_core
import requests
import requests.adapters
import requests.auth
import requests.structures
import requests.utils
import sseclient
import urllib3
import urllib3.exceptions

from ...protocol.errors import MCP_CODES, JsonRpcCode, MCPTransportError
from ...protocol.jsonrpc import parse_value
from ...protocol.types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCRequest,
    RequestId,
)

if TYPE_CHECKING:
    pass

POOL_SIZE = 32
"""Connections kept per host by the sessions the transports make for themselves."""
_CHUNK = 1 << 16
_SNIPPET = 200
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest body the client reads whole (bytes), as a line is bounded over stdio: a server sending without end
would otherwise fill the client's memory (at loopback speed, gigabytes within a call's timeout)."""


Timeout = float | tuple[float, float | None]
"""A :mod:`requests` timeout: seconds for connecting and for each read, or one number for both."""


DEFAULT_TIMEOUT: Timeout = (10.0, 300.0)
"""Connect and read timeouts of a POST (seconds). The read timeout bounds how long
a server may think before it starts answering a request (calls have their own timeout)."""


DEFAULT_SSE_READ_TIMEOUT = 300.0
"""How long an SSE stream may stay silent before it counts as broken (seconds); servers
send keep-alive comments more often than that."""


JOIN_TIMEOUT = 2.0
"""How long closing waits for the transport's threads to end (seconds, all together)."""


STREAM_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError, ValueError)
"""What reading an SSE stream raises when the connection breaks, times out or is shut down."""


class SSEEvent(Protocol):
    """One server-sent event, as :class:`sseclient.Event` has it (``retry`` unchecked)."""

    id: str | None
    event: str
    data: str
    retry: Any


class EventSource(Protocol):
    """The events of one SSE response."""

    def events(self) -> Iterator[SSEEvent]:
        """The events, in order, until the stream ends."""

    def close(self) -> None:
        """Stop reading."""


SSEClientFactory = Callable[[requests.Response], EventSource]
"""Makes the :class:`EventSource` of a streaming :class:`requests.Response`."""


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """The body of a streaming response, each piece as soon as it arrives.

    ``Response.iter_content`` would wait for a full buffer, or for the end, of
    a body sent without chunked encoding; ``read1`` returns what is there.
    """
    raw = response.raw
    while chunk := raw.read1(_CHUNK, decode_content=True):
        yield chunk


_LINE_END = re.compile(rb"\r\n|\r|\n")
_PARSE_BUDGET = 1 << 31
"""The most an event's lines times its bytes may be: ``sseclient`` joins an event's ``data`` lines one at a time,
in time that grows with both (an event of a million short lines would take hours)."""


class EventStream(sseclient.SSEClient):
    """The events of an SSE response, read as they arrive: :class:`sseclient.SSEClient`, its events framed here.

    ``sseclient`` parses each event's fields; finding where an event ends is
    done here, in time linear in the bytes read (``sseclient`` grows the
    event it reads one line at a time). Lines end with CR, LF or CRLF, and a
    blank line ends an event. Bytes that are not UTF-8 read as U+FFFD, as
    the SSE standard says (``sseclient`` would raise on them). An event
    without a ``data`` field is dropped, and with it the ``id`` and ``retry``
    it carries; servers following MCP prime their streams with an empty
    ``data`` field, which is kept. An event over :data:`MAX_BODY_BYTES`, or
    of so many lines for its size that its parse would cost more than
    :data:`_PARSE_BUDGET`, raises ``ValueError``: a server could otherwise
    fill the client's memory, or hold its reading thread, with one event
    that never ends.
    """

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self._pieces = _chunks(response)
        super().__init__(self._pieces)

    def close(self) -> None:
        """Stop reading: the response is closed (a read blocked on it ends)."""
        self.response.close()

    def _read(self) -> Iterator[bytes]:
        """Each event's bytes (its lines, each ended by LF), as soon as its blank line arrives."""
        partial = bytearray()  # the start of a line whose end has not come
        lines: list[bytes] = []  # the lines of the event being read
        size = 0
        after_cr = False  # the last piece ended with CR: an LF starting the next one ends no other line
        for chunk in self._pieces:
            start = 1 if after_cr and chunk.startswith(b"\n") else 0
            for end in _LINE_END.finditer(chunk, start):
                partial += chunk[start : end.start()]
                start = end.end()
                if partial:
                    size += len(partial)
                    lines.append(bytes(partial))
                    partial.clear()
                elif lines:
                    yield _event_bytes(lines)
                    lines, size = [], 0
            partial += chunk[start:]
            after_cr = chunk.endswith(b"\r")
            if size + len(partial) > MAX_BODY_BYTES:
                raise ValueError(f"the server sent an SSE event over {MAX_BODY_BYTES} bytes")
            if len(lines) * size > _PARSE_BUDGET:
                raise ValueError(
                    f"the server sent an SSE event of {len(lines)} lines in {size} bytes, too many to read"
                )
        if partial:
            lines.append(bytes(partial))
        if lines:
            yield _event_bytes(lines)


def _event_bytes(lines: list[bytes]) -> bytes:
    """One event's lines as ``sseclient`` reads them: valid UTF-8 (U+FFFD for what is not), each ended by LF."""
    return b"\n".join(lines).decode("utf-8", "replace").encode("utf-8") + b"\n"


def default_sse_client(response: requests.Response) -> EventSource:
    """An :class:`EventStream` reading ``response`` as it arrives."""
    return EventStream(response)


class ClosableAdapter(requests.adapters.HTTPAdapter):
    """An :class:`~requests.adapters.HTTPAdapter` that can shut down every connection it opened, in use or not.

    :meth:`~requests.adapters.HTTPAdapter.close` closes the connections
    waiting in the pool only. A request waiting for its response holds its
    connection outside the pool, and the thread that sent it stays blocked
    in the socket read until the read timeout. :meth:`abort_connections`
    shuts down the socket of every connection the adapter's pools (proxies'
    included) opened: such a read returns at once, and its request fails.
    """

    def __init__(self, **options: Any) -> None:
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self._connections_lock = threading.Lock()
        super().__init__(**options)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickling builds the pool manager again (requests calls init_poolmanager), before __init__ would run.
        self._connections = weakref.WeakSet()
        self._connections_lock = threading.Lock()
        super().__setstate__(state)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self._track(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        known = proxy in self.proxy_manager
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not known:
            self._track(manager)
        return manager

    def _track(self, manager: urllib3.PoolManager) -> None:
        """Make ``manager``'s pools note each connection they open."""
        note = self._note
        tracked: dict[str, type[urllib3.HTTPConnectionPool]] = {}
        for scheme, pool_class in manager.pool_classes_by_scheme.items():

            def new_conn(pool: Any, base: Any = pool_class) -> Any:
                connection = base._new_conn(pool)
                connection.response_class = _InterimAwareResponse
                note(connection)
                return connection

            def get_conn(pool: Any, timeout: Any = None, base: Any = pool_class) -> Any:
                connection = base._get_conn(pool, timeout)
                holder = getattr(_taker, "note", None)
                connection._mcp_sync_holder = holder
                if holder is not None:
                    holder(connection)
                return connection

            def put_conn(pool: Any, connection: Any, base: Any = pool_class) -> None:
                # The holder lets go before the connection is back where another request may take it: urllib3
                # puts it back inside a read that reaches the end of a response (and before it marks the
                # response released), requests' auths and redirects before they send again.
                holder = getattr(connection, "_mcp_sync_holder", None)
                if holder is not None:
                    connection._mcp_sync_holder = None
                    holder(None)
                base._put_conn(pool, connection)

            members = {"_new_conn": new_conn, "_get_conn": get_conn, "_put_conn": put_conn}
            subclass = type(f"Closable{pool_class.__name__}", (pool_class,), members)
            tracked[scheme] = cast("type[urllib3.HTTPConnectionPool]", subclass)
        manager.pool_classes_by_scheme = tracked

    def _note(self, connection: Any) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def abort_connections(self) -> None:
        """Shut down the socket of every connection opened so far; a read blocked on one returns at once."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            shut_down(connection)


class ClosedAfterInterim(http.client.HTTPException):
    """The server sent an interim answer (``100 Continue``) and closed the connection without a final one."""


class _InterimAwareResponse(http.client.HTTPResponse):
    """:mod:`http.client`'s response, telling a connection closed after an interim answer from one closed before any.

    ``http.client`` raises ``RemoteDisconnected`` for both. Closed before any
    answer, the server is as good as gone (:func:`unreachable`); closed after
    a ``100 Continue``, it is there and answered badly: one call fails.
    """

    _interim = False

    def _read_status(self) -> tuple[str, int, str]:
        try:
            status: tuple[str, int, str] = super()._read_status()  # type: ignore[misc]
        except http.client.RemoteDisconnected:
            if self._interim:
                raise ClosedAfterInterim(
                    "the server closed the connection after an interim answer, without a final one"
                ) from None
            raise
        self._interim = True  # begin() reads another status line only after a 100 Continue
        return status


_taker = threading.local()
"""``note``: what is told of each connection this thread takes from (or gives back to) a ClosableAdapter's pools."""


@contextlib.contextmanager
def taking(note: Callable[[Any], None]) -> Iterator[None]:
    """Within the block, each connection this thread takes from a :class:`ClosableAdapter`'s pools goes to ``note``.

    How a request can be stopped from another thread before its response
    has come (there is no response to :func:`abort` yet): the connection
    it was sent on is :func:`shut_down`. When that connection goes back to
    the pool (on whatever thread), ``note(None)`` is called first.
    Blocks nest: the outer ``note`` is back after the inner block.
    """
    outer = getattr(_taker, "note", None)
    _taker.note = note
    try:
        yield
    finally:
        _taker.note = outer


def shut_down(connection: Any) -> None:
    """Shut down ``connection``'s socket: a read blocked on it returns at once (no socket yet: nothing to do)."""
    # AttributeError: no socket (not connected yet, or closed already).
    with contextlib.suppress(OSError, AttributeError):
        connection.sock.shutdown(socket.SHUT_RDWR)


def new_session() -> requests.Session:
    """A :class:`requests.Session` whose connection pool holds :data:`POOL_SIZE` connections per host.

    Each call in flight and each open stream holds a connection; the default
    pool of 10 would drop (and log) connections beyond that. Its adapter is a
    :class:`ClosableAdapter`: see :func:`abort_connections`.
    """
    session = requests.Session()
    adapter = ClosableAdapter(pool_maxsize=POOL_SIZE)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class Sender:
    """Sends a transport's requests through its :class:`requests.Session`.

    A session the caller gave is used through its ``request`` method, as
    given (it may be a subclass that does more there).

    For a session the transport made itself (:func:`new_session`,
    ``own=True``) the per-URL work is done once. ``Session.request`` reads
    the proxy and CA-bundle variables and ``~/.netrc`` again on every call
    and merges the session's settings through generic code: for a small MCP
    message that was most of the client's CPU, and a transport calls one URL
    thousands of times. So the environment's settings, netrc credentials and
    the normalised URL are worked out on the first request to a URL and kept
    (a change to the environment is seen by the next transport), and as long
    as the session holds no cookie a request is prepared directly: the
    session's headers, then the request's, the body, the auth, which is what
    ``prepare_request`` builds for such a session. Once the server sets a
    cookie, ``prepare_request`` does the work.

    >>> send = Sender(new_session(), own=True)
    >>> send.session.trust_env
    True
    """

    __slots__ = ("_urls", "own", "session")

    def __init__(self, session: requests.Session, *, own: bool) -> None:
        self.session = session
        self.own = own
        self._urls: dict[str, _URLSettings] = {}

    def __call__(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str],
        auth: requests.auth.AuthBase | None,
        timeout: Timeout,
        data: bytes | None = None,
        stream: bool = False,
    ) -> requests.Response:
        session = self.session
        if not self.own:
            return session.request(method, url, headers=headers, data=data, auth=auth, timeout=timeout, stream=stream)
        known = self._urls.get(url)
        if known is None:
            known = self._urls[url] = _URLSettings(session, url)
        if session.cookies:
            prepared = session.prepare_request(requests.Request(method, url, headers=headers, data=data, auth=auth))
        else:
            prepared = known.prepare(session, method, headers, data, auth)
        return session.send(
            prepared,
            timeout=timeout,
            stream=stream,
            allow_redirects=True,
            proxies=dict(known.proxies),  # a redirect may rebuild it: each request gets its own copy
            verify=known.verify,
            cert=known.cert,
        )


class _URLSettings:
    """What a request to one URL takes from the environment and the session, worked out once."""

    __slots__ = ("cert", "netrc", "proxies", "url", "verify")

    def __init__(self, session: requests.Session, url: str) -> None:
        settings = session.merge_environment_settings(url, {}, None, None, None)
        self.proxies: dict[str, str] = settings["proxies"]
        self.verify: Any = settings["verify"]
        self.cert: Any = settings["cert"]
        self.netrc = requests.utils.get_netrc_auth(url) if session.trust_env else None
        probe = requests.PreparedRequest()
        probe.prepare_url(url, None)
        self.url: str = probe.url or url

    def prepare(
        self,
        session: requests.Session,
        method: str,
        headers: dict[str, str],
        data: bytes | None,
        auth: requests.auth.AuthBase | None,
    ) -> requests.PreparedRequest:
        prepared = requests.PreparedRequest()
        prepared.method = method
        prepared.url = self.url
        merged: requests.structures.CaseInsensitiveDict[str | bytes] = requests.structures.CaseInsensitiveDict(
            session.headers
        )
        merged.update(headers)
        prepared.headers = merged
        # An empty jar, as prepare_request would give: following a redirect reads it (None there was an AttributeError).
        prepared.prepare_cookies(requests.cookies.RequestsCookieJar())
        prepared.body = data
        if data is not None:
            merged["Content-Length"] = str(len(data))
        elif method not in ("GET", "HEAD"):
            merged["Content-Length"] = "0"
        use: requests.auth.AuthBase | tuple[str, str] | None = auth or self.netrc
        if use is not None:
            prepared.prepare_auth(use, self.url)
        return prepared


def abort_connections(session: requests.Session) -> None:
    """Shut down every connection of ``session``'s :class:`ClosableAdapter` adapters, in use or idle.

    A thread blocked waiting for a response on one of them (a server that
    never answers) gets an error at once. Adapters of other kinds (a session
    the caller made) are left alone.
    """
    for adapter in set(session.adapters.values()):
        if isinstance(adapter, ClosableAdapter):
            adapter.abort_connections()


def abort(response: requests.Response) -> None:
    """Stop ``response`` from another thread: a read blocked on its socket returns at once.

    Only the socket is shut down; the thread reading the response closes it
    (``http.client`` responses must not be closed under a reader's feet).
    """
    with contextlib.suppress(Exception):
        response.raw.shutdown()


def connect_part(timeout: Timeout) -> float:
    return timeout[0] if isinstance(timeout, tuple) else timeout


def content_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower()


def describe(response: requests.Response) -> str:
    return f"HTTP {response.status_code} {response.reason or ''}".rstrip()


def read_body(response: requests.Response) -> bytes | None:
    """The body of a streaming ``response``; ``None`` when it is over :data:`MAX_BODY_BYTES` (the rest is not read)."""
    parts: list[bytes] = []
    size = 0
    for part in response.iter_content(_CHUNK):
        size += len(part)
        if size > MAX_BODY_BYTES:
            return None
        parts.append(part)
    return b"".join(parts)


def snippet(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."


def error_answer(request_id: RequestId, code: int, message: str, data: Any = None) -> JSONRPCErrorResponse:
    return JSONRPCErrorResponse(id=request_id, error=Error(code=code, message=message, data=data))


def http_error_answer(url: str, request: JSONRPCRequest, response: requests.Response) -> JSONRPCErrorResponse:
    """The answer to ``request`` when the server refused it with an HTTP error status.

    A JSON-RPC error in the body is kept (with the request's id); otherwise the
    error says what the server answered, with the status in its ``data``.
    """
    body = read_body(response) or b""
    try:
        message = parse_value(pydantic_core.from_json(body))
    except ValueError:
        message = None
    if isinstance(message, JSONRPCErrorResponse):
        return JSONRPCErrorResponse(id=request.id, error=message.error)
    status = response.status_code
    code = JsonRpcCode.UNAUTHORIZED if status in (401, 403) else JsonRpcCode.INTERNAL_ERROR
    detail = snippet(body)
    return error_answer(
        request.id,
        code,
        f"the MCP server at {url} answered {request.method} with {describe(response)}"
        + (f": {detail}" if detail else ""),
        {"status": status, "url": url},
    )


def lost_connection(url: str, exc: BaseException, doing: str) -> MCPTransportError:
    """The error that closes a transport whose server cannot be reached any more."""
    return MCPTransportError(
        MCP_CODES.TRANSPORT_ERROR,
        f"the MCP server at {url} could not be reached while {doing}: {exc}",
        cause=exc,
        context={"url": url},
    )


def _reason(exc: requests.RequestException) -> BaseException:
    """What lies under a :mod:`requests` error: urllib3's reason, and under a ``ProtocolError`` what it wraps."""
    reason = exc.args[0] if exc.args else exc
    if isinstance(reason, urllib3.exceptions.MaxRetryError) and reason.reason is not None:
        reason = reason.reason
    if isinstance(reason, urllib3.exceptions.ProtocolError) and len(reason.args) > 1:
        reason = reason.args[1]
    return reason if isinstance(reason, BaseException) else exc


def unreachable(exc: requests.RequestException) -> bool:
    """Whether a failed HTTP exchange means the server cannot be reached, rather than that it answered badly.

    Unreachable: no connection could be made (refused, DNS, connect timeout,
    proxy, TLS), or the connection was reset, or closed, before anything of
    an answer came. Anything else is an answer gone wrong (a bad status
    line, a header over ``http.client``'s limit, a connection closed after
    ``100 Continue``, a body cut short, a redirect loop, a read timeout):
    it fails the one call, and a server truly gone is found by the next
    request, which cannot connect. (On a ``requests`` session you made, a
    connection closed after ``100 Continue`` reads as closed before any
    answer: only the transport's own sessions tell them apart.)

    >>> unreachable(requests.TooManyRedirects("Exceeded 30 redirects."))
    False
    """
    if isinstance(exc, (requests.ConnectTimeout, requests.exceptions.ProxyError, requests.exceptions.SSLError)):
        return True
    if type(exc) is not requests.ConnectionError:
        return False  # a body cut short (ChunkedEncodingError), a redirect loop, a bad redirect URL...
    reason = _reason(exc)
    # NewConnectionError (refused, DNS) is a ConnectTimeoutError. What http.client raises on a bad head is an
    # HTTPException, not an OSError, but for RemoteDisconnected: closed before any answer, as good as reset.
    return isinstance(reason, (urllib3.exceptions.ConnectTimeoutError, OSError))


def broken_answer(exc: requests.RequestException) -> str:
    """What was wrong with an answer that could not be read (:func:`unreachable` said no): its innermost error."""
    reason = _reason(exc)
    text, name = str(reason).strip(), type(reason).__name__
    return text if text.startswith(name) else f"{name}: {text}"
