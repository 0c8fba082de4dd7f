"""A short MCP client script: start the echo server, list its tools and call them.

Run it from anywhere: ``python examples/client.py``. The server is started as
a subprocess and spoken to over stdio; leaving the ``with`` block ends it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_sync
from mcp_sync.client import tool_summary

SERVER = Path(__file__).with_name("echo_server.py")


def main() -> None:
    with mcp_sync.connect([sys.executable, str(SERVER)], timeout=10) as client:
        info = client.server_info
        print(f"connected to {info.name} {info.version}")
        for tool in client.tools():
            print(f"  {tool_summary(tool)}  {tool.description or ''}")
        # Tools are Python functions with keyword arguments...
        print("echo ->", client.tools.echo(text="hello").text)
        # ...or called by name; structured content comes back checked against the tool's output schema.
        print("add ->", client.call_tool_structured("add", {"a": 2, "b": 3}))


if __name__ == "__main__":
    main()
