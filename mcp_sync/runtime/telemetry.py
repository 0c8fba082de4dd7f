"""OpenTelemetry metrics for MCP requests and notifications.

mcp_sync records metrics through the OpenTelemetry *API* only; exporting them
is up to the application, which configures an SDK ``MeterProvider``::

    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider

    metrics.set_meter_provider(MeterProvider(metric_readers=[...]))
    default_telemetry().record_request("client", "tools/call", "success", 12.5)

Without a configured provider every measurement goes to the API's no-op
implementation. The ``opentelemetry`` package is imported when the first
:class:`Telemetry` is built, not when this module is imported.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

__all__ = [
    "METER_NAME",
    "NOTIFICATION_TOTAL",
    "REQUEST_DURATION_MS",
    "REQUEST_TOTAL",
    "Telemetry",
    "default_telemetry",
    "package_version",
]

METER_NAME = "mcp_sync"
"""Instrumentation scope name of every mcp_sync instrument."""

REQUEST_TOTAL = "mcp_request_total"
"""Counter of finished requests; attributes ``direction``, ``method``, ``status``."""

NOTIFICATION_TOTAL = "mcp_notification_total"
"""Counter of notifications; attributes ``direction``, ``method``."""

REQUEST_DURATION_MS = "mcp_request_duration_ms"
"""Histogram of request durations in milliseconds; attributes ``direction``, ``method``."""

_DISTRIBUTION = "mcp-sync-py"

_ATTRIBUTE_CACHE_LIMIT = 1024
"""Most attribute sets remembered per cache; past it, sets are built per call.

Method names come from the peer, so the caches must not grow without bound.
"""


def package_version() -> str | None:
    """The installed version of mcp_sync (its distribution ``mcp-sync-py``), or ``None`` when it is not installed.

    The version the instrumentation scopes of mcp_sync's meter and tracer report.
    """
    from importlib import metadata

    try:
        return metadata.version(_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


class Telemetry:
    """The metric instruments of mcp_sync, bound to one meter provider.

    Three instruments are created on the meter ``"mcp_sync"``:

    * ``mcp_request_total`` (counter): one per finished request, with
      attributes ``direction``, ``method`` and ``status``;
    * ``mcp_request_duration_ms`` (histogram, unit ``ms``): the time each
      request took, with attributes ``direction`` and ``method``;
    * ``mcp_notification_total`` (counter): one per notification, with
      attributes ``direction`` and ``method``.

    For requests, ``direction`` tells which role this process played, in the
    spirit of the client/server split of the OpenTelemetry MCP semantic
    conventions: ``"client"`` when this side sent the request and waited for
    the answer, ``"server"`` when this side received and handled it. The
    ``status`` is ``"success"``, ``"error"`` or ``"cancelled"``. For
    notifications, ``direction`` is ``"sent"`` or ``"received"``.

    >>> from opentelemetry.sdk.metrics import MeterProvider
    >>> telemetry = Telemetry(MeterProvider())
    >>> telemetry.record_request("server", "tools/call", "error", 4.2)
    >>> telemetry.record_notification("sent", "notifications/progress")

    Without ``meter_provider`` the global provider is used. Until the
    application installs one, that is the API's proxy, which starts forwarding
    to the real provider as soon as it is set, so building a ``Telemetry``
    early loses nothing recorded after that point.

    Attribute dictionaries are built once per distinct key and reused, which
    keeps each measurement free of new dictionaries.
    """

    __slots__ = (
        "_notification_total",
        "_pair_attributes",
        "_request_attributes",
        "_request_duration",
        "_request_total",
    )

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        from opentelemetry import metrics

        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter(METER_NAME, package_version())
        self._request_total = meter.create_counter(
            REQUEST_TOTAL,
            unit="{request}",
            description="MCP requests that finished, by direction, method and status.",
        )
        self._request_duration = meter.create_histogram(
            REQUEST_DURATION_MS,
            unit="ms",
            description="Duration of MCP requests, by direction and method.",
        )
        self._notification_total = meter.create_counter(
            NOTIFICATION_TOTAL,
            unit="{notification}",
            description="MCP notifications sent or received, by direction and method.",
        )
        self._request_attributes: dict[tuple[str, str, str], dict[str, str]] = {}
        # {"direction", "method"} sets serve both the histogram and the
        # notification counter; their direction values never overlap.
        self._pair_attributes: dict[tuple[str, str], dict[str, str]] = {}

    def record_request(self, direction: str, method: str, status: str, duration_ms: float) -> None:
        """Count one finished request and record how long it took.

        ``direction`` is ``"client"`` or ``"server"`` and ``status`` is
        ``"success"``, ``"error"`` or ``"cancelled"`` (see the class docs).

        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> Telemetry(MeterProvider()).record_request("client", "ping", "success", 0.8)
        """
        key = (direction, method, status)
        attributes = self._request_attributes.get(key)
        if attributes is None:
            attributes = {"direction": direction, "method": method, "status": status}
            if len(self._request_attributes) < _ATTRIBUTE_CACHE_LIMIT:
                self._request_attributes[key] = attributes
        self._request_total.add(1, attributes)
        self._request_duration.record(duration_ms, self._pair(direction, method))

    def record_notification(self, direction: str, method: str) -> None:
        """Count one notification; ``direction`` is ``"sent"`` or ``"received"``.

        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> Telemetry(MeterProvider()).record_notification("received", "notifications/cancelled")
        """
        self._notification_total.add(1, self._pair(direction, method))

    def _pair(self, direction: str, method: str) -> dict[str, str]:
        key = (direction, method)
        attributes = self._pair_attributes.get(key)
        if attributes is None:
            attributes = {"direction": direction, "method": method}
            if len(self._pair_attributes) < _ATTRIBUTE_CACHE_LIMIT:
                self._pair_attributes[key] = attributes
        return attributes


_default: Telemetry | None = None
_default_lock = threading.Lock()


def default_telemetry() -> Telemetry:
    """The shared :class:`Telemetry` of the global meter provider.

    Built on first use and then reused; safe to call from any thread.

    >>> default_telemetry() is default_telemetry()
    True
    """
    global _default
    telemetry = _default
    if telemetry is None:
        with _default_lock:
            telemetry = _default
            if telemetry is None:
                telemetry = _default = Telemetry()
    return telemetry
