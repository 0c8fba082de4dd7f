"""An MCP server run by many worker processes, sharing what they must through Redis.

The module exposes ``application``; from the repository's root::

    export MCP_SYNC_REDIS_URL=redis://127.0.0.1:6379/0
    gunicorn -k gthread --threads 8 -w 4 -b 127.0.0.1:8000 examples.scaled_app:application

Without ``MCP_SYNC_REDIS_URL`` it runs in one process's memory (use one worker then).
With it, the workers (and other machines given the same URL) share the secret
that signs 2026-07-28 ``requestState`` and the server-wide notifications, so a
2026-07-28 client may reach any worker with any request::

    from mcp_sync.client import http_client

    with http_client("http://127.0.0.1:8000/mcp", era="stateless") as client:
        print(client.call_tool("pid").text)               # a different worker, call after call
        with client.listen(resource_uris=["notes://1"], on_notification=print):
            client.call_tool("touch", {"uri": "notes://1"})  # whichever worker runs it, the stream hears it

Handshake-era sessions (2025-11-25 and before) are kept in Redis too, so any
worker serves any of their requests (a sampling answer POSTed to another worker
finds the handler that asked)::

    with http_client("http://127.0.0.1:8000/mcp", era="handshake", sampling_provider=answer) as client:
        print(client.call_tool("ask", {"question": "Sky?"}).text)

Their streams are kept in Redis: a client whose GET stream's worker dies
resumes it with ``Last-Event-ID`` on another and misses nothing (see the
README, "Running on many workers and machines").
"""

from __future__ import annotations

import os

from mcp_sync import Context, MCPServer, StreamableHTTPApp
from mcp_sync.types import LoggingLevel

server = MCPServer("scaled-example", "1.0")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


@server.tool
def pid() -> int:
    """The id of the process that served this call (which worker, under gunicorn)."""
    return os.getpid()


@server.tool(structured_output=False)
def progress(steps: int, ctx: Context) -> str:
    """Report progress once per step, then finish."""
    for step in range(1, steps + 1):
        ctx.progress(step, steps, f"step {step} of {steps}")
    return f"{steps} steps"


@server.tool(structured_output=False)
def ask(question: str, ctx: Context) -> str:
    """Ask the client's language model (in 2026-07-28 an input round, which any worker may finish)."""
    answer = ctx.sample(question, max_tokens=100)
    return getattr(answer.content, "text", "")


@server.tool(structured_output=False, task="optional")
def report(seconds: float, ctx: Context) -> str:
    """A long job: a task for clients that can follow one (kept in Redis: any worker answers for it)."""
    ctx.cancelled.wait(seconds)  # stops early when the task is cancelled, through whichever worker
    if ctx.cancelled.is_set():
        return "stopped"
    answer = ctx.elicit("Publish the report?", {"type": "object", "properties": {"publish": {"type": "boolean"}}})
    published = answer.accepted and bool((answer.data or {}).get("publish"))
    return f"report {'published' if published else 'kept'} by process {os.getpid()}"


@server.tool(structured_output=False)
def touch(uri: str) -> str:
    """Mark the resource ``uri`` updated: its subscribers hear of it, on every worker; says which process did."""
    server.mark_resource_updated(uri)
    return f"{uri} touched by process {os.getpid()}"


@server.tool(structured_output=False)
def announce(text: str, level: LoggingLevel = "info") -> str:
    """Log ``text`` to every client whose level it reaches, whichever worker its session is on."""
    server.log(level, text, "announce")
    return f"announced by process {os.getpid()}"


@server.resource("notes://1", mime_type="text/plain")
def note() -> str:
    """A note, for clients to read and subscribe to."""
    return "the first note"


# Made after every registration: with Redis, each worker checks here that Redis answers (or fails to start).
application = StreamableHTTPApp(server)
"""The WSGI callable: the MCP endpoint at ``/mcp``; the backend from ``MCP_SYNC_REDIS_URL`` (in-process when unset)."""
