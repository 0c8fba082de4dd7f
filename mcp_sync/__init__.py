"""mcp_sync: a synchronous, thread-based Model Context Protocol client and server.

>>> import mcp_sync
>>> server = mcp_sync.MCPServer("demo")
>>> client_end, server_end = mcp_sync.InMemoryTransport.pair()

``mcp_sync.connect(target)`` connects to a server given by URL, command line
or MCPServer object. Names are imported lazily, so ``import mcp_sync`` stays
cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Bound here, not lazily: importing the submodule ``mcp_sync.connect`` sets
# the package attribute to the module, and this import then rebinds it to
# the function for good. The module itself imports nothing heavy.
from .connect import connect

__version__ = "0.1.0"

_EXPORTS = {
    "MCPClient": "client",
    "MCPServer": "server",
    "ServerSession": "session",
    "Context": "context",
    "JsonRpcDispatcher": "dispatcher",
    "Transport": "transport",
    "InMemoryTransport": "transport",
    "EventBus": "events",
    "Telemetry": "telemetry",
    "MCP_CODES": "errors",
    "MCPError": "errors",
    "MCPProtocolError": "errors",
    "MCPTransportError": "errors",
    "define_codes": "errors",
}

__all__ = [
    "MCP_CODES",
    "Context",
    "EventBus",
    "InMemoryTransport",
    "JsonRpcDispatcher",
    "MCPClient",
    "MCPError",
    "MCPProtocolError",
    "MCPServer",
    "MCPTransportError",
    "ServerSession",
    "Telemetry",
    "Transport",
    "__version__",
    "connect",
    "define_codes",
]

if TYPE_CHECKING:
    from .client import MCPClient
    from .context import Context
    from .dispatcher import JsonRpcDispatcher
    from .errors import MCP_CODES, MCPError, MCPProtocolError, MCPTransportError, define_codes
    from .events import EventBus
    from .server import MCPServer
    from .session import ServerSession
    from .telemetry import Telemetry
    from .transport import InMemoryTransport, Transport


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_sync' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
