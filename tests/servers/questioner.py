"""A target that asks its client questions while another call is in flight: over stdio when run as a script
(``python questioner.py``), importable as ``build()`` for in-process use.

``who`` waits until two calls of it are in flight at once, logs, then asks its client to sample, to fill a form
and for its roots, and answers with what each question got, as JSON: the answer, or ``"refused: "`` and the
refusal's message. The two calls go in step (a barrier before each question and before answering): neither
returns before the other has asked everything. A proxy in front of it that sent a question to the wrong client
shows in the answers.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from mcp_sync import MCPError, MCPServer
from mcp_sync.server.context import Context

WAIT = 10.0
"""How long a call waits for the other one to be in flight too (seconds)."""


def answers(ctx: Context, together: threading.Barrier) -> list[Any]:
    """Ask ``ctx``'s client the three questions, each once the other call is ready to ask too; what each got."""
    form = {"type": "object", "properties": {"name": {"type": "string"}}}
    asked: list[Any] = []
    for ask in (
        lambda: getattr(ctx.sample("Who are you?").content, "text", None),
        lambda: (ctx.elicit("Name?", form).data or {})["name"],
        lambda: [root.uri for root in ctx.list_roots()],
    ):
        together.wait()
        try:
            asked.append(ask())
        except MCPError as exc:
            asked.append(f"refused: {exc.message}")
    together.wait()  # the other call is still in flight while this one asks
    return asked


def build(name: str = "questioner") -> MCPServer:
    server = MCPServer(name)
    together = threading.Barrier(2, timeout=WAIT)

    @server.tool
    def who(ctx: Context) -> str:
        together.wait()
        ctx.log("info", "who asks")
        return json.dumps(answers(ctx, together))

    return server


if __name__ == "__main__":
    build().serve_stdio()
