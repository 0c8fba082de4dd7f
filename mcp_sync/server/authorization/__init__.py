"""The server's authorization: who a request speaks for, what it may do, and how its bearer token is checked.

Here, at the package's face, is what every request of both eras is decided
on: an :data:`Authorizer` sees each request's :class:`RequestInfo` (after its
era is known, before its handler runs) and a request it refuses is answered
``UNAUTHORIZED``; :class:`AuthInfo` is who a request speaks for (``ctx.auth``)
and :class:`ScopeRefused` the error of a call whose scopes the caller lacks.

The modules:

- this module: ``Authorizer``, ``RequestInfo``, ``AuthInfo``, ``ScopeRefused``;
- ``tokens``: a token verifier's contract (``TokenVerifier``), its refusals (``InvalidToken``,
  ``InsufficientScope``, ``VerifierUnavailable``) and what a token's claims say;
- ``verifiers``: the verifiers that ask an authorization server (``JWTVerifier``, ``IntrospectionVerifier``);
  they send HTTP requests, so they are imported only when used.

The OAuth rules the client shares (well-known URLs, challenges, bearer
credentials) are :mod:`mcp_sync.protocol.oauth`'s.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> server.set_authorizer(lambda info: info.method != "tools/call" or info.params.get("name") != "shutdown")

This module and ``tokens`` do no I/O; ``verifiers`` loads ``requests``.
Part of the server layer, under its rule:

May import: ``server``, ``runtime``, ``protocol``.
Must not import: ``client``, ``transports``, ``display``, ``llm``, ``apps``, nor the composition level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...protocol.errors import MCP_CODES, MCPError

# The OAuth grammar (protocol.oauth, its regular expressions) and the token
# module are imported where a token or a refused scope is handled: a server
# over stdio, which has no tokens, never loads them.

if TYPE_CHECKING:
    from ..session import ServerSession


@dataclass(frozen=True)
class RequestInfo:
    """What an authorizer sees of a request: its method, its raw params and the connection it came on."""

    method: str
    params: dict[str, Any]
    session: ServerSession


Authorizer = Callable[[RequestInfo], bool]
"""``(info) -> allowed``: whether the request described by ``info`` may be served."""


@dataclass(frozen=True)
class AuthInfo:
    """Who a request speaks for: the verified claims of its bearer token (``ctx.auth`` in handlers).

    Made by the HTTP app from what its token verifier returned; the token
    itself is never kept here, so printing or logging an ``AuthInfo`` leaks
    nothing that could be replayed (the claims are left out of its repr too).

    >>> info = AuthInfo.from_claims({"sub": "alice", "client_id": "app", "scope": "read admin", "exp": 2000000000})
    >>> info.subject, sorted(info.scopes), info.expires_at, info.allows({"admin"})
    ('alice', ['admin', 'read'], 2000000000.0, True)
    >>> info
    AuthInfo(subject='alice', client_id='app', scopes=['admin', 'read'], expires_at=2000000000.0)
    """

    subject: str | None
    client_id: str | None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    expires_at: float | None = None

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> AuthInfo:
        """The facts of a verified token's claims (``sub``, ``client_id``/``azp``, ``scope``/``scp``, ``exp``)."""
        from .tokens import token_scopes

        expires = claims.get("exp")
        client = claims.get("client_id", claims.get("azp"))
        subject = claims.get("sub")
        return cls(
            subject=None if subject is None else str(subject),
            client_id=None if client is None else str(client),
            scopes=token_scopes(claims),
            claims=MappingProxyType(dict(claims)),
            expires_at=_seconds(expires),
        )

    def allows(self, scopes: Iterable[str]) -> bool:
        """Whether every one of ``scopes`` was granted."""
        return self.scopes.issuperset(scopes)

    def __repr__(self) -> str:
        return (
            f"AuthInfo(subject={self.subject!r}, client_id={self.client_id!r}, "
            f"scopes={sorted(self.scopes)!r}, expires_at={self.expires_at!r})"
        )


def _seconds(value: object) -> float | None:
    """A claim's time as seconds, or ``None`` when it is none (not a number, or too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer of hundreds of digits, from a verifier that let it through
        return None


NO_AUTH = AuthInfo(subject=None, client_id=None)
"""The auth of a request whose token's facts are not known (it is granted no scope)."""


class ScopeRefused(MCPError):
    """A call of a tool, resource or prompt whose scopes the caller lacks.

    Over HTTP the app answers such a request with 403 ``insufficient_scope``
    before it reaches the session; elsewhere (a session whose auth says so,
    or a registration changed in between) it is this JSON-RPC error, code
    ``-32001`` with ``data`` ``{"error": "insufficient_scope", "scope": ...}``.

    >>> refused = ScopeRefused(frozenset({"admin", "read"}), "tool admin_reset")
    >>> refused.scope, refused.data["error"], refused.jsonrpc_code
    ('admin read', 'insufficient_scope', -32001)
    """

    def __init__(self, needed: Iterable[str], what: str) -> None:
        from ...protocol.oauth import join_scopes

        self.scope = join_scopes(needed)
        super().__init__(
            MCP_CODES.UNAUTHORIZED,
            f"Insufficient scope for {what}: it needs {self.scope}",
            data={"error": "insufficient_scope", "scope": self.scope},
        )
