"""Compatibility path: the HTTP server now lives in :mod:`mcp_sync.server.http.app`.

``from mcp_sync.http_server import StreamableHTTPApp, serve_http, start_http`` keeps working.
"""

from .server.http.app import RunningHTTPServer, StreamableHTTPApp, serve_http, start_http

__all__ = ["RunningHTTPServer", "StreamableHTTPApp", "serve_http", "start_http"]
