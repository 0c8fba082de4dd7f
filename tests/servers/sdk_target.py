"""An mcp_sync server over stdio for the official Python SDK's client to drive.

``tests/test_interop_stdio.py`` starts it through the SDK's stdio client. It
has a tool that reports progress, a slow tool that waits to be cancelled and
says on stderr when its handler saw ``ctx.cancelled``, a tool that tells which
slow calls were cancelled, a tool with an output schema, a tool that logs,
resources (fixed and templated), a prompt with arguments and completions.
Listings come in pages of two, so the client must follow cursors.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

from mcp_sync import MCPServer
from mcp_sync.server.context import Context
from mcp_sync.server.stdio import serve_stdio
from mcp_sync.types import CallToolResult, CompleteRequestParams, PromptArgument, PromptMessage, TextContent

SLOW_LIMIT = 20.0
"""How long the slow tool waits for its cancellation before giving up (seconds)."""

NAMES = ("Ada", "Alan", "Barbara", "Grace")

_cancelled: list[str] = []
_cancelled_lock = threading.Lock()


def count(args: dict[str, Any], ctx: Context) -> str:
    steps = int(args["steps"])
    for step in range(1, steps + 1):
        ctx.progress(step, steps, f"step {step} of {steps}")
    return f"counted to {steps}"


def slow(args: dict[str, Any], ctx: Context) -> str:
    marker = str(args["marker"])
    if ctx.cancelled.wait(SLOW_LIMIT):
        with _cancelled_lock:
            _cancelled.append(marker)
        print(f"sdk_target: slow {marker} saw ctx.cancelled", file=sys.stderr, flush=True)
        return "cancelled"
    return "finished without being cancelled"


def cancelled_calls(args: dict[str, Any], ctx: Context) -> str:
    with _cancelled_lock:
        return json.dumps(_cancelled)


def weather(args: dict[str, Any], ctx: Context) -> CallToolResult:
    report = {"city": args["city"], "celsius": 21.5}
    return CallToolResult(content=[TextContent(text=json.dumps(report))], structured_content=report)


def shout(args: dict[str, Any], ctx: Context) -> str:
    ctx.log("debug", "a debug line nobody asked for", logger="sdk-target")
    ctx.log("warning", {"shouted": args["text"]}, logger="sdk-target")
    return args["text"].upper()


def greet(args: dict[str, str], ctx: Context) -> list[PromptMessage]:
    style = args.get("style", "plain")
    return [
        PromptMessage(role="user", content=TextContent(text=f"Greet {args['name']} in a {style} style.")),
        PromptMessage(role="assistant", content=TextContent(text=f"Hello, {args['name']}!")),
    ]


def complete(params: CompleteRequestParams, ctx: Context) -> list[str]:
    if params.argument.name != "name":
        return []
    return [name for name in NAMES if name.startswith(params.argument.value)]


def build() -> MCPServer:
    server = MCPServer("sdk-target", "1.0", page_size=2)
    server.register_tool(
        "count",
        count,
        title="Count with progress",
        description="Count to `steps`, reporting progress at each step.",
        input_schema={"type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]},
    )
    server.register_tool(
        "slow",
        slow,
        description="Wait until cancelled (at most 20 s).",
        input_schema={"type": "object", "properties": {"marker": {"type": "string"}}, "required": ["marker"]},
    )
    server.register_tool("cancelled_calls", cancelled_calls, description="The markers of the cancelled slow calls.")
    server.register_tool(
        "weather",
        weather,
        description="A made-up weather report, as structured content.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        output_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
        },
    )
    server.register_tool(
        "shout",
        shout,
        description="Upper-case the text, logging a debug and a warning message.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    server.register_resource(
        "sdk://notes/readme",
        lambda uri, ctx: "Read me first.",
        name="readme",
        title="The readme",
        mime_type="text/plain",
    )
    server.register_resource(
        "sdk://notes/logo", lambda uri, ctx: b"\x89PNG-ish\x00\xff", name="logo", mime_type="application/octet-stream"
    )
    server.register_resource("sdk://notes/todo", lambda uri, ctx: "- write tests", name="todo", mime_type="text/plain")
    server.register_resource_template(
        "sdk://notes/{name}/text",
        lambda uri, params, ctx: f"The note called {params['name']}.",
        name="note",
        mime_type="text/plain",
    )
    server.register_prompt(
        "greet",
        greet,
        title="Greeting",
        description="Greet someone.",
        arguments=[
            PromptArgument(name="name", description="Who to greet", required=True),
            PromptArgument(name="style", description="How", required=False),
        ],
    )
    server.set_completion_provider(complete)
    return server


if __name__ == "__main__":
    serve_stdio(build())
