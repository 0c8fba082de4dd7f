"""An MCP server over HTTP written with the official Python SDK, for our HTTP client to drive.

Run it with the peer virtualenv's python (``tests/peers.py``)::

    python sdk_http_server.py --port 0 --mode sse|json|legacy [--resumable]

``sse`` and ``json`` serve Streamable HTTP at ``/mcp`` (answering requests with
an SSE stream or with one JSON body); ``legacy`` serves the 2024-11-05 HTTP+SSE
transport (``GET /sse``, ``POST /messages/``). ``--resumable`` keeps every SSE
event in memory so that a client can resume a stream with ``Last-Event-ID``
(with a ``retry`` of 200 ms). Once it listens, it prints ``PORT <n>`` on
stdout. Tools: ``echo``, ``add``, ``count`` (reports progress), ``sample``
(asks the client for sampling), ``ask`` (asks the client for elicitation),
``ask_aside`` (an elicitation sent outside any request, so on the standalone
GET stream), ``hang_up`` (closes its SSE stream mid-call, then answers on the
resumed one), ``sleep``; a resource ``sdk://greeting``, a prompt ``greet``.
"""

from __future__ import annotations

import argparse
import itertools
import socket
import sys
import warnings
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import ElicitRequestedSchema, SamplingMessage, TextContent
from pydantic import BaseModel

warnings.simplefilter("ignore")  # the SDK flags the handshake-era features as deprecated

server = MCPServer("sdk-http", version="2.3.0-test")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress at each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"counted to {steps}"


@server.tool()
async def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model to answer `prompt`."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    result = await ctx.session.create_message([message], max_tokens=50, related_request_id=ctx.request_id)
    content = result.content
    return f"the model said: {content.text if isinstance(content, TextContent) else content}"


class Answer(BaseModel):
    colour: str


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the user a question (form elicitation)."""
    result = await ctx.elicit(question, Answer)
    if result.action != "accept":
        return result.action
    return f"the user likes {result.data.colour}"


@server.tool()
async def ask_aside(question: str, ctx: Context) -> str:
    """Ask the user a question unrelated to this call: it travels on the standalone GET stream."""
    schema: ElicitRequestedSchema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    result = await ctx.session.elicit(question, schema, related_request_id=None)
    return f"{result.action}: {result.content}"


@server.tool()
async def hang_up(ctx: Context) -> str:
    """Close this call's SSE stream, report progress, then answer: the client must resume to see it."""
    await anyio.sleep(0.1)
    await ctx.close_sse_stream()
    await ctx.report_progress(1, 2, "after the hang-up")
    await anyio.sleep(0.1)
    return "answered after the hang-up"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.resource("sdk://greeting", mime_type="text/plain")
def greeting() -> str:
    """A greeting."""
    return "Hello from the SDK"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}."


class MemoryEventStore(EventStore):
    """Every event of every stream, kept in memory, so that streams can be resumed."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self.ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"{stream_id}:{next(self.ids)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, (event_id, _, _) in enumerate(self.events) if event_id == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        for event_id, stream, message in self.events[index + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=["sse", "json", "legacy"], default="sse")
    parser.add_argument("--resumable", action="store_true")
    options = parser.parse_args()
    if options.mode == "legacy":
        app = server.sse_app()
    else:
        resumable: dict[str, Any] = {"event_store": MemoryEventStore(), "retry_interval": 200}
        app = server.streamable_http_app(
            json_response=options.mode == "json", **(resumable if options.resumable else {})
        )
    # IPPROTO_TCP named explicitly: asyncio turns Nagle's algorithm off only on sockets that say
    # so, and without that every JSON answer (headers and body written apart) waits ~40 ms.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", options.port))
    listener.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    sys.exit(main())
