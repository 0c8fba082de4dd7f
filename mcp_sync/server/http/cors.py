"""Cross-origin resource sharing (CORS) for the MCP HTTP app: off unless given an allow-list.

A browser page (the MCP Inspector, a web client) on another origin may read
the app's answers only when they carry CORS headers, and may send
``Authorization``, ``Content-Type: application/json`` and the ``Mcp-*``
headers only after a preflight ``OPTIONS`` the server approves.
:class:`CORSPolicy` decides both from an allow-list of origins, in the
patterns of ``allowed_origins`` (``https://app.example``,
``http://localhost:*`` for any port, ``null``, or ``*`` for any origin).

An origin that matches gets its exact value echoed in
``Access-Control-Allow-Origin`` (with ``Vary: Origin``), or ``*`` when the
list is ``["*"]``; any other origin gets no CORS headers at all.
``allow_credentials`` adds ``Access-Control-Allow-Credentials: true`` (for
cookies or TLS client certificates; a bearer token in ``Authorization`` does
not need it) and cannot go with ``*``.

>>> policy = CORSPolicy(["https://inspector.example"])
>>> dict(policy.response_headers("https://inspector.example"))["Access-Control-Allow-Origin"]
'https://inspector.example'
>>> policy.response_headers("https://evil.example")
[]
>>> dict(CORSPolicy(["*"]).response_headers("https://any.example"))["Access-Control-Allow-Origin"]
'*'
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .security import host_allowed

__all__ = [
    "ALLOWED_HEADERS",
    "ALLOWED_METHODS",
    "EXPOSED_HEADERS",
    "CORSPolicy",
]

ALLOWED_METHODS = ("GET", "POST", "DELETE", "OPTIONS")
"""What a preflight allows: every method an MCP HTTP endpoint answers."""
ALLOWED_HEADERS = (
    "Content-Type",
    "Authorization",
    "Mcp-Session-Id",
    "Mcp-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Last-Event-ID",
)
"""The request headers a preflight allows, besides the ``Mcp-Param-*`` headers it is asked for."""
EXPOSED_HEADERS = ("Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate")
"""The response headers a page's script may read: the session, the revision and an auth challenge."""
PARAM_HEADER_PREFIX = "mcp-param-"

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_ORIGIN_PATTERN = re.compile(r"(?i)[a-z][a-z0-9+.-]*://[^/?#\s]+")


class CORSPolicy:
    """Which origins may call the app from a browser, and the CORS headers they get.

    ``origins`` is the allow-list (``["*"]``: any origin), ``allow_credentials``
    whether to send ``Access-Control-Allow-Credentials: true`` (refused with
    ``*``: a :class:`ValueError`), and ``max_age`` how long, in seconds, a
    browser may reuse a preflight's answer.
    """

    def __init__(self, origins: Sequence[str], *, allow_credentials: bool = False, max_age: int = 600) -> None:
        if isinstance(origins, str):
            raise TypeError("the CORS origins are a list of origins, not one string")
        self.origins = tuple(origin.strip() for origin in origins)
        for origin in self.origins:
            if origin not in ("*", "null") and not _ORIGIN_PATTERN.fullmatch(origin):
                raise ValueError(f"not a CORS origin (scheme://host[:port], no path): {origin!r}")
        self.any_origin = "*" in self.origins
        if self.any_origin and allow_credentials:
            raise ValueError("CORS credentials cannot be allowed for every origin ('*'): list the origins")
        if max_age < 0:
            raise ValueError(f"the CORS max_age must not be negative: {max_age}")
        self.allow_credentials = allow_credentials
        self.max_age = max_age

    def allows(self, origin: str | None) -> bool:
        """Whether a page at ``origin`` (an ``Origin`` header) may call the app."""
        return origin is not None and host_allowed(origin, self.origins)

    def response_headers(self, origin: str | None) -> list[tuple[str, str]]:
        """The CORS headers of an answer to a request from ``origin`` (none when it is not allowed)."""
        if not self.allows(origin):
            return []
        assert origin is not None
        return [*self._origin_headers(origin), ("Access-Control-Expose-Headers", ", ".join(EXPOSED_HEADERS))]

    def preflight_headers(self, origin: str, requested_headers: str | None) -> list[tuple[str, str]]:
        """The headers of the answer (204) to a preflight from an allowed ``origin``.

        The allowed headers are :data:`ALLOWED_HEADERS` and the ``Mcp-Param-*``
        headers among ``requested_headers`` (``Access-Control-Request-Headers``).
        """
        params = []
        for name in (requested_headers or "").split(","):
            name = name.strip()
            if name.lower().startswith(PARAM_HEADER_PREFIX) and _TOKEN.fullmatch(name) and name not in params:
                params.append(name)
        return [
            *self._origin_headers(origin),
            ("Access-Control-Allow-Methods", ", ".join(ALLOWED_METHODS)),
            ("Access-Control-Allow-Headers", ", ".join([*ALLOWED_HEADERS, *params])),
            ("Access-Control-Max-Age", str(self.max_age)),
        ]

    def apply(self, headers: Sequence[tuple[str, str]], origin: str | None) -> list[tuple[str, str]]:
        """``headers`` of an answer to a request from ``origin``, with the CORS headers it needs.

        Those of :meth:`response_headers` (unless the answer has them already,
        as a preflight's does) and, when answers differ by origin (a list, not
        ``*``), ``Vary: Origin`` on every answer, so that caches keep them apart.
        """
        result = list(headers)
        if not any(name.lower() == "access-control-allow-origin" for name, _ in result):
            result.extend(self.response_headers(origin))
        if self.any_origin:
            return result
        for index, (name, value) in enumerate(result):
            if name.lower() == "vary":
                if "origin" not in (part.strip().lower() for part in value.split(",")):
                    result[index] = (name, f"{value}, Origin")
                return result
        result.append(("Vary", "Origin"))
        return result

    def _origin_headers(self, origin: str) -> list[tuple[str, str]]:
        if self.any_origin:
            return [("Access-Control-Allow-Origin", "*")]
        headers = [("Access-Control-Allow-Origin", origin.strip())]
        if self.allow_credentials:
            headers.append(("Access-Control-Allow-Credentials", "true"))
        return headers
