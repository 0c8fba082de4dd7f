"""What an app's resource asks of its sandbox, and what the host grants: its CSP and its frame's ``allow`` list.

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

__all__ = ["FEATURES", "allow_attribute", "checked_csp", "content_security_policy"]

log = logging.getLogger(__name__)

FEATURES = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}
"""The Permission Policy feature (for a frame's ``allow``) of each permission an app may ask for."""

# An origin, maybe with a wildcard first label, as CSP source expressions spell it: nothing that could end the
# directive (``;``), add a keyword (``'unsafe-eval'``) or widen it (a bare ``*`` or a scheme alone).
_ORIGIN = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?")


def checked_csp(declared: Mapping[str, Iterable[str]] | None) -> dict[str, list[str]]:
    """The origins of a resource's ``_meta.ui.csp`` (as :class:`~mcp_sync.protocol.apps.ResourceUI` reads it)
    that may go into a policy; anything else is dropped (logged).

    >>> checked_csp({"connectDomains": ("https://a.example", "'unsafe-eval'", "*"), "frameDomains": ()})
    {'connectDomains': ['https://a.example']}
    """
    checked: dict[str, list[str]] = {}
    for key, values in (declared or {}).items():
        listed = list(values)
        kept = [value for value in listed if _ORIGIN.fullmatch(value)]
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
    return "; ".join(sorted(FEATURES[name] for name in granted if name in FEATURES))
