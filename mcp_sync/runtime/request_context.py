"""An incoming request as its handler sees it, and which request the running thread serves.

:class:`RequestContext` is what a handler gets with its params (id, method,
``_meta``, the cancel event, ``progress()``); :class:`BatchReplies` holds the
answers of the JSON-RPC batch a request came in; :func:`current_request` is
the request whose handler runs on this thread (set by the dispatcher around
the handler, :func:`serving`, and for work handed to another thread,
:func:`acting_for`).

>>> current_request() is None
True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..protocol.errors import JsonRpcCode
from ..protocol.jsonrpc import encode_message, error_response
from ..protocol.types import JSONRPCMessage, ProgressNotificationParams, ProgressToken, RequestId
from .cancellation import CancelEvent
from .transport import Route

if TYPE_CHECKING:
    from .dispatcher import JsonRpcDispatcher

__all__ = ["BatchReplies", "RequestContext", "acting_for", "current_request", "serving"]


class _Current(threading.local):
    """What runs on this thread; a class default, so that a thread that never served reads ``None`` (where
    ``getattr(local, name, None)`` would raise and catch an AttributeError, on every call a client makes)."""

    context: RequestContext | None = None


_current = _Current()


def current_request() -> RequestContext | None:
    """The request whose handler runs on this thread, if any.

    Transports use it to send what a handler emits (progress, log messages,
    requests to the peer) along with the request it belongs to.
    """
    return _current.context


@contextlib.contextmanager
def acting_for(context: RequestContext | None) -> Iterator[None]:
    """Run the block as if in ``context``'s handler: what it sends travels with that request.

    For work a handler hands to another thread (a proxy relaying the
    progress its upstream reports, say), which transports would otherwise
    take for the connection's own.

    >>> with acting_for(None):
    ...     current_request() is None
    True
    """
    previous = current_request()
    _current.context = context
    try:
        yield
    finally:
        _current.context = previous


class serving:  # (named as a function: it is used as one, like contextlib's managers)
    """Run a request's handler in the block: :func:`current_request` is ``context`` there, and ``None`` after.

    The dispatcher wraps each handler in it (its threads serve one request
    at a time, so nothing is restored). A class rather than a generator
    made a context manager: it is entered for every request served, and
    costs a third as much.

    >>> ctx = RequestContext(None, 1, "ping", {})  # type: ignore[arg-type]
    >>> with serving(ctx):
    ...     current_request() is ctx
    True
    >>> current_request() is None
    True
    """

    __slots__ = ("context",)

    def __init__(self, context: RequestContext) -> None:
        self.context = context

    def __enter__(self) -> None:
        _current.context = self.context

    def __exit__(self, *exc_info: object) -> None:
        _current.context = None


def _progress_token(token: Any) -> ProgressToken | None:
    """``token`` as a progress token: a string or an integer (``2.0`` is one); ``None`` for anything else."""
    if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)):
        return token
    if isinstance(token, float) and token.is_integer():
        return int(token)
    return None


class RequestContext:
    """What a request handler knows about the request it serves.

    ``cancelled`` is set when the peer cancels the request or the connection
    closes; long handlers should check it. ``progress()`` reports progress
    when the caller asked for it (and does nothing otherwise).

    A plain class with slots, not a dataclass: one is made for each request
    served, and a dataclass's generated methods are compiled at import, which
    every process's start would pay. Compared by identity.

    >>> RequestContext(None, 7, "tools/call", {})  # type: ignore[arg-type]
    RequestContext(request_id=7, method='tools/call', answered=False)
    """

    __slots__ = (
        "__weakref__",
        "answered",
        "batch",
        "cancelled",
        "dispatcher",
        "method",
        "params",
        "request_id",
        "state",
        "writer",
    )

    def __init__(
        self,
        dispatcher: JsonRpcDispatcher,
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        cancelled: threading.Event | None = None,
        answered: bool = False,
        state: dict[str, Any] | None = None,
        batch: BatchReplies | None = None,
        writer: Callable[[JSONRPCMessage], None] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.request_id = request_id
        self.method = method
        self.params = params
        self.cancelled: threading.Event = CancelEvent() if cancelled is None else cancelled
        self.answered = answered
        """Whether the request has had its answer (then nothing more is sent)."""
        self.state: dict[str, Any] = {} if state is None else state
        """Scratch space for the layers above (the session keeps per-request protocol state here)."""
        self.batch = batch
        """The JSON-RPC batch the request came in, whose one answer carries its response; ``None``: it came alone."""
        self.writer = writer
        """The request's own way back, when it came with one (a 2026-07-28 POST, served by
        :meth:`~mcp_sync.runtime.dispatcher.JsonRpcDispatcher.serve`): what its handler sends and its response go
        there; ``None``: over the connection's transport."""

    def __repr__(self) -> str:
        return f"RequestContext(request_id={self.request_id!r}, method={self.method!r}, answered={self.answered})"

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` object (empty when absent)."""
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def progress_token(self) -> ProgressToken | None:
        """The caller's progress token, if it sent a valid one (a string or an integer)."""
        return _progress_token(self.meta.get("progressToken"))

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` for this request, if the caller wants it."""
        token = self.progress_token
        if token is None:
            return
        params = ProgressNotificationParams(progress_token=token, progress=progress, total=total, message=message)
        self.dispatcher.notify("notifications/progress", params, route=Route(request=self))


class BatchReplies:
    """The answers to one JSON-RPC batch, held until the last of them arrives, then sent as one array.

    ``expected`` counts the batch's requests and the invalid elements that get
    an error; a request the peer cancelled counts as answered, without a response.
    """

    def __init__(self, expected: int, send: Callable[[list[JSONRPCMessage]], None]) -> None:
        self._left = expected
        self._send = send
        self._responses: list[JSONRPCMessage] = []
        self._lock = threading.Lock()

    def add(self, response: JSONRPCMessage | None) -> None:
        """One element is answered (``None``: it gets no response); the last sends the array."""
        if response is not None:
            try:
                encode_message(response)  # one response that is not JSON must not lose the whole array
            except Exception as exc:
                request_id = getattr(response, "id", None)
                response = error_response(request_id, JsonRpcCode.INTERNAL_ERROR, f"Internal error: {exc}")
        with self._lock:
            if response is not None:
                self._responses.append(response)
            self._left -= 1
            responses = self._responses if self._left == 0 else None
        if responses:  # (a batch whose requests were all cancelled gets no answer at all)
            self._send(responses)
