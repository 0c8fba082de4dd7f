"""The client role: :class:`MCPClient` and the ways to get one connected.

``stdio_client`` and ``http_client`` are the functional spellings of
``MCPClient.stdio`` and ``MCPClient.http``.

>>> import sys
>>> with stdio_client([sys.executable, "examples/echo_server.py"]) as client:
...     client.call_tool("add", {"a": 1, "b": 2}).text
'3'

What the package holds:

- ``core``: ``MCPClient``, the blocking client, and the provider and handler types it takes;
- ``era``: which era a connection speaks, settled once when it opens, and what each era does;
- ``rounds``: one stateless-era request, from the cache or the wire, driven through its input rounds;
- ``meta``: the client's part of each 2026-07-28 request's ``_meta``;
- ``cache``: the 2026-07-28 results kept for as long as their ``ttlMs`` says;
- ``providers``: the answers to the server's questions (sampling, roots, elicitation) in either era;
- ``listings``: tools, resources, templates and prompts listed page by page, kept, refreshed on change;
- ``tools``: tools as Python functions (signatures, docstrings) and the ``client.tools`` namespace;
- ``tasks``: tool calls the server runs as tasks, polled, answered and cancelled;
- ``subscriptions``: the ``subscriptions/listen`` streams of 2026-07-28;
- ``apps``: a tool's MCP App read: the HTML of its ``ui://`` resource and the resource's ``_meta.ui``;
- ``skills``: a server's Agent Skills, listed, loaded and their files read and checked;
- ``background``: the pool that runs what a notification starts, off the reader thread;
- ``factories``: a client joined to a server process or a URL (``MCPClient.stdio``, ``MCPClient.http``);
- ``interactive``: the defaults for a person at hand, chosen by where the code runs (notebook, terminal);
- ``forms``: elicitation forms a person fills in, one field at a time, in a terminal or a notebook;
- ``widget_form``: the ipywidgets form of an elicitation, in the output of the waiting cell;
- ``logs``: where server log messages go when nothing else shows them (the ``logging`` module);
- ``auth/``: OAuth for clients: sign-in, token stores, machine grants (see its docstring).

May import: ``client``, ``transports``, ``runtime``, ``protocol``, ``display``.
Must not import: ``server``, ``llm``, ``apps``, nor the composition level.
Of the other layers, only ``llm`` and ``apps`` import the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..protocol.schema import tool_summary
from .core import (
    RESOURCE_UPDATED,
    ElicitationProvider,
    LogHandler,
    MCPClient,
    ResourceUpdated,
    RootsProvider,
    SamplingProvider,
)
from .subscriptions import Subscription
from .tasks import ToolTask, UnknownTaskError
from .tools import ToolNamespace, tool_function, tool_signature

__all__ = [
    "RESOURCE_UPDATED",
    "ElicitationProvider",
    "LogHandler",
    "MCPClient",
    "ResourceUpdated",
    "RootsProvider",
    "SamplingProvider",
    "Subscription",
    "ToolNamespace",
    "ToolTask",
    "UnknownTaskError",
    "http_client",
    "stdio_client",
    "tool_function",
    "tool_signature",
    "tool_summary",
]


def stdio_client(command: str | Sequence[str], args: Sequence[str] = (), **options: Any) -> MCPClient:
    """Start a server process and return a client connected to it: ``MCPClient.stdio(command, args, **options)``."""
    return MCPClient.stdio(command, args, **options)


def http_client(url: str, **options: Any) -> MCPClient:
    """Connect to the MCP server at ``url`` over HTTP: ``MCPClient.http(url, **options)``."""
    return MCPClient.http(url, **options)
