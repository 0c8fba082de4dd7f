"""The server ``bench/soak.py`` soaks: tools for each kind of load, served embedded or under gunicorn.

Like ``examples/scaled_app.py``, with what a soak needs besides: a slow tool
that stops when cancelled, a tool that must run as a task, and short
lifetimes for what a client may leave behind (an idle session, a finished
task, an SSE stream on Redis), so that a run of minutes reaches its steady
state and stays there: ``SOAK_IDLE_SECONDS`` (30 by default) for all.

Under gunicorn (the backend from ``MCP_SYNC_REDIS_URL``), from ``bench/``::

    gunicorn -k gthread --threads 32 -w 2 -b 127.0.0.1:8000 'soak_app:make_app()'

Embedded (:func:`~mcp_sync.start_http`, in memory), printing its URL, until
its stdin closes::

    python bench/soak_app.py
"""

from __future__ import annotations

import os
import sys

from mcp_sync import Context, MCPServer, StreamableHTTPApp, start_http
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.scale.redis_events import RedisEventStore

IDLE_SECONDS = float(os.environ.get("SOAK_IDLE_SECONDS", "30"))

server = MCPServer("soak", "1.0")
server.tasks.ttl_ms = int(IDLE_SECONDS * 1000)  # finished tasks nobody reads again go within the steady state


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


@server.tool(structured_output=False)
def progress(steps: int, ctx: Context) -> str:
    """Report progress once per step, then finish."""
    for step in range(1, steps + 1):
        ctx.progress(step, steps)
    return f"{steps} steps"


@server.tool(structured_output=False)
def slow(seconds: float, ctx: Context) -> str:
    """Tell the client it started (one progress step), then wait ``seconds`` unless cancelled first."""
    ctx.progress(0, 1, "started")
    return "stopped" if ctx.cancelled.wait(seconds) else "done"


@server.tool(structured_output=False, task="required")
def job(seconds: float, ctx: Context) -> str:
    """A short job that always runs as a task."""
    return "stopped" if ctx.cancelled.wait(seconds) else f"job of {seconds:g} s done"


@server.tool(structured_output=False)
def touch(uri: str) -> str:
    """Mark the resource ``uri`` updated: its subscribers hear of it, on every worker."""
    server.mark_resource_updated(uri)
    return uri


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note, for clients to subscribe to."""
    return f"note {name}"


def make_app() -> StreamableHTTPApp:
    """The WSGI app (gunicorn's ``'soak_app:make_app()'``); made in each worker, after every registration.

    On Redis, SSE streams outlive their last event by ``SOAK_IDLE_SECONDS`` too (the default is an hour): the
    POST streams a killed worker's copies of sessions leave behind would pile up for an hour otherwise.
    """
    url = os.environ.get("MCP_SYNC_REDIS_URL")
    if not url:
        return StreamableHTTPApp(server, session_idle_timeout=IDLE_SECONDS)
    backend = RedisBackend(url)
    store = RedisEventStore(backend, ttl=IDLE_SECONDS)
    return StreamableHTTPApp(server, session_idle_timeout=IDLE_SECONDS, backend=backend, event_store=store)


if __name__ == "__main__":
    with start_http(server, session_idle_timeout=IDLE_SECONDS) as running:
        print(running.url, flush=True)
        sys.stdin.read()  # until the soak closes our stdin (or goes away)
