"""Bearer tokens on the HTTP server: the verifier's contract, its refusals, and what a token's claims say.

Reading ``Authorization`` and writing ``WWW-Authenticate`` are the rules of
:mod:`mcp_sync.protocol.oauth` (:func:`~mcp_sync.protocol.oauth.bearer_token`,
:func:`~mcp_sync.protocol.oauth.bearer_challenge`), which the client shares.

>>> token_scopes({"scope": "read write"}) == {"read", "write"}, token_principal({"sub": "alice"})
(True, 'alice')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...protocol.oauth import join_scopes, split_scopes

TokenVerifier = Callable[[str], "Mapping[str, Any] | None"]
"""Checks a bearer token: returns its claims (``sub``, ``scope``, ``exp``...), or ``None`` when invalid.

It may instead raise :class:`InvalidToken` (or :class:`InsufficientScope`)
to say why the token is refused, and :class:`VerifierUnavailable` when it
cannot tell (its authorization server cannot be reached).
"""


class InvalidToken(Exception):
    """A bearer token that is refused; :attr:`description` is the ``error_description`` of the answer (never the token).

    :attr:`status` and :attr:`error` are the HTTP status and the RFC 6750
    error code of that answer. :attr:`hint` is for the server's operator
    (what would accept such tokens): part of the exception's text, never
    of the answer.

    >>> refused = InvalidToken("the token has expired")
    >>> refused.status, refused.error, refused.description
    (401, 'invalid_token', 'the token has expired')
    """

    status = 401
    error = "invalid_token"

    def __init__(self, description: str, *, hint: str | None = None) -> None:
        super().__init__(f"{description} ({hint})" if hint else description)
        self.description = description
        self.hint = hint


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
        self.scope = join_scopes(needed)


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


def token_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes granted by a token: its ``scope`` string, or its ``scopes``/``scp`` list."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return split_scopes(scope)
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
