"""A server of SEP-2663 tasks written with fastmcp and ``fastmcp-tasks``, for our client to drive.

Run it with the fastmcp peer virtualenv's python (``tests/peers.py``)::

    python fastmcp_tasks_server.py --port 0

Once it listens, it prints ``PORT <n>`` on stdout. Tools, each run as a task
(``required``, polled every 50 ms): ``slow(text, gate)`` answers ``text``
once the file ``gate`` exists; ``ask(question)`` asks the user for a colour
(elicitation inside the task); ``broken()`` raises a tool error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import warnings
from datetime import timedelta

import mcp_types
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

warnings.simplefilter("ignore")

server = FastMCP("fastmcp-tasks-peer")
server.add_extension(TasksExtension(url="memory://"))
AS_TASK = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=50))


@server.tool(task=AS_TASK)
async def slow(text: str, gate: str) -> str:
    """Answer `text` once the file `gate` exists."""
    while not os.path.exists(gate):
        await asyncio.sleep(0.02)
    return text


@server.tool(task=AS_TASK)
async def ask(question: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the user a question from inside the task (fastmcp's guard pattern: the task asks, then runs again)."""
    answer = (ctx.input_responses or {}).get("colour")
    if answer is None:
        schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
        params = {"mode": "form", "message": question, "requestedSchema": schema}
        request = {"method": "elicitation/create", "params": params}
        return mcp_types.InputRequiredResult(input_requests={"colour": request})
    reply = answer if isinstance(answer, dict) else answer.model_dump()
    if reply.get("action") != "accept":
        return str(reply.get("action"))
    return f"the user likes {reply['content']['colour']}"


@server.tool(task=AS_TASK)
async def broken() -> str:
    """Fail with a tool error."""
    raise ToolError("it broke")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", options.port))
    listener.listen(128)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.http_app(path="/mcp"), log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    sys.exit(main())
