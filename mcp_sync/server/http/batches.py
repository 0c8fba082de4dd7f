"""JSON-RPC batches over HTTP, which only revision 2025-03-26 has.

A POSTed batch is served at 2025-03-26 only (the era rule is
:func:`~mcp_sync.protocol.batch.accepts_batch`): each element is given to
the session as if sent alone, and the answers to its requests are sent
together, as one JSON array or as an SSE stream of them that ends after the
last (:func:`serve_batch`, gathering them in a :class:`BatchAnswers`). The
handlers' own notifications and requests go on the GET stream, as in
JSON-response mode. Elsewhere an array gets the one ``-32600`` any array gets.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...protocol.batch import BATCH_REVISION, accepts_batch, batch_elements, encode_batch
from ...protocol.jsonrpc import InvalidMessage
from ...protocol.types import JSONRPCMessage, JSONRPCRequest, RequestId
from ..authorization import AuthInfo
from ..backend import BackendUnavailable
from .answers import SSEBody, receive
from .sessions import Item, Signal, StreamableSessionTransport, StreamEvent
from .shared_sessions import is_response, response_to
from .wire import (
    EVENT_STREAM,
    JSON,
    SESSION_HEADER,
    SSE_HEADERS,
    Once,
    Request,
    Response,
    backend_down,
    http_error,
    refusal,
    session_ended,
    shutting_down,
)

if TYPE_CHECKING:
    from .app import StreamableHTTPApp


class BatchAnswers(queue.SimpleQueue[Item]):
    """The answers to a POSTed batch, in one queue: each as an event, then :attr:`Signal.END` after the last.

    ``errors`` (the batch's invalid elements) are there from the start; each
    of the ``requests`` puts its answer in its :meth:`slot`. A request
    cancelled gets none; one whose session ended gets the error saying so.
    """

    def __init__(self, requests: int, errors: Sequence[JSONRPCMessage]) -> None:
        super().__init__()
        self._left = requests
        self._lock = threading.Lock()
        for error in errors:
            super().put(StreamEvent(None, error))
        if requests == 0:
            super().put(Signal.END)

    def slot(self, request_id: RequestId) -> queue.SimpleQueue[Item]:
        """The queue the POST of request ``request_id`` reads into."""
        return BatchSlot(self, request_id)

    def answered(self, request_id: RequestId, item: Item) -> None:
        """Request ``request_id`` has its answer (a response event, or the signal that ends it without one)."""
        if isinstance(item, StreamEvent):
            super().put(item)
        elif item is Signal.CLOSED:
            super().put(StreamEvent(None, session_ended(request_id)))
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            super().put(Signal.END)

    def collect(self) -> list[JSONRPCMessage]:
        """Every answer, once the last arrived (bounded: each request is answered, cancelled or ended with its
        session)."""
        responses: list[JSONRPCMessage] = []
        while isinstance(item := self.get(), StreamEvent):
            assert item.message is not None
            responses.append(item.message)
        return responses


class BatchSlot(queue.SimpleQueue[Item]):
    """Where the POST of one request of a batch puts its answer: passed on to the batch's :class:`BatchAnswers`."""

    def __init__(self, answers: BatchAnswers, request_id: RequestId) -> None:
        super().__init__()
        self._answers = answers
        self._request_id = request_id

    def put(self, item: Item, block: bool = True, timeout: float | None = None) -> None:
        self._answers.answered(self._request_id, item)


def post_batch(
    app: StreamableHTTPApp,
    request: Request,
    principal: str | None,
    version: str | None,
    message: InvalidMessage,
    accepted: tuple[bool, bool],
) -> Response:
    """A POSTed JSON-RPC batch (a POST naming 2025-03-26 or no revision): served by the session it names, or
    without sessions by one of its own; refused elsewhere."""
    assert message.batch is not None
    json_ok, sse_ok = accepted
    if not (json_ok or sse_ok) or (app.json_response and not json_ok):
        return http_error(406, f"Not Acceptable: the client must accept {JSON} and {EVENT_STREAM}")
    if app.stateless:
        return _post_batch_alone(app, request, message, sse_ok)
    session_id = request.header(SESSION_HEADER)
    if session_id is None:
        # Nothing but initialize is served without a session, and initialize MUST NOT be part of a batch.
        return http_error(400, "Bad Request: a batch needs a session (send initialize alone, not in a batch)")
    found = app.find_session(session_id, principal)
    if isinstance(found, Response):
        return found
    entry = found
    # The era rule (see accepts_batch): the request's MCP-Protocol-Version, or else the session's revision.
    if not accepts_batch(version or entry.session.revision):
        app.sessions.release(entry)
        return refusal(message)
    elements = batch_elements(message.batch)
    refused = app.gate.batch_scope_refusal(request, elements)
    if refused is not None:
        app.sessions.release(entry)
        return refused
    if app.backend.shares_sessions:
        # Answers to requests of another process's handlers (sampling, elicitation, roots) go on there, first:
        # should the backend be away, nothing of the batch was served, and the client may send it again.
        foreign = [e for e in elements if not isinstance(e, InvalidMessage) and is_response(e)]
        foreign = [e for e in foreign if not response_to(e, entry.session)]
        try:
            for answer in foreign:
                app.shared.pass_on(entry.session_id, answer)
        except BackendUnavailable:
            app.sessions.release(entry)
            return backend_down()
        elements = [e for e in elements if not any(e is answer for answer in foreign)]
    transport = entry.transport
    assert isinstance(transport, StreamableSessionTransport)
    done = Once(lambda: app.sessions.release(entry))
    headers = [(SESSION_HEADER, entry.session_id)]
    return serve_batch(app, transport, elements, auth=request.auth, sse_ok=sse_ok, headers=headers, done=done)


def _post_batch_alone(app: StreamableHTTPApp, request: Request, message: InvalidMessage, sse_ok: bool) -> Response:
    """Without sessions: a batch served at 2025-03-26 by a session of its own, ended once the batch is answered."""
    assert message.batch is not None
    elements = batch_elements(message.batch)
    refused = app.gate.batch_scope_refusal(request, elements)
    if refused is not None:
        return refused
    transport = StreamableSessionTransport(event_store=None)
    done = app.start_alone(transport, BATCH_REVISION)
    if done is None:
        return shutting_down()
    return serve_batch(app, transport, elements, auth=request.auth, sse_ok=sse_ok, headers=[], done=done)


def serve_batch(
    app: StreamableHTTPApp,
    transport: StreamableSessionTransport,
    elements: Sequence[JSONRPCMessage | InvalidMessage],
    *,
    auth: AuthInfo | None,
    sse_ok: bool,
    headers: list[tuple[str, str]],
    done: Once,
) -> Response:
    """Pass a batch's elements to the session, and answer with what answers its requests (``done`` once sent)."""
    requests = [element for element in elements if isinstance(element, JSONRPCRequest)]
    errors = [element.response() for element in elements if isinstance(element, InvalidMessage) and element.reply]
    answers = BatchAnswers(len(requests), errors)
    for call in requests:
        transport.open_post(call.id, json_only=True, priming=False, auth=auth, reader=answers.slot(call.id))
    for element in elements:
        if not isinstance(element, InvalidMessage):  # (an invalid one has its error among the answers, or none)
            receive(transport, element)
    if not (requests or errors):
        done()
        return Response(202, headers)
    if app.json_response or not sse_ok:
        responses = answers.collect()
        done()
        if not responses:  # its requests were all cancelled
            return Response(202, headers)
        body = encode_batch(responses)
        return Response(200, [("Content-Type", JSON), ("Content-Length", str(len(body))), *headers], [body])
    stream = SSEBody(answers, first=b": batch\n\n", ping_interval=app.ping_interval, on_close=done)
    return Response(200, [*SSE_HEADERS, *headers], stream)
