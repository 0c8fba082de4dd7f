"""The client side of the stateless revision 2026-07-28: what :class:`~mcp_sync.client.MCPClient` uses to speak it.

- :func:`request_meta` builds the ``_meta`` every request carries (revision,
  capabilities, client info, log level);
- :class:`ResponseCache` keeps ``server/discover``, listing and
  ``resources/read`` results for as long as their ``ttlMs`` says;
- :func:`header_declarations` reads and checks a tool's ``x-mcp-header``
  annotations, and :func:`header_value` writes an ``Mcp-Name`` or
  ``Mcp-Param-*`` value the way the Streamable HTTP transport must;
- :class:`Subscription` is an open ``subscriptions/listen`` stream.

>>> header_value("us-west1"), header_value(" padded "), header_value(42), header_value(True)
('us-west1', '=?base64?IHBhZGRlZCA=?=', '42', 'true')
>>> header_declarations({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}})
{'Region': ('region',)}
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import MCP_CODES, MCPError
from .modern import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from .types import RequestId, SubscriptionFilter

if TYPE_CHECKING:
    from .dispatcher import JsonRpcDispatcher, PendingRequest

__all__ = [
    "CACHEABLE",
    "INPUT_METHODS",
    "MODERN_ERROR_CODES",
    "InvalidHeaderDeclaration",
    "NotificationCallback",
    "ResponseCache",
    "Subscription",
    "header_declarations",
    "header_value",
    "request_meta",
]

log = logging.getLogger("mcp_sync.client")

CACHEABLE = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
"""The methods whose results carry ``ttlMs``/``cacheScope`` and may be served from the cache."""
INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The methods a server may answer with an ``InputRequiredResult``."""
MODERN_ERROR_CODES = frozenset({-32020, -32021, -32022})
"""JSON-RPC error codes only a 2026-07-28 server sends: header mismatch, missing capability, unsupported version."""

NotificationCallback = Callable[[str, dict[str, Any]], None]
"""Receives a subscription's notifications: ``(method, params)``."""

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP field-name token (RFC 9110 ``1*tchar``)."""
_HEADER_TYPES = ("string", "integer", "boolean")
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
_PLAIN = re.compile(r"[\x20-\x7e]*")
_ANNOTATION = "x-mcp-header"


def request_meta(
    revision: str, capabilities: dict[str, Any], info: dict[str, Any], log_level: str | None
) -> dict[str, Any]:
    """The ``_meta`` keys of a 2026-07-28 request."""
    meta = {PROTOCOL_VERSION: revision, CLIENT_CAPABILITIES: capabilities, CLIENT_INFO: info}
    if log_level is not None:
        meta[LOG_LEVEL] = log_level
    return meta


# ------------------------------------------------------------------ caching


class ResponseCache:
    """Results of cacheable requests, fresh for the ``ttlMs`` their server gave.

    A result is keyed by its method and its parameters without ``_meta``; one
    without a positive ``ttlMs`` is not kept. Every cached result is this
    client's own (the client holds one authorization context), so
    ``"private"`` results are kept like ``"public"`` ones.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, str, dict[str, Any]]] = {}

    @staticmethod
    def key(method: str, params: Mapping[str, Any] | None) -> str:
        salient = {name: value for name, value in (params or {}).items() if name != "_meta"}
        return json.dumps([method, salient], sort_keys=True, separators=(",", ":"), default=str)

    def get(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The fresh result of an identical earlier request, if there is one."""
        key = self.key(method, params)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if self._clock() >= entry[0]:
                del self._entries[key]
                return None
            copy: dict[str, Any] = json.loads(json.dumps(entry[2]))  # callers may change what they get
            return copy

    def store(self, method: str, params: Mapping[str, Any] | None, result: dict[str, Any]) -> None:
        """Keep ``result`` while its ``ttlMs`` lasts."""
        ttl = result.get("ttlMs")
        if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
            return
        with self._lock:
            self._entries[self.key(method, params)] = (self._clock() + ttl / 1000.0, method, result)

    def invalidate(self, *methods: str) -> None:
        """Forget the results of ``methods`` (all results when none is named)."""
        with self._lock:
            for key in [k for k, (_, method, _) in self._entries.items() if not methods or method in methods]:
                del self._entries[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


# ------------------------------------------------------------------ headers


class InvalidHeaderDeclaration(ValueError):
    """A tool's ``x-mcp-header`` annotation breaks the rules, so the tool must not be used over HTTP."""


def header_declarations(schema: Any) -> dict[str, tuple[str, ...]]:
    """A tool input schema's ``x-mcp-header`` annotations: header name -> property path.

    Raises :class:`InvalidHeaderDeclaration` saying why when an annotation
    is not a token, is repeated (ignoring case), sits on a property that is
    not a string, integer or boolean, or is not reached from the root
    through ``properties`` alone.

    >>> header_declarations({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}})
    Traceback (most recent call last):
    ...
    mcp_sync.modern_client.InvalidHeaderDeclaration: x-mcp-header 'N' is on property n of type 'number'
    """
    found: dict[str, tuple[str, ...]] = {}
    reachable: set[int] = set()

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        properties = node.get("properties")
        for name, prop in properties.items() if isinstance(properties, Mapping) else ():
            if not isinstance(prop, Mapping):
                continue
            where = ".".join((*path, name))
            if _ANNOTATION in prop:
                reachable.add(id(prop))
                declared = prop[_ANNOTATION]
                if not isinstance(declared, str) or not _TOKEN.fullmatch(declared):
                    raise InvalidHeaderDeclaration(
                        f"x-mcp-header {declared!r} on property {where} is not a header name"
                    )
                if prop.get("type") not in _HEADER_TYPES:
                    raise InvalidHeaderDeclaration(
                        f"x-mcp-header {declared!r} is on property {where} of type {prop.get('type')!r}"
                    )
                if declared.lower() in (other.lower() for other in found):
                    raise InvalidHeaderDeclaration(f"x-mcp-header {declared!r} is declared twice")
                found[declared] = (*path, name)
            walk(prop, (*path, name))

    if isinstance(schema, Mapping):
        walk(schema, ())
    stray = _annotated(schema) - reachable
    if stray:
        raise InvalidHeaderDeclaration(f"{len(stray)} x-mcp-header annotation(s) where no chain of properties reaches")
    return found


def _annotated(node: Any) -> set[int]:
    """The ids of every mapping in a schema that holds an ``x-mcp-header`` keyword."""
    found: set[int] = set()
    if isinstance(node, Mapping):
        if _ANNOTATION in node:
            found.add(id(node))
        for value in node.values():
            found |= _annotated(value)
    elif isinstance(node, list):
        for value in node:
            found |= _annotated(value)
    return found


def header_value(value: Any) -> str | None:
    """What an ``Mcp-Name`` or ``Mcp-Param-*`` header carries for ``value`` (``None``: no header).

    Booleans are ``true``/``false``, numbers decimal text; a string is sent
    as it is when it is printable ASCII without surrounding spaces and does
    not look like the Base64 sentinel, and as ``=?base64?...?=`` otherwise.
    Null, and values of other types, have no header.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if not isinstance(value, str):
        return None
    if _PLAIN.fullmatch(value) and value == value.strip(" ") and not _SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def screen_tools(
    tools: Iterable[Any], warn: Callable[[str, str], None]
) -> tuple[list[Any], dict[str, dict[str, tuple[str, ...]]]]:
    """The tools of a listing whose ``x-mcp-header`` annotations are valid, and each one's annotations.

    ``warn(tool_name, reason)`` is told of each tool left out.
    """
    kept: list[Any] = []
    declarations: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool in tools:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        try:
            found = header_declarations(tool.get("inputSchema") if isinstance(tool, Mapping) else None)
        except InvalidHeaderDeclaration as exc:
            warn(str(name), str(exc))
            continue
        kept.append(tool)
        declarations[str(name)] = found
    return kept, declarations


# ------------------------------------------------------------- subscriptions

_END = object()


class Subscription:
    """An open ``subscriptions/listen`` stream; made by :meth:`MCPClient.listen <mcp_sync.client.MCPClient.listen>`.

    ``requested`` is the filter asked for, ``acknowledged`` the part the
    server agreed to. Each notification of the stream goes to the
    ``on_notification`` callback, in order, on a thread of its own
    (``mcp-sync-subscription``). :meth:`close` ends the stream (over stdio
    with ``notifications/cancelled``, over HTTP by closing the response);
    so does leaving a ``with`` block. ``done`` is set once the stream has
    ended, by either side; ``error`` then says why when it was not closed
    by this client or ended gracefully by the server.
    """

    def __init__(
        self,
        dispatcher: JsonRpcDispatcher,
        requested: SubscriptionFilter,
        on_notification: NotificationCallback | None,
        forget: Callable[[Subscription], None],
    ) -> None:
        self.requested = requested
        self.acknowledged: SubscriptionFilter | None = None
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._dispatcher = dispatcher
        self._callback = on_notification
        self._forget = forget
        self._acked = threading.Event()
        self._pending: PendingRequest | None = None
        self._closing = False
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None

    @property
    def id(self) -> RequestId:
        """The subscription's id: the JSON-RPC id of its ``subscriptions/listen`` request."""
        assert self._pending is not None
        return self._pending.id

    def _start(self, pending: PendingRequest) -> None:
        """The listen request is on its way (the client's routing lock is held)."""
        self._pending = pending
        if self._callback is not None:
            self._worker = threading.Thread(target=self._run, name="mcp-sync-subscription", daemon=True)
            self._worker.start()
        pending.future.add_done_callback(self._ended)

    def _wait_acknowledged(self, timeout: float | None) -> None:
        """Block until the server acknowledged the subscription; raise what ended it otherwise."""
        assert self._pending is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._acked.wait(0.02):
            if self._pending.future.done():
                self._pending.future.result()  # raises the error that ended it
                raise MCPError(MCP_CODES.PROTOCOL_INVALID, "the server ended the subscription before acknowledging it")
            if deadline is not None and time.monotonic() >= deadline:
                self.close()
                raise MCPError(
                    MCP_CODES.TIMEOUT,
                    f"the server did not acknowledge the subscription within {timeout:g} s",
                    context={"method": "subscriptions/listen", "timeout": timeout},
                )

    def _acknowledge(self, params: dict[str, Any]) -> None:
        try:
            self.acknowledged = SubscriptionFilter.model_validate(params.get("notifications") or {})
        except ValueError:
            log.debug("ignored a malformed acknowledgement: %r", params)
            return
        self._acked.set()

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        if self._callback is not None:
            self._queue.put((method, params))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            method, params = item
            try:
                assert self._callback is not None
                self._callback(method, params)
            except Exception:
                log.exception("a subscription callback failed on %s", method)

    def _ended(self, future: concurrent.futures.Future[dict[str, Any]]) -> None:
        error = future.exception()
        if error is not None and not self._closing:
            self.error = error
        self._forget(self)
        self._queue.put(_END)
        self.done.set()

    def close(self) -> None:
        """End the subscription and wait for its callbacks to finish. Idempotent."""
        self._closing = True
        pending = self._pending
        if pending is not None and not pending.future.done():
            self._dispatcher.cancel(pending, "the subscription was closed")
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(5.0)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the subscription has ended; whether it has."""
        return self.done.wait(timeout)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "ended" if self.done.is_set() else "open"
        return f"<Subscription {self._pending.id if self._pending is not None else '?'} ({state})>"
