"""A server and a client in one process, over the in-memory transport.

Run it with ``python examples/quickstart.py``: it registers a tool, a
resource and a prompt on an MCPServer, connects an MCPClient, uses all three
and prints what came back.
"""

from __future__ import annotations

from mcp_sync import InMemoryTransport, MCPClient, MCPServer
from mcp_sync.types import PromptArgument


def build_server() -> MCPServer:
    server = MCPServer("quickstart", "1.0")

    def add(arguments: dict[str, float], ctx: object) -> str:
        return str(arguments["a"] + arguments["b"])

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
    server.register_resource(
        "notes://today",
        lambda uri, ctx: "Buy milk. Call Ada.",
        name="today",
        mime_type="text/plain",
        description="Today's notes.",
    )
    server.register_prompt(
        "greet",
        lambda arguments, ctx: f"Write a warm greeting for {arguments['name']}.",
        description="Greet someone by name.",
        arguments=[PromptArgument(name="name", required=True)],
    )
    return server


def main() -> None:
    server = build_server()
    client_end, server_end = InMemoryTransport.pair()
    server.start(server_end)
    with MCPClient("quickstart-client") as client:
        result = client.connect(client_end)
        print(f"connected to {result.server_info.name} {result.server_info.version} ({result.protocol_version})")
        print("tools:", [tool.name for tool in client.tools()])
        print("add(2, 3) =", client.call_tool("add", {"a": 2, "b": 3}).text)
        print("notes://today:", client.read_resource("notes://today").text)
        print("greet prompt:", client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text)
    server.stop()


if __name__ == "__main__":
    main()
