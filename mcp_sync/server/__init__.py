"""The server role: :class:`MCPServer`, its sessions, the handler context, and hosting (stdio, HTTP).

Layer rule: the server may import ``runtime`` and ``protocol``; only
``server/stdio.py`` and ``server/http/`` touch transports. Nothing below
imports the server.

>>> server = MCPServer("demo")
>>> @server.tool()
... def add(a: int, b: int) -> int:
...     return a + b
>>> server.invoke_tool("add", {"a": 1, "b": 2}).text
'3'

The HTTP host (:class:`StreamableHTTPApp`, :func:`serve_http`,
:func:`start_http`, :class:`RunningHTTPServer`) is importable from here too,
loaded the first time one of its names is used: a stdio server never loads it::

    from mcp_sync.server import start_http
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .authorization import Authorizer, RequestInfo
from .context import Context, Elicited
from .core import CompletionProvider, MCPServer, SamplingProvider, ServerStats
from .session import ServerSession

__all__ = [
    "Authorizer",
    "CompletionProvider",
    "Context",
    "Elicited",
    "MCPServer",
    "RequestInfo",
    "RunningHTTPServer",
    "SamplingProvider",
    "ServerSession",
    "ServerStats",
    "StreamableHTTPApp",
    "serve_http",
    "start_http",
]

_HTTP = {
    "StreamableHTTPApp": ".http.app",
    "RunningHTTPServer": ".http.embedded",
    "serve_http": ".http.embedded",
    "start_http": ".http.embedded",
}
"""The HTTP host's names exported here, each with its module, imported when first used (the HTTP stack is big)."""

if TYPE_CHECKING:
    from .http.app import StreamableHTTPApp
    from .http.embedded import RunningHTTPServer, serve_http, start_http


def __getattr__(name: str) -> Any:
    if name not in _HTTP:
        raise AttributeError(f"module 'mcp_sync.server' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HTTP[name], __name__), name)
    globals()[name] = value
    return value
