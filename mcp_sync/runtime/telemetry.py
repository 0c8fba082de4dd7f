"""OpenTelemetry metrics for MCP requests and notifications.

mcp_sync records metrics through the OpenTelemetry *API* only; exporting them
is up to the application, which configures an SDK ``MeterProvider``::

    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider

    metrics.set_meter_provider(MeterProvider(metric_readers=[...]))
    default_telemetry().record_request("client", "tools/call", "success", 12.5)

Until the application imports ``opentelemetry.metrics`` (it must, to
configure a provider) or names a provider in ``OTEL_PYTHON_METER_PROVIDER``,
a measurement costs one dictionary look-up and nothing else: no instrument is
made and ``opentelemetry`` is not imported. Without a configured provider,
measurements then go to the API's no-op implementation.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider

__all__ = [
    "METER_NAME",
    "NOTIFICATION_TOTAL",
    "REQUEST_DURATION_MS",
    "REQUEST_TOTAL",
    "Telemetry",
    "default_telemetry",
    "package_version",
    "provider_named_in_environment",
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


_NAMED: dict[str, bool] = {}
"""Whether each ``OTEL_PYTHON_*_PROVIDER`` variable was set, read once (see :func:`provider_named_in_environment`)."""


def provider_named_in_environment(variable: str) -> bool:
    """Whether the environment names a provider in ``variable`` (``OTEL_PYTHON_METER_PROVIDER``, say).

    Read at the first question and remembered: the OpenTelemetry API reads
    it once too, when the provider is first asked for, and this is asked
    for every request while no provider is configured.
    """
    named = _NAMED.get(variable)
    if named is None:
        named = _NAMED[variable] = variable in os.environ
    return named


class _Instruments:
    """The three instruments of one meter provider."""

    __slots__ = ("notification_total", "request_duration", "request_total")

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(METER_NAME, package_version())
        self.request_total: Counter = meter.create_counter(
            REQUEST_TOTAL,
            unit="{request}",
            description="MCP requests that finished, by direction, method and status.",
        )
        self.request_duration: Histogram = meter.create_histogram(
            REQUEST_DURATION_MS,
            unit="ms",
            description="Duration of MCP requests, by direction and method.",
        )
        self.notification_total: Counter = meter.create_counter(
            NOTIFICATION_TOTAL,
            unit="{notification}",
            description="MCP notifications sent or received, by direction and method.",
        )


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

    Without ``meter_provider`` the global provider is used, once the
    application has imported ``opentelemetry.metrics`` (or names a provider
    in the environment): until then nothing is recorded, since no provider
    can be configured. Then, until the application installs one, the
    instruments are the API's proxies, which start forwarding to the real
    provider as soon as it is set, so building a ``Telemetry`` early loses
    nothing recorded after that point.

    Attribute dictionaries are built once per distinct key and reused, which
    keeps each measurement free of new dictionaries.
    """

    __slots__ = ("_bind_lock", "_instruments", "_pair_attributes", "_request_attributes")

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        self._instruments = None if meter_provider is None else _Instruments(meter_provider)
        self._bind_lock = threading.Lock()
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
        instruments = self._instruments or self._bind()
        if instruments is None:
            return
        key = (direction, method, status)
        attributes = self._request_attributes.get(key)
        if attributes is None:
            attributes = {"direction": direction, "method": method, "status": status}
            if len(self._request_attributes) < _ATTRIBUTE_CACHE_LIMIT:
                self._request_attributes[key] = attributes
        instruments.request_total.add(1, attributes)
        instruments.request_duration.record(duration_ms, self._pair(direction, method))

    def record_notification(self, direction: str, method: str) -> None:
        """Count one notification; ``direction`` is ``"sent"`` or ``"received"``.

        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> Telemetry(MeterProvider()).record_notification("received", "notifications/cancelled")
        """
        instruments = self._instruments or self._bind()
        if instruments is not None:
            instruments.notification_total.add(1, self._pair(direction, method))

    def _bind(self) -> _Instruments | None:
        """The instruments on the global provider, made at the first measurement once one may be configured.

        ``None`` while ``opentelemetry.metrics`` is not even imported and the
        environment names no provider: then none can be configured, and the
        measurement is dropped without importing anything. Once it is
        imported, the instruments are made on the global provider (until
        one is set, the API's proxy, which forwards to it once it is).
        """
        if "opentelemetry.metrics" not in sys.modules and not provider_named_in_environment(
            "OTEL_PYTHON_METER_PROVIDER"
        ):
            return None
        from opentelemetry import metrics

        with self._bind_lock:  # (made once: a second set would have the SDK warn of duplicate instruments)
            self._instruments = self._instruments or _Instruments(metrics.get_meter_provider())
            return self._instruments

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
