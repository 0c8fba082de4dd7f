"""The official SDK's echo server over stdio (run with the SDK's Python), for the benchmark."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run()
