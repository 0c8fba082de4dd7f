"""The HTTP+SSE transport of revision 2024-11-05, for older clients.

A client opens an SSE stream with a GET at the app's ``sse_path``
(:func:`open_stream`); its first event names the URL, under
``messages_path`` with the session's id, to which it POSTs every message
(:func:`post_message`). Every answer goes on the stream. A batch is served
when the connection negotiated 2025-03-26, each answer an event of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.batch import accepts_batch, batch_elements
from ...protocol.errors import JsonRpcCode
from ...protocol.jsonrpc import InvalidMessage, decode_message
from .answers import SSEBody
from .security import accepts
from .sessions import HTTPSession, LegacySSETransport, SessionRegistry
from .wire import EVENT_STREAM, SSE_HEADERS, Request, Response, http_error, read_body, refusal

if TYPE_CHECKING:
    from .app import StreamableHTTPApp


def _admitted(app: StreamableHTTPApp, request: Request, method: str) -> tuple[str | None, Response | None]:
    """The principal of a request by ``method`` (the one its path takes), or the answer refusing it (405, or
    the bearer-token gate's)."""
    if request.method != method:
        return None, http_error(405, f"Method not allowed: {request.method}", Allow=method)
    return app.gate.authenticate(request)


def open_stream(app: StreamableHTTPApp, request: Request) -> Response:
    """GET at ``sse_path``: a new session, and its stream (the endpoint event first)."""
    principal, denied = _admitted(app, request, "GET")
    if denied is not None:
        return denied
    if not accepts(request.header("Accept"), EVENT_STREAM):
        return http_error(406, f"Not Acceptable: the client must accept {EVENT_STREAM}")
    transport = LegacySSETransport()
    session = app.server.start(transport)
    session.auth, session.list_all = request.auth, app.list_all  # no POST per request: the stream's token
    entry = HTTPSession(SessionRegistry.new_id(), transport, session, principal, 0.0)
    if not app.sessions.add(entry):
        session.close()
        return http_error(503, "Too many sessions: try again later", JsonRpcCode.INTERNAL_ERROR, Retry_After="5")

    def finished() -> None:
        app.sessions.release(entry)
        app.sessions.remove(entry.session_id)

    script = str(request.environ.get("SCRIPT_NAME", ""))
    endpoint = f"event: endpoint\ndata: {script}{app.messages_path}?session_id={entry.session_id}\n\n"
    body = SSEBody(transport.reader, first=endpoint.encode(), ping_interval=app.ping_interval, on_close=finished)
    return Response(200, list(SSE_HEADERS), body)


def post_message(app: StreamableHTTPApp, request: Request) -> Response:
    """POST at ``messages_path``: a message for the session the query names (202; its answer goes on the stream)."""
    principal, denied = _admitted(app, request, "POST")
    if denied is not None:
        return denied
    body = read_body(request, app.max_body_bytes)
    if isinstance(body, Response):
        return body
    message = decode_message(body)
    if isinstance(message, InvalidMessage):
        return _post_batch(app, request, principal, message, body)
    refused = app.gate.scope_refusal(request, message)
    if refused is not None:
        return refused
    found = app.find_session(request.query("session_id"), principal, legacy=True)
    if isinstance(found, Response):
        return found
    try:
        assert isinstance(found.transport, LegacySSETransport)
        found.transport.receive(message)
    finally:
        app.sessions.release(found)
    return Response(202)


def _post_batch(
    app: StreamableHTTPApp, request: Request, principal: str | None, message: InvalidMessage, body: bytes
) -> Response:
    """A body that is no single message: a batch, served when the connection negotiated 2025-03-26; else 400."""
    if message.batch is None:
        return app.refuse_invalid(request, message, body, principal, legacy=True)
    found = app.find_session(request.query("session_id"), principal, legacy=True)
    if isinstance(found, Response):
        return found
    try:
        if not accepts_batch(found.session.revision):  # the era rule: see accepts_batch
            return refusal(message)
        refused = app.gate.batch_scope_refusal(request, batch_elements(message.batch))
        if refused is not None:
            return refused
        found.transport.receive(message)  # the session's dispatcher serves the batch
    finally:
        app.sessions.release(found)
    return Response(202)
