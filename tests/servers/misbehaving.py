"""A stdio server for tests, whose behaviour is chosen by its first argument.

- ``serve``: a normal mcp_sync server with tools that print, read stdin,
  crash the process, spawn a grandchild or block.
- ``exit``: writes to stderr and exits at once with code 3.
- ``garbage``: writes non-JSON to stdout and waits.
- ``silent``: says something on stderr, then never answers.
- ``thread``: like ``serve``, from a thread other than the main one.
- ``stubborn``: ignores end of input and SIGTERM.

Scripted servers, which speak the handshake line by line without mcp_sync
(so that they can break the protocol on purpose):

- ``closes_stdout``: on ``tools/call``, closes its stdout and keeps running,
  ignoring end of input and SIGTERM (only SIGKILL ends it).
- ``chatty``: prints a banner and a JSON log record on stdout before reading
  anything, and a stray line before each answer after ``initialize``. It is
  strict: any message that is not a request or a notification (an error
  answering its banner, say) makes it exit with code 4.
- ``bad_answer``: answers a ``tools/call`` whose arguments hold an
  ``answer`` with that answer as given (its ``id`` too, when it has one),
  then, when they hold ``then``, with a result carrying that text.
"""

from __future__ import annotations

import json
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


def reply(message_id: Any, outcome: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, **outcome}) + "\n")
    sys.stdout.flush()


def text_result(text: str) -> dict[str, Any]:
    return {"result": {"content": [{"type": "text", "text": text}]}}


def scripted(mode: str) -> None:
    """Speak the handshake era line by line; ``mode`` says how to misbehave."""
    if mode == "chatty":
        print("Welcome to my server! Listening on stdio...", flush=True)
        print(json.dumps({"level": "info", "msg": "starting"}), flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if not isinstance(method, str):
            sys.stderr.write(f"unexpected message: {line}")
            sys.stderr.flush()
            sys.exit(4)
        if "id" not in message:
            continue  # a notification
        if mode == "chatty" and method != "initialize":
            print(f"handling {method}", flush=True)
        params = message.get("params") or {}
        if method == "initialize":
            info = {"name": f"scripted-{mode}", "version": "1.0"}
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
            reply(message["id"], {"result": result})
        elif method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object"}}
            reply(message["id"], {"result": {"tools": [tool]}})
        elif method == "tools/call" and mode == "closes_stdout":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            sys.stderr.write("closing stdout\n")
            sys.stderr.flush()
            os.close(1)
            while True:
                time.sleep(60)
        elif method == "tools/call" and "answer" in params["arguments"]:
            answer = dict(params["arguments"]["answer"])
            reply(answer.pop("id", message["id"]), answer)
            if "then" in params["arguments"]:
                reply(message["id"], text_result(params["arguments"]["then"]))
        elif method == "tools/call":
            reply(message["id"], text_result(params["arguments"].get("text", "")))
        elif method == "ping":
            reply(message["id"], {"result": {}})
        else:
            reply(message["id"], {"error": {"code": -32601, "message": f"Method not found: {method}"}})


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
        print("stubborn: ignoring SIGTERM", file=sys.stderr, flush=True)
        sys.stdin.read()
        time.sleep(30)
    elif mode in ("closes_stdout", "chatty", "bad_answer"):
        scripted(mode)


if __name__ == "__main__":
    main()
