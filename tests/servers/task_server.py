"""An mcp_sync server whose tools run as tasks, for the client's task tests (in-process, subprocess, CLI, notebook).

Serve it with ``mcp-sync run tests/servers/task_server.py --transport http --port N``
or import ``server``. Tools (each ``task="required"``, polled every 20 ms):

- ``slow(text, gate)``: answers ``text`` once the file ``gate`` exists;
- ``until_cancelled(marker)``: works until cancelled, then writes the file ``marker``;
- ``ask(question)``: asks the user for a colour (elicitation inside the task);
- ``broken()``: fails with a tool error.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp_sync import Context, MCPServer

server = MCPServer("task-server")
server.tasks.poll_interval_ms = 20

POLL = 0.01
"""How often the tools look at their files (a deadline poll on observable state)."""


@server.tool(task="required")
def slow(text: str, gate: str, ctx: Context) -> str:
    """Answer ``text`` once the file ``gate`` exists."""
    while not os.path.exists(gate):
        if ctx.cancelled.wait(POLL):
            return "cancelled"
    return text


@server.tool(task="required")
def until_cancelled(marker: str, ctx: Context) -> str:
    """Work until cancelled, then write the file ``marker``."""
    while not ctx.cancelled.wait(POLL):
        pass
    Path(marker).write_text("cancelled")
    return "stopped"


@server.tool(task="required")
def ask(question: str, ctx: Context) -> str:
    """Ask the user for a colour, from inside the task."""
    answer = ctx.elicit(question, {"type": "object", "properties": {"colour": {"type": "string"}}})
    if answer.action != "accept":
        return answer.action
    return f"the user likes {answer.data['colour']}"


@server.tool(task="required")
def broken() -> str:
    """Fail with a tool error."""
    raise ValueError("it broke")
