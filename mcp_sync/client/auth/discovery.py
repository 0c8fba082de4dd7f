"""Finding who authorizes an MCP server: the challenge, protected-resource metadata, authorization-server metadata.

The order of every lookup is the MCP specification's (authorization section,
2025-06-18 onwards): the ``resource_metadata`` URL of the 401's challenge,
else the path-based and then the root well-known URL (RFC 9728); for the
authorization server, RFC 8414 with path insertion and then OpenID
discovery (both placements). Each document is checked against the URL it
was looked up for, and a mismatch refuses the flow. The URLs and the
challenge are :mod:`mcp_sync.protocol.oauth`'s, which the server shares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests
from pydantic import ValidationError

from ...protocol.errors import MCP_CODES, MCPError, validate
from ...protocol.oauth import (
    Challenge,
    authorization_server_urls,
    protected_resource_urls,
    resource_matches,
    secure_url,
)
from .models import AuthorizationServerMetadata, ProtectedResourceMetadata

__all__ = ["auth_error", "authorization_server_metadata", "protected_resource_metadata"]


def auth_error(reason: str, message: str, **context: Any) -> MCPError:
    """The error a flow that cannot finish raises: ``UNAUTHORIZED``, with ``reason`` in ``data`` and ``context``."""
    return MCPError(MCP_CODES.UNAUTHORIZED, message, data={"reason": reason}, context={"reason": reason, **context})


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
    for url in protected_resource_urls(server_url, challenge.resource_metadata):
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
