"""An mcp_sync server with a middleware chain, for ``tests/server/test_middleware.py``.

Run as a script it serves over stdio; imported, :func:`build` gives a fresh
server for the in-memory and HTTP tests. The middleware:

- ``audit`` (outermost) records each call's kind, method, target and whether
  ``ctx.auth`` was set; the tool ``seen`` returns that record;
- ``refuse`` refuses the tool ``forbidden`` and the method
  ``completion/complete`` with an MCP error;
- ``rewrite`` upper-cases ``echo``'s text before the tool and appends ``!``
  to its result after, maps the resource ``mem://alias`` to ``mem://note``
  by replacing the params, and stamps ``_meta.audited`` on every
  ``resources/read`` result as sent;
- ``shape`` replaces a failed tool's result by a generic one.
"""

from __future__ import annotations

import json
import time
from typing import Any

from mcp_sync import MCP_CODES, MCPError, MCPServer
from mcp_sync.server.middleware import Call, Next
from mcp_sync.types import CallToolResult, TextContent


def build() -> MCPServer:
    server = MCPServer("middleware-demo")
    seen: list[list[Any]] = []
    durations: list[float] = []

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def boom() -> str:
        raise RuntimeError("secret detail")

    @server.tool
    def forbidden() -> str:
        return "never"

    @server.tool(name="seen")
    def seen_calls() -> str:
        return json.dumps(seen)

    @server.resource("mem://note")
    def note() -> str:
        return "a note"

    @server.resource("mem://{name}/doc")
    def doc(name: str) -> str:
        return name

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.middleware
    def audit(call: Call, next: Next) -> Any:
        started = time.monotonic()
        try:
            return next(call)
        finally:
            durations.append(time.monotonic() - started)
            if call.method != "tools/call" or call.name != "seen":
                seen.append([call.kind, call.method, call.name or call.uri, getattr(call.ctx, "auth", None)])

    def refuse(call: Call, next: Next) -> Any:
        if call.kind == "tool" and call.name == "forbidden":
            raise MCPError(MCP_CODES.UNAUTHORIZED, "forbidden by policy", data={"tool": call.name})
        if call.method == "completion/complete":
            raise MCPError(MCP_CODES.UNAUTHORIZED, "completions are private")
        return next(call)

    def rewrite(call: Call, next: Next) -> Any:
        if call.kind == "tool" and call.name == "echo":
            call.params["arguments"] = {"text": str(call.params["arguments"]["text"]).upper()}
            result = next(call)
            return CallToolResult(content=[TextContent(text=result.content[0].text + "!")])
        if call.kind == "resource" and call.uri == "mem://alias":
            call.params = {**call.params, "uri": "mem://note"}
        result = next(call)
        if call.kind == "request" and call.method == "resources/read":
            result.setdefault("_meta", {})["audited"] = True
        return result

    def shape(call: Call, next: Next) -> Any:
        result = next(call)
        if call.kind == "tool" and result.is_error:
            return CallToolResult(content=[TextContent(text="The tool failed.")], is_error=True)
        return result

    server.add_middleware(refuse)
    server.add_middleware(rewrite)
    server.add_middleware(shape)
    return server


if __name__ == "__main__":
    build().serve_stdio()
