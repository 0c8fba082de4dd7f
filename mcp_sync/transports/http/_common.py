"""What both HTTP client transports share: timeouts, sending, SSE parsing, errors as answers.

The sessions, their closable connections and the bounded request are not the
transports' own: they are in :mod:`mcp_sync.runtime.http`, for both roles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pydantic_core
import requests
import requests.auth
import requests.structures
import requests.utils
import sseclient
import urllib3.exceptions

from ...protocol.errors import MCP_CODES, JsonRpcCode, MCPTransportError
from ...protocol.jsonrpc import parse_value
from ...protocol.types import (
    Error,
    JSONRPCErrorResponse,
    JSONRPCRequest,
    RequestId,
)

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


class Sender:
    """Sends a transport's requests through its :class:`requests.Session`.

    A session the caller gave is used through its ``request`` method, as
    given (it may be a subclass that does more there).

    For a session the transport made itself (:func:`~mcp_sync.runtime.http.new_session`,
    ``own=True``) the per-URL work is done once. ``Session.request`` reads
    the proxy and CA-bundle variables and ``~/.netrc`` again on every call
    and merges the session's settings through generic code: for a small MCP
    message that was most of the client's CPU, and a transport calls one URL
    thousands of times. So the environment's settings, netrc credentials and
    the normalised URL are worked out on the first request to a URL and kept
    (a change to the environment is seen by the next transport), and as long
    as the session holds no cookie a request is prepared directly: the
    session's headers, then the request's, the body, the auth, which is what
    ``prepare_request`` builds for such a session, and sent by the session's
    adapter, the session then keeping the cookies the answer sets and
    following its redirect. Once the server sets a cookie, or for an auth
    with hooks, ``prepare_request`` and ``Session.send`` do the work.

    >>> from mcp_sync.runtime.http import new_session
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
        # A redirect may rebuild the proxies: each request gets its own copy.
        options: dict[str, Any] = {"proxies": dict(known.proxies), "verify": known.verify, "cert": known.cert}
        if session.cookies:
            prepared = session.prepare_request(requests.Request(method, url, headers=headers, data=data, auth=auth))
            return session.send(prepared, timeout=timeout, stream=stream, allow_redirects=True, **options)
        prepared = known.prepare(session, method, headers, data, auth)
        if prepared.hooks["response"]:  # an auth that reads the answer (digest, say): Session.send runs its hooks
            prepared.prepare_cookies(requests.cookies.RequestsCookieJar())  # (which read the request's jar)
            return session.send(prepared, timeout=timeout, stream=stream, allow_redirects=True, **options)
        # What Session.send adds to its adapter's send, for a request without hooks: the cookies the server set go
        # into the session's jar, and a redirect is followed. Its other work (hooks, timing, a redirect check of
        # its own, the cookies parsed again) took about 7% of this function's CPU for a small call here.
        response = session.get_adapter(prepared.url or url).send(prepared, stream=stream, timeout=timeout, **options)
        if response.cookies:
            requests.cookies.extract_cookies_to_jar(session.cookies, prepared, response.raw)
        if response.is_redirect:
            # The empty jar prepare_request would give, which following a redirect reads (None there was an
            # AttributeError). Made only when needed: a jar and its policy took 5 us to build and ask.
            prepared.prepare_cookies(requests.cookies.RequestsCookieJar())
            history = [response, *session.resolve_redirects(response, prepared, stream, timeout, **options)]
            response = history.pop()
            response.history = history
        if not stream:
            response.content  # noqa: B018 (read the body now, as Session.send does)
        return response


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
        prepared.body = data
        if data is not None:
            merged["Content-Length"] = str(len(data))
        elif method not in ("GET", "HEAD"):
            merged["Content-Length"] = "0"
        use: requests.auth.AuthBase | tuple[str, str] | None = auth or self.netrc
        if use is not None:
            prepared.prepare_auth(use, self.url)
        return prepared


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
    """Whether a failed HTTP exchange means the server cannot be reached: no connection to it could be made.

    Unreachable: the connection was refused, the name did not resolve, the
    connect timed out, the proxy or TLS failed. That closes a transport.
    Anything else fails the one request it carried, and a server truly gone
    is found by the next request, which cannot connect: a connection made
    and then reset, or closed, before or while the server answered (the
    process serving it died, a load balancer dropped it: see
    :func:`connection_broke`), as much as an answer gone wrong (a bad status
    line, a header over ``http.client``'s limit, a body cut short, a
    redirect loop, a read timeout). Behind a load balancer, or under a
    server of many worker processes, the next connection reaches another.

    >>> unreachable(requests.TooManyRedirects("Exceeded 30 redirects."))
    False
    """
    if isinstance(exc, (requests.ConnectTimeout, requests.exceptions.ProxyError, requests.exceptions.SSLError)):
        return True
    # urllib3's NewConnectionError (refused, DNS) is a ConnectTimeoutError; requests makes it a plain ConnectionError.
    return type(exc) is requests.ConnectionError and isinstance(_reason(exc), urllib3.exceptions.ConnectTimeoutError)


def connection_broke(exc: requests.RequestException) -> bool:
    """Whether a connection that was made broke under the exchange: reset, or closed by the server unasked.

    It fails the request it carried (:func:`unreachable` says no): the error
    says the connection broke rather than that the server answered badly.

    >>> import urllib3
    >>> connection_broke(requests.ConnectionError(urllib3.exceptions.ProtocolError("Connection aborted.",
    ...     ConnectionResetError(104, "Connection reset by peer"))))
    True
    """
    # What http.client raises on a bad head is an HTTPException, not an OSError, but for RemoteDisconnected: the
    # server closed the connection without a word (after 100 Continue it is ClosedAfterInterim, no OSError).
    # (requests' own errors are OSErrors too: a redirect loop is one, and no broken connection.)
    reason = _reason(exc)
    return not unreachable(exc) and isinstance(reason, OSError) and not isinstance(reason, requests.RequestException)


def broken_answer(exc: requests.RequestException) -> str:
    """What was wrong with an answer that could not be read (:func:`unreachable` said no): its innermost error."""
    reason = _reason(exc)
    text, name = str(reason).strip(), type(reason).__name__
    return text if text.startswith(name) else f"{name}: {text}"
