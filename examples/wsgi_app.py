"""An MCP server as a WSGI application, for gunicorn, waitress or any WSGI server that streams.

The module exposes ``application``; from the repository's root::

    gunicorn -k gthread --threads 8 -w 1 -b 127.0.0.1:8000 examples.wsgi_app:application
    waitress-serve --listen=127.0.0.1:8000 --threads=8 examples.wsgi_app:application

and a client connects to ``http://127.0.0.1:8000/mcp`` (the 2024-11-05
HTTP+SSE transport is at ``/sse``)::

    from mcp_sync.client import http_client

    with http_client("http://127.0.0.1:8000/mcp") as client:
        print(client.call_tool("add", {"a": 2, "b": 3}).text)

What the hosting server must offer:

- Threads. Each open SSE stream (a tool call that reports progress or asks
  the client something, a client's standing GET stream, a legacy ``/sse``
  connection) keeps one of the server's threads busy until it ends, so use
  gunicorn's ``gthread`` worker (its default ``sync`` worker serves one
  request at a time) and give waitress more than its four default threads.
  A connected client holds a thread for its GET stream as long as it stays
  connected: with ``--threads 8``, seven connected clients leave one thread
  for everybody's calls, and eight leave none (requests then wait, and time
  out). Size the pool for the clients you expect plus their calls in flight.
- One process for sessions. Sessions live in the memory of the process that
  opened them; with several gunicorn workers a session's next request may
  reach another worker, which does not know it. Run one worker, or set
  ``MCP_STATELESS=1``: every POST is then served on its own, by any worker,
  at the price of what needs a session (server-to-client requests such as
  sampling, the GET stream, resumption, the legacy transport).
- Streaming. The response body is an iterator of SSE events that must reach
  the client as they are produced; gunicorn and waitress (whose ``send_bytes``
  default of 1 flushes every write) do that. A proxy in front must not buffer
  (the app sends ``X-Accel-Buffering: no`` for nginx).
- A prompt stop. WSGI has no way to tell an application that the server
  stops, and an SSE stream ends only when the app ends it (or a keep-alive
  ping finds the client gone, up to two ``ping_interval`` later): gunicorn's
  graceful shutdown would wait ``graceful_timeout`` (30 s) for them. In a
  gunicorn worker the app closes itself as soon as the worker is told to stop
  (SIGTERM, or ``max_requests`` reached), which ends its streams within a
  second; nothing needs configuring. Waitress has no SIGTERM handler: the
  signal ends its process straight away. Elsewhere, call
  ``application.close()`` when the server stops.
"""

from __future__ import annotations

import os

from mcp_sync import Context, MCPServer, StreamableHTTPApp

server = MCPServer("wsgi-example", "1.0")


@server.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool(structured_output=False)
def countdown(steps: int, ctx: Context) -> str:
    """Count down, reporting progress at each step."""
    for step in range(1, steps + 1):
        ctx.progress(step, steps, f"{steps - step} to go")
    return "liftoff"


@server.tool(structured_output=False)
def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's language model, and say so in a progress notification first."""
    ctx.progress(0, 1, "asking the model")
    answer = ctx.sample(question, max_tokens=50)
    ctx.progress(1, 1, "answered")
    text = getattr(answer.content, "text", "")
    return f"the model says: {text}"


@server.tool
def worker_pid() -> int:
    """The id of the process that served this call (which worker, under gunicorn)."""
    return os.getpid()


application = StreamableHTTPApp(server, stateless=os.environ.get("MCP_STATELESS") == "1")
"""The WSGI callable: the MCP endpoint at ``/mcp``; DNS rebinding protection allows the loopback names."""
