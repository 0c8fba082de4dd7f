"""Server middleware: an ordered chain of callables around what the server handles.

A middleware is ``mw(call, next) -> result``: it sees a :class:`Call`, may
refuse it by raising :class:`~mcp_sync.errors.MCPError` (the client gets that
JSON-RPC error), may change ``call.params`` (or assign new ones) before
``next(call)``, and may change or replace what ``next`` returned. Register
with :meth:`MCPServer.add_middleware <mcp_sync.server.core.MCPServer.add_middleware>`
or the ``@server.middleware`` decorator; the first registered is the
outermost. Each middleware runs twice for a tool call, resource read or
prompt get: once around the whole request (``call.kind == "request"``) and
once around the tool, resource or prompt (``"tool"``, ``"resource"``,
``"prompt"``); check ``call.kind`` to act once. It runs in both eras
(handshake sessions and 2026-07-28 requests) and on every transport.

What ``next`` returns: for ``"request"``, the result as the wire dict about
to be sent; for ``"tool"``, ``"resource"`` and ``"prompt"``, the
``CallToolResult``, ``ReadResourceResult`` or ``GetPromptResult``. A
middleware may return a replacement of the same kind.

An audit log, of every request, with its duration::

    import logging, time

    audit = logging.getLogger("audit")

    @server.middleware
    def audited(call, next):
        if call.kind != "request":
            return next(call)
        started = time.monotonic()
        who = getattr(call.ctx, "auth", None)
        try:
            return next(call)
        finally:
            audit.info("%s %s by %s: %.1f ms", call.method, call.name or call.uri or "",
                       who, (time.monotonic() - started) * 1000)

Per-client rate limiting of tool calls (by session, or by token subject
when the server checks tokens)::

    import collections, threading, time
    from mcp_sync import MCP_CODES, MCPError

    window, limit, seen, lock = 60.0, 100, collections.defaultdict(list), threading.Lock()

    @server.middleware
    def rate_limited(call, next):
        if call.kind == "tool":
            auth = getattr(call.ctx, "auth", None)
            client = getattr(auth, "subject", None) or id(call.ctx.session)
            now = time.monotonic()
            with lock:
                recent = seen[client] = [t for t in seen[client] if t > now - window] + [now]
            if len(recent) > limit:
                raise MCPError(MCP_CODES.HANDLER_FAILED, "Too many tool calls; slow down", jsonrpc_code=-32000)
        return next(call)

Error shaping: a tool that fails is answered with a generic message, the
details staying in the server's log::

    from mcp_sync.types import CallToolResult, TextContent

    @server.middleware
    def shaped(call, next):
        result = next(call)
        if call.kind == "tool" and result.is_error:
            log.warning("tool %s failed: %s", call.name, result.content)
            return CallToolResult(content=[TextContent(text="The tool failed; try again later.")], is_error=True)
        return result

Changing arguments before the tool sees them::

    @server.middleware
    def defaults(call, next):
        if call.kind == "tool" and call.name == "search":
            call.params["arguments"] = {"limit": 10, **call.params.get("arguments", {})}
        return next(call)

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> @server.tool
... def add(a: int, b: int) -> int:
...     return a + b
>>> seen = []
>>> @server.middleware
... def doubled(call, next):
...     seen.append((call.kind, call.method, call.name))
...     if call.kind == "tool":
...         call.params["arguments"] = {k: v * 2 for k, v in call.params["arguments"].items()}
...     return next(call)
>>> from mcp_sync.client import MCPClient
>>> from mcp_sync.transports.memory import InMemoryTransport
>>> client_end, server_end = InMemoryTransport.pair()
>>> _ = server.start(server_end)
>>> client = MCPClient(era="handshake")
>>> _ = client.connect(client_end)
>>> client.call_tool("add", {"a": 1, "b": 2}).structured_content
{'result': 6}
>>> seen[-2:]
[('request', 'tools/call', 'add'), ('tool', 'tools/call', 'add')]
>>> client.disconnect(); server.stop()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .context import Context

__all__ = ["Call", "CallKind", "Middleware", "Next", "run_chain"]

CallKind = Literal["request", "tool", "resource", "prompt"]


@dataclass
class Call:
    """One request, or one tool call, resource read or prompt get, on its way through the middleware.

    ``params`` is the request's params (a copy: change it, or assign a new
    dict, before calling ``next``); ``ctx`` is the handler's
    :class:`~mcp_sync.server.context.Context` (``ctx.session``,
    ``ctx.request_id``, ``ctx.meta``, and ``ctx.auth`` where the server
    checks tokens).
    """

    kind: CallKind
    method: str
    params: dict[str, Any]
    ctx: Context

    @property
    def name(self) -> str | None:
        """The tool's or prompt's name (``params["name"]``), if the request names one."""
        name = self.params.get("name")
        return name if isinstance(name, str) else None

    @property
    def uri(self) -> str | None:
        """The resource's URI (``params["uri"]``), if the request names one."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


Next = Callable[[Call], Any]
"""What a middleware calls to go on: the rest of the chain, then the handler."""
Middleware = Callable[[Call, Next], Any]
"""``(call, next) -> result``: see the module's documentation."""


def _link(middleware: Middleware, following: Next) -> Next:
    return lambda call: middleware(call, following)


def run_chain(chain: Sequence[Middleware], call: Call, handler: Next) -> Any:
    """Run ``call`` through ``chain`` (the first is outermost), ending in ``handler``."""
    following = handler
    for middleware in reversed(chain):
        following = _link(middleware, following)
    return following(call)
