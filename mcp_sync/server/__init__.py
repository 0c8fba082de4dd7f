"""The server role: :class:`MCPServer`, its sessions, the handler context, and hosting (stdio, HTTP).

>>> server = MCPServer("demo")
>>> @server.tool()
... def add(a: int, b: int) -> int:
...     return a + b
>>> server.invoke_tool("add", {"a": 1, "b": 2}).text
'3'

The HTTP host (:class:`StreamableHTTPApp`, :func:`serve_http`,
:func:`start_http`, :class:`RunningHTTPServer`) is importable from here too,
loaded the first time one of its names is used: a stdio server never loads it
(nor :class:`Elicited` and :class:`ServerStats`, until it elicits or is asked)::

    from mcp_sync.server import start_http

What the package holds:

- ``core``: ``MCPServer``, the host that serves its registry of tools, resources and prompts to clients;
- ``registry``: ``ServerRegistry``, what a server declares (tools, resources, templates, prompts, completions);
- ``functions``: tools, prompts and resources read from plain Python functions and their signatures;
- ``results``: what handlers return turned into result models, and paging;
- ``uri_template``: the RFC 6570 templates of resource templates, parsed once;
- ``session``: ``ServerSession``, one client connection and what is particular to it;
- ``stateless``: serving the 2026-07-28 revision: per-request ``_meta`` and sealed request state;
- ``context``: ``Context``, what a handler gets to report progress, log, notice cancellation, ask the client;
- ``elicited``: ``Elicited``, the user's answer to ``Context.elicit``;
- ``stats``: ``ServerStats``, what ``MCPServer.get_info`` reports;
- ``middleware``: the ordered chain of callables around what the server handles;
- ``mount``: one server's tools, resources and prompts served by another, under a prefix;
- ``tasks``: tools that run as tasks, the server side of both task forms;
- ``task_store``: where tasks are kept: a task's record, the store's protocol, the in-memory store;
- ``apps``: MCP Apps served: tools' ``_meta.ui``, ``ui://`` HTML resources, the extension declared;
- ``skills``: a directory of Agent Skills served through the skills extension;
- ``backend``: what the processes serving one server share (the seam), and its in-process default;
- ``stdio``: hosting on this process's own stdin and stdout (``serve_stdio``);
- ``authorization/``: who a request speaks for, what it may do, and bearer-token verifiers (see its docstring);
- ``scale/``: the Redis backend, event store and task store for many processes (see its docstring);
- ``http/``: the HTTP server: see its package docstring.

May import: ``server``, ``runtime``, ``protocol``.
Must not import: ``client``, ``display``, ``llm``, ``apps``, ``transports`` (but for the exception below), nor the
composition level.
Hosting: ``stdio`` alone may also import ``transports``, for the stdio framing.

The HTTP server is its own carrier and imports no transport; outbound HTTP
(the token verifiers') is :mod:`mcp_sync.runtime.http`'s. Nothing in
another layer imports the server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .authorization import Authorizer, RequestInfo
from .context import Context
from .core import CompletionProvider, MCPServer, SamplingProvider
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

_ON_DEMAND = {
    "StreamableHTTPApp": ".http.app",
    "RunningHTTPServer": ".http.embedded",
    "serve_http": ".http.embedded",
    "start_http": ".http.embedded",
    "Elicited": ".elicited",
    "ServerStats": ".stats",
}
"""Names exported here whose module is imported when one is first used: the HTTP host's (the HTTP stack is big),
and two answers most servers never get (``elicit()``'s and ``get_info()``'s)."""

if TYPE_CHECKING:
    from .elicited import Elicited
    from .http.app import StreamableHTTPApp
    from .http.embedded import RunningHTTPServer, serve_http, start_http
    from .stats import ServerStats


def __getattr__(name: str) -> Any:
    if name not in _ON_DEMAND:
        raise AttributeError(f"module 'mcp_sync.server' has no attribute {name!r}")
    value = getattr(importlib.import_module(_ON_DEMAND[name], __name__), name)
    globals()[name] = value
    return value
