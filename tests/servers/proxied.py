"""A target for the proxy tests: an mcp_sync server over stdio (or imported as ``build()`` for in-memory use).

Its tools report progress, log, ask the client (elicitation, sampling,
roots), wait to be cancelled (and tell which waits were), add a tool to its
list, and kill their own process mid-call. It has a resource, a template,
a prompt and completions.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from mcp_sync import MCPServer
from mcp_sync.server.context import Context
from mcp_sync.types import PromptArgument

SLOW_LIMIT = 30.0
"""How long ``slow`` waits for its cancellation before giving up (seconds)."""


def build(name: str = "proxied") -> MCPServer:
    server = MCPServer(name, "2.0", instructions="a target behind a proxy")
    cancelled: list[str] = []
    seen = threading.Condition()

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def count(steps: int, ctx: Context) -> str:
        for step in range(steps):
            ctx.progress(step + 1, steps, f"step {step + 1}")
        return f"counted {steps}"

    @server.tool
    def chatty(ctx: Context) -> str:
        ctx.log("debug", "a detail")
        ctx.log("warning", {"disk": "almost full"}, logger="store")
        return "said"

    @server.tool
    def ask(ctx: Context) -> str:
        answer = ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        sampled = ctx.sample("Say hello")
        roots = [root.uri for root in ctx.list_roots()]
        text = sampled.content.text if hasattr(sampled.content, "text") else ""
        return json.dumps({"action": answer.action, "data": answer.data, "sampled": text, "roots": roots})

    @server.tool
    def slow(marker: str, ctx: Context) -> str:
        ctx.progress(0, None, "waiting")  # tells the caller the call has begun here
        if not ctx.cancelled.wait(SLOW_LIMIT):
            return "not cancelled"
        with seen:
            cancelled.append(marker)
            seen.notify_all()
        return "cancelled"

    @server.tool
    def saw_cancelled(marker: str) -> bool:
        """Whether the slow call ``marker`` saw its cancellation (waiting up to 10 s for it)."""
        with seen:
            return seen.wait_for(lambda: marker in cancelled, 10.0)

    @server.tool
    def grow(name: str) -> str:
        server.register_tool(name, lambda args, ctx: f"I am {name}")
        server.register_prompt(name, lambda args, ctx: f"prompt {name}")
        server.register_resource(f"notes://{name}", lambda uri, ctx: f"resource {name}")
        return "grown"

    @server.tool
    def getenv(name: str) -> str:
        return os.environ.get(name, "")

    @server.tool
    def die() -> str:
        os._exit(3)  # the process ends in the middle of the call: no answer ever comes

    server.register_resource("notes://readme", lambda uri, ctx: "read me", mime_type="text/plain")
    server.register_resource_template("notes://{name}/text", lambda uri, params, ctx: f"note {params['name']}")
    server.register_prompt(
        "greet",
        lambda args, ctx: f"Hello, {args['name']}!",
        arguments=[PromptArgument(name="name", required=True)],
    )

    @server.completion(prompt="greet", argument="name")
    def names(value: str, arguments: dict[str, Any]) -> list[str]:
        return [name for name in ("Ada", "Alan", "Grace") if name.startswith(value)]

    return server


if __name__ == "__main__":
    build().serve_stdio()
