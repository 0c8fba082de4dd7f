"""The OAuth rules both roles follow, each once: well-known URLs, challenges, bearer credentials, scopes, loopback.

The OAuth client (:mod:`mcp_sync.client.auth`) and the server's token gate
and verifiers (:mod:`mcp_sync.server.authorization`) read and write the same
things; here is the one place that decides them:

* where metadata lives: RFC 9728 (protected resources) and RFC 8414 with
  OpenID discovery (authorization servers), :func:`protected_resource_urls`,
  :func:`protected_resource_metadata_url`, :func:`authorization_server_urls`;
* the ``WWW-Authenticate`` challenge (RFC 6750, RFC 9728), read and written:
  :class:`Challenge`, :func:`bearer_challenge`;
* the ``Authorization: Bearer`` credentials: :func:`bearer_token`,
  :func:`well_formed`;
* scopes, a space-separated string on the wire: :func:`split_scopes`,
  :func:`join_scopes`;
* which URLs are safe and which stay on this machine (the MCP
  authorization spec; RFC 8252 section 7.3 for loopback redirects):
  :func:`secure_url`, :func:`is_loopback`, :func:`redirect_registered`.

Pure: the standard library and :mod:`.grammar` only.

>>> challenge = Challenge.parse('Bearer error="insufficient_scope", scope="files:read files:write"')
>>> challenge.error, split_scopes(challenge.scope) == {"files:read", "files:write"}
('insufficient_scope', True)
>>> bearer_challenge(error="invalid_token", resource_metadata=protected_resource_metadata_url("http://h/mcp"))
'Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp"'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from .grammar import TCHAR, VISIBLE, auth_params, blank_quoted, quote

__all__ = [
    "AUTHORIZATION_SERVER_PATH",
    "OPENID_CONFIGURATION_PATH",
    "PROTECTED_RESOURCE_PATH",
    "Challenge",
    "authorization_server_urls",
    "bearer_challenge",
    "bearer_token",
    "canonical_url",
    "is_loopback",
    "join_scopes",
    "origin",
    "protected_resource_metadata_url",
    "protected_resource_urls",
    "redirect_registered",
    "resource_matches",
    "secure_url",
    "split_scopes",
    "well_formed",
]

PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
"""The well-known path of a protected resource's metadata (RFC 9728 section 3)."""
AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
"""The well-known path of an authorization server's metadata (RFC 8414 section 3)."""
OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration"
"""The well-known path of an OpenID provider's configuration (OpenID Connect Discovery 1.0)."""

_SCHEME = re.compile(r"\b(Bearer|DPoP)\b", re.IGNORECASE)
# The next challenge starts with a bare scheme token followed by a space and a parameter.
_NEXT_CHALLENGE = re.compile(rf",\s*[A-Za-z]{TCHAR}*\s+{TCHAR}+\s*=")
_LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")


# ----------------------------------------------------------------------------------------------- URLs


def canonical_url(url: str) -> str:
    """A server URL as a resource identifier: no fragment, no query, lower-case scheme and host.

    >>> canonical_url("HTTPS://API.Example/mcp?x=1#top")
    'https://api.example/mcp'
    """
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-cased.

    >>> origin("https://API.example:8443/mcp")
    'https://api.example:8443'
    """
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def protected_resource_metadata_url(resource: str) -> str:
    """The RFC 9728 well-known URL of ``resource``'s metadata: the well-known path inserted before its path.

    >>> protected_resource_metadata_url("https://api.example/v1/mcp/")
    'https://api.example/.well-known/oauth-protected-resource/v1/mcp'
    """
    return origin(resource) + PROTECTED_RESOURCE_PATH + urlsplit(resource).path.rstrip("/")


def protected_resource_urls(server_url: str, resource_metadata: str | None = None) -> list[str]:
    """Where a client looks for a server's protected-resource metadata, in order (MCP authorization spec).

    The ``resource_metadata`` URL its challenge named, if any, then the
    path-based well-known URL, then the root one.

    >>> protected_resource_urls("https://api.example/v1/mcp")  # doctest: +NORMALIZE_WHITESPACE
    ['https://api.example/.well-known/oauth-protected-resource/v1/mcp',
     'https://api.example/.well-known/oauth-protected-resource']
    """
    urls = [resource_metadata] if resource_metadata else []
    if urlsplit(server_url).path.rstrip("/"):
        urls.append(protected_resource_metadata_url(server_url))
    urls.append(origin(server_url) + PROTECTED_RESOURCE_PATH)
    return urls


def authorization_server_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata is looked for, in order: RFC 8414, then OpenID discovery (both placements).

    >>> authorization_server_urls("https://auth.example")  # doctest: +NORMALIZE_WHITESPACE
    ['https://auth.example/.well-known/oauth-authorization-server',
     'https://auth.example/.well-known/openid-configuration']
    >>> authorization_server_urls("https://auth.example/tenant1")  # doctest: +NORMALIZE_WHITESPACE
    ['https://auth.example/.well-known/oauth-authorization-server/tenant1',
     'https://auth.example/.well-known/openid-configuration/tenant1',
     'https://auth.example/tenant1/.well-known/openid-configuration']
    """
    base, path = origin(issuer), urlsplit(issuer).path.rstrip("/")
    if not path:
        return [base + AUTHORIZATION_SERVER_PATH, base + OPENID_CONFIGURATION_PATH]
    return [
        base + AUTHORIZATION_SERVER_PATH + path,
        base + OPENID_CONFIGURATION_PATH + path,
        base + path + OPENID_CONFIGURATION_PATH,
    ]


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether a metadata ``resource`` names ``server_url``: the same origin, and the server's path or one above it.

    >>> resource_matches("https://api.example/mcp", "https://api.example/mcp")
    True
    >>> resource_matches("https://api.example/", "https://api.example/mcp")
    True
    >>> resource_matches("https://api.example/mcp2", "https://api.example/mcp")
    False
    >>> resource_matches("https://evil.example/mcp", "https://api.example/mcp")
    False
    """
    wanted, served = urlsplit(canonical_url(resource)), urlsplit(canonical_url(server_url))
    if (wanted.scheme, wanted.netloc) != (served.scheme, served.netloc):
        return False
    prefix = wanted.path.rstrip("/")
    return served.path.rstrip("/") == prefix or served.path.startswith(prefix + "/")


def is_loopback(host: str) -> bool:
    """Whether ``host`` stays on this machine: ``localhost`` or a loopback address (a name: only ``localhost``).

    >>> is_loopback("127.0.0.2"), is_loopback("::1"), is_loopback("localhost"), is_loopback("localhost.evil")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: only "localhost" is known to stay on this machine


def secure_url(url: str) -> bool:
    """Whether an authorization server URL may be used: HTTPS, or HTTP to this machine (MCP authorization spec).

    >>> secure_url("https://auth.example/token"), secure_url("http://127.0.0.1:9000/token")
    (True, True)
    >>> secure_url("http://auth.example/token"), secure_url("javascript:alert(1)")
    (False, False)
    """
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    return bool(host) and (scheme == "https" or (scheme == "http" and is_loopback(host)))


def redirect_registered(redirect_uri: str, registered: Iterable[str]) -> bool:
    """Whether ``redirect_uri`` is among ``registered``; a loopback one whatever its port (RFC 8252 section 7.3).

    >>> redirect_registered("http://127.0.0.1:53211/callback", ["http://127.0.0.1/callback"])
    True
    >>> redirect_registered("http://127.0.0.1:53211/other", ["http://127.0.0.1/callback"])
    False
    >>> redirect_registered("https://app.example:8443/cb", ["https://app.example/cb"])
    False
    """
    registered = list(registered)
    if redirect_uri in registered:
        return True
    wanted = urlsplit(redirect_uri)
    if wanted.scheme != "http" or wanted.hostname not in _LOOPBACK_NAMES:
        return False
    return any(
        (kept.scheme, kept.hostname, kept.path) == (wanted.scheme, wanted.hostname, wanted.path)
        for kept in map(urlsplit, registered)
    )


# ----------------------------------------------------------------------------------------------- scopes


def split_scopes(scope: str | None) -> frozenset[str]:
    """The scopes of a space-separated ``scope`` string (RFC 6749 section 3.3; ``None``: none).

    >>> sorted(split_scopes(" read  write ")), split_scopes(None)
    (['read', 'write'], frozenset())
    """
    return frozenset(scope.split()) if scope else frozenset()


def join_scopes(scopes: Iterable[str]) -> str:
    """``scopes`` as one ``scope`` string: each once, sorted, space-separated.

    >>> join_scopes(["write", "read", "write"])
    'read write'
    """
    return " ".join(sorted(set(scopes)))


# ----------------------------------------------------------------------------------------------- headers


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if that is what it holds.

    >>> bearer_token("Bearer abc"), bearer_token("bearer  abc "), bearer_token("Basic abc"), bearer_token("Bearer")
    ('abc', 'abc', None, None)
    """
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def well_formed(token: str) -> bool:
    """Whether a token can be one header token: visible ASCII characters, no space (RFC 6749 appendix A.12).

    Two ``Authorization`` headers joined by an HTTP server (``a,Bearer b``)
    or a token with spaces is not one. (RFC 6750's ``b64token``,
    :data:`~mcp_sync.protocol.grammar.B64TOKEN`, is stricter.)

    >>> well_formed("eyJhbGciOi.eyJzdWIi.c2ln"), well_formed("a,Bearer b"), well_formed("")
    (True, False, False)
    """
    return VISIBLE.fullmatch(token) is not None


@dataclass(frozen=True)
class Challenge:
    """A ``WWW-Authenticate`` challenge of the Bearer or DPoP scheme (RFC 6750, RFC 9449, RFC 9728).

    :meth:`parse` reads one from a 401's or 403's header (the client);
    :func:`bearer_challenge` writes one (the server).

    >>> c = Challenge.parse('Bearer error="insufficient_scope", scope="files:read files:write", '
    ...                     'resource_metadata="https://api.example/.well-known/oauth-protected-resource"')
    >>> c.error, c.scope
    ('insufficient_scope', 'files:read files:write')
    """

    scheme: str | None = None
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, header: str | None, schemes: tuple[str, ...] = ("Bearer", "DPoP")) -> Challenge:
        """Read the first challenge of one of ``schemes`` in a header; an empty one when there is none.

        >>> Challenge.parse('Basic realm="Bearer", DPoP error="use_dpop_nonce"').scheme
        'DPoP'
        >>> Challenge.parse('Bearer realm="a", DPoP error="use_dpop_nonce"', ("DPoP",)).error
        'use_dpop_nonce'
        >>> Challenge.parse(None), Challenge.parse("Basic realm=x")
        (Challenge(scheme=None, params={}), Challenge(scheme=None, params={}))
        """
        if not header:
            return cls()
        # Scheme names are looked for outside quoted strings only: blanked out (same length), they hide nothing.
        bare = blank_quoted(header)
        for match in _SCHEME.finditer(bare):
            if match.group(1).lower() in {scheme.lower() for scheme in schemes}:
                break
        else:
            return cls()
        end = len(header)
        # Parameters run until the next scheme name (a bare token followed by a space and a parameter).
        following = _NEXT_CHALLENGE.search(bare, match.end())
        if following is not None:
            end = following.start()
        return cls(match.group(1), auth_params(header[match.end() : end]))

    @property
    def error(self) -> str | None:
        """The ``error`` parameter (RFC 6750 section 3.1), if any."""
        return self.params.get("error")

    @property
    def scope(self) -> str | None:
        """The ``scope`` parameter: the scopes the resource needs (space-separated), if any."""
        return self.params.get("scope") or None

    @property
    def resource_metadata(self) -> str | None:
        """The ``resource_metadata`` parameter: the URL of the server's protected-resource metadata (RFC 9728)."""
        return self.params.get("resource_metadata") or None


def bearer_challenge(**params: str | None) -> str:
    """A ``WWW-Authenticate`` value for the Bearer scheme with the given parameters (``None`` ones left out).

    Each value is a quoted string; characters a header cannot carry
    (outside printable ASCII) become ``?``. :meth:`Challenge.parse` reads it back.

    >>> bearer_challenge(), bearer_challenge(error="invalid_token", error_description='bad "x"\\n')
    ('Bearer', 'Bearer error="invalid_token", error_description="bad \\\\"x\\\\"?"')
    >>> Challenge.parse(bearer_challenge(scope="a b", error_description="x, DPoP y=1")).params
    {'scope': 'a b', 'error_description': 'x, DPoP y=1'}
    """
    quoted = [f"{name}={quote(value)}" for name, value in params.items() if value is not None]
    return "Bearer " + ", ".join(quoted) if quoted else "Bearer"
