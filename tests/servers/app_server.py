"""A server with an app, for the tests of ``mcp-sync app``: ``show`` has one, ``plain`` has none."""

from __future__ import annotations

from mcp_sync import MCPServer

server = MCPServer("app-server", "1.0")
UI = {"ui": {"resourceUri": "ui://app/view.html"}}


@server.tool(meta=UI)
def show(n: int) -> str:
    """Show n."""
    return f"n is {n}"


@server.tool
def plain() -> str:
    """No app."""
    return "plain"


@server.resource("ui://app/view.html", mime_type="text/html;profile=mcp-app")
def view() -> str:
    return "<!doctype html><p>view</p>"
