"""The client role: :class:`MCPClient` and the ways to get one connected.

Layer rule: the client may import ``transports``, ``runtime``, ``protocol``
and ``display``; nothing below imports the client. ``stdio_client`` and
``http_client`` are the functional spellings of ``MCPClient.stdio`` and
``MCPClient.http``.

>>> import sys
>>> with stdio_client([sys.executable, "examples/echo_server.py"]) as client:
...     client.call_tool("add", {"a": 1, "b": 2}).text
'3'
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
