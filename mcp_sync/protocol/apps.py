"""The MCP Apps extension (``io.modelcontextprotocol/ui``, SEP-1865): its names, ``_meta.ui`` keys and visibility rule.

A tool carries an interactive UI by naming a ``ui://`` resource in its
listing entry's ``_meta.ui.resourceUri``; that resource is an HTML document
served as ``text/html;profile=mcp-app``. ``_meta.ui.visibility`` says who
may call the tool: ``"model"`` (the agent sees and calls it) and ``"app"``
(the app may call it through the host, on the same server connection only);
it defaults to both. The server lists every tool; the *host* keeps tools
without ``"model"`` out of what the model sees and refuses an app's call to
a tool without ``"app"``.

The resource's own ``_meta.ui`` (``csp``, ``permissions``, ``domain``,
``prefersBorder``) may sit on its ``resources/list`` entry, on the
``resources/read`` content item, or both; the content item wins.

A client that hosts apps declares ``{"mimeTypes": ["text/html;profile=mcp-app"]}``
under ``capabilities.extensions["io.modelcontextprotocol/ui"]``.

>>> from mcp_sync.protocol.types import Tool
>>> tool = Tool(name="refresh", input_schema={"type": "object"},
...             _meta={"ui": {"resourceUri": "ui://clock/app.html", "visibility": ["app"]}})
>>> tool_ui(tool)
ToolUI(resource_uri='ui://clock/app.html', visibility=('app',))
>>> visible_to_model(tool), visible_to_app(tool)
(False, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the content models are declared when a program first uses them
    from .types import BaseResourceContents, Resource, Tool

__all__ = [
    "APP",
    "APP_MIME_TYPE",
    "CSP_KEYS",
    "DEFAULT_VISIBILITY",
    "EXTENSION_ID",
    "LEGACY_RESOURCE_URI_KEY",
    "MODEL",
    "PERMISSIONS",
    "UI_SCHEME",
    "ResourceUI",
    "ToolUI",
    "client_settings",
    "resource_ui",
    "supports_apps",
    "tool_ui",
    "tool_visibility",
    "visible_to_app",
    "visible_to_model",
]

EXTENSION_ID = "io.modelcontextprotocol/ui"
"""The extension's identifier under ``capabilities.extensions``."""
APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an app's HTML document, on its listing entry and on its read content."""
UI_SCHEME = "ui://"
"""Every app resource's URI starts with this."""
MODEL = "model"
"""The visibility value of a tool the model sees and may call."""
APP = "app"
"""The visibility value of a tool an app may call through the host."""
DEFAULT_VISIBILITY = (MODEL, APP)
"""A tool's visibility when ``_meta.ui.visibility`` is absent."""
LEGACY_RESOURCE_URI_KEY = "ui/resourceUri"
"""The older flat ``_meta`` key for a tool's resource URI (deprecated by the spec, still read)."""
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
"""The keys of ``_meta.ui.csp``, each a list of origins."""
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
"""The browser permissions a resource may ask for under ``_meta.ui.permissions``."""


@dataclass(frozen=True)
class ToolUI:
    """What a tool's ``_meta.ui`` says: the ``ui://`` resource of its app and who may call it.

    >>> ToolUI("ui://clock/app.html").meta()
    {'resourceUri': 'ui://clock/app.html', 'visibility': ['model', 'app']}
    """

    resource_uri: str
    visibility: tuple[str, ...] = DEFAULT_VISIBILITY

    def meta(self) -> dict[str, Any]:
        """The ``_meta.ui`` object of a tool's listing entry."""
        return {"resourceUri": self.resource_uri, "visibility": list(self.visibility)}


@dataclass(frozen=True)
class ResourceUI:
    """What an app resource's ``_meta.ui`` says: its CSP origins, permissions, domain and border.

    ``csp`` maps each key of :data:`CSP_KEYS` that was declared to its
    origins; an absent key means none (the spec's restrictive default).
    ``permissions`` names the requested members of :data:`PERMISSIONS`.

    >>> ui = ResourceUI(csp={"connectDomains": ("https://api.example.com",)}, prefers_border=True)
    >>> ui.meta()
    {'csp': {'connectDomains': ['https://api.example.com']}, 'prefersBorder': True}
    >>> ResourceUI.from_meta({"ui": ui.meta()}) == ui
    True
    """

    csp: Mapping[str, tuple[str, ...]] | None = None
    permissions: tuple[str, ...] = ()
    domain: str | None = None
    prefers_border: bool | None = None

    def meta(self) -> dict[str, Any]:
        """The ``_meta.ui`` object, with only what was declared."""
        meta: dict[str, Any] = {}
        if self.csp is not None:
            meta["csp"] = {key: list(origins) for key, origins in self.csp.items()}
        if self.permissions:
            meta["permissions"] = {name: {} for name in self.permissions}
        if self.domain is not None:
            meta["domain"] = self.domain
        if self.prefers_border is not None:
            meta["prefersBorder"] = self.prefers_border
        return meta

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> ResourceUI:
        """Read the ``ui`` member of a ``_meta`` object, leniently: what is malformed counts as absent."""
        ui = _ui(meta)
        csp = ui.get("csp")
        permissions = ui.get("permissions")
        domain = ui.get("domain")
        border = ui.get("prefersBorder")
        return cls(
            csp=(
                {key: _strings(origins) for key, origins in csp.items() if key in CSP_KEYS}
                if isinstance(csp, Mapping)
                else None
            ),
            permissions=tuple(name for name in PERMISSIONS if name in permissions)
            if isinstance(permissions, Mapping)
            else (),
            domain=domain if isinstance(domain, str) else None,
            prefers_border=border if isinstance(border, bool) else None,
        )


def tool_visibility(tool: Tool) -> tuple[str, ...]:
    """Who may call ``tool``: its ``_meta.ui.visibility``, or :data:`DEFAULT_VISIBILITY` when it has none.

    A tool may declare a visibility without a UI of its own (an app-only tool
    that only feeds another tool's app).
    """
    visibility = _ui(tool.meta).get("visibility")
    if not isinstance(visibility, list):
        return DEFAULT_VISIBILITY
    return _strings(visibility)


def tool_ui(tool: Tool) -> ToolUI | None:
    """The app ``tool`` names (``_meta.ui.resourceUri``, else the older ``_meta["ui/resourceUri"]``), or None."""
    uri = _ui(tool.meta).get("resourceUri")
    if not isinstance(uri, str):
        uri = (tool.meta or {}).get(LEGACY_RESOURCE_URI_KEY)
    if not isinstance(uri, str):
        return None
    return ToolUI(uri, tool_visibility(tool))


def visible_to_model(tool: Tool) -> bool:
    """Whether a host may show ``tool`` to the model (its visibility includes ``"model"``)."""
    return MODEL in tool_visibility(tool)


def visible_to_app(tool: Tool) -> bool:
    """Whether a host may let an app call ``tool`` (its visibility includes ``"app"``)."""
    return APP in tool_visibility(tool)


def resource_ui(*items: Resource | BaseResourceContents | None) -> ResourceUI:
    """An app resource's ``_meta.ui``: from the first of ``items`` that has one.

    Pass the ``resources/read`` content item first and the ``resources/list``
    entry second: the spec has the content item win, the listing entry being
    the fallback.
    """
    for item in items:
        if item is not None and _ui(item.meta):
            return ResourceUI.from_meta(item.meta)
    return ResourceUI()


def client_settings() -> dict[str, Any]:
    """The settings a client that hosts apps declares under ``extensions["io.modelcontextprotocol/ui"]``."""
    return {"mimeTypes": [APP_MIME_TYPE]}


def supports_apps(extensions: Mapping[str, Any] | None) -> bool:
    """Whether a client's ``capabilities.extensions`` says it hosts apps (it lists :data:`APP_MIME_TYPE`).

    >>> supports_apps({EXTENSION_ID: client_settings()}), supports_apps({EXTENSION_ID: {}}), supports_apps(None)
    (True, False, False)
    """
    settings = (extensions or {}).get(EXTENSION_ID)
    if not isinstance(settings, Mapping):
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def _ui(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    ui = (meta or {}).get("ui")
    return ui if isinstance(ui, Mapping) else {}


def _strings(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple(value for value in values if isinstance(value, str)) if isinstance(values, list) else ()
