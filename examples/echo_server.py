"""An MCP server over stdio with two tools, ``echo`` and ``add``.

Run it as ``python examples/echo_server.py``; an MCP client starts it as a
subprocess and talks to it over stdin and stdout. The benchmark uses it.
"""

from __future__ import annotations

from typing import Any

from mcp_sync import MCPServer

server = MCPServer("echo-server", "1.0")
server.register_tool(
    "echo",
    lambda args, ctx: args["text"],
    description="Return the text unchanged.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


def add(args: dict[str, Any], ctx: object) -> str:
    total = args["a"] + args["b"]
    return str(total)


server.register_tool(
    "add",
    add,
    description="Add two numbers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)

if __name__ == "__main__":
    server.serve_stdio()
