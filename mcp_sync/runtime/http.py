"""Outbound HTTP, for both roles: sessions whose connections can be shut down, and one bounded request.

What the OAuth client, the server's token verifiers and the HTTP client
transports share of :mod:`requests` (nothing of MCP): :func:`new_session`
makes a session whose :class:`ClosableAdapter` can shut down every
connection it opened, :func:`taking` tells which connection a thread's
request goes on, and :func:`bounded_request` sends one request and reads
its answer within a time and a size in all, and can have each address it
connects to checked before anything is sent there (``check_address``).

The timeout of ``requests`` bounds the connection and each read, not the
whole: a server that sends its headers, or its body, a byte at a time holds
the request for ever. :func:`bounded_request` has a watchdog thread shut the
request's connection down once its time is up, and reads the body a piece at
a time (what has come), keeping at most ``max_bytes`` of it.

This module loads ``requests``: the pure modules never import it.

Example::

    try:
        answer = bounded_request(new_session(), "GET", url, timeout=5.0, max_bytes=1 << 20)
    except AnswerTooSlow:
        ...  # not connected, answered and read within 5 s in all
"""

from __future__ import annotations

import contextlib
import http.client
import io
import socket
import threading
import weakref
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlsplit

import requests
import requests.adapters
import requests.structures
import requests.utils
import urllib3
import urllib3.exceptions

from .deadline import Deadline

__all__ = [
    "POOL_SIZE",
    "AnswerTooLong",
    "AnswerTooSlow",
    "BadAnswer",
    "ClosableAdapter",
    "ClosedAfterInterim",
    "LeanAdapter",
    "abort",
    "abort_connections",
    "bounded_request",
    "looked_up",
    "new_session",
    "shut_down",
    "taking",
]

POOL_SIZE = 32
"""Connections kept per host by the sessions :func:`new_session` makes."""
_JOIN_TIMEOUT = 2.0
"""How long the end of a bounded request waits for its watchdog thread (seconds)."""
_KEPT_POOLS = 16
"""How many URLs' pools a :class:`LeanAdapter` keeps at most (forgetting one only costs the next request a lookup)."""


class LeanAdapter(requests.adapters.HTTPAdapter):
    """An :class:`~requests.adapters.HTTPAdapter` that finds a URL's connection pool once, not on every request.

    For each request, requests' adapter parses the URL twice, looks for a
    proxy in an empty mapping, and builds the pool's key again to find the
    pool it found last time; its response then parses the cookies of an
    answer that set none. Without a proxy, this adapter keeps the pool it
    was given for a URL (and the TLS settings, which are part of the key),
    sends to the URL's path, and builds the response without the cookie
    parsing when the answer has no ``Set-Cookie`` header. With a proxy, it
    does what requests does. The adapter's ``send`` of a small MCP call
    took about an eighth less CPU here (255 against 225 microseconds).

    A pool kept here stays in use after the pool manager let go of it (the
    manager keeps a few hosts' pools, and forgets the one used least lately
    for a new host; urllib3 closes a pool only as it is freed). :meth:`close`
    forgets them all, as requests' adapter does.
    """

    def __init__(self, **options: Any) -> None:
        self._pools: dict[tuple[str | None, Any, Any], Any] = {}
        super().__init__(**options)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickling builds the pool manager again, before __init__ would run.
        self._pools = {}
        super().__setstate__(state)

    def get_connection_with_tls_context(
        self, request: requests.PreparedRequest, verify: bool | str, proxies: Any = None, cert: Any = None
    ) -> Any:
        if proxies:
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        key = (request.url, verify, cert)
        pool = self._pools.get(key)
        if pool is None:
            if len(self._pools) >= _KEPT_POOLS:
                self._pools.clear()  # a session that visits many URLs: keep the newest only
            pool = self._pools[key] = super().get_connection_with_tls_context(request, verify, proxies, cert)
        return pool

    def request_url(self, request: requests.PreparedRequest, proxies: Any) -> str:
        return request.path_url if not proxies else super().request_url(request, proxies)

    def build_response(self, req: requests.PreparedRequest, resp: Any) -> requests.Response:
        headers = resp.headers
        if "Set-Cookie" in headers or "Set-Cookie2" in headers:  # (urllib3's headers ignore the case)
            return super().build_response(req, resp)
        response = requests.Response()
        response.status_code = resp.status
        response.headers = requests.structures.CaseInsensitiveDict(headers)
        response.encoding = requests.utils.get_encoding_from_headers(response.headers)
        response.raw = resp
        response.reason = resp.reason
        response.url = cast("str", req.url)
        response.request = req
        response.connection = self
        return response

    def close(self) -> None:
        self._pools.clear()
        super().close()


class ClosableAdapter(LeanAdapter):
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
        """Make ``manager``'s pools note each connection they open, and tell who holds it (:func:`taking`)."""
        note = self._note
        tracked: dict[str, type[urllib3.HTTPConnectionPool]] = {}
        for scheme, pool_class in manager.pool_classes_by_scheme.items():
            connections = _noted_connections(pool_class, note)

            def get_conn(pool: Any, timeout: Any = None, base: Any = pool_class) -> Any:
                connection = base._get_conn(pool, timeout)
                _check_kept(connection)
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

            members = {"ConnectionCls": connections, "_get_conn": get_conn, "_put_conn": put_conn}
            subclass = type(f"Closable{pool_class.__name__}", (pool_class,), members)
            tracked[scheme] = cast("type[urllib3.HTTPConnectionPool]", subclass)
        manager.pool_classes_by_scheme = tracked

    def _note(self, connection: Any) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def close(self) -> None:
        """Close the pools and every connection they opened, in use or idle.

        urllib3 2 closes a pool's connections only once the pool is freed, and
        anything that holds a response (the traceback of an error raised while
        reading it, say) holds its pool: the sockets would stay open until the
        garbage collector ran. Close it once nothing reads any more.
        """
        super().close()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(Exception):  # (closed already, or never connected: nothing to do)
                connection.close()

    def abort_connections(self) -> None:
        """Shut down the socket of every connection opened so far; a read blocked on one returns at once."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            shut_down(connection)


def _noted_connections(pool_class: Any, note: Callable[[Any], None]) -> type[Any]:
    """A subclass of the connection class of ``pool_class``, whose connections go to ``note`` once made.

    A urllib3 pool makes every connection of its (public) ``ConnectionCls``:
    a pool with this subclass as its ``ConnectionCls`` tells each one it
    opens. Their responses are :class:`_InterimAwareResponse`: a connection
    closed after an interim answer is told from one closed before any.
    """
    base = pool_class.ConnectionCls

    def __init__(connection: Any, *args: Any, **kwargs: Any) -> None:
        base.__init__(connection, *args, **kwargs)
        connection.mcp_sync_peer = None
        note(connection)

    def connect(connection: Any) -> None:
        check = getattr(_checker, "check", None)
        if check is None or connection.proxy is not None:
            # Unchecked; through a proxy, the socket goes to the proxy, which connects on (and checks, if it does).
            connection.mcp_sync_peer = None if check is None else _PROXIED
            base.connect(connection)
            return
        name = connection.host
        try:
            addresses = looked_up(name, connection.port)
        except socket.gaierror as exc:
            raise urllib3.exceptions.NameResolutionError(name, connection, exc) from exc
        if getattr(connection, "server_hostname", name) is None:
            connection.server_hostname = name  # TLS names and checks the host, not the address connected to
        *others, last = addresses
        for address in others:
            try:
                _connect_checked(connection, base, check, address)
                return
            except (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError):
                continue  # as urllib3 does: the next address
        _connect_checked(connection, base, check, last)

    members = {"__init__": __init__, "connect": connect, "response_class": _InterimAwareResponse}
    return type(f"Noted{base.__name__}", (base,), members)


def _connect_checked(connection: Any, base: Any, check: Callable[[str], None], address: str) -> None:
    """Connect ``connection`` to ``address`` if ``check`` lets it (else its error is raised, and nothing was sent)."""
    check(address)  # before the connection: not even a SYN goes to a refused address
    name = connection.host
    connection.host = address  # this very address: a second lookup of the name could answer another
    try:
        base.connect(connection)
    finally:
        connection.host = name  # the Host header names the host
    connection.mcp_sync_peer = address


_checker = threading.local()
"""``check``: what each address this thread's requests connect to goes to first (see :func:`bounded_request`)."""
_PROXIED = ""
"""The ``mcp_sync_peer`` of a connection made through a proxy under a check: its peer is the proxy, not checked."""


def looked_up(host: str, port: int | None = None) -> list[str]:
    """The addresses ``host`` resolves to, in the resolver's order (an address as it is).

    >>> looked_up("127.0.0.1")
    ['127.0.0.1']
    """
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def _check_kept(connection: Any) -> None:
    """Under a check, a connection kept from before is checked by the address it reached, or closed to connect anew.

    A connection made unchecked reached an address nobody judged: it is
    closed, and connecting again checks it. One made under a check (maybe
    another request's) is judged again by this one's. A refused one is
    closed too, and the refusal raised.
    """
    check = getattr(_checker, "check", None)
    if check is None or connection.sock is None or connection.mcp_sync_peer == _PROXIED:
        return
    if connection.mcp_sync_peer is None:
        connection.close()
        return
    try:
        check(connection.mcp_sync_peer)
    except BaseException:
        connection.close()
        raise


class _ThreadSetting:
    """Within the block, this thread's ``holder.<name>`` is ``value``; the outer one is back after it (blocks nest).

    A class rather than a generator: every request of a transport's caller
    enters one (see :func:`taking`), and a generator's context manager took
    four times as long to enter and leave.
    """

    __slots__ = ("holder", "name", "outer", "value")

    def __init__(self, holder: threading.local, name: str, value: object) -> None:
        self.holder = holder
        self.name = name
        self.value = value
        self.outer: object = None

    def __enter__(self) -> None:
        self.outer = getattr(self.holder, self.name, None)
        setattr(self.holder, self.name, self.value)

    def __exit__(self, *exc_info: object) -> None:
        setattr(self.holder, self.name, self.outer)


class ClosedAfterInterim(http.client.HTTPException):
    """The server sent an interim answer (``100 Continue``) and closed the connection without a final one."""


class _InterimAwareResponse(http.client.HTTPResponse):
    """:mod:`http.client`'s response, telling a connection closed after an interim answer from one closed before any.

    ``http.client`` raises ``RemoteDisconnected`` for both. Either fails the
    one call; the error says which: the connection broke (the process serving
    it died, say), or the server answered badly.
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


def taking(note: Callable[[Any], None]) -> contextlib.AbstractContextManager[None]:
    """Within the block, each connection this thread takes from a :class:`ClosableAdapter`'s pools goes to ``note``.

    How a request can be stopped from another thread before its response
    has come (there is no response to :func:`abort` yet): the connection
    it was sent on is :func:`shut_down`. When that connection goes back to
    the pool (on whatever thread), ``note(None)`` is called first.
    Blocks nest: the outer ``note`` is back after the inner block.
    """
    return _ThreadSetting(_taker, "note", note)


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


_CHUNK = 64 * 1024
_AGAIN = 0.05
"""Seconds between later shutdowns, once the time is up: a connection still connecting had no socket to shut down."""


class BadAnswer(requests.RequestException):
    """An answer given up on: too long or too slow."""


class AnswerTooLong(BadAnswer):
    """An answer longer than the request's ``max_bytes``."""


class AnswerTooSlow(BadAnswer):
    """A bounded request not finished (connected, answered and read whole) within its ``timeout``."""


class _Watchdog:
    """A thread that shuts down the connection noted last once ``seconds`` have passed, until the block ends."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._connection: Any = None
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="mcp-sync-http-deadline", daemon=True)

    def note(self, connection: Any) -> None:
        """The request goes on ``connection`` now (``None``: it let go of it, which another may take)."""
        with self._lock:
            self._connection = connection

    def _watch(self) -> None:
        wait = self.seconds
        while not self._ended.wait(wait):
            with self._lock:  # never once the request let go of the connection: see note()
                self.fired = True
                shut_down(self._connection)
            wait = _AGAIN

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._ended.set()
        self._thread.join(_JOIN_TIMEOUT)


def bounded_request(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    whole: bool = True,
    check_address: Callable[[str], None] | None = None,
    **options: Any,
) -> requests.Response:
    """Send one request and read its answer within ``timeout`` seconds in all; the response, its body read.

    ``whole=False``: only the status and headers are waited for, the body
    is the caller's to read (or close). Raises :class:`AnswerTooSlow` when
    the time is up (a read timeout too), :class:`AnswerTooLong` for a body
    over ``max_bytes``, and what ``requests`` raises otherwise. ``options``
    go to :meth:`requests.Session.request`.

    ``check_address`` is called with each address the request connects to,
    before anything is sent there, and raises to refuse it (its exception is
    raised as it is). The host is looked up once, and its addresses are
    checked and connected to as they are, one after the other as urllib3
    would: a name that answers another address when looked up again (DNS
    rebinding) gets nothing past the check. A connection kept from an
    earlier request is checked by the address it reached. Through a proxy,
    the proxy connects, and checks nothing here.

    Only the connections of a :class:`ClosableAdapter` (the
    sessions :func:`new_session` makes) can be shut down, and checked as
    they connect: with a session of other adapters, the headers are bounded
    per read only, the body is given up on after the first piece that comes
    too late, and the host's addresses are checked on a lookup of their own
    before the request (which a rebinding name gets past).
    """
    if check_address is not None and not isinstance(session.get_adapter(url), ClosableAdapter):
        parts = urlsplit(url)
        for address in looked_up(parts.hostname or "", parts.port):
            check_address(address)
    deadline = Deadline.after(timeout)
    watchdog = _Watchdog(timeout)
    body = bytearray()  # (grown in place: a trickled answer comes in many small pieces)
    try:
        with watchdog, taking(watchdog.note), _ThreadSetting(_checker, "check", check_address):
            response = session.request(method, url, timeout=timeout, stream=True, **options)
            if whole:
                with response:
                    while chunk := response.raw.read1(_CHUNK, decode_content=True):
                        body += chunk
                        if len(body) > max_bytes:
                            raise AnswerTooLong(f"the answer is longer than {max_bytes} bytes")
                        if deadline.expired:
                            break  # the watchdog could not shut this connection down: see above
    except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
        if watchdog.fired or isinstance(exc, (requests.ReadTimeout, urllib3.exceptions.ReadTimeoutError)):
            raise AnswerTooSlow(f"the answer did not finish within {timeout:g} s") from None
        raise
    if watchdog.fired or deadline.expired:
        # Late, even if it looks whole: a body without a length, cut short by the shutdown, would.
        response.close()
        raise AnswerTooSlow(f"the answer did not finish within {timeout:g} s")
    if whole:
        # The body, read here, is what the response reads from now on: its content, text and json() come from it.
        response.raw = io.BytesIO(bytes(body))
    return response
