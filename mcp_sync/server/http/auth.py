"""Bearer tokens on the HTTP server: reading ``Authorization``, a token's claims, and ``WWW-Authenticate``.

>>> bearer_token("Bearer abc"), token_scopes({"scope": "read write"}) == {"read", "write"}
('abc', True)
>>> challenge(error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp")
'Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp"'
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

TokenVerifier = Callable[[str], "Mapping[str, Any] | None"]
"""Checks a bearer token: returns its claims (``sub``, ``scope``, ``exp``...), or ``None`` when invalid.

It may instead raise :class:`InvalidToken` (or :class:`InsufficientScope`)
to say why the token is refused, and :class:`VerifierUnavailable` when it
cannot tell (its authorization server cannot be reached).
"""


class InvalidToken(Exception):
    """A bearer token that is refused; the message is the ``error_description`` of the answer (never the token).

    :attr:`status` and :attr:`error` are the HTTP status and the RFC 6750
    error code of that answer.

    >>> refused = InvalidToken("the token has expired")
    >>> refused.status, refused.error, refused.description
    (401, 'invalid_token', 'the token has expired')
    """

    status = 401
    error = "invalid_token"

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class InsufficientScope(InvalidToken):
    """A valid token without the scopes the resource needs: 403 ``insufficient_scope`` (RFC 6750 section 3.1).

    :attr:`scope` is every scope needed, space-separated: the ``scope`` of
    the challenge, which clients re-authorize with (step-up).

    >>> refused = InsufficientScope(["write", "read"], granted=["read"])
    >>> refused.status, refused.error, refused.scope, refused.description
    (403, 'insufficient_scope', 'read write', 'the token lacks the scope write')
    """

    status = 403
    error = "insufficient_scope"

    def __init__(self, required: Iterable[str], granted: Iterable[str] = ()) -> None:
        needed = sorted(set(required))
        missing = [scope for scope in needed if scope not in set(granted)]
        super().__init__(f"the token lacks the scope{'s' if len(missing) > 1 else ''} {' '.join(missing)}")
        self.scope = " ".join(needed)


class VerifierUnavailable(Exception):
    """The token cannot be checked now: the authorization server (JWKS, metadata, introspection) is unreachable.

    Meant for a 503 answer with ``Retry-After`` (:attr:`retry_after` seconds,
    when known) and for the server's log: the message names the endpoint
    and what went wrong, never the token.

    >>> VerifierUnavailable("the JWKS endpoint answered 502", retry_after=30).retry_after
    30
    """

    status = 503

    def __init__(self, description: str, *, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.retry_after = retry_after


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if that is what it holds."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


_ONE_TOKEN = re.compile(r"[\x21-\x7e]+")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def well_formed(token: str) -> bool:
    """Whether a bearer token can be one token: visible ASCII characters, no space (RFC 6749 appendix A.12).

    Two ``Authorization`` headers joined by the HTTP server (``a,Bearer b``)
    or a token with spaces is not one: such a request is malformed, whatever
    a verifier would make of it. (RFC 6750's ``b64token`` is stricter; the
    verifiers of :mod:`~mcp_sync.server.http.verifiers` hold tokens to it.)

    >>> well_formed("eyJhbGciOi.eyJzdWIi.c2ln"), well_formed("a,Bearer b")
    (True, False)
    """
    return _ONE_TOKEN.fullmatch(token) is not None


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
    """A ``WWW-Authenticate`` value for the Bearer scheme with the given parameters (``None`` ones left out).

    Characters a header cannot carry (outside printable ASCII) become ``?``.
    """
    quoted = [f'{name}="{_escape(value)}"' for name, value in params.items() if value is not None]
    return "Bearer " + ", ".join(quoted) if quoted else "Bearer"


def _escape(value: str) -> str:
    # A header carries printable ASCII only (RFC 6750 section 3 for error_description): a verifier's
    # message in another language, or with a line break, would make the answer a 500 (or split it).
    printable = _UNPRINTABLE.sub("?", value)
    return printable.replace("\\", "\\\\").replace('"', '\\"')
