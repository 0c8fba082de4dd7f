"""Bearer tokens on the HTTP server: reading ``Authorization``, a token's claims, and ``WWW-Authenticate``.

>>> bearer_token("Bearer abc"), token_scopes({"scope": "read write"}) == {"read", "write"}
('abc', True)
>>> challenge(error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp")
'Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp"'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

TokenVerifier = Callable[[str], "Mapping[str, Any] | None"]
"""Checks a bearer token: returns its claims (``sub``, ``scope``, ``exp``...), or ``None`` when invalid."""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if that is what it holds."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def token_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes granted by a token: its ``scope`` string, or its ``scopes``/``scp`` list."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    for key in ("scopes", "scp"):
        value = claims.get(key)
        if isinstance(value, (list, tuple)):
            return frozenset(str(v) for v in value)
    return frozenset()


def token_expired(claims: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the token's ``exp`` claim (seconds since the epoch), if any, has passed."""
    expires = claims.get("exp")
    if not isinstance(expires, (int, float)) or isinstance(expires, bool):
        return False
    return expires <= (time.time() if now is None else now)


def token_principal(claims: Mapping[str, Any]) -> str | None:
    """Who the token speaks for (``sub``, else ``client_id``): sessions are bound to it."""
    for key in ("sub", "client_id"):
        value = claims.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def challenge(**params: str | None) -> str:
    """A ``WWW-Authenticate`` value for the Bearer scheme with the given parameters (``None`` ones left out)."""
    quoted = [f'{name}="{_escape(value)}"' for name, value in params.items() if value is not None]
    return "Bearer " + ", ".join(quoted) if quoted else "Bearer"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
