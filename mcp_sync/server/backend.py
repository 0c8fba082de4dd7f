"""What the processes serving one MCP server share: the seam, and its in-process default.

One process serving a server needs nothing shared. Several (gunicorn
workers, machines behind a load balancer) need two things for the
2026-07-28 era and the server-wide notifications:

- the secret that signs ``requestState``, so that an input round started
  on one process is finished on another;
- the server-wide notifications (``notifications/resources/updated`` and
  the ``list_changed`` ones): raised in one process, they must reach the
  listen streams and GET streams open in every process.

A :class:`Backend` provides both. :class:`InProcessBackend` (the default)
shares nothing: everything stays in this process, as without a backend.
:class:`~mcp_sync.server.http.redis_backend.RedisBackend` shares them
through Redis; :class:`~mcp_sync.server.http.app.StreamableHTTPApp` picks
it with ``backend="redis://..."`` or ``MCP_SYNC_REDIS_URL``.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> isinstance(server.backend, InProcessBackend)
True
>>> server.backend.publish(Notice("list_changed", "tools"))  # nobody else to tell
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..protocol.errors import MCP_CODES, MCPError

if TYPE_CHECKING:
    from .core import MCPServer

__all__ = ["Backend", "BackendUnavailable", "InProcessBackend", "Notice", "NoticeKind"]

NoticeKind = Literal["resource_updated", "list_changed"]


@dataclass(frozen=True)
class Notice:
    """A server-wide notification, as the processes of a server pass it on.

    ``kind`` ``"resource_updated"`` has the resource's URI as ``subject``;
    ``"list_changed"`` has the list: ``"tools"``, ``"resources"`` or ``"prompts"``.

    >>> Notice("resource_updated", "notes://1").subject
    'notes://1'
    """

    kind: NoticeKind
    subject: str


class BackendUnavailable(MCPError):
    """The backend (Redis) cannot be reached: at start, or when a notification must be passed on.

    Its code is ``INTERNAL_ERROR`` (``-32603`` on the wire): a request that
    raises it fails as a whole, rather than as a tool's error result.

    >>> error = BackendUnavailable("Redis is down")
    >>> error.code, error.jsonrpc_code
    ('MCP.INTERNAL_ERROR', -32603)
    >>> import copy
    >>> copy.copy(error).message
    'Redis is down'
    """

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(MCP_CODES.INTERNAL_ERROR, message, cause=cause)

    def __reduce__(self) -> tuple[Any, ...]:
        # MCPError's reduce calls the class with the code first; this one takes the message alone.
        return (BackendUnavailable, (self.message,))


class Backend(Protocol):
    """What a server's processes share (see the module's introduction).

    A host (the HTTP app) calls :meth:`attach` once, when it is made;
    :meth:`start` in each process that serves requests, before the first
    (after a fork, too: it starts what the fork did not carry over); and
    :meth:`close` when it stops. The server calls :meth:`publish` for each
    notification it raises, after delivering it to its own sessions.
    """

    def attach(self, server: MCPServer) -> None:
        """Serve ``server``: become its ``backend`` and give it the shared secret.

        Raises :class:`BackendUnavailable` when the backend cannot be reached.
        """

    def start(self) -> None:
        """In this process, deliver the notifications other processes publish to the server's sessions."""

    def publish(self, notice: Notice) -> None:
        """Pass ``notice`` on to the other processes; :class:`BackendUnavailable` when that fails."""

    def close(self) -> None:
        """Stop receiving (no thread of the backend outlives this) and let go of the server."""


class InProcessBackend:
    """Nothing shared: the server's own secret, its notifications for its own sessions only.

    >>> from mcp_sync import MCPServer
    >>> server = MCPServer("demo")
    >>> backend = InProcessBackend()
    >>> backend.attach(server)
    >>> server.backend is backend
    True
    >>> backend.close()
    """

    def attach(self, server: MCPServer) -> None:
        """Become the server's backend."""
        server.backend = self

    def start(self) -> None:
        """Nothing to receive: no other process publishes."""

    def publish(self, notice: Notice) -> None:
        """Nobody else to tell."""

    def close(self) -> None:
        """Nothing runs."""
