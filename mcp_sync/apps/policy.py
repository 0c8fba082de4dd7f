"""What an app's resource asks of its sandbox, and what the host grants: the CSP, the ``allow`` list, the tool rules.

An MCP Apps resource (``text/html;profile=mcp-app``) declares in its
``_meta.ui`` the origins it needs (``csp``: ``connectDomains``,
``resourceDomains``, ``frameDomains``, ``baseUriDomains``) and the browser
features it would like (``permissions``: ``camera``, ``microphone``,
``geolocation``, ``clipboardWrite``). The host builds the view's
Content-Security-Policy from the declared origins alone (none declared: no
network at all), and grants only the features it was told to grant.

>>> policy = content_security_policy({"connectDomains": ["https://api.example.com"]})
>>> "connect-src https://api.example.com;" in policy, "frame-src 'none';" in policy
(True, True)
>>> content_security_policy({})  # the spec's restrictive default, and a little more
"default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; font-src 'self'; media-src 'self' data:; connect-src 'none'; frame-src 'none'; \
object-src 'none'; base-uri 'self'; form-action 'none'"
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol.types import Tool

__all__ = [
    "APP_MIME_TYPE",
    "CSP_KEYS",
    "PERMISSIONS",
    "allow_attribute",
    "checked_csp",
    "content_security_policy",
    "resource_uri",
    "visible_to_app",
]

log = logging.getLogger(__name__)

APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an MCP Apps HTML resource."""
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
"""The keys of a resource's ``_meta.ui.csp``."""
PERMISSIONS = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}
"""The permissions an app may ask for, and the Permission Policy feature of each (for the frame's ``allow``)."""

# An origin, maybe with a wildcard first label, as CSP source expressions spell it: nothing that could end the
# directive (``;``), add a keyword (``'unsafe-eval'``) or widen it (a bare ``*`` or a scheme alone).
_ORIGIN = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?")


# One rule for a tool's ``_meta.ui`` until mcp_sync.protocol.apps (the server side's module) is on main: then these
# two are replaced by its ``tool_ui`` / ``visible_to_app``.
def _tool_meta(tool: Tool) -> Mapping[str, Any]:
    meta = tool.meta or {}
    ui = meta.get("ui")
    return ui if isinstance(ui, Mapping) else {}


def resource_uri(tool: Tool) -> str | None:
    """The ``ui://`` resource that shows ``tool``'s results (``_meta.ui.resourceUri``, or the older flat key).

    >>> resource_uri(Tool(name="t", input_schema={}, _meta={"ui": {"resourceUri": "ui://t/app.html"}}))
    'ui://t/app.html'
    >>> resource_uri(Tool(name="t", input_schema={})) is None
    True
    """
    uri = _tool_meta(tool).get("resourceUri", (tool.meta or {}).get("ui/resourceUri"))
    return uri if isinstance(uri, str) else None


def visible_to_app(tool: Tool) -> bool:
    """Whether an app may call ``tool``: its ``_meta.ui.visibility`` includes ``"app"`` (the default does).

    >>> visible_to_app(Tool(name="t", input_schema={}, _meta={"ui": {"visibility": ["model"]}}))
    False
    """
    visibility = _tool_meta(tool).get("visibility", ("model", "app"))
    return isinstance(visibility, (list, tuple)) and "app" in visibility


def checked_csp(declared: Any) -> dict[str, list[str]]:
    """The origins of a resource's ``_meta.ui.csp`` that may go into a policy; anything else is dropped (logged).

    >>> checked_csp({"connectDomains": ["https://a.example", "'unsafe-eval'", "*"], "other": ["x"]})
    {'connectDomains': ['https://a.example']}
    """
    checked: dict[str, list[str]] = {}
    if not isinstance(declared, Mapping):
        return checked
    for key in CSP_KEYS:
        values = declared.get(key)
        if values is None:
            continue
        listed = values if isinstance(values, list) else [values]
        kept = [value for value in listed if isinstance(value, str) and _ORIGIN.fullmatch(value)]
        if len(kept) != len(listed):
            log.warning("app resource: %s entries that are not origins were dropped: %r", key, values)
        if kept:
            checked[key] = kept
    return checked


def content_security_policy(csp: Mapping[str, list[str]]) -> str:
    """The view's Content-Security-Policy, from the checked origins of :func:`checked_csp`.

    It follows the spec's construction, keeping its ``connect-src 'none'``
    default when no connection is declared (rather than ``'self'``: the
    sandbox origin has nothing an app needs), and adds ``form-action
    'none'``, so a form cannot carry data where ``connect-src`` forbids it.
    """

    def sources(key: str, fallback: str) -> str:
        return " ".join(csp.get(key, [])) or fallback

    none = "'none'"
    resources = " ".join(csp.get("resourceDomains", []))
    extra = f" {resources}" if resources else ""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline'{extra}",
            f"style-src 'self' 'unsafe-inline'{extra}",
            f"img-src 'self' data:{extra}",
            f"font-src 'self'{extra}",
            f"media-src 'self' data:{extra}",
            "connect-src " + sources("connectDomains", none),
            "frame-src " + sources("frameDomains", none),
            "object-src 'none'",
            "base-uri " + sources("baseUriDomains", "'self'"),
            "form-action 'none'",
        ]
    )


def allow_attribute(granted: Iterable[str]) -> str:
    """The iframe ``allow`` attribute for the granted permissions (their Permission Policy features).

    >>> allow_attribute(["clipboardWrite", "camera"])
    'camera; clipboard-write'
    """
    return "; ".join(sorted(PERMISSIONS[name] for name in granted if name in PERMISSIONS))
