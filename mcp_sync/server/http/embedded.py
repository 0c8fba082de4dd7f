"""The app on the embedded WSGI server: :func:`start_http` in the background, :func:`serve_http` until Ctrl-C.

>>> from mcp_sync import MCPServer
>>> with start_http(MCPServer("demo")) as running:
...     running.url.startswith("http://127.0.0.1:") and running.url.endswith("/mcp")
True
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

from ..core import MCPServer
from .app import StreamableHTTPApp
from .wsgi import MAX_CONNECTIONS, WSGIServer

log = logging.getLogger(__name__)


class RunningHTTPServer:
    """An MCP server served over HTTP in the background, by :func:`start_http`.

    ``url`` is the endpoint's full URL; ``app`` the WSGI application;
    :meth:`close` (or leaving a ``with`` block) ends every session and stream,
    then stops the embedded server and joins its threads.
    """

    def __init__(self, app: StreamableHTTPApp, host: str, port: int, max_connections: int = MAX_CONNECTIONS) -> None:
        self.app = app
        self._server = embed(app, host, port, max_connections)
        self.url = self._server.url + app.path
        self._server.start()

    def close(self) -> None:
        """Stop serving: end every session and stream, then the listening socket and its threads."""
        self._server.close()

    def __enter__(self) -> RunningHTTPServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def start_http(
    server: MCPServer,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_connections: int = MAX_CONNECTIONS,
    **options: Any,
) -> RunningHTTPServer:
    """Serve ``server`` over HTTP in the background; ``options`` go to :class:`StreamableHTTPApp`.

    Port 0 picks a free port; the returned handle's ``url`` tells which.
    ``max_connections`` bounds the connections served at once (each open
    stream holds one; see :class:`~mcp_sync.server.http.wsgi.WSGIServer`).

    >>> running = start_http(MCPServer("demo"))
    >>> running.url.startswith("http://127.0.0.1:") and running.url.endswith("/mcp")
    True
    >>> running.close()
    """
    return RunningHTTPServer(StreamableHTTPApp(server, **options), host, port, max_connections)


def serve_http(
    server: MCPServer,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_connections: int = MAX_CONNECTIONS,
    **options: Any,
) -> None:
    """Serve ``server`` over HTTP until interrupted (Ctrl-C); ``options`` go to :class:`StreamableHTTPApp`.

    The endpoint's URL is logged (logger ``mcp_sync.server.http.embedded``, level INFO).
    ``max_connections`` bounds the connections served at once: each open
    GET or listen stream holds one, so a server that keeps thousands of
    clients listening raises it (and ``max_sessions`` for handshake-era
    clients)::

        serve_http(server, port=8000)        # http://127.0.0.1:8000/mcp
        serve_http(server, port=8000, max_connections=5000, max_sessions=5000)
    """
    app = StreamableHTTPApp(server, **options)
    embedded = embed(app, host, port, max_connections)
    log.info("serving MCP on %s%s", embedded.url, app.path)
    embedded.serve_forever()


def embed(app: StreamableHTTPApp, host: str, port: int, max_connections: int) -> WSGIServer:
    """The embedded server for ``app``; closing it closes the app first, which wakes every stream."""
    embedded = WSGIServer(app, host, port, max_connections=max_connections)
    embedded.on_close(app.close)
    return embedded
