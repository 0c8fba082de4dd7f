"""How a POSTed request is answered: one JSON body, or an SSE stream of what its handler sends first.

An :class:`Answer` says how a POST may be answered (what the client accepts,
and the headers every answer carries). :func:`await_answer` waits for the
first message the session has for the request: the response becomes a JSON
body; a notification or request of the handler's own (progress, logging,
sampling) turns the answer into an :class:`SSEBody` that ends with the
response. :func:`receive` and :func:`deliver` give a message to the session
serving it.
"""

from __future__ import annotations

import collections
import logging
import queue
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ...protocol.errors import JsonRpcCode
from ...protocol.jsonrpc import encode_message, error_response
from ...protocol.types import JSONRPCErrorResponse, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest
from ..authorization import AuthInfo
from .sessions import Item, PostedRequest, Signal, StreamableSessionTransport, StreamEvent
from .wire import SSE_HEADERS, Once, Request, Response, json_response, session_ended

log = logging.getLogger(__name__)

STATELESS_STATUS = {
    JsonRpcCode.METHOD_NOT_FOUND: 404,
    JsonRpcCode.HEADER_MISMATCH: 400,
    JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
}
"""The HTTP status of a 2026-07-28 error answered as JSON, when not 200."""


@dataclass
class Answer:
    """How a POSTed request may be answered, and the headers every answer carries."""

    json_ok: bool
    sse_ok: bool
    priming: bool
    headers: list[tuple[str, str]] = field(default_factory=list)
    stateless: bool = False
    """A 2026-07-28 request: some errors have their own HTTP status."""
    auth: AuthInfo | None = None
    """The facts of the request's bearer token, for its handler's ``ctx.auth``."""
    lend_to: Request | None = None
    """The request, when its server lets another thread write its answer (see
    :class:`~mcp_sync.server.http.lending.Lent`)."""
    hung_up: Callable[[], bool] | None = None
    """Whether the client closed the request's connection, when its server gives a way to tell (see
    :func:`~mcp_sync.server.http.lending.hang_up_test`): in 2026-07-28, the request's cancellation."""

    def status(self, message: JSONRPCMessage) -> int:
        """The HTTP status of a JSON answer carrying ``message``.

        >>> from mcp_sync.protocol.jsonrpc import error_response
        >>> Answer(True, True, False, stateless=True).status(error_response(1, -32601, "Method not found"))
        404
        """
        if self.stateless and isinstance(message, JSONRPCErrorResponse):
            return STATELESS_STATUS.get(message.error.code, 200)
        return 200


class AnswerSource(Protocol):
    """Where a POST's answer comes from: a session's transport, or a request's own writer (2026-07-28)."""

    def start_streaming(self, post: PostedRequest) -> None:
        """Turn the POST's answer into an SSE stream now, unless its response came first."""

    def detach(self, post: PostedRequest, reader: queue.SimpleQueue[Item]) -> None:
        """The POST's stream ended (sent whole, or its client went away)."""


def render(event: StreamEvent, name: str = "message") -> bytes:
    """One SSE event's bytes (a priming event when it carries no message)."""
    lines = [] if event.event_id is None else [f"id: {event.event_id}"]
    if event.message is None:
        lines.append("data:")
    else:
        lines += [f"event: {name}", f"data: {encode_message(event.message).decode()}"]
    return ("\n".join(lines) + "\n\n").encode()


def retry_field(retry_ms: int) -> bytes:
    """The first bytes of a resumable stream: how long a client waits before it reconnects."""
    return f"retry: {retry_ms}\n\n".encode()


class SSEBody:
    """The body of an SSE response: events from a queue, comment pings while idle (each after ``on_ping``).

    It ends on :attr:`Signal.END`, or on :attr:`Signal.CLOSED` after sending
    ``closing`` (the error that answers a request whose session ended). The
    WSGI server calls :meth:`close` however the response ends, even when it
    never iterated: that runs ``on_close`` once.
    """

    def __init__(
        self,
        reader: queue.SimpleQueue[Item],
        *,
        first: bytes,
        ping_interval: float,
        on_close: Callable[[], None],
        on_ping: Callable[[], None] | None = None,
        pending: Sequence[Item] = (),
        closing: JSONRPCMessage | None = None,
    ) -> None:
        self._reader = reader
        self._on_ping = on_ping
        self._chunks: collections.deque[bytes] = collections.deque([first])
        self._pending: collections.deque[Item] = collections.deque(pending)
        self._ping_interval = ping_interval
        self._on_close = Once(on_close)
        self._closing = closing
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        while not self._chunks:
            if self._done:
                raise StopIteration
            if self._pending:
                item = self._pending.popleft()
            else:
                try:
                    item = self._reader.get(timeout=self._ping_interval)
                except queue.Empty:
                    if self._on_ping is not None:
                        self._on_ping()
                    return b": ping\n\n"
            if isinstance(item, StreamEvent):
                self._chunks.append(render(item))
                continue
            self._done = True
            if item is Signal.CLOSED and self._closing is not None:
                self._chunks.append(render(StreamEvent(None, self._closing)))
        return self._chunks.popleft()

    def close(self) -> None:
        """The response ended (sent whole, or cut short): run ``on_close``, once."""
        self._on_close()


def receive(transport: StreamableSessionTransport, message: JSONRPCMessage) -> None:
    """Give ``message`` to the session; a cancellation also ends the POSTs that wait for the request."""
    transport.receive(message)
    if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
        cancelled = (message.params or {}).get("requestId")
        if isinstance(cancelled, (str, int)) and not isinstance(cancelled, bool):
            transport.cancel(cancelled)


def deliver(transport: StreamableSessionTransport, message: JSONRPCRequest, done: Once) -> None:
    """Pass a request to the session serving it alone, on a handler thread (or the connection's, lent)."""
    try:
        transport.receive(message)
    except Exception:
        log.exception("the MCP HTTP app failed to pass on request %r", message.id)
        done()  # its session ends, and so the POST waiting for the answer does


def await_answer(
    source: AnswerSource,
    post: PostedRequest,
    answer: Answer,
    done: Once,
    *,
    ping_interval: float,
    retry_ms: int,
) -> Response:
    """Wait until the first message for ``post`` decides between JSON and SSE; ``done`` runs once it is answered."""
    pending: list[Item] = []
    # A JSON-only answer waits for the response, the session's end or a
    # cancellation; the others start streaming after a ping interval, so
    # that pings keep the connection alive while the handler works.
    timeout = None if post.json_only else ping_interval
    while post.mode != "sse":
        try:
            item = post.queue.get(timeout=timeout)
        except queue.Empty:
            source.start_streaming(post)
            continue
        if isinstance(item, StreamEvent) and post.mode == "json":
            done()
            assert item.message is not None
            return json_response(answer.status(item.message), item.message, answer.headers)
        if isinstance(item, StreamEvent):
            pending.append(item)
            break
        if item is Signal.END and not post.json_only:
            pending.append(item)
            break
        done()
        if item is Signal.END:
            cancelled = error_response(post.request_id, JsonRpcCode.REQUEST_CANCELLED, "Request cancelled")
            return json_response(200, cancelled, answer.headers)
        return json_response(200, session_ended(post), answer.headers)

    def finished() -> None:
        source.detach(post, post.queue)
        done()

    body = SSEBody(
        post.queue,
        # 2026-07-28 streams cannot be resumed: no reconnection delay to advise.
        first=b": stream\n\n" if answer.stateless else retry_field(retry_ms),
        ping_interval=ping_interval,
        on_close=finished,
        pending=pending,
        closing=session_ended(post),
    )
    return Response(200, [*SSE_HEADERS, *answer.headers], body)
