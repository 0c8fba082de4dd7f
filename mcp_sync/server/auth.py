"""Who may do what: the facts of a request that an :data:`Authorizer` decides on.

An authorizer sees every request of both eras (after its era is known, before
its handler runs); a request it refuses is answered ``UNAUTHORIZED``.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> server.set_authorizer(lambda info: info.method != "tools/call" or info.params.get("name") != "shutdown")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .session import ServerSession


@dataclass(frozen=True)
class RequestInfo:
    """What an authorizer sees of a request: its method, its raw params and the connection it came on."""

    method: str
    params: dict[str, Any]
    session: ServerSession


Authorizer = Callable[[RequestInfo], bool]
"""``(info) -> allowed``: whether the request described by ``info`` may be served."""
