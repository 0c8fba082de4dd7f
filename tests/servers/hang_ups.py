"""A WSGI app whose tool waits until cancelled, and which says which calls were: for servers that host it.

``wait(tag)`` sends one progress step (so the answer is a stream, written by
the server's thread while a handler thread runs the tool), then waits up to a
minute for its cancellation and notes ``tag`` once cancelled. ``cancelled()``
lists the tags noted so far in this process. Pings are a minute apart, so a
cancellation that arrives sooner was not learnt from a failed ping's write.

Under gunicorn (one worker: the same process serves both tools)::

    gunicorn -k gthread --threads 4 -w 1 -b 127.0.0.1:8000 tests.servers.hang_ups:application
"""

from __future__ import annotations

import threading

from mcp_sync import Context, MCPServer, StreamableHTTPApp

WAIT_SECONDS = 60.0

server = MCPServer("hang-ups", "1.0")
_cancelled: list[str] = []
_lock = threading.Lock()


@server.tool(structured_output=False)
def wait(tag: str, ctx: Context) -> str:
    """Say it started, then wait until cancelled (a minute at most)."""
    ctx.progress(0, 1, "started")
    if not ctx.cancelled.wait(WAIT_SECONDS):
        return "never cancelled"
    with _lock:
        _cancelled.append(tag)
    return "cancelled"


@server.tool
def cancelled() -> list[str]:
    """The tags of the calls cancelled so far, in order."""
    with _lock:
        return list(_cancelled)


application = StreamableHTTPApp(server, ping_interval=WAIT_SECONDS)
