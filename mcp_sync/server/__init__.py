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
"""

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
    "SamplingProvider",
    "ServerSession",
    "ServerStats",
]
