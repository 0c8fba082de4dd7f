"""Finding who authorizes an MCP server: the challenge, protected-resource metadata, authorization-server metadata.

The order of every lookup is the MCP specification's (authorization section,
2025-06-18 onwards): the ``resource_metadata`` URL of the 401's challenge,
else the path-based and then the root well-known URL (RFC 9728); for the
authorization server, RFC 8414 with path insertion and then OpenID
discovery (both placements). Each document is checked against the URL it
was looked up for, and a mismatch refuses the flow.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from pydantic import ValidationError

from ...protocol.errors import MCP_CODES, MCPError, validate
from .models import AuthorizationServerMetadata, ProtectedResourceMetadata

__all__ = [
    "Challenge",
    "auth_error",
    "authorization_server_metadata",
    "authorization_server_urls",
    "canonical_url",
    "origin",
    "protected_resource_metadata",
    "protected_resource_urls",
    "resource_matches",
    "secure_url",
]

# A name starts where no name character precedes it: else a long run of name characters with no "="
# is tried from each of its positions, and a hostile 64 KB header takes minutes to read.
_PARAM = re.compile(r'(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))')


def auth_error(reason: str, message: str, **context: Any) -> MCPError:
    """The error a flow that cannot finish raises: ``UNAUTHORIZED``, with ``reason`` in ``data`` and ``context``."""
    return MCPError(MCP_CODES.UNAUTHORIZED, message, data={"reason": reason}, context={"reason": reason, **context})


@dataclass(frozen=True)
class Challenge:
    """What a 401 or 403 says in its ``WWW-Authenticate`` header (RFC 6750, RFC 9728).

    >>> c = Challenge.parse('Bearer error="insufficient_scope", scope="files:read files:write", '
    ...                     'resource_metadata="https://api.example/.well-known/oauth-protected-resource"')
    >>> c.error, c.scope
    ('insufficient_scope', 'files:read files:write')
    """

    scheme: str | None = None
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, header: str | None) -> Challenge:
        """Read the first Bearer (or DPoP) challenge of a header; an empty one when there is none."""
        if not header:
            return cls()
        # Scheme names are looked for outside quoted strings only: blanked out (same length), they hide nothing.
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', lambda quoted: '"' + " " * (len(quoted.group()) - 2) + '"', header)
        match = re.search(r"\b(Bearer|DPoP)\b", bare, re.IGNORECASE)
        if match is None:
            return cls()
        end = len(header)
        # Parameters run until the next scheme name (a bare token followed by a space and a parameter).
        following = re.search(r",\s*[A-Za-z][A-Za-z0-9_-]*\s+[A-Za-z0-9_.-]+\s*=", bare[match.end() :])
        if following is not None:
            end = match.end() + following.start()
        rest = header[match.end() : end]
        params: dict[str, str] = {}
        for name, quoted, bare in _PARAM.findall(rest):
            params.setdefault(name.lower(), re.sub(r"\\(.)", r"\1", quoted) if quoted else bare)
        return cls(match.group(1), params)

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def scope(self) -> str | None:
        return self.params.get("scope") or None

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata") or None


def canonical_url(url: str) -> str:
    """A server URL as a resource identifier: no fragment, no query, lower-case scheme and host."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


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


def secure_url(url: str) -> bool:
    """Whether an authorization server URL may be used: HTTPS, or HTTP to this machine (MCP authorization spec).

    >>> secure_url("https://auth.example/token"), secure_url("http://127.0.0.1:9000/token")
    (True, True)
    >>> secure_url("http://auth.example/token"), secure_url("javascript:alert(1)")
    (False, False)
    """
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    return bool(host) and (scheme == "https" or (scheme == "http" and _loopback(host)))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: only "localhost" is known to stay on this machine


def protected_resource_urls(server_url: str, challenge: Challenge) -> list[str]:
    """Where to look for the server's protected-resource metadata, in order.

    >>> protected_resource_urls("https://api.example/v1/mcp", Challenge())
    ['https://api.example/.well-known/oauth-protected-resource/v1/mcp', 'https://api.example/.well-known/oauth-protected-resource']
    """
    urls = [challenge.resource_metadata] if challenge.resource_metadata else []
    base, path = origin(server_url), urlsplit(server_url).path.rstrip("/")
    if path:
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return urls


def authorization_server_urls(issuer: str) -> list[str]:
    """Where to look for an authorization server's metadata, in order (RFC 8414, then OpenID discovery).

    >>> authorization_server_urls("https://auth.example/tenant1")  # doctest: +NORMALIZE_WHITESPACE
    ['https://auth.example/.well-known/oauth-authorization-server/tenant1',
     'https://auth.example/.well-known/openid-configuration/tenant1',
     'https://auth.example/tenant1/.well-known/openid-configuration']
    """
    base, path = origin(issuer), urlsplit(issuer).path.rstrip("/")
    if not path:
        return [f"{base}/.well-known/oauth-authorization-server", f"{base}/.well-known/openid-configuration"]
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{base}{path}/.well-known/openid-configuration",
    ]


Fetch = Callable[[str], "requests.Response | None"]


def _document(fetch: Fetch, url: str) -> dict[str, Any] | None:
    """The JSON object at ``url``; ``None`` when there is none (unreachable, any 4xx, or not an object)."""
    return _json_object(fetch(url))


def _json_object(response: requests.Response | None) -> dict[str, Any] | None:
    if response is None or response.status_code != 200:
        return None
    try:
        value = response.json()
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def protected_resource_metadata(
    fetch: Fetch, server_url: str, challenge: Challenge
) -> ProtectedResourceMetadata | None:
    """The server's protected-resource metadata, checked to name it; ``None`` when it publishes none.

    A document whose ``resource`` is not this server's refuses the flow
    (``reason="resource_mismatch"``): a token for another resource must
    not be asked for on this one's word.
    """
    for url in protected_resource_urls(server_url, challenge):
        document = _document(fetch, url)
        if document is None:
            continue
        try:
            metadata = ProtectedResourceMetadata.model_validate(document)
        except ValidationError:
            continue
        if metadata.resource is not None and not resource_matches(metadata.resource, server_url):
            raise auth_error(
                "resource_mismatch",
                f"the protected-resource metadata at {url} is for {metadata.resource}, not {server_url}",
                url=url,
            )
        return metadata
    return None


def authorization_server_metadata(
    fetch: Fetch, issuer: str, *, check_issuer: bool = True
) -> AuthorizationServerMetadata | None:
    """The metadata of the authorization server ``issuer``; ``None`` when it publishes none.

    Its ``issuer`` must be exactly the one the URL was built from (RFC 8414
    section 3.3); otherwise the flow is refused (``reason="issuer_mismatch"``).
    ``check_issuer=False`` is for 2025-03-26 servers, which name no issuer
    (the MCP server's origin stands in for one, and their metadata may say
    another).
    """
    if not secure_url(issuer):
        raise auth_error("insecure_url", f"the authorization server {issuer} is not served over HTTPS", url=issuer)
    reached = False
    for url in authorization_server_urls(issuer):
        response = fetch(url)
        reached = reached or response is not None
        document = _json_object(response)
        if document is None:
            continue
        reason = {"reason": "metadata_invalid"}
        what = f"the authorization server metadata at {url} is invalid"
        metadata = validate(
            AuthorizationServerMetadata, document, MCP_CODES.UNAUTHORIZED, what, data=reason, context=reason
        )
        if check_issuer and metadata.issuer != issuer:
            raise auth_error(
                "issuer_mismatch",
                f"the authorization server metadata at {url} names the issuer {metadata.issuer!r}, not {issuer!r}",
                url=url,
            )
        for endpoint in (metadata.authorization_endpoint, metadata.token_endpoint, metadata.registration_endpoint):
            if endpoint is not None and not secure_url(endpoint):
                raise auth_error(
                    "insecure_url",
                    f"the authorization server metadata at {url} names an endpoint not served over HTTPS",
                )
        return metadata
    if not reached:
        raise auth_error("unreachable", f"the authorization server {issuer} cannot be reached", issuer=issuer)
    return None
