"""Compatibility path: the embedded WSGI server now lives in :mod:`mcp_sync.server.http.wsgi`."""

from .server.http.wsgi import ClientDisconnected, RequestBodyError, WSGIServer, serve

__all__ = ["ClientDisconnected", "RequestBodyError", "WSGIServer", "serve"]
