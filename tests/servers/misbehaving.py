"""A stdio server for tests, whose behaviour is chosen by its first argument.

- ``serve``: a normal mcp_sync server with tools that print, read stdin,
  crash the process, spawn a grandchild or block.
- ``exit``: writes to stderr and exits at once with code 3.
- ``garbage``: writes non-JSON to stdout and waits.
- ``silent``: says something on stderr, then never answers.
- ``thread``: like ``serve``, from a thread other than the main one.
- ``stubborn``: ignores end of input and SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from mcp_sync import MCPServer
from mcp_sync.server.context import Context
from mcp_sync.server.stdio import serve_stdio
from mcp_sync.types import SamplingMessage, TextContent


def build() -> MCPServer:
    server = MCPServer("misbehaving", "1.0")

    def noisy(args: dict[str, Any], ctx: Context) -> str:
        print("this goes to stderr, not into the protocol")
        os.write(1, b"so does a raw write to fd 1\n")
        return "printed"

    def read_stdin(args: dict[str, Any], ctx: Context) -> str:
        return repr(sys.stdin.read())

    def crash(args: dict[str, Any], ctx: Context) -> str:
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(7)

    def spawn(args: dict[str, Any], ctx: Context) -> str:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        return str(child.pid)

    def block(args: dict[str, Any], ctx: Context) -> str:
        sys.stderr.write("block: waiting\n")
        sys.stderr.flush()
        ctx.cancelled.wait(30)
        return "stopped" if ctx.cancelled.is_set() else "timed out"

    for name, handler in [("noisy", noisy), ("read_stdin", read_stdin), ("crash", crash), ("spawn", spawn)]:
        server.register_tool(name, handler, description=name)

    def ask(args: dict[str, Any], ctx: Context) -> str:
        answer = ctx.sample([SamplingMessage(role="user", content=TextContent(text=args["question"]))], max_tokens=5)
        assert isinstance(answer.content, TextContent)
        return answer.content.text

    server.register_tool("block", block, description="Waits until cancelled.")
    server.register_tool("ask", ask, description="Asks the client's model, then answers with what it said.")
    server.register_tool("echo", lambda args, ctx: args.get("text", ""), description="echo")
    return server


def main() -> None:
    mode = sys.argv[1]
    if mode == "serve":
        build().serve_stdio()
        print("serve_stdio returned", file=sys.stderr)
    elif mode == "exit":
        sys.stderr.write("fatal: no configuration\n")
        sys.exit(3)
    elif mode == "garbage":
        print("Welcome to my server! Listening...", flush=True)
        time.sleep(30)
    elif mode == "silent":
        sys.stderr.write("waiting for nothing\n")
        sys.stderr.flush()
        time.sleep(30)
    elif mode == "thread":
        worker = threading.Thread(target=serve_stdio, args=(build(),))
        worker.start()
        worker.join()
        print("served from a thread", file=sys.stderr)
    elif mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stdin.read()
        time.sleep(30)


if __name__ == "__main__":
    main()
