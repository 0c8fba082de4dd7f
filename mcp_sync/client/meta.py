"""The client's part of the ``_meta`` of each 2026-07-28 request: :class:`RequestMeta`.

A stateless-era request says in its ``_meta`` who asks, at which revision,
with which capabilities and at which log level. What it says changes only
when a provider is set or removed, or the log level changes; so it is
built once and again only then.

>>> from mcp_sync import MCPClient
>>> client = MCPClient("demo", "1.0", log_level="info", elicitation_provider=None)
>>> meta = client.request_meta.copy("2026-07-28")
>>> meta["io.modelcontextprotocol/clientInfo"], meta["io.modelcontextprotocol/logLevel"]
({'name': 'demo', 'version': '1.0'}, 'info')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.stateless import request_meta
from ..protocol.types import LoggingLevel

if TYPE_CHECKING:
    from .core import MCPClient

__all__ = ["RequestMeta"]


class RequestMeta:
    """The ``_meta`` a client adds to each 2026-07-28 request, rebuilt only when what it says changes."""

    def __init__(self, client: MCPClient, log_level: LoggingLevel | None) -> None:
        self.client = client
        self.log_level = log_level
        """The log level asked of a 2026-07-28 server (``None``: none asked, and it sends no log messages)."""
        self._built: tuple[tuple[Any, ...], dict[str, Any]] | None = None

    def copy(self, revision: str) -> dict[str, Any]:
        """The ``_meta`` of a request at ``revision``: a copy, to add to."""
        return dict(self.shared(revision))

    def shared(self, revision: str) -> dict[str, Any]:
        """What :meth:`copy` copies: to be read, never changed (the input rounds merge it into their own)."""
        client = self.client
        key = (
            revision,
            client.sampling_provider is None,
            client.roots_provider is None,
            client.elicitation_provider is None,
            client.info,
            self.log_level,
        )
        built = self._built
        if built is None or built[0] != key:
            built = (key, request_meta(revision, self.capabilities(), client.info.to_wire(), self.log_level))
            self._built = built
        return built[1]

    def capabilities(self) -> dict[str, Any]:
        """The capabilities of a 2026-07-28 request (roots without ``listChanged``, which that revision dropped)."""
        wire = self.client.capabilities().to_wire()
        if "roots" in wire:
            wire["roots"] = {}
        return wire
