"""A server with a slow tool, for clients that cancel.

``slow(seconds)`` tells the client it started (one progress step), then waits
``seconds`` unless the call is cancelled first. Over HTTP::

    python -m mcp_sync run tests/servers/slow_calls.py --transport http --port 0
"""

from __future__ import annotations

from mcp_sync import Context, MCPServer

server = MCPServer("slow-calls", "1.0")


@server.tool(structured_output=False)
def slow(seconds: float, ctx: Context) -> str:
    """Say it started, then wait ``seconds`` unless cancelled."""
    ctx.progress(0, 1, "started")
    return "stopped" if ctx.cancelled.wait(seconds) else "done"
