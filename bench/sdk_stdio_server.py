"""The official SDK's echo server over stdio (run with the SDK's Python), for the benchmark.

Declared as ``examples/echo_server.py`` declares ours: ``echo`` returns its text as
text content only (``structured_output=False``: no ``structuredContent`` copy, no
``outputSchema``), so both sides carry and check the same payload.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-echo")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run()
