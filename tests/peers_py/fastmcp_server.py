"""A server written with fastmcp, for our client to drive over stdio or Streamable HTTP.

Run it with the fastmcp peer virtualenv's python (``tests/peers.py``)::

    python fastmcp_server.py                 # stdio
    python fastmcp_server.py --port 8123     # mcp.run(transport="http") on 127.0.0.1:8123/mcp

Tools: ``echo(text)``; ``weather(city)`` (structured output from a typed
return); ``broken()`` (a tool error); ``count(steps)`` (progress);
``shout(text)`` (logs at debug and warning); ``sample(prompt)`` and
``ask(question)``, which ask the client in the handshake era (fastmcp refuses
that in the 2026-07-28 era, which has no back-channel); ``ask_guarded(question)``
and ``sample_guarded(prompt)``, fastmcp's 2026-07-28 guard pattern (return an
``InputRequiredResult``, read the answer when called again); ``slow(marker)``
(waits until cancelled, at most 20 s) and ``cancelled_calls()``; ``roots()``
(the client's roots, handshake era). Resources
``fm://readme``, ``fm://logo`` (binary), the template ``fm://notes/{name}``,
and the prompt ``greet(name, style)``, whose ``name`` completes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from pydantic import BaseModel

warnings.simplefilter("ignore")

SLOW_LIMIT = 20.0
LOGO = b"\x89PNG\r\n\x1a\n\x00\xff"
COLOUR_SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}

mcp = FastMCP("fastmcp-peer", version="4.1")
cancelled: list[str] = []


class Weather(BaseModel):
    city: str
    celsius: float


@mcp.tool
def echo(text: str) -> str:
    """The text back."""
    return text


@mcp.tool
def weather(city: str) -> Weather:
    """A made-up weather report."""
    return Weather(city=city, celsius=21.5)


@mcp.tool
def broken() -> str:
    """Always fails."""
    raise ToolError("the gauge is broken")


@mcp.tool
async def count(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"counted to {steps}"


@mcp.tool
async def shout(text: str, ctx: Context) -> str:
    """Log, then upper-case the text."""
    await ctx.debug("a debug line", logger_name="fm")
    await ctx.warning(f"shouted {text}", logger_name="fm")
    return text.upper()


@mcp.tool
async def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model (handshake era)."""
    message = mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text=prompt))
    answer = await ctx.session.create_message([message], max_tokens=50, related_request_id=ctx.request_id)
    return f"the model ({answer.model}) said: {answer.content.text}"


@mcp.tool
async def ask(question: str, ctx: Context) -> str:
    """Ask the user for a colour (handshake era)."""
    answer = await ctx.elicit(question, response_type=str)
    if answer.action != "accept":
        return f"the user chose {answer.action}"
    return f"the user likes {answer.data}"


@mcp.tool
async def ask_guarded(question: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the user for a colour (2026-07-28 guard pattern)."""
    answer = (ctx.input_responses or {}).get("colour")
    if answer is None:
        params = {"mode": "form", "message": question, "requestedSchema": COLOUR_SCHEMA}
        request = {"method": "elicitation/create", "params": params}
        return mcp_types.InputRequiredResult(input_requests={"colour": request})
    reply = answer if isinstance(answer, dict) else answer.model_dump()
    if reply.get("action") != "accept":
        return f"the user chose {reply.get('action')}"
    return f"the user likes {reply['content']['colour']}"


@mcp.tool
async def sample_guarded(prompt: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the client's model (2026-07-28 guard pattern)."""
    answer = (ctx.input_responses or {}).get("model")
    if answer is None:
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 50}
        return mcp_types.InputRequiredResult(
            input_requests={"model": {"method": "sampling/createMessage", "params": params}}
        )
    reply = answer if isinstance(answer, dict) else answer.model_dump(by_alias=True)
    return f"the model ({reply['model']}) said: {reply['content']['text']}"


@mcp.tool
async def slow(marker: str) -> str:
    """Wait until cancelled."""
    try:
        await asyncio.sleep(SLOW_LIMIT)
    except asyncio.CancelledError:
        cancelled.append(marker)
        raise
    return "finished without being cancelled"


@mcp.tool
def cancelled_calls() -> str:
    """The markers of the cancelled slow calls."""
    return json.dumps(cancelled)


@mcp.tool
async def roots(ctx: Context) -> str:
    """The client's roots, as [uri, name] pairs (handshake era)."""
    listed = await ctx.session.list_roots()
    return json.dumps([[str(root.uri), root.name] for root in listed.roots])


@mcp.completion
def complete(reference: object, argument: mcp_types.CompletionArgument, context: object) -> list[str]:
    """Completions of the prompt argument `greet(name)`."""
    if argument.name != "name":
        return []
    return [name for name in ("Ada", "Alan", "Barbara", "Grace") if name.startswith(argument.value)]


@mcp.resource("fm://readme", mime_type="text/plain")
def readme() -> str:
    """Read me first."""
    return "Read me first."


@mcp.resource("fm://logo", mime_type="image/png")
def logo() -> bytes:
    """A tiny logo."""
    return LOGO


@mcp.resource("fm://notes/{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    return f"The note called {name}."


@mcp.prompt
def greet(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Greet {name} in a {style} style."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    options = parser.parse_args()
    if options.port is None:
        mcp.run(show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=options.port, show_banner=False, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
