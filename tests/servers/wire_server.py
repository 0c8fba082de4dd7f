"""The server that tests/server/test_hostile_wire.py throws hostile input at, over stdio or HTTP.

``python wire_server.py [MAX_LINE_BYTES]`` serves it on stdio (lines longer
than ``MAX_LINE_BYTES`` are refused); tests over HTTP call :func:`build_server`.

- ``echo(text)``: the text back.
- ``roots``: asks the client for its roots (waiting up to an hour, so that a
  call left waiting for a broken answer shows as a hang, not as a timeout),
  and says how many there are or how the question failed.
"""

from __future__ import annotations

import sys

from mcp_sync import MCPServer
from mcp_sync.errors import MCPError
from mcp_sync.server.context import Context
from mcp_sync.server.stdio import serve_stdio


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def roots(ctx: Context) -> str:
    """How many roots the client has, or how asking failed."""
    try:
        return f"{len(ctx.list_roots(timeout=3600))} roots"
    except MCPError as error:
        return f"failed: {error}"


def build_server() -> MCPServer:
    server = MCPServer("wire-server", "1.0")
    server.tool(structured_output=False)(echo)
    server.tool(structured_output=False)(roots)
    return server


if __name__ == "__main__":
    serve_stdio(build_server(), max_line_bytes=int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 26)
