"""An MCP server over stdio with two tools, ``echo`` and ``add``.

Run it as ``python examples/echo_server.py``; an MCP client starts it as a
subprocess and talks to it over stdin and stdout. The benchmark uses it.
"""

from __future__ import annotations

from mcp_sync import MCPServer

server = MCPServer("echo-server", "1.0")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
def add(a: int | float, b: int | float) -> int | float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.serve_stdio()
