"""The payloads of the lifecycle events of :mod:`.events`, one frozen dataclass per event.

Import them from :mod:`mcp_sync.runtime.events`, which loads this module the
first time one is named: an emitter builds a payload only when something
listens, and a dataclass costs a noticeable part of a millisecond to make.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ConnectionClosed", "ConnectionOpened", "NotificationEmitted", "RequestCompleted", "RequestReceived"]


@dataclass(frozen=True, slots=True)
class ConnectionOpened:
    """Payload of :data:`CONNECTION_OPENED`.

    >>> ConnectionOpened(side="client", dispatcher_id="d-1").side
    'client'
    """

    side: str
    """``"client"`` or ``"server"``: which end of the connection emitted."""
    dispatcher_id: str
    """Identifies the dispatcher, stable for its lifetime."""


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """Payload of :data:`CONNECTION_CLOSED`.

    >>> ConnectionClosed("server", "d-1", reason="transport closed").reason
    'transport closed'
    """

    side: str
    """``"client"`` or ``"server"``."""
    dispatcher_id: str
    """The dispatcher that closed."""
    reason: str | None = None
    """Why the connection ended, when known."""


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """Payload of :data:`REQUEST_RECEIVED`.

    >>> RequestReceived("server", "tools/list", 1).method
    'tools/list'
    """

    side: str
    """``"client"`` or ``"server"``: the side that received the request."""
    method: str
    """The JSON-RPC method name."""
    id: str | int
    """The JSON-RPC request id chosen by the peer."""


@dataclass(frozen=True, slots=True)
class RequestCompleted:
    """Payload of :data:`REQUEST_COMPLETED`.

    ``outcome`` is ``"success"``, ``"error"`` or ``"cancelled"``.

    >>> done = RequestCompleted("server", "ping", 2, duration_ms=0.4, outcome="success")
    >>> done.outcome
    'success'
    """

    side: str
    """``"client"`` or ``"server"``: the side that handled the request."""
    method: str
    """The JSON-RPC method name."""
    id: str | int
    """The JSON-RPC request id chosen by the peer."""
    duration_ms: float
    """Time from receipt to the response, in milliseconds."""
    outcome: str
    """``"success"``, ``"error"`` or ``"cancelled"``."""


@dataclass(frozen=True, slots=True)
class NotificationEmitted:
    """Payload of :data:`NOTIFICATION_EMITTED`.

    >>> NotificationEmitted("server", "notifications/tools/list_changed", None).params is None
    True
    """

    side: str
    """``"client"`` or ``"server"``: the side that sent the notification."""
    method: str
    """The notification's method name."""
    params: dict[str, Any] | None
    """The notification's parameters as sent, or ``None``."""
