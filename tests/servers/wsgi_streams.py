"""A plain MCP WSGI app for gunicorn, with nothing set up for stopping: the app must notice the stop itself.

``tests/server/test_hosting.py`` serves it (``--pythonpath tests/servers wsgi_streams:application``),
opens streams that never end by themselves, and stops gunicorn with SIGTERM.
"""

from __future__ import annotations

from mcp_sync import MCPServer
from mcp_sync.server import StreamableHTTPApp

server = MCPServer("streams", "1.0")


@server.tool
def echo(text: str) -> str:
    """Say it back."""
    return text


application = StreamableHTTPApp(server)
