"""What :meth:`MCPServer.get_info <mcp_sync.server.MCPServer.get_info>` reports: :class:`ServerStats`.

A module of its own, loaded at the first ``get_info()``: a frozen dataclass
costs a process's start about a fifth of a millisecond, and most servers are
never asked. Import it from :mod:`mcp_sync.server`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerStats"]


@dataclass(frozen=True)
class ServerStats:
    """A summary of a server: how much it holds and whether it runs (from :meth:`MCPServer.get_info`).

    Not the server's identity sent to clients: that is :attr:`MCPServer.info`.

    >>> from mcp_sync.server import MCPServer
    >>> server = MCPServer("demo", "1.0")
    >>> stats = server.get_info()
    >>> (stats.name, stats.tools, stats.running)
    ('demo', 0, False)
    """

    name: str
    version: str
    tools: int
    resources: int
    resource_templates: int
    prompts: int
    roots: int
    sessions: int
    running: bool
