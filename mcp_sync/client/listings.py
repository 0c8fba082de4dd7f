"""The listings of a client: one page (``list_tools``), every page (``refresh_tools``), and the lists last fetched.

:class:`Listings` is part of :class:`~mcp_sync.client.MCPClient` (its
methods are the client's): the tools, resources, resource templates and
prompts, fetched page by page within one deadline for the whole listing,
kept for ``client.tools()``, ``client.resources()`` and the others, and
fetched again (off the reader thread) when the server says a list changed.

>>> from mcp_sync import MCPServer, connect
>>> server = MCPServer("demo")
>>> _ = server.register_tool("hello", lambda args, ctx: "hi")
>>> with connect(server) as client:
...     [tool.name for tool in client.refresh_tools()], client.list_prompts().prompts
(['hello'], [])
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError, MCPProtocolError
from ..protocol.types import PaginatedRequestParams, PaginatedResult, Tool
from ..runtime.dispatcher import USE_DEFAULT, SystemClock, Timeout, UseDefault

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..protocol.types import (
        InitializeResult,
        WireModel,
    )
    from ..runtime.dispatcher import Clock, ProgressCallback
    from .cache import ResponseCache
    from .subscriptions import ListenTable
    from .tools import ToolNamespace

__all__ = ["Listings"]

_P = TypeVar("_P", bound=PaginatedResult)
_R = TypeVar("_R", bound="WireModel")
_LISTINGS = {
    "tools": ("tools/list",),
    "prompts": ("prompts/list",),
    "resources": ("resources/list", "resources/templates/list"),
}
"""The cached methods a list-changed notification of each kind makes stale."""


class Listings:
    """The listing methods of :class:`~mcp_sync.client.MCPClient`; the client keeps the lists they fetch."""

    if TYPE_CHECKING:  # what the client these methods are part of provides, declared for the type checker
        timeout: float | None
        cache: ResponseCache | None
        listens: ListenTable
        _clock: Clock | None
        _resources: list[models.Resource]
        _templates: list[models.ResourceTemplate]
        _prompts: list[models.Prompt]

        @property
        def tools(self) -> ToolNamespace: ...
        def _initialized(self) -> InitializeResult: ...
        def _in_background(self, fn: Callable[[str], Any], arg: str) -> None: ...
        def _call(
            self,
            method: str,
            params: WireModel | None,
            result_type: type[_R],
            *,
            timeout: Timeout = USE_DEFAULT,
            cancel: threading.Event | None = None,
            on_progress: ProgressCallback | None = None,
            fresh: bool = False,
        ) -> _R: ...

    def list_tools(
        self,
        cursor: str | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
    ) -> models.ListToolsResult:
        """One page of the server's tools."""
        params = PaginatedRequestParams(cursor=cursor)
        return self._call("tools/list", params, models.ListToolsResult, timeout=timeout, cancel=cancel)

    def refresh_tools(self, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None) -> list[Tool]:
        """Fetch every page of tools and update :meth:`tools`."""
        tools: list[Tool] = self._collect("tools/list", models.ListToolsResult, "tools", timeout, cancel)
        self.tools.known = tools
        return tools

    def list_resources(
        self,
        cursor: str | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
    ) -> models.ListResourcesResult:
        """One page of the server's resources."""
        params = PaginatedRequestParams(cursor=cursor)
        return self._call("resources/list", params, models.ListResourcesResult, timeout=timeout, cancel=cancel)

    def refresh_resources(
        self, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None
    ) -> list[models.Resource]:
        """Fetch every page of resources and update :meth:`resources`."""
        resources: list[models.Resource] = self._collect(
            "resources/list", models.ListResourcesResult, "resources", timeout, cancel
        )
        self._resources = resources
        return resources

    def resources(self) -> list[models.Resource]:
        """The server's resources as last fetched."""
        self._initialized()
        return list(self._resources)

    def list_resource_templates(
        self,
        cursor: str | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
    ) -> models.ListResourceTemplatesResult:
        """One page of the server's resource templates."""
        params = PaginatedRequestParams(cursor=cursor)
        method = "resources/templates/list"
        return self._call(method, params, models.ListResourceTemplatesResult, timeout=timeout, cancel=cancel)

    def refresh_resource_templates(
        self, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None
    ) -> list[models.ResourceTemplate]:
        """Fetch every page of resource templates and update :meth:`resource_templates`."""
        templates: list[models.ResourceTemplate] = self._collect(
            "resources/templates/list", models.ListResourceTemplatesResult, "resource_templates", timeout, cancel
        )
        self._templates = templates
        return templates

    def resource_templates(self) -> list[models.ResourceTemplate]:
        """The server's resource templates as last fetched."""
        self._initialized()
        return list(self._templates)

    def list_prompts(
        self,
        cursor: str | None = None,
        *,
        timeout: Timeout = USE_DEFAULT,
        cancel: threading.Event | None = None,
    ) -> models.ListPromptsResult:
        """One page of the server's prompts."""
        params = PaginatedRequestParams(cursor=cursor)
        return self._call("prompts/list", params, models.ListPromptsResult, timeout=timeout, cancel=cancel)

    def refresh_prompts(
        self, *, timeout: Timeout = USE_DEFAULT, cancel: threading.Event | None = None
    ) -> list[models.Prompt]:
        """Fetch every page of prompts and update :meth:`prompts`."""
        prompts: list[models.Prompt] = self._collect(
            "prompts/list", models.ListPromptsResult, "prompts", timeout, cancel
        )
        self._prompts = prompts
        return prompts

    def prompts(self) -> list[models.Prompt]:
        """The server's prompts as last fetched."""
        self._initialized()
        return list(self._prompts)

    def refresh_templates_if_served(self) -> None:
        """Refresh the templates cache; a server without ``resources/templates/list`` has none.

        The method belongs to the resources capability, but servers that have
        no templates (the official SDK's, for one) answer it with -32601.

        >>> from mcp_sync import MCPServer, connect
        >>> with connect(MCPServer("demo"), era="handshake") as client:
        ...     client.refresh_templates_if_served()
        ...     client.resource_templates()
        []
        """
        try:
            self.refresh_resource_templates()
        except MCPError as exc:
            if exc.code != MCP_CODES.METHOD_NOT_FOUND:
                raise
            self._templates = []

    def _collect(
        self, method: str, result_type: type[_P], key: str, timeout: Timeout, cancel: threading.Event | None
    ) -> list[Any]:
        """Every page of a listing, fetched anew (a repeated cursor, which would loop for ever, is refused).

        ``timeout`` bounds the whole listing, not each page: a server that
        hands out a new cursor with every page would otherwise be followed
        for ever.
        """
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        clock = self._clock or SystemClock()
        limit = self.timeout if isinstance(timeout, UseDefault) else timeout
        deadline = None if limit is None else clock.monotonic() + limit
        while True:
            left = limit if deadline is None else deadline - clock.monotonic()
            if left is not None and left <= 0:
                raise MCPError(
                    MCP_CODES.TIMEOUT,
                    f"listing {method} did not end within {limit:g} s ({len(seen)} cursors followed)",
                    context={"method": method, "timeout": limit},
                )
            params = PaginatedRequestParams(cursor=cursor)
            page = self._call(method, params, result_type, timeout=left, cancel=cancel, fresh=True)
            items.extend(getattr(page, key))
            cursor = page.next_cursor
            if not cursor:
                return items
            if cursor in seen:
                raise MCPProtocolError(
                    MCP_CODES.PROTOCOL_INVALID,
                    f"the server repeated the cursor {cursor!r} while listing {method}",
                    context={"method": method},
                )
            seen.add(cursor)

    def _on_list_changed(self, kind: str, params: dict[str, Any]) -> None:
        if self.listens.stale(params):
            return
        if self.cache is not None:
            self.cache.invalidate(*_LISTINGS[kind])
        self._in_background(self._refresh, kind)

    def _refresh(self, kind: str) -> None:
        if kind == "tools":
            self.refresh_tools()
        elif kind == "prompts":
            self.refresh_prompts()
        else:
            self.refresh_resources()
            self.refresh_templates_if_served()
