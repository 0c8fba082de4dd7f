"""A server of tools that run as tasks, for tests/server/test_tasks.py (over stdio when run)."""

from __future__ import annotations

import threading

from mcp_sync import Context, MCPServer
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.server.stateless import InputRequired

TIMEOUT = 10.0


def build_server(gate: threading.Event) -> MCPServer:
    """The tools; ``gated`` returns once ``gate`` is set."""
    server = MCPServer("tasks-test")

    @server.tool(task="optional")
    def slow(seconds: float, ctx: Context) -> str:
        """Works ``seconds`` seconds unless cancelled."""
        ctx.cancelled.wait(seconds)
        return "done"

    @server.tool(task="required")
    def must() -> str:
        return "ran as a task"

    @server.tool
    def plain(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(task="optional")
    def ask(ctx: Context) -> str:
        answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"Hello, {(answer.data or {}).get('name')}!" if answer.accepted else f"({answer.action})"

    @server.tool(task="optional")
    def model(ctx: Context) -> str:
        reply = ctx.sample("Say hi")
        return f"model said: {getattr(reply.content, 'text', '')}"

    @server.tool(task="optional")
    def where(ctx: Context) -> str:
        return " ".join(str(root.uri) for root in ctx.list_roots())

    @server.tool(task="optional")
    def crash() -> str:
        raise RuntimeError("the tool broke")

    @server.tool(task="optional")
    def broken() -> str:
        raise MCPError(MCP_CODES.INVALID_PARAMS, "the request was wrong after all", data={"why": "test"})

    @server.tool(task="optional")
    def gated(ctx: Context) -> str:
        gate.wait(TIMEOUT * 6)
        return "through"

    def gather(arguments: dict[str, object], ctx: Context) -> None:
        ctx.elicit("First?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="first")

    def everything(arguments: dict[str, object], ctx: Context) -> str:
        """Uses what a task's context offers: the client, a log line, an answer given before, roots."""
        assert ctx.stateless is None and ctx.task_id is not None and ctx.client_capabilities.roots is not None
        ctx.log("info", "starting")
        first = ctx.elicit("First?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="first")
        roots = ctx.list_roots()
        client = ctx.client_info.name if ctx.client_info else "?"
        return f"{client}: {(first.data or {}).get('name')} {[root.uri for root in roots]}"

    server.register_tool("everything", everything, task="optional", before_task=gather)

    @server.tool(task="optional")
    def escapes() -> str:
        raise InputRequired({})  # not for a task's handler to raise: the server fails the task

    return server


if __name__ == "__main__":
    build_server(threading.Event()).serve_stdio()
