"""The checks an MCP HTTP server makes before it looks at a message.

- content negotiation: :func:`accepts` reads an ``Accept`` header (RFC 9110);
- DNS rebinding protection: :func:`host_allowed` and :func:`origin_allowed`
  compare ``Host`` and ``Origin`` with allow-lists whose entries are
  ``name``, ``name:port``, ``name:*`` (any port, or none) or ``*``.

Bearer tokens are read in :mod:`mcp_sync.server.authorization.tokens`; the headers of
2026-07-28 that mirror the body in :mod:`mcp_sync.protocol.headers`.

>>> accepts("application/json, text/event-stream", "text/event-stream")
True
>>> host_allowed("localhost:8000", LOOPBACK_HOSTS)
True
>>> host_allowed("evil.example.com", LOOPBACK_HOSTS)
False
>>> origin_allowed("http://127.0.0.1:8000", None, LOOPBACK_HOSTS)
True
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from urllib.parse import urlsplit

__all__ = [
    "LOOPBACK_HOSTS",
    "accepts",
    "host_allowed",
    "origin_allowed",
]

LOOPBACK_HOSTS = ("localhost:*", "127.0.0.1:*", "[::1]:*")
"""The ``Host`` values allowed by default: the loopback names, on any port."""


@functools.lru_cache(maxsize=256)  # clients send one Accept header, again and again: parse each once
def accepts(header: str | None, media_type: str) -> bool:
    """Whether an ``Accept`` header admits ``media_type`` (``type/subtype``).

    The most specific matching range decides, and ``q=0`` refuses. A missing
    or blank header admits everything (RFC 9110, section 12.5.1).

    >>> accepts("text/*;q=0, */*", "text/event-stream")
    False
    """
    if header is None or not header.strip():
        return True
    kind = media_type.split("/")[0]
    best: tuple[int, float] | None = None
    for part in header.split(","):
        media_range, *params = (field.strip().lower() for field in part.split(";"))
        specificity = {media_type: 3, f"{kind}/*": 2, "*/*": 1}.get(media_range)
        if specificity is None or (best is not None and best[0] >= specificity):
            continue
        best = (specificity, _quality(params))
    return best is not None and best[1] > 0


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def host_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` (a ``Host`` header: ``name`` or ``name:port``) matches one of ``patterns``."""
    host = host.strip().lower()
    for pattern in patterns:
        pattern = pattern.lower()
        if pattern in ("*", host):
            return True
        if pattern.endswith(":*"):
            prefix = pattern[:-1]
            if host == prefix[:-1] or (host.startswith(prefix) and host[len(prefix) :].isdigit()):
                return True
    return False


def origin_allowed(origin: str, allowed_origins: Sequence[str] | None, allowed_hosts: Sequence[str]) -> bool:
    """Whether a browser page at ``origin`` may call the server.

    With ``allowed_origins`` the origin must match one of them (the same
    patterns as hosts, e.g. ``https://app.example.com`` or
    ``http://localhost:*``); without, it must be an http(s) origin whose host
    passes ``allowed_hosts``. The opaque origin ``null`` passes only when listed.
    """
    origin = origin.strip()
    if allowed_origins is not None:
        return host_allowed(origin, allowed_origins)
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and host_allowed(parts.netloc, allowed_hosts)


# ------------------------------------------------ headers mirroring the body
