"""The HTTP+SSE transport of protocol revision 2024-11-05, client side.

The client opens an SSE stream with a GET; the server's first event,
``endpoint``, names the URL to POST messages to; every server message then
arrives on the stream as a ``message`` event. Newer servers speak Streamable
HTTP (:mod:`mcp_sync.transports.http.streamable`); :func:`~mcp_sync.client.http_client`
falls back to this transport by itself. To use it directly::

    from mcp_sync import MCPClient
    from mcp_sync.transports.http.sse import SSEClientTransport

    with MCPClient() as client:
        client.connect(SSEClientTransport("http://127.0.0.1:8000/sse"))
        print(client.call_tool("echo", {"text": "hi"}).text)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

import requests
import requests.auth

from ...protocol.errors import MCP_CODES, JsonRpcCode, MCPTransportError
from ...protocol.jsonrpc import decode_message, encode_message
from ...protocol.types import JSONRPCMessage, JSONRPCRequest
from ...runtime.http import abort, new_session
from ...runtime.transport import BaseTransport
from ._common import (
    DEFAULT_SSE_READ_TIMEOUT,
    DEFAULT_TIMEOUT,
    JOIN_TIMEOUT,
    STREAM_ERRORS,
    Sender,
    SSEClientFactory,
    Timeout,
    broken_answer,
    connect_part,
    connection_broke,
    content_type,
    default_sse_client,
    describe,
    error_answer,
    http_error_answer,
    lost_connection,
    read_body,
    snippet,
    unreachable,
)

__all__ = ["SSEClientTransport"]

log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


class SSEClientTransport(BaseTransport):
    """The client end of the 2024-11-05 HTTP+SSE transport.

    Creating it opens the SSE stream at ``url`` and waits up to
    ``connect_timeout`` seconds for the ``endpoint`` event, whose URL is
    resolved against ``url`` and must have the same origin. Messages are
    POSTed on the sending thread (the server answers 202 at once; answers
    come on the stream, read by the thread ``mcp-sync-http-sse``). A POST
    refused with an HTTP error, or answered with what cannot be read, answers
    its request with an error; a server that cannot be reached, or whose
    stream ends, closes the transport. The stream is read once a client has
    connected the transport: none within ``connect_timeout`` of the
    ``endpoint`` event closes it.
    ``session``, ``headers``, ``auth``, ``timeout``, ``sse_read_timeout`` and
    ``sse_client_factory`` are as for
    :class:`~mcp_sync.transports.http.streamable.StreamableHTTPClientTransport`. It
    carries the handshake revisions only: a client connecting over it
    does not probe for 2026-07-28.
    """

    network_transport = "tcp"

    handshake_only = True
    """Read by :meth:`MCPClient.connect <mcp_sync.client.MCPClient.connect>`: run ``initialize`` at once."""

    def __init__(
        self,
        url: str,
        *,
        session: requests.Session | None = None,
        headers: Mapping[str, str] | None = None,
        auth: requests.auth.AuthBase | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        sse_read_timeout: float = DEFAULT_SSE_READ_TIMEOUT,
        sse_client_factory: SSEClientFactory | None = None,
        connect_timeout: float | None = 30.0,
    ) -> None:
        super().__init__()
        self.url = url
        self.session = session if session is not None else new_session()
        self._send = Sender(self.session, own=session is None)
        self._own_session = session is None
        self.headers = dict(headers or {})
        self.auth = auth
        self.timeout = timeout
        self.sse_client_factory: SSEClientFactory = sse_client_factory or default_sse_client
        self.connect_timeout = connect_timeout
        self.endpoint: str | None = None
        """Where messages are POSTed, as the server's ``endpoint`` event said."""
        self._found = threading.Event()  # the endpoint came, or the stream failed first
        self._ready = threading.Event()  # a handler is registered (or the transport closes)
        self._failure: MCPTransportError | None = None
        try:
            self._response = self.session.get(
                url,
                headers={**self.headers, "Accept": "text/event-stream"},
                auth=auth,
                timeout=(connect_part(timeout), sse_read_timeout),
                stream=True,
            )
        except requests.RequestException as exc:
            self._release()
            raise MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                f"could not open the SSE stream at {url}: {exc}",
                cause=exc,
                context={"url": url},
            ) from exc
        if self._response.status_code != 200 or content_type(self._response) != "text/event-stream":
            what = f"{describe(self._response)} ({content_type(self._response) or 'no content type'})"
            body = snippet(read_body(self._response) or b"") if self._response.status_code != 200 else ""
            self._release()
            raise MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                f"the server at {url} answered GET with {what}, not an SSE stream" + (f": {body}" if body else ""),
                context={"url": url, "status": self._response.status_code},
            )
        self._reader = threading.Thread(target=self._read, name="mcp-sync-http-sse", daemon=True)
        self._reader.start()
        if not self._found.wait(connect_timeout):
            failure: MCPTransportError | None = MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                f"the server at {url} sent no endpoint event within {connect_timeout:g} s",
                context={"url": url},
            )
        else:
            failure = self._failure
        if failure is not None:
            self.close()
            raise failure

    def __repr__(self) -> str:
        return f"<SSEClientTransport {self.url}>"

    def _release(self) -> None:
        if self._own_session:
            self.session.close()

    # -------------------------------------------------------------- reading

    def _handlers_changed(self) -> None:
        self._ready.set()

    def _resolve(self, data: str) -> str:
        try:
            endpoint = urljoin(self.url, data.strip())
            origin = _origin(endpoint)
        except ValueError as exc:  # a bracketed host that is no IPv6 address, a port out of range
            raise MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                f"the server at {self.url} named an invalid endpoint {data.strip()!r}: {exc}",
                context={"url": self.url},
            ) from exc
        if origin != _origin(self.url):
            raise MCPTransportError(
                MCP_CODES.TRANSPORT_ERROR,
                f"the server at {self.url} named an endpoint on another origin: {endpoint}",
                context={"url": self.url, "endpoint": endpoint},
            )
        return endpoint

    def _read(self) -> None:
        reason: MCPTransportError | None = None
        try:
            for event in self.sse_client_factory(self._response).events():
                if self.endpoint is None:
                    if event.event != "endpoint":
                        raise MCPTransportError(
                            MCP_CODES.TRANSPORT_ERROR,
                            f"the server at {self.url} sent a {event.event!r} event before the endpoint event",
                            context={"url": self.url},
                        )
                    self.endpoint = self._resolve(event.data)
                    self._found.set()
                    # Messages are read once a client has connected the transport to take them.
                    if not self._ready.wait(self.connect_timeout):
                        raise MCPTransportError(
                            MCP_CODES.TRANSPORT_ERROR,
                            f"no client connected the transport to the server at {self.url} within "
                            f"{self.connect_timeout:g} s of its endpoint event",
                            context={"url": self.url},
                        )
                elif event.event == "message" and event.data.strip():
                    self._deliver(decode_message(event.data))
            reason = MCPTransportError(
                MCP_CODES.TRANSPORT_CLOSED, f"the server at {self.url} ended the SSE stream", context={"url": self.url}
            )
        except MCPTransportError as exc:
            reason = exc
        except STREAM_ERRORS as exc:
            reason = lost_connection(self.url, exc, "reading the SSE stream")
        self._response.close()
        if self.endpoint is None:
            self._failure = reason
            self._found.set()
        else:
            self._closed_by_peer(reason)

    # -------------------------------------------------------------- writing

    def _write(self, message: JSONRPCMessage) -> None:
        assert self.endpoint is not None
        try:
            response = self._send(
                "POST",
                self.endpoint,
                data=encode_message(message),
                headers={**self.headers, "Content-Type": "application/json"},
                auth=self.auth,
                timeout=self.timeout,
            )
        except requests.ReadTimeout as exc:
            if isinstance(message, JSONRPCRequest):
                self._deliver(
                    error_answer(
                        message.id,
                        JsonRpcCode.INTERNAL_ERROR,
                        f"the server at {self.endpoint} did not accept {message.method} in time: {exc}",
                        {"url": self.endpoint},
                    )
                )
            else:
                log.warning("the server at %s did not accept a message in time: %s", self.endpoint, exc)
            return
        except requests.RequestException as exc:
            if unreachable(exc):
                error = lost_connection(self.endpoint, exc, "sending a message")
                self._closed_by_peer(error)
                raise error from exc
            # The server was there (the connection broke, or it answered badly): this message fails, the others go on.
            reason, broke = broken_answer(exc), connection_broke(exc)
            if isinstance(message, JSONRPCRequest):
                if broke:
                    failed = f"the connection to the server at {self.endpoint} broke under the POST of {message.method}"
                else:
                    failed = f"the server at {self.endpoint} answered the POST of {message.method} with an answer "
                    failed += "that could not be read"
                self._deliver(
                    error_answer(message.id, JsonRpcCode.INTERNAL_ERROR, f"{failed}: {reason}", {"url": self.endpoint})
                )
            elif broke:
                log.warning("the connection to the server at %s broke under a message: %s", self.endpoint, reason)
            else:
                log.warning("the server at %s answered a message badly: %s", self.endpoint, reason)
            return
        with response:
            if response.status_code < 400:
                return
            if isinstance(message, JSONRPCRequest):
                self._deliver(http_error_answer(self.endpoint, message, response))
            else:
                log.warning(
                    "the server at %s refused a message with %s: %s",
                    self.endpoint,
                    describe(response),
                    snippet(read_body(response) or b""),
                )

    # -------------------------------------------------------------- closing

    def _shutdown(self) -> None:
        self._ready.set()
        abort(self._response)
        if self._reader is not threading.current_thread():
            self._reader.join(JOIN_TIMEOUT)
        self._release()
