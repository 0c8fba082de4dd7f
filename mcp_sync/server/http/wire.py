"""The app's requests and answers in WSGI terms, and the answers every part of the app gives alike.

:class:`Request` is the part of a WSGI environ the app reads; :class:`Response`
what it answers (a status, headers and a body, bytes or a stream). The
helpers make the JSON answers: :func:`json_response`, :func:`http_error`
(an HTTP error with a JSON-RPC error body), :func:`refusal` (a body that is no
JSON-RPC message), :func:`backend_down`; :func:`read_body` reads a POST's body
within the app's limit.

>>> response = http_error(404, "Not found: /x")
>>> response.status, dict(response.headers)["Content-Type"]
(404, 'application/json')
>>> status_line(404)
'404 Not Found'
"""

from __future__ import annotations

import functools
import http
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import pydantic_core

from ...protocol.errors import JsonRpcCode
from ...protocol.jsonrpc import InvalidMessage, encode_message, error_response
from ...protocol.types import JSONRPCErrorResponse, JSONRPCMessage, RequestId
from ..authorization import AuthInfo
from .sessions import PostedRequest

log = logging.getLogger(__name__)

WSGIEnviron = dict[str, Any]
StartResponse = Callable[..., Any]

JSON = "application/json"
EVENT_STREAM = "text/event-stream"
DEFAULT_REVISION = "2025-03-26"
"""The revision assumed for a request without ``MCP-Protocol-Version`` (the transport spec says so)."""
PRIMING_SINCE = "2025-11-25"
"""The first revision whose clients expect a priming event (an id with empty data) on SSE streams."""
SESSION_HEADER = "Mcp-Session-Id"
SSE_HEADERS = [
    ("Content-Type", EVENT_STREAM),
    ("Cache-Control", "no-cache, no-transform"),
    ("X-Accel-Buffering", "no"),
]
"""The headers of every SSE answer (no caching, no buffering by a proxy)."""


@dataclass
class Response:
    """What the app answers: a status, headers and a body (bytes or a stream)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Iterable[bytes] = ()
    message: JSONRPCMessage | None = None
    """The JSON-RPC message of a JSON answer, for the app's own bookkeeping."""
    started: bool = False
    """Whether the head went out already (another thread streamed the whole answer; see
    :class:`~mcp_sync.server.http.lending.Lent`)."""


@functools.lru_cache(maxsize=64)  # clients send the same Content-Type with every request
def json_utf8(content_type: str) -> bool:
    """Whether a ``Content-Type`` says JSON in UTF-8 (the charset may be left out).

    >>> json_utf8("application/json"), json_utf8("application/json; charset=latin-1")
    (True, False)
    """
    parts = content_type.split(";")
    charset = next((p.split("=", 1)[1].strip().lower() for p in parts[1:] if "=" in p), "utf-8")
    return parts[0].strip().lower() == JSON and charset.strip('"') in ("utf-8", "utf8")


@functools.lru_cache(maxsize=64)
def status_line(code: int) -> str:
    """``200 OK`` for 200: the status of a WSGI response."""
    status = http.HTTPStatus(code)
    return f"{status.value} {status.phrase}"


def json_response(
    status: int, payload: JSONRPCMessage | Mapping[str, Any], headers: Sequence[tuple[str, str]] = ()
) -> Response:
    """A JSON answer: a JSON-RPC message, or a plain JSON object (OAuth errors, metadata)."""
    if isinstance(payload, Mapping):
        body, message = pydantic_core.to_json(dict(payload)), None
    else:
        body, message = encode_message(payload), payload
    all_headers = [("Content-Type", JSON), ("Content-Length", str(len(body))), *headers]
    return Response(status, all_headers, [body], message)


def http_error(status: int, message: str, code: int = JsonRpcCode.INVALID_REQUEST, **headers: str) -> Response:
    """An HTTP error whose body is a JSON-RPC error response without a request id.

    Keyword arguments are more headers, ``_`` written for ``-``: ``Retry_After="5"``.
    """
    extra = [(name.replace("_", "-"), value) for name, value in headers.items()]
    return json_response(status, error_response(None, code, message), extra)


def refusal(message: InvalidMessage) -> Response:
    """400 for a body that is not a JSON-RPC message, with the JSON-RPC error in the body.

    The error carries the request's id when one could be read; never the id
    of a broken response (that id is the server's own, not the client's).
    """
    request_id = message.id if message.reply else None
    return json_response(400, JSONRPCErrorResponse(id=request_id, error=message.error))


def backend_down() -> Response:
    """503 for a request that needs the backend (a shared session) while it cannot be reached."""
    return http_error(
        503, "The server's backend is unavailable: try again later", JsonRpcCode.INTERNAL_ERROR, Retry_After="1"
    )


def shutting_down() -> Response:
    """503 for a request that arrives while the app closes."""
    return http_error(503, "The server is shutting down", JsonRpcCode.INTERNAL_ERROR)


def session_ended(post: PostedRequest | RequestId) -> JSONRPCMessage:
    """The error answering a request whose session ended before its handler answered."""
    request_id = post.request_id if isinstance(post, PostedRequest) else post
    return error_response(request_id, JsonRpcCode.INTERNAL_ERROR, "The session ended before the request was answered")


@functools.lru_cache(maxsize=256)
def environ_key(name: str) -> str:
    """Where a WSGI environ keeps header ``name``; cached, as the app asks for the same few names on every request."""
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"


class Request:
    """The parts of a WSGI environ the app reads.

    >>> request = Request({"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28"})
    >>> request.method, request.path, request.header("MCP-Protocol-Version")
    ('POST', '/mcp', '2026-07-28')
    """

    def __init__(self, environ: WSGIEnviron, start_response: StartResponse | None = None) -> None:
        self.environ = environ
        self.method = str(environ.get("REQUEST_METHOD", "GET"))  # case-sensitive (RFC 9110): "post" is no POST
        self.path = str(environ.get("PATH_INFO", "")) or "/"
        self.auth: AuthInfo | None = None
        """The facts of the request's verified bearer token (set by authentication)."""
        self.start_response = start_response
        """The server's ``start_response``, for an answer streamed from another thread (see
        :class:`~mcp_sync.server.http.lending.Lent`)."""

    def header(self, name: str) -> str | None:
        """The value of header ``name``, if sent."""
        value = self.environ.get(environ_key(name))
        return None if value is None else str(value)

    def query(self, name: str) -> str | None:
        """The first value of query parameter ``name``, if any."""
        values = parse_qs(str(self.environ.get("QUERY_STRING", ""))).get(name)
        return values[0] if values else None

    @property
    def base_url(self) -> str:
        """``scheme://host`` plus the mount point (``SCRIPT_NAME``)."""
        environ = self.environ
        host = self.header("Host") or f"{environ.get('SERVER_NAME', 'localhost')}:{environ.get('SERVER_PORT', '80')}"
        return f"{environ.get('wsgi.url_scheme', 'http')}://{host}{environ.get('SCRIPT_NAME', '')}"


def read_body(request: Request, limit: int) -> bytes | Response:
    """The body of a POST, at most ``limit`` bytes; or the error answering a body the app will not read."""
    if not json_utf8(request.header("Content-Type") or ""):
        return http_error(415, f"Unsupported Media Type: the body must be {JSON} (UTF-8)")
    length = request.header("Content-Length")
    if not length:
        if not request.environ.get("wsgi.input_terminated"):
            return http_error(411, "Length Required")
        size = limit + 1  # read to the end; one byte more than allowed tells it is too much
    else:
        try:
            size = int(length)
        except ValueError:
            return http_error(400, "Bad Request: invalid Content-Length")
        if size > limit:
            return http_error(413, f"Payload Too Large: the limit is {limit} bytes")
    try:
        data = bytes(request.environ["wsgi.input"].read(size)) if size > 0 else b""
    except Exception as error:
        # The server could not read the body: malformed chunked framing, or a body
        # cut short. The client's fault, not ours. Our server then closes the
        # connection (with Connection: close); gunicorn closes it too; waitress
        # answers such bodies itself, without calling the app.
        log.debug("the request body could not be read: %s", error)
        return http_error(400, f"Bad Request: the request body could not be read ({error})")
    if length and len(data) != size:
        return http_error(400, "Bad Request: the body ended early")
    if len(data) > limit:
        return http_error(413, f"Payload Too Large: the limit is {limit} bytes")
    return data


class Once:
    """Runs a function the first time it is called, never again.

    >>> calls = []
    >>> done = Once(lambda: calls.append(1))
    >>> done(); done(); calls
    [1]
    """

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn: Callable[[], None] | None = fn
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            fn, self._fn = self._fn, None
        if fn is not None:
            fn()
