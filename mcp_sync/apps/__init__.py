"""MCP Apps, hosted: a tool's interactive UI shown, its JSON-RPC answered, its calls sent to the server.

A tool whose ``_meta.ui.resourceUri`` names a ``ui://`` resource has an app:
an HTML page that the host shows in a sandboxed frame and talks to over
``postMessage`` (SEP-1865, ``io.modelcontextprotocol/ui``). This package is
that host, for a connected :class:`~mcp_sync.client.MCPClient`.

What the package holds:

- ``policy``: what a resource asks of its sandbox (its CSP origins, its permissions) and what the host grants
  (the rules of ``_meta.ui`` itself are :mod:`mcp_sync.protocol.apps`');
- ``bridge``: :class:`AppBridge`, the host's side of one view, whatever carries its messages;
- ``web``: :class:`AppHost`, a WSGI application that shows views in a browser page, the app in a sandbox
  proxy on a second origin (``mcp-sync app`` serves it; a Flask or Django app can mount it);
- ``widget``: :class:`AppWidget` and :func:`show_app`, a view in a notebook cell (an anywidget; loaded when
  first used, as ``mcp_sync.apps.show_app``);
- ``static/``: the host page's script and the sandbox proxy's, and the notebook widget's.

May import: ``apps``, ``client``, ``runtime``, ``protocol``.
Must not import: ``transports``, ``display``, ``server``, ``llm``, nor the composition level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bridge import AppBridge, AppError
from .web import AppHost, AppView

__all__ = ["AppBridge", "AppError", "AppHost", "AppView", "AppWidget", "show_app"]

if TYPE_CHECKING:
    from .widget import AppWidget, show_app


def __getattr__(name: str) -> Any:
    # The notebook widget needs anywidget (the notebook extra): imported only when asked for.
    if name in ("AppWidget", "show_app"):
        from . import widget

        return getattr(widget, name)
    raise AttributeError(f"module 'mcp_sync.apps' has no attribute {name!r}")
