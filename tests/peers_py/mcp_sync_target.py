"""An mcp_sync server for third-party clients (fastmcp, the TypeScript SDK) to drive.

Served over stdio when run as a script; ``build()`` gives a fresh server for
in-process HTTP (Streamable HTTP and legacy SSE). Tools:

- ``echo(text)``: the text back;
- ``weather(city)``: structured output, with an output schema;
- ``broken()``: fails, so the client gets a tool error (``isError``);
- ``count(steps)``: reports progress at each step;
- ``shout(text)``: logs a debug and a warning line, then upper-cases the text;
- ``sample(prompt)``: asks the client's model (sampling) and says what it answered;
- ``ask(question)``: asks the user for a colour (form elicitation);
- ``slow(marker)``: waits until cancelled (at most :data:`SLOW_LIMIT`), then
  ``cancelled_calls()`` lists the markers of the calls that saw their cancellation;
- ``roots()``: the client's roots, as ``[uri, name]`` pairs.

Resources ``target://readme`` (text) and ``target://logo`` (binary), the
template ``target://notes/{name}``, and the prompt ``greet(name, style?)``,
whose ``name`` completes from :data:`NAMES`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from mcp_sync import MCPServer
from mcp_sync.server.context import Context
from mcp_sync.server.stdio import serve_stdio
from mcp_sync.types import CallToolResult, CompleteRequestParams, PromptArgument, PromptMessage, TextContent

SLOW_LIMIT = 20.0
"""How long ``slow`` waits for its cancellation before giving up (seconds)."""
PAGE_SIZE = 3
"""Listings come in pages of this many items: clients must follow the cursors."""
LOGO = b"\x89PNG\r\n\x1a\n\x00\xff"

NAMES = ("Ada", "Alan", "Barbara", "Grace")
"""The completions of the prompt argument ``greet(name)``."""
COLOUR_SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def build() -> MCPServer:
    """A fresh target server (its own record of cancelled calls)."""
    cancelled: list[str] = []
    lock = threading.Lock()
    server = MCPServer("mcp-sync-target", "1.0", page_size=PAGE_SIZE)

    def echo(args: dict[str, Any], ctx: Context) -> str:
        return str(args["text"])

    def weather(args: dict[str, Any], ctx: Context) -> CallToolResult:
        report = {"city": args["city"], "celsius": 21.5}
        return CallToolResult(content=[TextContent(text=json.dumps(report))], structured_content=report)

    def broken(args: dict[str, Any], ctx: Context) -> str:
        raise ValueError("the gauge is broken")

    def count(args: dict[str, Any], ctx: Context) -> str:
        steps = int(args["steps"])
        for step in range(1, steps + 1):
            ctx.progress(step, steps, f"step {step} of {steps}")
        return f"counted to {steps}"

    def shout(args: dict[str, Any], ctx: Context) -> str:
        ctx.log("debug", "a debug line", logger="target")
        ctx.log("warning", {"shouted": args["text"]}, logger="target")
        return str(args["text"]).upper()

    def sample(args: dict[str, Any], ctx: Context) -> str:
        answer = ctx.sample(str(args["prompt"]), max_tokens=50, key="model")
        text = answer.content.text if isinstance(answer.content, TextContent) else "?"
        return f"the model ({answer.model}) said: {text}"

    def ask(args: dict[str, Any], ctx: Context) -> str:
        answer = ctx.elicit(str(args["question"]), COLOUR_SCHEMA, key="colour")
        if answer.action != "accept":
            return f"the user chose {answer.action}"
        return f"the user likes {answer.data['colour']}"

    def slow(args: dict[str, Any], ctx: Context) -> str:
        if ctx.cancelled.wait(SLOW_LIMIT):
            with lock:
                cancelled.append(str(args["marker"]))
            return "cancelled"
        return "finished without being cancelled"

    def cancelled_calls(args: dict[str, Any], ctx: Context) -> str:
        with lock:
            return json.dumps(cancelled)

    def roots(args: dict[str, Any], ctx: Context) -> str:
        return json.dumps([[str(root.uri), root.name] for root in ctx.list_roots(key="roots")])

    def text_input(*names: str) -> dict[str, Any]:
        return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}

    server.register_tool("echo", echo, description="The text back.", input_schema=text_input("text"))
    server.register_tool(
        "weather",
        weather,
        description="A made-up weather report, as structured content.",
        input_schema=text_input("city"),
        output_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
        },
    )
    server.register_tool("broken", broken, description="Always fails.")
    server.register_tool(
        "count",
        count,
        description="Count to `steps`, reporting progress.",
        input_schema={"type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]},
    )
    server.register_tool("shout", shout, description="Log, then upper-case the text.", input_schema=text_input("text"))
    server.register_tool("sample", sample, description="Ask the client's model.", input_schema=text_input("prompt"))
    server.register_tool("ask", ask, description="Ask the user for a colour.", input_schema=text_input("question"))
    server.register_tool("slow", slow, description="Wait until cancelled.", input_schema=text_input("marker"))
    server.register_tool("cancelled_calls", cancelled_calls, description="The markers of the cancelled slow calls.")
    server.register_tool("roots", roots, description="The client's roots, as [uri, name] pairs.")
    server.register_resource(
        "target://readme", lambda uri, ctx: "Read me first.", name="readme", mime_type="text/plain"
    )
    server.register_resource("target://logo", lambda uri, ctx: LOGO, name="logo", mime_type="image/png")
    server.register_resource_template(
        "target://notes/{name}",
        lambda uri, params, ctx: f"The note called {params['name']}.",
        name="note",
        mime_type="text/plain",
    )

    def greet(args: dict[str, str], ctx: Context) -> list[PromptMessage]:
        style = args.get("style", "plain")
        return [PromptMessage(role="user", content=TextContent(text=f"Greet {args['name']} in a {style} style."))]

    server.register_prompt(
        "greet",
        greet,
        description="Greet someone.",
        arguments=[
            PromptArgument(name="name", description="Who to greet", required=True),
            PromptArgument(name="style", description="How", required=False),
        ],
    )

    def complete(params: CompleteRequestParams, ctx: Context) -> list[str]:
        if params.argument.name != "name":
            return []
        return [name for name in NAMES if name.startswith(params.argument.value)]

    server.set_completion_provider(complete)
    return server


if __name__ == "__main__":
    serve_stdio(build())
