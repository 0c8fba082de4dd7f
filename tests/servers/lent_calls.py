"""A WSGI app whose tools say which thread runs them, and one that holds its thread until the test lets it go.

``where()`` names the thread running it. ``hold(port)`` connects to the
test's listening socket on ``port`` and holds its thread, deaf to being told
to stop, until the test closes that connection (30 s at most), then answers
``"released"``: the test learns the call started when it accepts the
connection, and ends it by closing it (no polling).

Under gunicorn::

    gunicorn -k gthread --threads 4 -w 1 -b 127.0.0.1:8000 tests.servers.lent_calls:application
"""

from __future__ import annotations

import contextlib
import socket
import threading

from mcp_sync import MCPServer, StreamableHTTPApp

HOLD_SECONDS = 30.0

server = MCPServer("lent-calls", "1.0")


@server.tool(structured_output=False)
def where() -> str:
    """The name of the thread running this call."""
    return threading.current_thread().name


@server.tool(structured_output=False)
def hold(port: int) -> str:
    """Hold this thread until the test closes the connection made to ``port`` (whatever the server says)."""
    with socket.create_connection(("127.0.0.1", port), timeout=HOLD_SECONDS) as sock, contextlib.suppress(OSError):
        sock.recv(1)
    return "released"


application = StreamableHTTPApp(server)
