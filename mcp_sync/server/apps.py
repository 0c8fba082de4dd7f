"""Serving MCP Apps (``io.modelcontextprotocol/ui``): tools that carry a UI, and the ``ui://`` HTML they name.

What :meth:`MCPServer.add_app_resource <mcp_sync.server.core.MCPServer.add_app_resource>` and the
``ui=``/``visibility=`` options of ``@server.tool`` and
:meth:`~mcp_sync.server.core.MCPServer.register_tool` do:

- a tool's ``ui`` (a ``ui://`` URI) and ``visibility`` (``"model"``, ``"app"``)
  become its listing entry's ``_meta.ui``. The server lists every tool,
  app-only ones too: the spec has the *host* keep a tool without
  ``"model"`` from the model, and refuse an app's call to a tool without
  ``"app"``. A tool's result keeps its text ``content`` for clients that show
  no apps;
- an app resource is served as ``text/html;profile=mcp-app``, its ``_meta.ui``
  (``csp``, ``permissions``, ``domain``, ``prefersBorder``) both on its
  ``resources/list`` entry (for hosts that review it before reading) and on
  the content item ``resources/read`` returns (where the spec has hosts look
  first);
- either declares the extension under ``capabilities.extensions`` (settings
  ``{}``: the spec defines none for servers), at ``initialize`` and in
  ``server/discover`` alike.

Whether the client calling a handler shows apps is
:attr:`Context.client_supports_apps <mcp_sync.server.context.Context.client_supports_apps>`.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("clock")
>>> _ = server.add_app_resource("ui://clock/app.html", html="<!doctype html><p>now</p>", prefers_border=True)
>>> @server.tool(ui="ui://clock/app.html")
... def now() -> str:
...     "The time."
...     return "12:00"
>>> server.get_tool("now").meta
{'ui': {'resourceUri': 'ui://clock/app.html', 'visibility': ['model', 'app']}}
>>> content = server.read_resource("ui://clock/app.html").contents[0]
>>> content.mime_type, content.meta
('text/html;profile=mcp-app', {'ui': {'prefersBorder': True}})

The extension's rules (:mod:`mcp_sync.protocol.apps`) are imported inside
the functions that use them: a server whose tools have no app never loads
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.types import Tool

if TYPE_CHECKING:
    from ..protocol.types import Resource
    from .context import Context
    from .core import MCPServer

__all__ = ["add_app_resource", "declare", "mounted_tool_meta", "tool_meta"]

_SNAKE = {"connect_domains": "connectDomains", "resource_domains": "resourceDomains"}
_SNAKE |= {"frame_domains": "frameDomains", "base_uri_domains": "baseUriDomains", "clipboard_write": "clipboardWrite"}


def declare(server: MCPServer) -> None:
    """Declare the apps extension under the server's ``capabilities.extensions`` (once; its settings are ``{}``)."""
    from ..protocol.apps import EXTENSION_ID

    server.extensions.setdefault(EXTENSION_ID, {})


def tool_meta(
    server: MCPServer, meta: dict[str, Any] | None, ui: str | None, visibility: Iterable[str] | None
) -> dict[str, Any] | None:
    """A tool's ``_meta`` with ``_meta.ui`` from ``ui`` and ``visibility``; ``meta`` itself when neither is given.

    Declares the extension on ``server`` when either is. ``ValueError`` for a
    ``ui`` outside ``ui://``, a visibility value other than ``"model"`` and
    ``"app"``, or a ``meta`` that has a ``"ui"`` key of its own.
    """
    if ui is None and visibility is None:
        return meta
    if meta is not None and "ui" in meta:
        raise ValueError("give ui= and visibility=, or a 'ui' key in meta=, not both")
    entry: dict[str, Any] = {}
    if ui is not None:
        entry["resourceUri"] = _ui_uri(ui)
    entry["visibility"] = list(_visibility(visibility))
    declare(server)
    return {**(meta or {}), "ui": entry}


def mounted_tool_meta(server: MCPServer, tool: Tool, uri: Callable[[str], str]) -> dict[str, Any] | None:
    """The ``_meta`` of ``tool`` as a server mounting it lists it: its app's URI mapped by ``uri``, as the
    mount maps the resource's; the extension declared on ``server`` when the tool has an app."""
    from ..protocol.apps import LEGACY_RESOURCE_URI_KEY, tool_ui

    if tool.meta is None or tool_ui(tool) is None:
        return tool.meta
    declare(server)
    meta = dict(tool.meta)
    entry = meta.get("ui")
    if isinstance(entry, Mapping) and isinstance(entry.get("resourceUri"), str):
        meta["ui"] = {**entry, "resourceUri": uri(entry["resourceUri"])}
    if isinstance(meta.get(LEGACY_RESOURCE_URI_KEY), str):
        meta[LEGACY_RESOURCE_URI_KEY] = uri(meta[LEGACY_RESOURCE_URI_KEY])
    return meta


def add_app_resource(
    server: MCPServer,
    uri: str,
    *,
    html: str | None = None,
    path: str | Path | None = None,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    csp: Mapping[str, Iterable[str]] | None = None,
    permissions: Iterable[str] = (),
    domain: str | None = None,
    prefers_border: bool | None = None,
) -> Resource:
    """Serve an app's HTML at ``uri`` (``ui://...``) as ``text/html;profile=mcp-app``; its listing entry.

    Give the document as ``html`` or as ``path`` (read at each read, so that
    edits show at the next one). ``csp`` maps ``connectDomains``,
    ``resourceDomains``, ``frameDomains`` and ``baseUriDomains`` (or their
    snake_case spellings) to the origins the app needs: none declared, no
    network (the spec's default). ``permissions`` names what it asks of the
    browser: ``camera``, ``microphone``, ``geolocation``, ``clipboardWrite``.
    ``domain`` (host-specific) and ``prefers_border`` are passed on as given.
    """
    from ..protocol.apps import APP_MIME_TYPE, ResourceUI
    from ..protocol.types import TextResourceContents  # (loaded by the first resource: see ON_DEMAND)

    if (html is None) == (path is None):
        raise ValueError("give the app's document as html= or as path=, one of them")
    file = None if path is None else Path(path)
    if file is not None and not file.is_file():
        raise FileNotFoundError(f"no app document at {file}")
    ui = ResourceUI(
        csp=None if csp is None else {_csp_key(key): tuple(origins) for key, origins in csp.items()},
        permissions=tuple(_permission(permission) for permission in permissions),
        domain=domain,
        prefers_border=prefers_border,
    )
    meta = {"ui": ui.meta()} if ui.meta() else None

    def read(requested: str, ctx: Context) -> TextResourceContents:
        text = html if file is None else file.read_text(encoding="utf-8")
        return TextResourceContents(uri=requested, mime_type=APP_MIME_TYPE, text=text, _meta=meta)

    resource = server.register_resource(
        _ui_uri(uri), read, name=name, title=title, description=description, mime_type=APP_MIME_TYPE, meta=meta
    )
    declare(server)
    return resource


def _ui_uri(uri: str) -> str:
    from ..protocol.apps import UI_SCHEME

    if not uri.startswith(UI_SCHEME):
        raise ValueError(f"an app's URI starts with {UI_SCHEME}, not {uri!r}")
    return uri


def _visibility(visibility: Iterable[str] | None) -> tuple[str, ...]:
    from ..protocol.apps import APP, MODEL

    if visibility is None:
        return (MODEL, APP)
    values = tuple(visibility) if not isinstance(visibility, str) else (visibility,)
    for value in values:
        if value not in (MODEL, APP):
            raise ValueError(f"a tool's visibility holds 'model' and 'app', not {value!r}")
    return values


def _csp_key(key: str) -> str:
    from ..protocol.apps import CSP_KEYS

    wire = _SNAKE.get(key, key)
    if wire not in CSP_KEYS:
        raise ValueError(f"csp keys are {', '.join(CSP_KEYS)}, not {key!r}")
    return wire


def _permission(name: str) -> str:
    from ..protocol.apps import PERMISSIONS

    wire = _SNAKE.get(name, name)
    if wire not in PERMISSIONS:
        raise ValueError(f"app permissions are {', '.join(PERMISSIONS)}, not {name!r}")
    return wire
