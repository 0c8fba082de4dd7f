"""Compatibility path: the Streamable HTTP client transport (:mod:`mcp_sync.transports.http`) and ``http_client``."""

from .client import http_client
from .runtime.http import new_session
from .transports.http._common import (
    DEFAULT_SSE_READ_TIMEOUT,
    DEFAULT_TIMEOUT,
    EventSource,
    SSEClientFactory,
    SSEEvent,
    Timeout,
    default_sse_client,
)
from .transports.http.streamable import DEFAULT_RECONNECT_ATTEMPTS, StreamableHTTPClientTransport

__all__ = [
    "DEFAULT_RECONNECT_ATTEMPTS",
    "DEFAULT_SSE_READ_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "EventSource",
    "SSEClientFactory",
    "SSEEvent",
    "StreamableHTTPClientTransport",
    "Timeout",
    "default_sse_client",
    "http_client",
    "new_session",
]
