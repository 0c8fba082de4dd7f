"""Compatibility path: the stdio transport (:mod:`mcp_sync.transports.stdio`), ``stdio_client`` and ``serve_stdio``."""

from .client import stdio_client
from .server.stdio import serve_stdio
from .transports.stdio import (
    DEFAULT_INHERITED_ENV,
    DEFAULT_MAX_LINE_BYTES,
    ProcessTransport,
    StderrTarget,
    StdioTransport,
    default_environment,
    recover_id,
)

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "DEFAULT_MAX_LINE_BYTES",
    "ProcessTransport",
    "StderrTarget",
    "StdioTransport",
    "default_environment",
    "recover_id",
    "serve_stdio",
    "stdio_client",
]
